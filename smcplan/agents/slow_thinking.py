r"""NeSyFS slow thinking: the planner's text entry point, sized and wired for the agents.

NeSyFS plans with the text planner that ``smcplan.plan(task, memory, admissible, ...)`` also
calls (:class:`smcplan.planning.text_planner.TextPlannerRoles`): N particles, each a copy of the
agent's belief graph plus imagined (action, observation) steps, are propagated H steps with **one
batched call per role for all particles**, reweighted (``weighting="nesyfs"``:
:math:`\omega \leftarrow \omega e^{\lambda\delta}`; ``"twisted"``: properly weighted twisted SMC)
and resampled; the first action of a surviving particle is executed. :class:`SlowThinker` fixes
the settings once per agent (a :class:`~smcplan.planning.PlannerConfig` and a
:class:`~smcplan.planning.Retrieval`), builds the planner and its roles once, and hands it the
agent's own triplet extractor (so imagined observations are read the way real ones are), the game's
home the extractor resolved (:func:`~smcplan.agents.extractors.game_rules`), what the
episode has seen (:class:`~smcplan.planning.progress.Seen`, for the novelty and rlvmr twists)
and, with ``world_model="simulator"``, the clone factory the harness gave the agent (an oracle
world model); ``world_model="learned"`` loads the trained model at ``world_model_path`` once
(:mod:`smcplan.planning.learned`) for the observation role.

Without a graph (the ``context="history"`` / ``"belief"`` ablations) the particles carry the
current observation and their imagined steps only.

When the planner runs is one of :data:`SLOW_THINKING` (:func:`slow_thinking_mode`).
:func:`summarize` turns a :class:`~smcplan.planning.PlanResult` into the step record's
``meta["plan"]`` (schema: :mod:`smcplan.agents.record`), trace included.

Imports ``smcplan.planning`` and (lazily) ``smcplan.llm``; never ``smcplan.eval`` /
``smcplan.cli``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from smcplan.agents.context import Context, clip_text
from smcplan.agents.extractors import Extractor, game_rules
from smcplan.memory import KnowledgeGraph
from smcplan.planning import PlannerConfig, PlanningError, PlanResult, Retrieval
from smcplan.planning.config import WorldModelKind
from smcplan.planning.progress import Seen
from smcplan.planning.text_planner import TextPlannerRoles

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = [
    "SlowThinker",
    "summarize",
    "first_action_line",
    "imagined_lines",
    "SLOW_THINKING",
    "PLAN_SKIPS",
    "slow_thinking_mode",
]

#: When the planner runs (:mod:`smcplan.agents.nesyfs`'s docstring).
SLOW_THINKING = ("after_rejections", "always", "never")
#: What the slow thinker may not choose (``NeSyFSAgent``'s ``plan_skips``).
PLAN_SKIPS = ("loops", "rejected", "none")


def slow_thinking_mode(value: Any) -> str:
    """``True`` -> ``"after_rejections"``, ``False`` -> ``"never"``; a name is checked."""
    if value is True:
        return "after_rejections"
    if value is False:
        return "never"
    if value not in SLOW_THINKING:
        raise ValueError(
            f"unknown slow_thinking {value!r}; known: {', '.join(SLOW_THINKING)} (or True/False)"
        )
    return str(value)


class SlowThinker:
    r"""The agent's text planner: a :class:`~smcplan.planning.text_planner.TextPlannerRoles`
    made once (settings resolved, roles built) and called with the agent's state; returns its
    :class:`~smcplan.planning.PlanResult`.

    ``config``: the :class:`~smcplan.planning.PlannerConfig` (its fields may also be given as
    keywords, e.g. ``num_particles=3``, overriding it); ``retrieval``: the particles' graph
    retrieval.  Roles default to :class:`smcplan.llm.ActionProposal` (no thought, temperature
    1: particles diversify), :class:`smcplan.llm.ObservationModel` and
    :class:`smcplan.llm.ProgressModel` on ``lm``, built only when the configuration uses them;
    pass ``proposer``, ``observation_model`` or ``progress_model`` to replace them.
    ``simulator``: the clone factory (``world_model="simulator"``; also settable later with
    :meth:`attach_simulator`); ``shortlist``: the agent's action shortlist for simulator particles.
    """

    def __init__(
        self,
        lm: LanguageModel,
        *,
        config: PlannerConfig | None = None,
        retrieval: Retrieval | None = None,
        proposer: Any = None,
        observation_model: Any = None,
        progress_model: Any = None,
        simulator: Callable[[], Any] | None = None,
        shortlist: Callable[[list[str]], list[str]] | None = None,
        **options: Any,
    ) -> None:
        self.planner = TextPlannerRoles(
            lm,
            config=config,
            retrieval=retrieval,
            simulator_later=True,
            shortlist=shortlist,
            proposer=proposer,
            observation_model=observation_model,
            progress_model=progress_model,
            **options,
        )
        self.simulator = simulator

    @property
    def config(self) -> PlannerConfig:
        return self.planner.config

    @property
    def retrieval(self) -> Retrieval:
        return self.planner.retrieval

    @property
    def lm(self) -> Any:
        return self.planner.lm

    @property
    def proposer(self) -> Any:
        return self.planner.proposer

    @property
    def observation_model(self) -> Any:
        return self.planner.observation_model

    @property
    def progress_model(self) -> Any:
        return self.planner.progress_model

    @property
    def twist_name(self) -> str:
        return self.config.progress

    def attach_simulator(self, factory: Callable[[], Any] | None) -> None:
        """Use ``factory`` (a clone factory of the real environment) as the world model."""
        self.simulator = factory

    def __call__(
        self,
        ctx: Context,
        kg: KnowledgeGraph | None,
        admissible: Sequence[str],
        seed: int,
        extractor: Extractor | None = None,
        seen: Seen | None = None,
    ) -> PlanResult:
        """Plan from the real observation ``ctx.observation`` and ``kg`` (the agent's graph,
        copied per particle, never written); ``extractor`` reads the imagined observations
        (``None``: the particles' graphs are not updated); ``seen``: the episode so far."""
        if self.config.oracle and self.simulator is None:
            raise PlanningError(
                "world_model='simulator' but no clone factory was attached: the eval harness "
                "attaches one (smcplan eval ... --agent-arg world_model=simulator); by hand call "
                "agent.attach_simulator(env.clone)"
            )
        return self.planner.plan(
            ctx.task,
            kg,
            list(admissible),
            observation=ctx.observation,
            key=int(seed),
            seen=seen,
            simulator=self.simulator,
            extractor=extractor if extractor is not None else "none",
            env_kind=game_rules(extractor),
        )


def first_action_line(summary: dict[str, Any], limit: int = 4) -> str:
    """``"'open door to north' 0.62, 'move west' 0.25"``: the particles' first actions by weight."""
    mass = sorted(summary.get("action_mass", {}).items(), key=lambda kv: -kv[1])[:limit]
    return ", ".join(f"'{a}' {m:.2f}" for a, m in mass)


def imagined_lines(summary: dict[str, Any], limit: int = 6, max_chars: int = 72) -> list[str]:
    r"""What the world model imagined each first action returns, one line per action, by the
    normalised weight :math:`W^{(i)} = w^{(i)} / \sum_j w^{(j)}` of the particle that took it
    after the first step (the heaviest such particle when several did), heaviest first:
    ``"'move south' -> "You are in the bathroom." (weight 0.41)"``.  Empty without a trace."""
    steps = (summary.get("trace") or {}).get("steps") or []
    if not steps:
        return []
    first = steps[0]
    total = sum(first["weights"]) or 1.0
    best: dict[str, tuple[str, float]] = {}
    for action, obs, weight in zip(first["actions"], first["observations"], first["weights"]):
        if action not in best or weight > best[action][1]:
            best[action] = (obs, weight)
    rows = sorted(best.items(), key=lambda kv: -kv[1][1])[:limit]
    return [
        f"'{a}' -> \"{clip_text(' '.join(str(o).split()), max_chars)}\" (weight {w / total:.2f})"
        for a, (o, w) in rows
    ]


def summarize(result: PlanResult, max_chars: int = 160) -> dict[str, Any]:
    """``meta["plan"]`` of a step record (schema in :mod:`smcplan.agents.record`):
    ``result.to_dict()`` plus ``world_model``, ``oracle``, ``twist``, ``decided_by`` (the twist
    parts whose progress differed between particles, or ``"tie-break: proposal"``), the chosen
    particle's imagined steps and the full ``trace``."""
    out = result.to_dict()
    cfg = result.config
    world = cfg.get("world_model_kind", WorldModelKind.LM)
    out["world_model"] = world
    out["oracle"] = bool(cfg.get("oracle", WorldModelKind(world).oracle))
    out["twist"] = cfg.get("progress", cfg.get("twist"))
    out["degenerate"] = bool(result.degenerate)
    out["tie_break"] = result.tie_break
    if result.tie_break is not None:
        out["decided_by"] = f"tie-break: {result.tie_break}"
    elif "informative" in cfg:
        out["decided_by"] = (
            cfg["informative"] or "sampling (the twist gave all particles the same progress)"
        )
    else:
        out["decided_by"] = str(out["twist"])
    j = result.chosen_index
    if j is not None and isinstance(result.particles, list):
        steps = getattr(result.particles[j], "steps", ())
        out["imagined"] = [{"action": a, "observation": clip_text(o, max_chars)} for a, o in steps]
    out["trace"] = result.trace(obs_chars=max_chars)
    return out
