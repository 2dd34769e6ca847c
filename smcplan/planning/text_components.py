r"""The text planner: build its components (:func:`build_text_planner`), then run
:func:`~smcplan.planning.tsmc.tsmc` on them (:func:`run_text_planner`); :func:`plan_text` does
both, ``plan(task, memory, admissible_actions, lm=...)``.

As blackjax separates building a kernel from running ``init``/``step``, building is everything
that depends on the inputs but not on the random key: the settings validated once
(:class:`~smcplan.planning.config.PlannerConfig`), the default language-model roles, and from
them the three components of one planning step of particle :math:`i`,

.. math:: a^i_t \sim q(\cdot \mid x^i_{<t}), \qquad
   o^i_t, G^i_t \sim p(\cdot \mid x^i_{<t}, a^i_t), \qquad
   \delta^i_t, \log\psi^i_t = \mathrm{twist}(x^i_{\le t}),

— the proposal (:class:`~smcplan.planning.text_roles.LMProposal` or
:class:`~smcplan.planning.simulator.UniformTextProposal`), the world model
(:class:`~smcplan.planning.text_roles.LMWorldModel` or
:class:`~smcplan.planning.simulator.SimulatorWorldModel`, each updating the particle's graph by
:class:`~smcplan.planning.graph_update.GraphUpdate`) and the twist
(:func:`smcplan.planning.progress.make_progress`), with N copies of the root particle
(:class:`~smcplan.planning.text_particle.TextParticle`).  Any of the three may instead be the
user's own callable (``proposal=``, ``world_model=``, ``twist=``), checked once here and at
every call by the wrappers of :mod:`smcplan.planning.custom`, which states the calls and how
their log-probabilities enter the weight.  Running draws the N futures H steps
ahead from one key (``weighting="nesyfs"`` by default, the paper's rule), closes the simulator's
copies and records the settings in ``result.config``.

Imports ``smcplan.memory`` and, lazily (only when the default roles are built),
``smcplan.llm``; never agents, eval or cli.  The toy POMDP path never needs this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smcplan.games import GameRules
from smcplan.memory import KnowledgeGraph
from smcplan.planning.checks import component_name
from smcplan.planning.components import PlanningError, Proposal, Twist, WorldModel
from smcplan.planning.config import PlannerConfig, Retrieval, WorldModelKind, parse_progress
from smcplan.planning.custom import own_components, wrap_component
from smcplan.planning.graph_update import EXTRACTORS, GraphUpdate
from smcplan.planning.result import PlanResult
from smcplan.planning.seen import Seen
from smcplan.planning.text_particle import TextParticle
from smcplan.planning.text_roles import LMProposal, LMWorldModel
from smcplan.planning.tsmc import tsmc

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["TextPlanner", "build_text_planner", "run_text_planner", "plan_text"]


@dataclass(frozen=True)
class TextPlanner:
    """A text planner built and ready to run (:func:`build_text_planner`): ``particles``, the N
    root particles (a tuple of copies of one :class:`TextParticle`: the agent's graph, the real
    observation and score; :func:`tsmc` takes it as it is); ``proposal``, ``world_model``,
    ``twist``, the components :func:`tsmc` calls (the user's own ones wrapped in the checks of
    :mod:`smcplan.planning.custom`); ``config``, the validated :class:`PlannerConfig` (N, H,
    weighting, ...); ``simulated``, True under the built-in simulator world model (whose copies
    :func:`run_text_planner` closes); ``custom``, the roles the user supplied (``"proposal"``,
    ``"world_model"``, ``"twist"``).  It runs once: the twist and the simulator world model count
    what that run did (``result.config``), so a second :func:`run_text_planner` raises; build
    another for the next plan."""

    particles: tuple[TextParticle, ...]
    proposal: Proposal
    world_model: WorldModel
    twist: Twist
    config: PlannerConfig
    simulated: bool
    custom: tuple[str, ...] = ()
    _runs: list = field(default_factory=list, init=False, repr=False, compare=False)


def build_text_planner(
    task: str,
    memory: KnowledgeGraph | None,
    admissible_actions: Sequence[str],
    lm: LanguageModel | None = None,
    *,
    observation: str = "",
    config: PlannerConfig | None = None,
    retrieval: Retrieval | None = None,
    simulator: Any = None,
    seen: Seen | None = None,
    extractor: str | Callable = "llm",
    env_kind: GameRules | str = "auto",
    shortlist: Callable[[list[str]], list[str]] | None = None,
    proposer: Any = None,
    observation_model: Any = None,
    progress_model: Any = None,
    llm_extractor: Any = None,
    proposal: str | Proposal | None = None,
    world_model: str | WorldModel | None = None,
    twist: Twist | None = None,
    **options: Any,
) -> TextPlanner:
    """Validate the inputs once and build the text planner's components (no key: nothing is
    drawn, no model is called and no environment copy is made).  The parameters are those of
    :func:`plan_text` but ``key``; the same inputs raise the same :class:`PlanningError`."""
    from smcplan.planning.progress import make_progress
    from smcplan.planning.simulator import (
        SimulatorWorldModel,
        UniformTextProposal,
        check_clone_factory,
    )

    # The inputs and settings, validated here and only here.
    if not isinstance(task, str):
        raise PlanningError(f"task must be a string; got {type(task).__name__}")
    if isinstance(admissible_actions, str):
        raise PlanningError("admissible_actions must be a list of strings, not one string")
    admissible = [str(a) for a in admissible_actions]
    if not admissible:
        raise PlanningError(
            "the admissible action set is empty; "
            "the planner needs at least one action to choose from"
        )
    if memory is not None and not isinstance(memory, KnowledgeGraph):
        raise PlanningError(
            f"memory must be a smcplan.memory.KnowledgeGraph or None; got {type(memory).__name__}"
        )
    # the settings objects check their own values (PlannerConfig.__post_init__); the user's
    # own components are checked once here (smcplan.planning.custom)
    cfg = PlannerConfig.coerce(config, "config")
    custom = own_components(
        {"proposal": proposal, "world_model": world_model, "twist": twist},
        options,
        cfg,
        proposer=proposer,
        observation_model=observation_model,
        simulator=simulator,
    )
    cfg = cfg.replace(**options) if options else cfg
    own_world = "world_model" in custom
    retrieval = Retrieval.coerce(retrieval, "retrieval")
    if isinstance(extractor, str) and extractor not in EXTRACTORS:
        raise PlanningError(
            f"unknown extractor {extractor!r}; known: {', '.join(EXTRACTORS)}, or a callable"
        )
    simulated = cfg.oracle and not own_world
    if simulated:
        if simulator is None:
            raise PlanningError(
                "world_model='simulator' needs simulator= a clone factory "
                "(e.g. env.clone of the real environment)"
            )
        check_clone_factory(simulator)
    names = parse_progress(cfg.progress)
    if "twist" in custom and cfg.rollouts:
        raise PlanningError(
            f"rollouts={cfg.rollouts} is the built-in 'env' twist's leaf value; "
            "twist= replaces that twist (set rollouts=0)"
        )
    learned_world = not simulated and not own_world and cfg.world_model is WorldModelKind.LEARNED
    if "twist" not in custom and "env" in names and not simulated and not own_world:
        from smcplan.planning.learned import serves_env_twist

        if not (learned_world and serves_env_twist(cfg.world_model_path, observation_model)):
            raise PlanningError(
                "progress 'env' reads the score from the simulator; it needs world_model="
                "'simulator' (or your own world model that sets each step's Outcome, or "
                "world_model='learned' with a model trained with targets "
                '["observation","reward","done"])'
            )

    # The language-model roles not given, built on lm=.
    wants_lm_progress = "twist" not in custom and "lm" in names
    lm_proposal = cfg.proposal == "lm" and "proposal" not in custom
    lm_world = not simulated and not own_world
    lm_graphs = extractor == "llm" and memory is not None and not own_world
    if lm_world and cfg.world_model is WorldModelKind.LEARNED and observation_model is None:
        from smcplan.planning.learned import learned_observation_model

        observation_model = learned_observation_model(
            cfg.world_model_path, cfg.observation_tokens, like=lm,
            temperature=cfg.observation_temperature,
        )  # fmt: skip
    needs_lm = (
        (lm_proposal and proposer is None)
        or (lm_world and observation_model is None)
        or (wants_lm_progress and progress_model is None)
        or (lm_graphs and llm_extractor is None)
    )
    if needs_lm:
        if lm is None:
            raise PlanningError(
                "plan(task, memory, admissible_actions) needs lm= "
                "(a smcplan.llm.LanguageModel) or all roles given"
            )
        from smcplan.llm import ActionProposal, ObservationModel, ProgressModel, TripletExtractor

        if lm_proposal:
            proposer = proposer or ActionProposal(lm, temperature=1.0, think=False)
        if lm_world:
            observation_model = observation_model or ObservationModel(
                lm,
                temperature=float(cfg.observation_temperature),
                max_new_tokens=cfg.observation_tokens,
            )
        if wants_lm_progress:
            progress_model = progress_model or ProgressModel(lm)
        if lm_graphs:
            llm_extractor = llm_extractor or TripletExtractor(lm)

    # The components: the user's own (checked at every call), else the built-ins by name.
    graphs = GraphUpdate(extractor if memory is not None else "none", llm_extractor, env_kind)
    if "twist" in custom:
        twister: Twist = wrap_component("twist", custom["twist"])
    else:
        twister = make_progress(
            cfg.progress,
            task=task,
            seen=seen,
            progress_model=progress_model,
            retrieval=retrieval,
            env_kind=env_kind,
            rollouts=cfg.rollouts,
            rollout_steps=cfg.rollout_steps,
            rollout_discount=cfg.rollout_discount,
            rollout_policy=cfg.rollout_policy,
            value_model=_value_model(cfg, names, lm),
        )
    if own_world:
        world: WorldModel = wrap_component("world_model", custom["world_model"])
    elif simulated:
        world = SimulatorWorldModel(simulator, update_graphs=graphs, shortlist=shortlist)
    else:
        world = LMWorldModel(observation_model, task, graphs, admissible, retrieval)
    if "proposal" in custom:
        proposer_: Proposal = wrap_component("proposal", custom["proposal"], admissible)
    elif lm_proposal:
        proposer_ = LMProposal(proposer, task, admissible, retrieval)
    else:
        proposer_ = UniformTextProposal(admissible)
    root = TextParticle(
        kg=memory,
        root_observation=str(observation),
        admissible=tuple(admissible),
        root_score=float(seen.score) if seen is not None else 0.0,
    )
    n = cfg.particles_per_action * len(admissible) or cfg.num_particles
    return TextPlanner((root,) * n, proposer_, world, twister, cfg, simulated, tuple(custom))


def run_text_planner(planner: TextPlanner, key: Any = 0) -> PlanResult:
    """Run :func:`tsmc` on a built planner with ``key`` (a ``jax.random`` key or an int seed),
    close the simulator world model's environment copies (also when a component raises), and
    record in ``result.config`` what ran: ``world_model_kind``, ``progress`` and
    ``proposal_kind`` (the built-in's name, or the user's component's name: a function's
    ``__name__``, an object's class name), ``custom`` (the roles the user supplied), ``oracle``
    (the simulator world model, or a user's world model with ``oracle = True``), and where they
    apply the learned model's path, the clones made, the rollout settings and environment steps,
    and the twist parts that told particles apart (``informative``)."""
    from smcplan.planning.batch import as_key

    if planner._runs:
        raise PlanningError(
            "this TextPlanner has already run (its twist and world model keep that run's "
            "counts); build another with build_text_planner"
        )
    key = as_key(key)
    planner._runs.append(True)
    cfg, twist, world, simulated = (
        planner.config,
        planner.twist,
        planner.world_model,
        planner.simulated,
    )
    try:
        result = tsmc(
            list(planner.particles),
            key,
            proposal=planner.proposal,
            world_model=world,
            twist=twist,
            **cfg.tsmc_kwargs(),
        )
    finally:
        if simulated:
            world.close()
    custom = planner.custom
    oracle = simulated or ("world_model" in custom and bool(getattr(world, "oracle", False)))
    result.config.update(
        {
            "world_model_kind": (
                component_name(world) if "world_model" in custom else cfg.world_model
            ),
            "progress": component_name(twist) if "twist" in custom else cfg.progress,
            "proposal_kind": (
                component_name(planner.proposal) if "proposal" in custom else cfg.proposal
            ),
            "custom": list(custom),
            "oracle": oracle,
        }
    )
    if cfg.world_model_path is not None and "world_model" not in custom:
        result.config["world_model_path"] = cfg.world_model_path
    if simulated:
        result.config["clones"] = world.clones
    if cfg.rollouts:
        result.config.update(
            {
                "rollouts": cfg.rollouts,
                "rollout_steps": cfg.rollout_steps,
                "rollout_discount": cfg.rollout_discount,
                "rollout_policy": cfg.rollout_policy,
            }
        )
        env_part = dict(getattr(twist, "parts", ())).get("env")
        if env_part is not None:
            result.config["rollout_env_steps"] = env_part.rollout_env_steps
    if hasattr(twist, "informative"):
        result.config["informative"] = "+".join(twist.informative())
    return result


def plan_text(
    task: str,
    memory: KnowledgeGraph | None,
    admissible_actions: Sequence[str],
    lm: LanguageModel | None = None,
    *,
    observation: str = "",
    key: Any = 0,
    config: PlannerConfig | None = None,
    retrieval: Retrieval | None = None,
    simulator: Any = None,
    seen: Seen | None = None,
    extractor: str | Callable = "llm",
    env_kind: GameRules | str = "auto",
    shortlist: Callable[[list[str]], list[str]] | None = None,
    proposer: Any = None,
    observation_model: Any = None,
    progress_model: Any = None,
    llm_extractor: Any = None,
    proposal: str | Proposal | None = None,
    world_model: str | WorldModel | None = None,
    twist: Twist | None = None,
    **options: Any,
) -> PlanResult:
    r"""Plan the next action of a text agent by imagining N futures H steps ahead
    (:func:`build_text_planner`, then :func:`run_text_planner` with ``key``).

    ``task``: the task text; ``memory``: the agent's :class:`~smcplan.memory.KnowledgeGraph`
    (never modified: each particle works on a copy) or ``None``; ``admissible_actions``: the
    current valid actions (the result's ``action`` is one of them); ``observation``: the current
    real observation.  ``config``: a :class:`~smcplan.planning.config.PlannerConfig` (N, H,
    :math:`\lambda`, weighting, resampling, ESS threshold, choice, tie-break, ``world_model``,
    ``progress``, ``proposal``); its fields may also be given as keywords (``num_particles=8``),
    which override ``config``.  ``retrieval``: the particles' graph retrieval
    (:class:`~smcplan.planning.config.Retrieval`).

    * ``world_model="lm"``: observations predicted by the model (``observation_model``);
      ``"learned"``: by the fine-tuned model at ``world_model_path`` (same role and prompt;
      :mod:`smcplan.planning.learned`);
      ``"simulator"``: each particle steps its own copy made by ``simulator`` (a clone factory,
      e.g. ``env.clone``; an **oracle**, :mod:`smcplan.planning.simulator`); or your own
      ``world_model(key, particles, actions, t, horizon) -> Transition``.
    * ``progress``: ``"lm"`` (the model's Yes/No judge, seeing the particle's retrieved graph and
      new triplets), ``"env"`` (score gain, won, lost; simulator only), ``"rlvmr"`` (RLVMR's
      verifiable rules), ``"novelty"`` (new places and entities), or a ``+``-sum
      (:mod:`smcplan.planning.progress`); ``twist``, your own
      ``twist(key, particles, t, horizon) -> Score``, replaces it.  ``rollouts=M``
      adds to ``env`` a Monte Carlo leaf value at step H (M uniform rollouts of at most
      ``rollout_steps`` on clones of each particle's environment, discounted by
      ``rollout_discount``; ``rollout_policy="untried"``: no action twice in the same state while
      others are untried; simulator only).  ``seen``: what
      the episode has already seen (places, entities, actions), for novelty and rlvmr.
      ``env_kind``: the game's home (a :class:`smcplan.games.GameRules`, or the env name that
      :func:`smcplan.games.rules_for` resolves; ``"auto"``: every text home's rules), which
      reads the observations for the rule extractor and the rule-based twists.
    * ``proposal``: ``"lm"`` (``proposer``, default :class:`~smcplan.llm.ActionProposal` at
      temperature 1) or ``"uniform"`` (LLM-free); each particle proposes over its own admissible
      actions (``shortlist`` cuts a simulator particle's set as the agent's own shortlist does);
      or your own ``proposal(key, particles, t, horizon) -> Proposed``.

    Your own components are plain functions or objects with ``__call__``, each called once per
    step with the whole batch of :class:`TextParticle` s; :mod:`smcplan.planning.custom` states
    what each gets and returns and how its ``log_q``, ``log_p`` and ``log_psi`` enter the
    weight :math:`w_t = p\,\psi_t / (q\,\psi_{t-1})` under ``weighting="twisted"``; a
    value that is neither a built-in name nor such a callable raises
    :class:`~smcplan.planning.components.ComponentError`.  ``result.config`` names what ran
    (``proposal_kind``, ``world_model_kind``, ``progress``: the built-in's name or your
    component's).

    ``lm``: the :class:`smcplan.llm.LanguageModel` the default roles are built on; ``extractor``
    reads each imagined observation into the particle's graph copy (:class:`GraphUpdate`).
    """
    planner = build_text_planner(
        task,
        memory,
        admissible_actions,
        lm,
        observation=observation,
        config=config,
        retrieval=retrieval,
        simulator=simulator,
        seen=seen,
        extractor=extractor,
        env_kind=env_kind,
        shortlist=shortlist,
        proposer=proposer,
        observation_model=observation_model,
        progress_model=progress_model,
        llm_extractor=llm_extractor,
        proposal=proposal,
        world_model=world_model,
        twist=twist,
        **options,
    )
    return run_text_planner(planner, key)


def _value_model(cfg: PlannerConfig, names: Sequence[str], lm: Any) -> Any:
    """The ``learned`` twist's value model on ``lm`` (``None`` when no part is ``learned``)."""
    if "learned" not in names:
        return None
    from smcplan.planning.learned import learned_value_model

    return learned_value_model(cfg.value_head, lm)
