r"""The text planner as one object, built once: :class:`TextPlannerRoles` resolves the settings
(a :class:`~smcplan.planning.config.PlannerConfig`, checked when it was made, and the checks
that tie the settings to the roles: a simulator for the oracle, a world model that serves the
``env`` twist, no leaf value beside the user's twist) and builds the roles the settings use
(:class:`smcplan.llm.ActionProposal`, :class:`smcplan.llm.ObservationModel` or the learned world
model, :class:`smcplan.llm.ProgressModel`, the ``learned`` twist's value model, the LLM triplet
extractor) once; :meth:`TextPlannerRoles.plan` then plans one decision.

One decision is two steps, as blackjax separates building a kernel from running
``init``/``step``: :meth:`TextPlannerRoles.build` checks the decision's inputs (task, graph,
admissible actions) and makes the three components of one planning step of particle :math:`i`,

.. math:: a^i_t \sim q(\cdot \mid x^i_{<t}), \qquad
   o^i_t, G^i_t \sim p(\cdot \mid x^i_{<t}, a^i_t), \qquad
   \delta^i_t, \log\psi^i_t = \mathrm{twist}(x^i_{\le t}),

(:class:`~smcplan.planning.text_roles.LMProposal` or
:class:`~smcplan.planning.simulator.UniformTextProposal`;
:class:`~smcplan.planning.text_roles.LMWorldModel` or
:class:`~smcplan.planning.simulator.SimulatorWorldModel`, each updating the particle's graph by
:class:`~smcplan.planning.graph_update.GraphUpdate`; :func:`smcplan.planning.progress.
make_progress`; or the user's own, wrapped by :mod:`smcplan.planning.custom`) around the
decision's task and admissible set, with N copies of the root particle, as a
:class:`TextPlanner`: nothing drawn, no model called, no environment copied.  :func:`run_planner`
runs :func:`~smcplan.planning.tsmc.tsmc` on it with a key, closes the simulator's copies and
records in ``result.config`` what ran.

``smcplan.plan(task, ...)``, :func:`~smcplan.planning.text_components.plan_text`,
:func:`~smcplan.planning.text_components.build_text_planner` /
:func:`~smcplan.planning.text_components.run_text_planner` and the agents'
:class:`~smcplan.agents.slow_thinking.SlowThinker` all call this object.

Imports ``smcplan.memory`` and, lazily (only when it builds the default roles),
``smcplan.llm``; never agents, eval or cli.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from smcplan.games import GameRules
from smcplan.memory import KnowledgeGraph
from smcplan.planning.checks import component_name
from smcplan.planning.components import PlanningError, Proposal, Twist, WorldModel
from smcplan.planning.config import PlannerConfig, Retrieval, WorldModelKind, parse_progress
from smcplan.planning.custom import own_components, wrap_component
from smcplan.planning.graph_update import EXTRACTORS, GraphUpdate
from smcplan.planning.map_replies import MapReplies
from smcplan.planning.result import PlanResult
from smcplan.planning.seen import Seen
from smcplan.planning.text_particle import TextParticle
from smcplan.planning.text_roles import LMProposal, LMWorldModel
from smcplan.planning.tsmc import tsmc

__all__ = ["TextPlannerRoles", "TextPlanner", "run_planner", "check_inputs"]


@dataclass(frozen=True)
class TextPlanner:
    """One decision's planner, built and ready to run (:meth:`TextPlannerRoles.build`):
    ``particles``, the N root particles (a tuple of copies of one :class:`TextParticle`: the
    agent's graph, the real observation and score; :func:`tsmc` takes it as it is);
    ``proposal``, ``world_model``, ``twist``, the components :func:`tsmc` calls (the user's own
    ones wrapped in the checks of :mod:`smcplan.planning.custom`); ``config``, the validated
    :class:`PlannerConfig` (N, H, weighting, ...); ``simulated``, True under the built-in
    simulator world model (whose copies :func:`run_planner` closes); ``custom``, the roles the
    user supplied (``"proposal"``, ``"world_model"``, ``"twist"``).  It runs once: the twist and
    the simulator world model count what that run did (``result.config``), so a second run
    raises; build another for the next plan."""

    particles: tuple[TextParticle, ...]
    proposal: Proposal
    world_model: WorldModel
    twist: Twist
    config: PlannerConfig
    simulated: bool
    custom: tuple[str, ...] = ()
    _runs: list = field(default_factory=list, init=False, repr=False, compare=False)


def check_inputs(task: Any, memory: Any, admissible_actions: Any) -> list[str]:
    """One decision's inputs checked (a :class:`PlanningError` naming the bad one); returns the
    admissible actions as a list of strings."""
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
    return admissible


class TextPlannerRoles:
    r"""The text planner built once (per agent, or per :func:`plan_text` call): the settings
    resolved and checked, the roles built.

    ``lm``: the :class:`smcplan.llm.LanguageModel` the default roles are built on (only those
    the settings use); ``config``: a :class:`PlannerConfig` or a mapping of its fields, whose
    fields may also be given as keywords (``num_particles=8``, overriding it); ``retrieval``:
    the particles' graph retrieval; ``extractor`` (``"llm" | "rule" | "none"`` or a callable)
    and ``env_kind`` (the game's home) read the imagined observations; ``simulator``: the clone
    factory of ``world_model="simulator"`` (``simulator_later=True``: it comes with each
    decision, as an agent's harness attaches it after the agent is made); ``shortlist``: the
    agent's shortlist for simulator particles.  The built-in roles may be given
    (``proposer``, ``observation_model``, ``progress_model``, ``llm_extractor``), and any of the
    three components may be the user's own (``proposal``, ``world_model``, ``twist``:
    :mod:`smcplan.planning.custom`).  Every bad value raises :class:`PlanningError` here, before
    any decision; :meth:`plan` (or :meth:`build` then :func:`run_planner`) plans one."""

    def __init__(
        self,
        lm: Any = None,
        *,
        config: PlannerConfig | None = None,
        retrieval: Retrieval | None = None,
        extractor: str | Callable = "llm",
        env_kind: GameRules | str = "auto",
        simulator: Any = None,
        simulator_later: bool = False,
        shortlist: Callable[[list[str]], list[str]] | None = None,
        proposer: Any = None,
        observation_model: Any = None,
        progress_model: Any = None,
        llm_extractor: Any = None,
        proposal: str | Proposal | None = None,
        world_model: str | WorldModel | None = None,
        twist: Twist | None = None,
        **options: Any,
    ) -> None:
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
        _check_extractor(extractor)
        simulated = cfg.oracle and not own_world
        if simulated and not simulator_later:
            _check_simulator(simulator)
        names = parse_progress(cfg.progress)
        if "twist" in custom and cfg.rollouts:
            raise PlanningError(
                f"rollouts={cfg.rollouts} is the built-in 'env' twist's leaf value; "
                "twist= replaces that twist (set rollouts=0)"
            )
        learned_world = (
            not simulated and not own_world and cfg.world_model is WorldModelKind.LEARNED
        )
        if "twist" not in custom and "env" in names and not simulated and not own_world:
            from smcplan.planning.learned import serves_env_twist

            if not (learned_world and serves_env_twist(cfg.world_model_path, observation_model)):
                raise PlanningError(
                    "progress 'env' reads the score from the simulator; it needs world_model="
                    "'simulator' (or your own world model that sets each step's Outcome, or "
                    "world_model='learned' with a model trained with targets "
                    '["observation","reward","done"])'
                )

        # The language-model roles not given, built on lm= (the extractor's, which only a
        # decision with a graph uses, when the first such decision is built).
        wants_lm_progress = "twist" not in custom and "lm" in names
        lm_proposal = cfg.proposal == "lm" and "proposal" not in custom
        lm_world = not simulated and not own_world
        if learned_world and observation_model is None:
            from smcplan.planning.learned import learned_observation_model

            observation_model = learned_observation_model(
                cfg.world_model_path, cfg.observation_tokens, like=lm,
                temperature=cfg.observation_temperature,
            )  # fmt: skip
        if (
            (lm_proposal and proposer is None)
            or (lm_world and observation_model is None)
            or (wants_lm_progress and progress_model is None)
        ):
            _need_lm(lm)
            from smcplan.llm import ActionProposal, ObservationModel, ProgressModel

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
        value_model = None
        if "twist" not in custom and "learned" in names:
            from smcplan.planning.learned import learned_value_model

            value_model = learned_value_model(cfg.value_head, lm)

        self.lm, self.config, self.retrieval = lm, cfg, retrieval
        self.extractor, self.env_kind, self.shortlist = extractor, env_kind, shortlist
        self.simulator = simulator
        self.simulated, self.custom = simulated, custom
        self.proposer, self.observation_model = proposer, observation_model
        self.progress_model, self.llm_extractor, self.value_model = (
            progress_model,
            llm_extractor,
            value_model,
        )
        self._lm_proposal, self._lm_world = lm_proposal, lm_world

    def build(
        self,
        task: str,
        memory: KnowledgeGraph | None,
        admissible_actions: Sequence[str],
        *,
        observation: str = "",
        seen: Seen | None = None,
        simulator: Any = None,
        extractor: str | Callable | None = None,
        env_kind: GameRules | str | None = None,
    ) -> TextPlanner:
        """One decision's :class:`TextPlanner` (inputs checked; nothing drawn, no model called,
        no environment copy made).  ``simulator``, ``extractor`` and ``env_kind`` replace the
        ones given when this object was made, for this decision."""
        admissible = check_inputs(task, memory, admissible_actions)
        return self._build(
            task, memory, admissible, observation, seen, simulator, extractor, env_kind
        )

    def _build(
        self,
        task: str,
        memory: KnowledgeGraph | None,
        admissible: list[str],
        observation: str = "",
        seen: Seen | None = None,
        simulator: Any = None,
        extractor: str | Callable | None = None,
        env_kind: GameRules | str | None = None,
    ) -> TextPlanner:
        from smcplan.planning.progress import make_progress
        from smcplan.planning.simulator import SimulatorWorldModel, UniformTextProposal

        cfg, custom = self.config, self.custom
        extractor = self.extractor if extractor is None else extractor
        env_kind = self.env_kind if env_kind is None else env_kind
        _check_extractor(extractor)
        simulator = self.simulator if simulator is None else simulator
        if self.simulated:
            _check_simulator(simulator)
        llm_extractor = self.llm_extractor
        if extractor == "llm" and memory is not None and "world_model" not in custom:
            if llm_extractor is None:
                _need_lm(self.lm)
                from smcplan.llm import TripletExtractor

                llm_extractor = self.llm_extractor = TripletExtractor(self.lm)
        graphs = GraphUpdate(extractor if memory is not None else "none", llm_extractor, env_kind)
        if "twist" in custom:
            twister: Twist = wrap_component("twist", custom["twist"])
        else:
            twister = make_progress(
                cfg.progress,
                task=task,
                seen=seen,
                progress_model=self.progress_model,
                retrieval=self.retrieval,
                env_kind=env_kind,
                rollouts=cfg.rollouts,
                rollout_steps=cfg.rollout_steps,
                rollout_discount=cfg.rollout_discount,
                rollout_policy=cfg.rollout_policy,
                value_model=self.value_model,
            )
        if "world_model" in custom:
            world: WorldModel = wrap_component("world_model", custom["world_model"])
        elif self.simulated:
            world = SimulatorWorldModel(simulator, update_graphs=graphs, shortlist=self.shortlist)
        else:
            replies = MapReplies((seen or Seen()).layout, env_kind)  # the map's replies, once
            world = LMWorldModel(
                self.observation_model, task, graphs, admissible, self.retrieval, replies
            )
        if "proposal" in custom:
            proposer: Proposal = wrap_component("proposal", custom["proposal"], admissible)
        elif self._lm_proposal:
            proposer = LMProposal(self.proposer, task, admissible, self.retrieval)
        else:
            proposer = UniformTextProposal(admissible)
        root = TextParticle(
            kg=memory,
            root_observation=str(observation),
            admissible=tuple(admissible),
            root_score=float(seen.score) if seen is not None else 0.0,
        )
        n = cfg.particles_per_action * len(admissible) or cfg.num_particles
        return TextPlanner(
            (root,) * n, proposer, world, twister, cfg, self.simulated, tuple(custom)
        )

    def plan(
        self,
        task: str,
        memory: KnowledgeGraph | None,
        admissible_actions: Sequence[str],
        *,
        observation: str = "",
        key: Any = 0,
        seen: Seen | None = None,
        simulator: Any = None,
        extractor: str | Callable | None = None,
        env_kind: GameRules | str | None = None,
    ) -> PlanResult:
        """Plan one decision: :meth:`build`, then :func:`run_planner` with ``key`` (a
        ``jax.random`` key or an int seed)."""
        built = self.build(
            task,
            memory,
            admissible_actions,
            observation=observation,
            seen=seen,
            simulator=simulator,
            extractor=extractor,
            env_kind=env_kind,
        )
        return run_planner(built, key)


def run_planner(planner: TextPlanner, key: Any = 0) -> PlanResult:
    """Run :func:`tsmc` on a built planner with ``key`` (a ``jax.random`` key or an int seed),
    close the simulator world model's environment copies (also when a component raises), and
    record in ``result.config`` what ran: ``world_model_kind``, ``progress`` and
    ``proposal_kind`` (the built-in's name, or the user's component's name: a function's
    ``__name__``, an object's class name), ``custom`` (the roles the user supplied), ``oracle``
    (the simulator world model, or a user's world model with ``oracle = True``), and where they
    apply the learned model's path, the LM or learned world model's ``observation_temperature``,
    ``particles_per_action``, the clones made, the rollout settings and environment steps, and
    the twist parts that told particles apart (``informative``)."""
    from smcplan.planning.batch import as_key

    if planner._runs:
        raise PlanningError(
            "this TextPlanner has already run (its twist and world model keep that run's "
            "counts); build another with build_text_planner"
        )
    key = as_key(key)
    planner._runs.append(True)
    cfg, twist, world = planner.config, planner.twist, planner.world_model
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
        if planner.simulated:
            world.close()
    custom = planner.custom
    oracle = planner.simulated or (
        "world_model" in custom and bool(getattr(world, "oracle", False))
    )
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
    if not planner.simulated and "world_model" not in custom:
        result.config["observation_temperature"] = float(cfg.observation_temperature)
    if cfg.particles_per_action and "proposal" not in custom:
        result.config["particles_per_action"] = cfg.particles_per_action
    if planner.simulated:
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


def _check_extractor(extractor: Any) -> None:
    if isinstance(extractor, str) and extractor not in EXTRACTORS:
        raise PlanningError(
            f"unknown extractor {extractor!r}; known: {', '.join(EXTRACTORS)}, or a callable"
        )


def _check_simulator(simulator: Any) -> None:
    from smcplan.planning.simulator import check_clone_factory

    if simulator is None:
        raise PlanningError(
            "world_model='simulator' needs simulator= a clone factory "
            "(e.g. env.clone of the real environment)"
        )
    check_clone_factory(simulator)


def _need_lm(lm: Any) -> None:
    if lm is None:
        raise PlanningError(
            "plan(task, memory, admissible_actions) needs lm= "
            "(a smcplan.llm.LanguageModel) or all roles given"
        )
