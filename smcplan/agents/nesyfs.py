r"""NeSyFS (arXiv 2607.28942): a KG belief, a fast module checked by reflection, and slow thinking.

One step, as in DESIGN.md ("Data flow of one NeSyFS step"):

1. **belief** — the observation's triplets update the graph, G_t = Update(G_{t-1}, o_t, a_{t-1})
   (LLM or rule-based extraction; :class:`~smcplan.agents.beliefs.KGBelief`), and the task
   retrieval tau_t = R(G_t, eta) gives the facts every module sees;
2. **fast** — a_t ~ q(a | eta, tau_t, o_t) over the admissible actions
   (:class:`smcplan.llm.ActionProposal`: exact log-prob scoring, temperature 1 by default);
3. **reflection** — n = 5 sampled verdicts on a_t; accept iff at least 80 % say Yes
   (:class:`smcplan.llm.Reflection`). On "No" the reflection's thought goes back to the fast
   module as a note ('"a" was rejected: <thought>') and it proposes again (by default among the
   actions not yet rejected this step, ``exclude_rejected``);
4. **slow thinking** — after K = 3 rejections, :class:`~smcplan.agents.slow_thinking.SlowThinker`
   runs ``smcplan.plan(task, kg, admissible, ...)`` (a :class:`~smcplan.planning.PlannerConfig`:
   N particles, horizon H, λ, weighting, world model, progress twist; each particle with its own
   copy of the graph updated by the agent's extractor) and the agent executes its first action.

Slow-thinking options (fixed names, DESIGN.md; also ``smcplan eval --agent-arg KEY=VALUE``):

* ``slow_thinking="after_rejections"`` (default: plan after K rejections), ``"always"`` (plan
  every step, no fast module and no reflection: the paper's "removing reflection" ablation) or
  ``"never"`` (after K rejections execute the rejected proposal with the highest yes-fraction,
  ``executed="fallback"``).  For compatibility ``True`` means ``"after_rejections"`` and
  ``False`` means ``"never"``.
* ``world_model="lm"`` (the model predicts observations) or ``"simulator"`` (each particle steps
  its own ``clone()`` of the environment, which the eval harness hands over through
  :meth:`NeSyFSAgent.attach_simulator`: an **oracle** world model, labelled so in run configs and
  report rows), or ``"learned"`` with ``world_model_path=DIR/adapter`` (a model fine-tuned on
  environment transitions by ``smcplan train world-model``; not an oracle).
* ``progress="lm" | "env" | "rlvmr" | "novelty" | "untried" | "task" | "learned"`` or a
  ``+``-sum such as ``"env+novelty"`` (:mod:`smcplan.planning.progress`);
  ``proposal="lm" | "uniform"`` (``planner.proposal``; earlier ``plan_proposal``);
  ``tie_break``.  Each is a field of
  :class:`~smcplan.planning.PlannerConfig`, also reachable as ``planner.<field>``.

Other ablations: ``context="history"`` (the trajectory instead of the KG), ``context="belief"``
(an ABBEL-style language belief summary instead of the KG), ``reflection=False`` (execute the
fast action).

Defaults are sized for SmolLM2-135M on 2 CPU cores (:class:`~smcplan.planning.PlannerConfig`:
N = 4, H = 2, 32-token predicted observations; 32-token reflection answers, rule-based
extraction where the benchmark format is known); the paper's values are N, H and λ as
configured by the user.

Imports the agents' shared parts and, lazily, ``smcplan.llm``; never ``smcplan.eval`` /
``smcplan.cli``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from smcplan.agents.beliefs import KGBelief
from smcplan.agents.context import Context
from smcplan.agents.extractors import game_rules
from smcplan.agents.llm_agent import Candidate, Decision, Judgement, LLMAgent
from smcplan.agents.loop_guard import LoopGuard, PlanFollower, place_key
from smcplan.agents.record import StepRecord
from smcplan.agents.settings import resolve_settings
from smcplan.agents.slow_thinking import (
    PLAN_SKIPS,
    SLOW_THINKING,
    SlowThinker,
    first_action_line,
    imagined_lines,
    slow_thinking_mode,
    summarize,
)
from smcplan.errors import UnknownNameError
from smcplan.llm.settings import ReflectionConfig
from smcplan.planning import PlannerConfig, Retrieval
from smcplan.planning.config import DEFAULT_RETRIEVAL
from smcplan.planning.progress import Seen
from smcplan.planning.simulator import check_clone_factory

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["NeSyFSAgent", "SLOW_THINKING", "PLAN_SKIPS"]


class NeSyFSAgent(LLMAgent):
    """The NeSyFS agent (module docstring).

    Parameters (beyond :class:`~smcplan.agents.llm_agent.LLMAgent`'s)
    ----------------------------------------------------------------
    planner
        The slow thinker's settings: a :class:`~smcplan.planning.PlannerConfig` or a mapping of
        its fields (``--agent-arg planner.num_particles=16``).  Every field may also be given
        flat by its own name (``world_model="simulator"``, ``progress="env"``,
        ``num_particles=8``: the fixed names of DESIGN.md); ``plan_proposal`` is the earlier
        spelling of ``planner.proposal`` and ``planner_config`` of ``planner``
        (:class:`~smcplan.agents.settings`; each setting is checked once, by the dataclass).
    reflection
        A :class:`~smcplan.llm.settings.ReflectionConfig` or a mapping of its fields (n =
        ``samples`` 5, ``threshold`` 0.8, ``temperature`` 1.0, ``tokens`` 32 per answer; a
        thought cut by the budget is kept as cut and its Yes/No is scored by the role);
        ``False`` is the "no reflection" ablation (``enabled=False``).  The earlier spellings
        ``reflection_samples``, ``reflection_threshold``, ``reflection_temperature`` and
        ``reflection_tokens`` still set these fields.
    retrieval
        The particles' graph retrieval, a :class:`~smcplan.planning.Retrieval` or a mapping
        (default: ``kg_hops`` and ``kg_limit``, the agent's own).
    slow_thinking
        When the planner runs (module docstring; default ``"after_rejections"``).
    max_rejections
        K: reflection rejections before slow thinking (3).
    loop_guard
        Off by default (the paper has no such rule).  When on, a fast proposal that repeats an
        executed step (the same action in the same place, as the graph reads the agent's place;
        the same observation text where it reads none) is rejected as a loop without asking
        reflection, and slow thinking runs at once
        (``rec.extra["slow_thinking_reason"] = "loop"``; ``"rejections"`` after K rejections).
        A step that failed (the game's failure or no-op reply, e.g. "You can't move there, the
        door is closed") stops counting as executed once a later step in the same place changes
        something (an observation new to the episode, e.g. the door opened), so the action
        that failed may be tried again.
    follow_plan
        Off by default (the paper executes only the planner's first action).  When on, after a
        slow-thinking call the agent keeps the imagined trajectory of the heaviest final particle
        ``j = argmax_i W^H_i`` among those whose first action was chosen, and on the next
        steps executes its actions ``a^j_2, ..., a^j_H`` without fast thinking for as long
        as each real observation equals the one the particle imagined (exact text; with the
        simulator world model they agree until the plan ends, with the LM world model they
        practically never do, so this changes nothing there).  Such steps are recorded with
        ``rec.executed = "planner"`` and ``rec.extra["slow_thinking_reason"] = "plan"``.
    show_imagined
        On by default: a slow-thinking step's thought also lists, for each first action of the
        particles, what the world model imagined it returns (the oracle: what the game's clone
        returned) and the particle's normalised weight
        (:func:`~smcplan.agents.slow_thinking.imagined_lines`).
    exclude_rejected
        Re-proposals within a step choose among the admissible actions not yet rejected (all of
        them if none is left). The paper feeds back only the reflection's thought; a strong model
        then proposes something else, SmolLM2-135M mostly re-proposes the same action (measured:
        docs/agents.md), so this is on by default; ``False`` gives the paper's plain feedback.
    plan_skips
        Which actions the slow thinker may not hand back as its first action (the particles'
        first actions are drawn from the others; all of them if none is left; the excluded ones
        are recorded as ``rec.extra["plan_excluded"]``): ``"loops"`` (default) — with the loop
        guard on, every action that would repeat an executed step in this place (the guard's own
        rule, so the planner cannot loop where the fast module was stopped); nothing without the
        guard; ``"rejected"`` — those and the actions reflection rejected in this step;
        ``"none"`` — the paper's planner over the whole admissible set.  With the LM world model
        the particles' later imagined steps draw from the same restricted set (filtered by each
        particle's graph); with the simulator from their clones' own sets.
    reflector
        Replaces the reflection role: ``reflector(tasks, contexts, actions, seed=) -> [Verdict]``
        (e.g. a test double that always says No).
    slow_thinker
        Replaces the slow thinker: called as ``slow_thinker(ctx, kg, admissible, seed, extractor=)
        -> PlanResult`` (``ctx``: the step's :class:`~smcplan.agents.context.Context`).
    """

    name = "nesyfs"
    default_context = "kg"

    #: The agent's groups of settings: ``planner=``, ``reflection=``, ``retrieval=`` take an
    #: instance or a mapping of its fields (``--agent-arg planner.num_particles=16``).
    settings_groups: ClassVar[dict[str, type]] = {
        "planner": PlannerConfig,
        "reflection": ReflectionConfig,
        "retrieval": Retrieval,
    }
    #: Flat keys accepted for a field of a group: every :class:`~smcplan.planning.PlannerConfig`
    #: field by its own name (``world_model=simulator`` is ``planner.world_model=simulator``),
    #: and the earlier spellings of this agent's options.
    option_shorthands: ClassVar[dict[str, str]] = {
        **{name: f"planner.{name}" for name in PlannerConfig.field_names()},
        "plan_proposal": "planner.proposal",
        "planner_config": "planner",
        "reflection_samples": "reflection.samples",
        "reflection_threshold": "reflection.threshold",
        "reflection_temperature": "reflection.temperature",
        "reflection_tokens": "reflection.tokens",
    }

    def __init__(
        self,
        lm: LanguageModel | None = None,
        *,
        planner: PlannerConfig | Mapping[str, Any] | None = None,
        reflection: ReflectionConfig | Mapping[str, Any] | bool = True,
        retrieval: Retrieval | Mapping[str, Any] | None = None,
        slow_thinking: str | bool = "after_rejections",
        max_rejections: int = 3,
        exclude_rejected: bool = True,
        plan_skips: str = "loops",
        loop_guard: bool = False,
        follow_plan: bool = False,
        show_imagined: bool = True,
        reflector: Any = None,
        slow_thinker: Any = None,
        temperature: float = 1.0,
        think: bool = False,
        **config: Any,
    ) -> None:
        groups, given, config = resolve_settings(
            type(self),
            {"planner": planner, "reflection": reflection, "retrieval": retrieval},
            config,
        )
        kg_hops = config.get("kg_hops", DEFAULT_RETRIEVAL.hops)
        kg_limit = config.get("kg_limit", DEFAULT_RETRIEVAL.limit)
        super().__init__(lm, temperature=temperature, think=think, **config)
        if (
            isinstance(max_rejections, bool)
            or not isinstance(max_rejections, int)
            or (max_rejections < 1)
        ):
            raise ValueError(f"max_rejections (K) must be an integer >= 1; got {max_rejections!r}")
        self.slow_thinking = slow_thinking_mode(slow_thinking)
        self.reflection_config: ReflectionConfig = groups["reflection"]
        self.use_reflection = self.reflection_config.enabled and self.slow_thinking != "always"
        self.use_slow_thinking = self.slow_thinking != "never"
        self.max_rejections = int(max_rejections)
        self.exclude_rejected = bool(exclude_rejected)
        if plan_skips not in PLAN_SKIPS:
            raise UnknownNameError(
                f"unknown plan_skips {plan_skips!r}; known: {', '.join(PLAN_SKIPS)}"
            )
        self.plan_skips = str(plan_skips)
        self.loop_guard = bool(loop_guard)
        self.follow_plan = bool(follow_plan)
        if not isinstance(show_imagined, bool):
            raise ValueError(f"show_imagined must be true or false; got {show_imagined!r}")
        self.show_imagined = show_imagined
        self._follower = PlanFollower(self.follow_plan)
        self._guard = LoopGuard()
        self._now = ""  # this step's observation, uncut
        if self.use_reflection and reflector is None:
            from smcplan.llm import Reflection

            r = self.reflection_config
            reflector = Reflection(
                lm,
                n=r.samples,
                threshold=r.threshold,
                temperature=r.temperature,
                settings={"max_new_tokens": r.tokens} if r.tokens else None,
            )
        self.reflector = reflector
        self.planner_config: PlannerConfig = groups["planner"]
        # the agent's own KG context (kg_hops, kg_limit) unless retrieval= is given
        self.retrieval: Retrieval = (
            groups["retrieval"] if "retrieval" in given else Retrieval(kg_hops, kg_limit)
        )
        if self.use_slow_thinking and slow_thinker is None:
            slow_thinker = SlowThinker(
                lm,
                config=self.planner_config,
                retrieval=self.retrieval,
                shortlist=self.shown_actions,
            )
        self.slow_thinker = slow_thinker
        world = getattr(getattr(slow_thinker, "observation_model", None), "lm", None)
        if world is not None:
            self.register_lm(world)  # the learned world model is a model of its own
        self._seen = Seen()

    # ------------------------------------------------------------------ the simulator
    @property
    def needs_simulator(self) -> bool:
        """True when slow thinking uses the simulator world model (the harness then calls
        :meth:`attach_simulator` with a clone factory of the real environment)."""
        return self.use_slow_thinking and self.planner_config.oracle

    def attach_simulator(self, factory: Callable[[], Any] | None, env: Any = None) -> None:
        """Give the planner a clone factory of the real environment (e.g. ``env.clone``).  A
        clear error names the environments that support it when ``env`` cannot be cloned."""
        factory = check_clone_factory(factory, env)
        attach = getattr(self.slow_thinker, "attach_simulator", None)
        if callable(attach):
            attach(factory)

    def on_reset(self, task: str, observation: str, admissible: list[str]) -> None:
        self._seen = Seen()
        self._guard.reset(observation)
        self._follower.reset()
        self._observe(observation, None, {})

    def _observe(self, observation: str, action: str | None, info: dict[str, Any]) -> None:
        """Add the real observation to what the episode has seen (novelty / rlvmr twists)."""
        rules = game_rules(getattr(self.belief, "extractor", None))
        self._seen = self._seen.after(observation, action, info, rules)

    # ------------------------------------------------------------------ the step
    def decide(
        self, observation: str, admissible: list[str], info: dict[str, Any], rec: StepRecord
    ) -> Decision:
        ctx = self.context(observation)
        self._now = observation
        if self.t > 0:
            self._observe(observation, self.last_action, info)
            self._remember_outcome(observation)
        if isinstance(self.belief, KGBelief):
            rec.extra["kg_retrieved"] = [f"({s}, {r}, {o})" for s, r, o in ctx.triplets]
        decision = self._follow(observation, admissible, rec)
        if decision is None:
            decision = self._choose(ctx, observation, admissible, rec)
        self._guard.executed(self._where(observation), decision.action)
        return decision

    def _remember_outcome(self, observation: str) -> None:
        """The loop guard's memory after the last step's ``observation`` (class docstring)."""
        self._guard.remember_outcome(observation, self._seen.last_failed)

    def _loops_here(self, observation: str, admissible: list[str]) -> list[str]:
        """The admissible actions that would repeat an executed step in this place."""
        return self._guard.loops_here(self._where(observation), admissible)

    def _choose(
        self, ctx: Context, observation: str, admissible: list[str], rec: StepRecord
    ) -> Decision:
        """Fast thinking with reflection, slow thinking when it is due (class docstring)."""
        if self.slow_thinking == "always":
            return self.think_slowly(ctx, admissible, rec)

        def fast(feedback: list[str]) -> Candidate:
            allowed = admissible
            if self.exclude_rejected:
                turned_down = {r["action"] for r in rec.rejected}
                allowed = [a for a in admissible if a not in turned_down] or admissible
            return self.propose(ctx, allowed, feedback)

        if not self.use_reflection:
            cand = fast([])
            rec.proposed(cand.action, cand.thought, cand.logq, cand.logp, cand.source)
            return Decision(cand.action, cand.thought)

        if self.loop_guard and self.use_slow_thinking:
            first = fast([])
            if self._guard.repeats(self._where(observation), first.action):
                # the fast module would repeat a step already taken in this place: a loop
                rec.proposed(first.action, first.thought, first.logq, first.logp, first.source)
                rec.rejected_proposal(
                    first.action,
                    first.thought,
                    "loop",
                    "repeats a step already taken in this place",
                    score=0.0,
                )
                rec.extra["slow_thinking_reason"] = "loop"
                return self.think_slowly(ctx, admissible, rec)
            pending = [first]

            def fast_first(feedback: list[str]) -> Candidate:
                return pending.pop() if pending else fast(feedback)
        else:
            fast_first = fast
        outcome = self.generate_and_test(
            fast_first, lambda c: self.reflect(ctx, c, rec), self.max_rejections, rec
        )
        if outcome.accepted is not None:
            rec.executed = "proposal"
            return Decision(outcome.accepted.action, outcome.accepted.thought)
        if self.use_slow_thinking:
            rec.extra["slow_thinking_reason"] = "rejections"
            return self.think_slowly(ctx, admissible, rec)
        best = outcome.best()
        rec.executed = "fallback"
        return Decision(best.action, best.thought)

    def _follow(self, observation: str, admissible: list[str], rec: StepRecord) -> Decision | None:
        """The next action of the followed plan if the real observation is the imagined one
        (``follow_plan``), else ``None`` (and the plan is dropped)."""
        step = self._follower.next_action(observation, admissible)
        if step is None:
            return None
        action, left = step
        rec.executed = "planner"
        rec.extra["slow_thinking_reason"] = "plan"
        return Decision(
            action,
            f"following the slow thinker's plan: observation as imagined, next planned action "
            f"'{action}' ({left} more planned)",
        )

    def _where(self, observation: str) -> str:
        """The loop guard's notion of "here": the agent's place as the graph reads it (rooms,
        receptacles), else the observation text."""
        return place_key(observation, self._seen.place)

    def reflect(self, ctx: Context, cand: Candidate, rec: StepRecord) -> Judgement:
        """n reflection samples on ``cand``; accept iff the yes-fraction reaches the threshold."""
        reasoning = [f"The agent's reasoning: {cand.thought}"] if cand.thought else []
        view = ctx.with_feedback(reasoning) if reasoning else ctx
        (verdict,) = self.reflector(
            [self.task], [view.situation()], [cand.action], seed=self.next_seed()
        )
        rec.reflected(verdict.votes, verdict.yes_fraction)
        return Judgement(
            bool(verdict.accept),
            float(verdict.yes_fraction),
            verdict.thought.strip(),
            "reflection",
            {"yes_fraction": float(verdict.yes_fraction)},
        )

    def think_slowly(self, ctx: Context, admissible: list[str], rec: StepRecord) -> Decision:
        """Run the planner from the current belief and execute its first action."""
        kg_belief = self.belief if isinstance(self.belief, KGBelief) else None
        candidates = list(admissible)
        skip: set[str] = set()
        if self.plan_skips in ("loops", "rejected") and self.loop_guard:
            skip |= set(self._loops_here(self._now, candidates))  # the guard's refusal included
        if self.plan_skips == "rejected":
            skip |= {r["action"] for r in rec.rejected}
        kept = [a for a in candidates if a not in skip]
        if skip and kept:
            candidates = kept
            rec.extra["plan_excluded"] = [a for a in admissible if a in skip]
        result = self.slow_thinker(
            ctx,
            kg_belief.kg if kg_belief is not None else None,
            candidates,
            self.next_seed(),
            extractor=kg_belief.extractor if kg_belief is not None else None,
            seen=self._seen,
        )
        summary = summarize(result)
        self._follower.keep(result)
        rec.planned(summary)
        rec.executed = "planner"
        action = str(result.action)
        world = (
            "oracle world model"
            if summary["oracle"]
            else f"{summary['world_model']} world model, no oracle"
        )
        k, h = self.max_rejections, result.horizon
        why = {"loop": " after a loop", "rejections": f" after {k} rejection{'s' * (k != 1)}"}
        thought = (
            f"slow thinking{why.get(rec.extra.get('slow_thinking_reason'), '')} ({world}, "
            f"twist {summary['twist']}): {result.num_particles} particles, "
            f"{h} step{'s' * (h != 1)} ahead; first actions {first_action_line(summary)}; "
            f"chose '{action}', decided by {summary['decided_by']}"
        )
        imagined = imagined_lines(summary) if self.show_imagined else []
        if imagined:
            verb = "the oracle returned" if summary["oracle"] else "the world model imagined"
            thought += f"\n{verb}:\n" + "\n".join(f"  {line}" for line in imagined)
        return Decision(action, thought)
