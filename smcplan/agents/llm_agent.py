"""The base class of the language-model agents: one step loop, one record, one way to choose.

Every LLM agent (ReAct, NeSyFS, Reflexion, RLAW, RLVMR, zero-shot) is an :class:`LLMAgent` plus a
:meth:`~LLMAgent.decide` method; the base class does everything they share, so that no agent
carries its own prompt loop.

Imports ``smcplan.llm`` (roles, lazily), ``smcplan.memory`` and ``smcplan.planning`` through its
siblings; never ``smcplan.eval`` or ``smcplan.cli``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from smcplan.agents.base import Step
from smcplan.agents.beliefs import (
    CONTEXTS,
    BeliefSummarizer,
    HistoryBelief,
    KGBelief,
    SummaryBelief,
)
from smcplan.agents.choices import AgentError, Candidate, Decision, Judgement, Outcome
from smcplan.agents.context import (
    Context,
    History,
    TokenCounter,
    history_budget,
    model_window,
)
from smcplan.agents.extractors import Extractor
from smcplan.agents.record import StepRecord, UsageMeter, clean_text
from smcplan.agents.shortlist import DEFAULT_MAX_ACTIONS, shortlist_actions
from smcplan.memory.retrieval import DEFAULT_RETRIEVAL

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = [
    "LLMAgent",
    "Decision",
    "Candidate",
    "Judgement",
    "Outcome",
    "AgentError",
    "ACTION_MODES",
]

#: ``"admissible"``: the action is chosen from the admissible set; ``"free"``: the model writes
#: it (constrained only by the benchmark's verb grammar) and the environment parses it.
ACTION_MODES = ("admissible", "free")


class LLMAgent:
    r"""A language agent on the shared parts: memory, context, proposal, judging, record.

    **Step loop** (:meth:`act`, not to be overridden): (1) the previous action's observation is
    added to the :class:`~smcplan.agents.context.History` and to the belief (``context=``:
    ``"history"``, ``"kg"``: NeSyFS's KG updated every step, or ``"belief"``: an ABBEL-style
    summary; see :mod:`smcplan.agents.beliefs`); (2) :meth:`decide` chooses; (3) with
    ``action_mode="admissible"`` the action is checked against the admissible set
    (:class:`AgentError` otherwise); with ``action_mode="free"`` any non-empty text goes to the
    environment, which may reject it (``info["invalid"]`` at the next step; the record's
    ``extra["admissible"]`` says whether it was in the set); (4) the step's
    :class:`~smcplan.agents.record.StepRecord` is closed with the LLM calls and tokens counted from
    the language-model objects' usage counters, and returned as ``Step.meta`` (schema in
    :mod:`smcplan.agents.record`; ``llm_calls``/``llm_tokens`` cover the work inside ``act``,
    ``llm_usage_between`` the work since the previous step outside it: ``reset``, ``end_episode``).

    **Extension points** (what a new agent overrides or calls):

    * ``decide(observation, admissible, info, rec) -> Decision`` — *required*: the agent's
      policy for one step. ``rec`` is the step's record: call ``rec.proposed``,
      ``rec.rejected_proposal``, ``rec.reflected``, ``rec.critiqued``, ``rec.planned``, set
      ``rec.executed`` and put agent-specific fields in ``rec.extra``.
    * ``on_reset(task, observation, admissible)`` — per-episode state (zero-shot: plan the whole
      action sequence here, or at the first ``decide``).
    * ``on_episode_end(won, score)`` — cross-episode state (Reflexion: write a reflection after a
      failed trial and keep the last 3).
    * ``notes() -> list[str]`` — extra lines shown to every role through
      :meth:`context` (Reflexion's carried-over reflections).
    * ``register_lm(lm)`` — count the usage of a further language model (e.g. a separate critic);
      ``language_models()`` lists them all.

    **Helpers** for ``decide``:

    * ``context(observation, notes=()) -> Context`` — task + memory + notes + observation, cut
      to the token budget; ``Context.for_proposal()`` / ``Context.situation()`` are the two
      textual shapes the roles take.
    * ``propose(ctx, admissible, feedback=()) -> Candidate`` — one action from the admissible set
      by the proposal role (:class:`smcplan.llm.ActionProposal`: exact log-prob scoring of every
      admissible action, an optional one-sentence thought first); in free mode the action is
      written by the same role under the benchmark's verb grammar (:attr:`action_verbs`;
      :mod:`smcplan.llm.roles.free_action`). ``feedback`` lines (why earlier proposals were
      rejected) are shown as notes.
    * ``generate_and_test(propose, judge, max_proposals, rec) -> Outcome`` — the loop shared by
      NeSyFS (reflection, K = 3 then slow thinking) and RLAW (critic, τ = 0.7, ≤ 3
      regenerations): propose, judge, feed the judge's reason back, stop at the first accepted
      candidate or after ``max_proposals``; records every proposal and rejection.
    * ``next_seed()`` — a fresh seed from the agent's own seeded stream (same seed, same run).
    * ``history`` (all turns), ``task``, ``t`` (step index), ``last_action``, ``last_info``
      (the ``info`` that came with the current observation: ``info["invalid"]`` says whether the
      previous action was rejected by the environment).

    How the other agents sit on this: RLAW = ``generate_and_test`` with the
    :class:`smcplan.llm.RLAWActor` as proposer (its ``critiques`` argument takes the last
    feedback) and the :class:`smcplan.llm.Critic` as judge (``accept = score >= τ``), then
    ``Outcome.best()``; RLVMR = ``decide`` choosing a tag (one constrained call) then
    ``propose``, rewards in ``rec.extra``; Reflexion = ReAct + ``on_episode_end`` + ``notes``;
    zero-shot = ``on_reset`` planning the sequence, ``decide`` replaying it (first admissible
    fallback recorded as ``rec.executed = "fallback"``).

    Parameters
    ----------
    lm
        The :class:`smcplan.llm.LanguageModel` (``load_model()`` or ``testing.tiny_model()``).
    seed
        Seed of the agent's own random stream (proposal, thought and judge sampling).
    context
        ``"history"``, ``"kg"`` or ``"belief"`` (default: the class's ``default_context``).
    history_tokens, reserve_tokens, max_observation_chars, history_block
        History budget ``min(history_tokens, window - reserve_tokens)`` tokens; each past
        observation is clipped to ``max_observation_chars`` characters; old turns are dropped
        ``history_block`` at a time (3), so the prompt's beginning stays the same for several
        steps and the model's prefix cache reuses it.
    extractor, env_kind, kg_hops, kg_limit
        KG context: ``"rule"``, ``"llm"`` or ``"auto"`` triplet extraction
        (:mod:`smcplan.agents.extractors`), the benchmark's rule set, and the retrieval's hops
        and size limit.
    temperature, think, thought_temperature, thought_tokens
        The proposal role: temperature of the choice over the admissible set (0 = argmax),
        whether to sample a thought first, the thought's temperature and token budget
        (``None``: the role's own).
    proposer, summarizer, llm_extractor
        Replace the default role objects (same call signatures), e.g. in tests.
    action_mode, action_tokens
        ``"admissible"`` (default: choose from the admissible set) or ``"free"`` (the seed
        papers' setting: the model writes the command, the environment parses it, so it can name
        an object that is not there; the admissible list is still shown in the prompts), and the
        token budget of a written action.
    max_actions
        The model sees at most this many admissible actions per step
        (:func:`~smcplan.agents.shortlist.shortlist_actions`: by relevance to the task; only
        ScienceWorld, with about a thousand, exceeds the default 64); ``None`` shows them all.
        ``decide`` and ``on_reset`` get the shortlist; the record's ``extra["shortlist"]`` says
        ``[shown, admissible]`` when it was cut.
    """

    name = "llm"
    default_context = "history"

    def __init__(
        self,
        lm: LanguageModel | None = None,
        *,
        seed: int = 0,
        context: str | None = None,
        history_tokens: int = 512,
        reserve_tokens: int = 1024,
        max_observation_chars: int = 400,
        history_block: int = 3,
        extractor: str = "auto",
        env_kind: str | None = None,
        kg_hops: int = DEFAULT_RETRIEVAL.hops,
        kg_limit: int = DEFAULT_RETRIEVAL.limit,
        temperature: float = 1.0,
        think: bool = False,
        thought_temperature: float = 1.0,
        thought_tokens: int | None = None,
        proposer: Any = None,
        summarizer: Any = None,
        llm_extractor: Any = None,
        max_actions: int | None = DEFAULT_MAX_ACTIONS,
        action_mode: str = "admissible",
        action_tokens: int = 24,
    ) -> None:
        if action_mode not in ACTION_MODES:
            raise ValueError(
                f"action_mode must be one of {', '.join(ACTION_MODES)}; got {action_mode!r}"
            )
        if (
            isinstance(action_tokens, bool)
            or not isinstance(action_tokens, int)
            or action_tokens < 1
        ):
            raise ValueError(f"action_tokens must be a positive integer; got {action_tokens!r}")
        self.action_mode = action_mode
        self.action_tokens = action_tokens
        if max_actions is not None and (
            isinstance(max_actions, bool) or not isinstance(max_actions, int) or max_actions < 1
        ):
            raise ValueError(f"max_actions must be a positive integer or None; got {max_actions!r}")
        if lm is None:
            raise ValueError(
                f"agent {self.name!r} needs lm= (smcplan.llm.load_model() or "
                "smcplan.llm.testing.tiny_model())"
            )
        context = context or self.default_context
        if context not in CONTEXTS:
            raise ValueError(f"unknown context {context!r}; known: {', '.join(CONTEXTS)}")
        self.lm = lm
        self.max_actions = max_actions
        self.seed = int(seed)
        self._rng = np.random.default_rng(self.seed)
        self._meter = UsageMeter([lm])
        self._usage_mark = self._meter.snapshot()
        self.counter = TokenCounter(lm)
        self.history = History(max_observation_chars, block=history_block)
        self.history_budget = history_budget(lm, history_tokens, reserve_tokens)
        #: Tokens the whole context view may take (:meth:`Context.fit`): ``W - reserve_tokens``.
        self.context_budget = max(1, model_window(lm) - int(reserve_tokens))
        self._context_cuts: dict[str, list[int]] = {}
        if proposer is None:
            from smcplan.llm import ActionProposal

            proposer = ActionProposal(
                lm,
                temperature=temperature,
                think=think,
                thought_temperature=thought_temperature,
                settings={"thought_max_new_tokens": thought_tokens} if thought_tokens else None,
                free=action_mode == "free",
                action_tokens=action_tokens,
            )
        self.proposer = proposer
        self.belief: HistoryBelief | KGBelief | SummaryBelief
        if context == "history":
            self.belief = HistoryBelief(self.history, self.history_budget, self.counter)
        elif context == "kg":
            self.belief = KGBelief(
                Extractor(extractor, lm, env_kind, llm_extractor), hops=kg_hops, limit=kg_limit
            )
        else:
            self.belief = SummaryBelief(summarizer or BeliefSummarizer(lm), self.next_seed)
        self.task = ""
        self.t = 0
        self.last_action: str | None = None
        self.last_info: dict[str, Any] = {}
        self._belief_report: dict[str, Any] = {}

    # ------------------------------------------------------------------ protocol
    def reset(self, task: str, observation: str, admissible_actions: list[str]) -> None:
        """Start an episode: clear the history, the belief and the model's prefix cache, then
        :meth:`on_reset`.

        Clearing the prefix cache (:mod:`smcplan.llm.prefix_cache`) makes an episode independent
        of the episodes run before it in the same process, bit for bit: a cached prefix changes
        log-probabilities in the last fp32 bits, so without it ``--workers N`` could differ from
        ``--workers 1``. Reuse within the episode, where nearly all of it is, stays.
        """
        cache = getattr(self.lm, "prefix_cache", None)
        if cache is not None:
            cache.clear()
        self.task = task
        self.t = 0
        self.last_action = None
        self.last_info = {}
        self.history.reset(observation)
        self._belief_report = self.belief.reset(task, observation)
        self.on_reset(task, observation, self.shown_actions(admissible_actions))

    def act(self, observation: str, admissible_actions: list[str], info: dict[str, Any]) -> Step:
        """One step (see the class docstring); returns a :class:`Step` with the full record."""
        admissible = list(admissible_actions)
        if not admissible:
            raise ValueError(f"{self.name}.act: no admissible actions to choose from")
        start = self._meter.snapshot()
        rec = StepRecord(self.name, self.belief.mode)
        if self.last_action is not None:
            self.history.add(self.last_action, observation)
            self._belief_report = self.belief.update(self.last_action, observation, self.t)
        rec.extra.update(self._belief_report)
        self._belief_report = {}
        self.last_info = dict(info or {})
        shown = self.shown_actions(admissible)
        if len(shown) < len(admissible):
            rec.extra["shortlist"] = [len(shown), len(admissible)]
        self._context_cuts = {}
        decision = self.decide(observation, shown, self.last_info, rec)
        if self._context_cuts:
            rec.extra["context_truncated"] = dict(self._context_cuts)
        if self.free:
            if not decision.action.strip():
                raise AgentError(f"{self.name} wrote an empty action")
            rec.extra.update(action_mode="free", admissible=decision.action in admissible)
        elif decision.action not in admissible:
            raise AgentError(
                f"{self.name} chose {decision.action!r}, which is not admissible; "
                f"admissible: {', '.join(admissible)}"
            )
        now = self._meter.snapshot()
        meta = rec.finish(
            UsageMeter.delta(start, now), between=UsageMeter.delta(self._usage_mark, start)
        )
        self._usage_mark = now
        self.last_action = decision.action
        self.t += 1
        return Step(decision.action, clean_text(decision.thought), decision.tag, meta)

    def shown_actions(self, admissible: Sequence[str]) -> list[str]:
        """The admissible actions the model sees: all, or ``max_actions`` by task relevance."""
        if self.max_actions is None:
            return list(admissible)
        return shortlist_actions(admissible, self.task, self.max_actions)

    def end_episode(self, won: bool, score: float) -> None:
        """Called by the harness after the last step; see :meth:`on_episode_end`."""
        self.on_episode_end(bool(won), float(score))

    def episode_info(self) -> dict[str, Any] | None:
        """What the episode meant to the agent (see ``Agent``); ``None``: nothing to add."""
        return None

    # ------------------------------------------------------------------ extension points
    def decide(
        self, observation: str, admissible: list[str], info: dict[str, Any], rec: StepRecord
    ) -> Decision:
        """The agent's policy for one step (required; see the class docstring)."""
        raise NotImplementedError(f"{type(self).__name__} must implement decide()")

    def on_reset(self, task: str, observation: str, admissible: list[str]) -> None:
        """Per-episode state; nothing by default."""

    def on_episode_end(self, won: bool, score: float) -> None:
        """Cross-episode state; nothing by default."""

    def notes(self) -> list[str]:
        """Extra lines every role sees (e.g. Reflexion's reflections); none by default."""
        return []

    def register_lm(self, lm: LanguageModel) -> None:
        """Count ``lm``'s usage in the step records too (each model object counted once)."""
        self._meter.add(lm)

    def language_models(self) -> list[LanguageModel]:
        """Every language model the agent calls (its own and the registered ones, each once):
        the harness sums their usage into each step's LLM calls and tokens."""
        return self._meter.models

    # ------------------------------------------------------------------ helpers
    @property
    def free(self) -> bool:
        """Whether the agent writes its actions (``action_mode="free"``)."""
        return self.action_mode == "free"

    @property
    def action_verbs(self) -> list[str] | None:
        """The benchmark's command verbs (``info["action_verbs"]``, :mod:`smcplan.envs.grammar`)
        that constrain a written action; ``None`` when the environment declares no grammar."""
        verbs = self.last_info.get("action_verbs")
        return list(verbs) if verbs else None

    def next_seed(self) -> int:
        """The next seed of the agent's own stream (for model calls)."""
        return int(self._rng.integers(2**31 - 1))

    def context(self, observation: str, notes: Sequence[str] = ()) -> Context:
        """Task, memory (history / KG facts / belief), notes and the current observation."""
        ctx = Context(self.task, observation, notes=[*self.notes(), *notes])
        self.belief.fill(ctx)
        return self.fit(ctx)

    def fit(self, ctx: Context) -> Context:
        """``ctx`` cut to :attr:`context_budget` tokens; the cuts go to this step's record
        (``extra["context_truncated"] = {section: [tokens before, after]}``)."""
        for section, sizes in ctx.fit(self.context_budget, self.counter).items():
            before = self._context_cuts.get(section, sizes)[0]
            self._context_cuts[section] = [before, sizes[1]]
        return ctx

    def propose(
        self, ctx: Context, admissible: list[str], feedback: Sequence[str] = ()
    ) -> Candidate:
        """One action from the proposal role, with ``feedback`` shown after the observation
        (:meth:`Context.with_feedback`): admissible, or written under :attr:`action_verbs` in
        free mode."""
        view = self.fit(ctx.with_feedback(feedback)) if feedback else ctx
        free = {"verbs": self.action_verbs} if self.free else {}
        (p,) = self.proposer(
            [self.task], [view.triplets], [view.for_proposal()], [admissible],
            seed=self.next_seed(), **free,
        )
        info = {"written": True, "admissible": p.action in admissible} if self.free else {}
        return Candidate(p.action, p.thought, float(p.logq), float(p.logp), "proposal", info)

    def generate_and_test(
        self,
        propose: Callable[[list[str]], Candidate],
        judge: Callable[[Candidate], Judgement],
        max_proposals: int,
        rec: StepRecord,
    ) -> Outcome:
        """Propose, judge, feed back; stop at the first accepted candidate (class docstring).

        ``propose(feedback)`` gets the reasons of all earlier rejections this step (oldest
        first) as lines ``'"<action>" was rejected: <reason>'``.
        """
        if max_proposals < 1:
            raise ValueError(f"max_proposals must be >= 1; got {max_proposals}")
        feedback: list[str] = []
        tried: list[tuple[Candidate, Judgement]] = []
        for _ in range(max_proposals):
            cand = propose(list(feedback))
            rec.proposed(cand.action, cand.thought, cand.logq, cand.logp, cand.source, **cand.info)
            verdict = judge(cand)
            tried.append((cand, verdict))
            if verdict.accept:
                return Outcome(cand, tried)
            rec.rejected_proposal(
                cand.action, cand.thought, verdict.by, verdict.reason, score=verdict.score,
                **verdict.info,
            )
            feedback.append(f'"{cand.action}" was rejected: {verdict.reason}')
        return Outcome(None, tried)
