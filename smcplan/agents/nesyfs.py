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
   runs ``smcplan.plan(task, kg, admissible, lm=...)`` (N particles, horizon H, λ, weighting;
   the planner's language-model components, each particle with its own copy of the graph
   updated by the agent's extractor) and the agent executes its first action.

Ablations (constructor flags): ``context="history"`` (the trajectory instead of the KG),
``context="belief"`` (an ABBEL-style language belief summary instead of the KG),
``reflection=False`` (execute the fast action), ``slow_thinking=False`` (after K rejections
execute the rejected proposal with the highest yes-fraction, ``executed="fallback"``).

Defaults are sized for SmolLM2-135M on 2 CPU cores (N = 4, H = 2, 32-token predicted
observations, 32-token reflection answers, rule-based extraction where the benchmark format is
known); the paper's values are N, H and λ as configured by the user.

Imports the agents' shared parts and, lazily, ``smcplan.llm``; never ``smcplan.eval`` /
``smcplan.cli``.
"""

from __future__ import annotations

from typing import Any

from smcplan.agents.beliefs import KGBelief
from smcplan.agents.context import Context
from smcplan.agents.llm_agent import Candidate, Decision, Judgement, LLMAgent
from smcplan.agents.record import StepRecord
from smcplan.agents.slow_thinking import SlowThinker, summarize

__all__ = ["NeSyFSAgent"]


class NeSyFSAgent(LLMAgent):
    """The NeSyFS agent (module docstring).

    Parameters (beyond :class:`~smcplan.agents.llm_agent.LLMAgent`'s)
    ----------------------------------------------------------------
    reflection, slow_thinking
        Ablation switches (both on by default).
    reflection_samples, reflection_threshold, reflection_temperature
        n, the acceptance fraction (5 and 0.8) and the sampling temperature of the reflection.
    reflection_tokens
        Token budget of each sampled reflection answer (32; ``None``: the role's own, 80). A
        thought cut by the budget is kept as cut and its Yes/No is scored by the role.
    max_rejections
        K: reflection rejections before slow thinking (3).
    exclude_rejected
        Re-proposals within a step choose among the admissible actions not yet rejected (all of
        them if none is left). The paper feeds back only the reflection's thought; a strong model
        then proposes something else, SmolLM2-135M mostly re-proposes the same action (measured:
        docs/agents.md), so this is on by default; ``False`` gives the paper's plain feedback.
    num_particles, horizon, lam, weighting, resampling, ess_threshold, choice, observation_tokens
        The slow thinker's settings (:class:`~smcplan.agents.slow_thinking.SlowThinker`).
    reflector
        Replaces the reflection role: ``reflector(tasks, contexts, actions, seed=) -> [Verdict]``
        (e.g. a test double that always says No).
    planner
        Replaces the slow thinker: called as ``planner(ctx, kg, admissible, seed, extractor=)
        -> PlanResult`` (``ctx``: the step's :class:`~smcplan.agents.context.Context`).
    """

    name = "nesyfs"
    default_context = "kg"

    def __init__(
        self,
        lm: Any = None,
        *,
        reflection: bool = True,
        slow_thinking: bool = True,
        reflection_samples: int = 5,
        reflection_threshold: float = 0.8,
        reflection_temperature: float = 1.0,
        reflection_tokens: int | None = 32,
        max_rejections: int = 3,
        exclude_rejected: bool = True,
        num_particles: int = 4,
        horizon: int = 2,
        lam: float = 1.0,
        weighting: str = "nesyfs",
        resampling: str = "systematic",
        ess_threshold: float = 1.0,
        choice: str = "sample",
        observation_tokens: int = 32,
        reflector: Any = None,
        planner: Any = None,
        temperature: float = 1.0,
        think: bool = False,
        **config: Any,
    ) -> None:
        super().__init__(lm, temperature=temperature, think=think, **config)
        kg_hops, kg_limit = config.get("kg_hops", 2), config.get("kg_limit", 24)
        if max_rejections < 1:
            raise ValueError(f"max_rejections (K) must be >= 1; got {max_rejections}")
        self.use_reflection = bool(reflection)
        self.use_slow_thinking = bool(slow_thinking)
        self.max_rejections = int(max_rejections)
        self.exclude_rejected = bool(exclude_rejected)
        if self.use_reflection and reflector is None:
            from smcplan.llm import Reflection

            reflector = Reflection(
                lm,
                n=reflection_samples,
                threshold=reflection_threshold,
                temperature=reflection_temperature,
                settings={"max_new_tokens": reflection_tokens} if reflection_tokens else None,
            )
        self.reflector = reflector
        if self.use_slow_thinking and planner is None:
            planner = SlowThinker(
                lm,
                num_particles=num_particles,
                horizon=horizon,
                lam=lam,
                weighting=weighting,
                resampling=resampling,
                ess_threshold=ess_threshold,
                choice=choice,
                observation_tokens=observation_tokens,
                retrieve_k=kg_hops,
                retrieve_limit=kg_limit,
            )
        self.planner = planner

    # ------------------------------------------------------------------ the step
    def decide(
        self, observation: str, admissible: list[str], info: dict[str, Any], rec: StepRecord
    ) -> Decision:
        ctx = self.context(observation)
        if isinstance(self.belief, KGBelief):
            rec.extra["kg_retrieved"] = [f"({s}, {r}, {o})" for s, r, o in ctx.triplets]

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

        outcome = self.generate_and_test(
            fast, lambda c: self.reflect(ctx, c, rec), self.max_rejections, rec
        )
        if outcome.accepted is not None:
            rec.executed = "proposal"
            return Decision(outcome.accepted.action, outcome.accepted.thought)
        if self.use_slow_thinking:
            return self.think_slowly(ctx, admissible, rec)
        best = outcome.best()
        rec.executed = "fallback"
        return Decision(best.action, best.thought)

    def reflect(self, ctx: Context, cand: Candidate, rec: StepRecord) -> Judgement:
        """n reflection samples on ``cand``; accept iff the yes-fraction reaches the threshold."""
        view = ctx.with_feedback([f"The agent's reasoning: {cand.thought}"]) if cand.thought else ctx
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
        result = self.planner(
            ctx,
            kg_belief.kg if kg_belief is not None else None,
            admissible,
            self.next_seed(),
            extractor=kg_belief.extractor if kg_belief is not None else None,
        )
        summary = summarize(result)
        rec.planned(summary)
        rec.executed = "planner"
        action = str(result.action)
        mass = summary["action_mass"].get(action, 0.0)
        thought = (
            f"slow thinking: {result.num_particles} particles, {result.horizon} steps ahead; "
            f"'{action}' carries weight {mass:.2f}"
        )
        return Decision(action, thought)
