r"""The text planner's functional entry points, thin callers of
:class:`~smcplan.planning.text_planner.TextPlannerRoles` (the planner built once: settings
resolved, roles built): :func:`build_text_planner` (one decision's
:class:`~smcplan.planning.text_planner.TextPlanner`: inputs checked, components built, nothing
drawn), :func:`run_text_planner` (:func:`~smcplan.planning.tsmc.tsmc` on it with a key) and
:func:`plan_text`, both at once: ``plan(task, memory, admissible_actions, lm=...)``.

Any of the three components may be the user's own callable (``proposal=``, ``world_model=``,
``twist=``), checked once and at every call by the wrappers of :mod:`smcplan.planning.custom`,
which states the calls and how their log-probabilities enter the weight.

Imports ``smcplan.memory`` and, lazily (only when the default roles are built),
``smcplan.llm``; never agents, eval or cli.  The toy POMDP path never needs this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from smcplan.games import GameRules
from smcplan.memory import KnowledgeGraph
from smcplan.planning.components import Proposal, Twist, WorldModel
from smcplan.planning.config import PlannerConfig, Retrieval, plan_text_config
from smcplan.planning.result import PlanResult
from smcplan.planning.seen import Seen
from smcplan.planning.text_planner import (
    TextPlanner,
    TextPlannerRoles,
    check_inputs,
    run_planner,
)

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["TextPlanner", "TextPlannerRoles", "build_text_planner", "run_text_planner", "plan_text"]


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
    extractor: str | Callable = "rule",
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
    drawn, no model is called and no environment copy is made): the inputs checked, then
    :class:`TextPlannerRoles` made with the settings and roles, then its
    :meth:`~TextPlannerRoles.build`.  The parameters are those of :func:`plan_text` but
    ``key``; the same inputs raise the same :class:`PlanningError`."""
    admissible = check_inputs(task, memory, admissible_actions)
    if config is None:  # plan()'s text defaults, under the caller's options
        config = plan_text_config(options, proposal=proposal, world_model=world_model)
        options = {}
    roles = TextPlannerRoles(
        lm,
        config=config,
        retrieval=retrieval,
        extractor=extractor,
        env_kind=env_kind,
        simulator=simulator,
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
    return roles._build(task, memory, admissible, observation, seen)


def run_text_planner(planner: TextPlanner, key: Any = 0) -> PlanResult:
    """Run :func:`tsmc` on a built planner with ``key``
    (:func:`smcplan.planning.text_planner.run_planner`, which says what ``result.config``
    records)."""
    return run_planner(planner, key)


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
    extractor: str | Callable = "rule",
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
    which override ``config``.  Without ``config`` the settings are plan()'s text defaults,
    :data:`~smcplan.planning.config.PLAN_TEXT_DEFAULTS`, under the keywords given
    (:func:`~smcplan.planning.config.plan_text_config`): the best configuration without an
    oracle measured so far, the shipped learned world model ``"twx-coin-world-model"``
    imagining every admissible action once (``particles_per_action=1``: N = :math:`|A|`;
    ``horizon=1``; ``observation_temperature=0``), ``progress="task+novelty"``,
    ``choice="max_weight"``, ``proposal="uniform"``; no ``lm`` is needed (docs/planning.md,
    "plan()'s text defaults", says what each costs per step).  ``retrieval``: the particles'
    graph retrieval (:class:`~smcplan.planning.config.Retrieval`).

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

    ``lm``: the :class:`smcplan.llm.LanguageModel` the ``"lm"`` roles are built on; ``extractor``
    reads each imagined observation into the particle's graph copy (:class:`GraphUpdate`):
    ``"rule"`` (the default: the game's home's templates), ``"llm"`` (the LLM triplet
    extractor on ``lm``), ``"none"`` or a callable.
    """
    return run_text_planner(
        build_text_planner(
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
        ),
        key,
    )
