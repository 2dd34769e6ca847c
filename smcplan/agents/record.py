"""The per-step record every LLM agent returns in ``Step.meta``, and the LLM usage it counts.

Schema (``meta`` of every step of an :class:`~smcplan.agents.llm_agent.LLMAgent`; the evaluation
harness writes it into the step JSONL as is):

==========================  ====================================================================
``agent``                   the agent's registry name
``context``                 what the model saw as memory: ``"history"``, ``"kg"`` or ``"belief"``
``proposals``               every action proposed this step, in order: ``{"action", "thought",
                            "logq", "logp", "source"}`` (``source``: the module that proposed it)
``rejected_proposals``      the proposals turned down before execution: ``{"action", "thought",
                            "by", "reason", ...}`` (``by``: ``"reflection"`` or ``"critic"``)
``rejections``              ``len(rejected_proposals)``
``reflection_votes``        one list of booleans per reflection call (True = "Yes")
``reflection_yes_fraction`` one fraction per reflection call (same order)
``critic_scores``           one score in [0, 1] per critic call
``slow_thinking``           whether the planner ran this step
``plan``                    the planner's record of that run (``None`` otherwise), below
``llm_calls``               model calls made inside this ``act`` (sampling and scoring calls)
``llm_tokens``              prompt + generated + scored tokens of those calls
``llm_usage``               the counters separately (``calls``, ``prompt_tokens``,
                            ``generated_tokens``, ``scored_tokens``, ``cached_tokens``: the
                            part of ``prompt_tokens`` served by the prefix cache)
``llm_usage_between``       the same counters for model work since the previous step outside
                            ``act`` (``reset``, ``end_episode``: belief set-up, reflections)
``executed``                how the action was chosen: ``"proposal"`` (first accepted or only
                            proposal), ``"planner"``, ``"fallback"`` (best of the rejected ones),
                            ``"critic"`` (RLAW ``fallback="critic"``: the critic's best among the
                            actions not proposed)
==========================  ====================================================================

``plan`` (:func:`smcplan.agents.slow_thinking.summarize`) is ``PlanResult.to_dict()``
(``action``, ``action_mass``, ``chosen_index``, ``weighting``, ``horizon``, ``num_particles``,
``log_Z``, ``ess``, ``resampled``, ``calls``, ``config``) plus:

==================  ==========================================================================
``world_model``     ``"lm"`` or ``"simulator"``
``oracle``          True for the simulator world model (particles step clones of the real env)
``twist``           the progress twist, e.g. ``"env+novelty"``
``degenerate``      every particle had the same progress at every step (weights uninformative)
``tie_break``       the rule that chose because of that (``"proposal"``), else ``null``
``decided_by``      the twist parts whose progress differed between particles, or the tie-break
``imagined``        the chosen particle's ``{"action", "observation"}`` steps
``trace``           the whole run, below
==================  ==========================================================================

``trace`` = ``{"steps": [...], "chosen_index": int | null, "action": str, "truncated": bool}``,
one entry per planning step ``t`` with N-long lists (particle ``i`` of step ``t``):

* ``"t"``: 1-based step; ``"actions"``: the proposed actions; ``"observations"``: the world
  model's observations (clipped to 160 characters);
* ``"ancestors"``: index of each particle's parent in the previous step's lists (the identity
  at ``t = 1``);
* ``"delta"`` / ``"log_psi"``: the twist's progress and log-potential (``null`` when the twist
  gave none); ``"log_weights"`` / ``"weights"``: normalised, after the reweighting;
* ``"ess"``: effective sample size after the reweighting; ``"resampled"``: whether resampling
  ran before the step.

The trace is kept in full for N <= 64 and H <= 8; beyond that the first 64 particles and 8 steps
are kept and ``truncated`` is true.  Non-finite floats are spelled ``"-inf"`` / ``"nan"``.

Agents add their own keys (``kg_added``, ``kg_removed``, ``kg_size``, ``belief``, ``tag``
rewards, ...) beside these; they never reuse a schema key for something else. Counts come from
the :class:`~smcplan.llm.samples.Usage` counters of the language-model objects, as differences
between snapshots taken at the start and the end of ``act`` (so they equal what a harness measures
around ``act``).

Imports nothing from ``smcplan.llm``; never ``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["StepRecord", "UsageMeter", "SCHEMA_KEYS", "USAGE_KEYS", "jsonable", "clean_text"]

USAGE_KEYS = ("calls", "prompt_tokens", "generated_tokens", "scored_tokens", "cached_tokens")

SCHEMA_KEYS = (
    "agent",
    "context",
    "proposals",
    "rejected_proposals",
    "rejections",
    "reflection_votes",
    "reflection_yes_fraction",
    "critic_scores",
    "slow_thinking",
    "plan",
    "llm_calls",
    "llm_tokens",
    "llm_usage",
    "llm_usage_between",
    "executed",
)


def clean_text(text: str) -> str:
    """``text`` encodable as UTF-8: surrogate pairs (as JSON escapes decode) joined, lone
    surrogates replaced by U+FFFD (a model's constrained JSON may emit ``\\ud83d`` alone)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def jsonable(x: Any) -> Any:
    """``x`` made JSON- and UTF-8-safe: non-finite floats spelled "inf"/"-inf"/"nan", strings
    through :func:`clean_text`, numpy/jax scalars as Python numbers."""
    if isinstance(x, float):
        return x if math.isfinite(x) else str(x)
    if isinstance(x, str):
        return clean_text(x)
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    if hasattr(x, "item") and callable(x.item):  # numpy / jax scalars
        try:
            return jsonable(x.item())
        except (TypeError, ValueError):
            return repr(x)
    return x


class UsageMeter:
    """Sums the usage counters of several language-model objects (each counted once)."""

    def __init__(self, lms: Iterable[Any] = ()) -> None:
        self._lms: list[Any] = []
        for lm in lms:
            self.add(lm)

    def add(self, lm: LanguageModel) -> None:
        if lm is not None and hasattr(lm, "usage") and all(lm is not x for x in self._lms):
            self._lms.append(lm)

    @property
    def models(self) -> list[Any]:
        """The language-model objects counted, in the order added."""
        return list(self._lms)

    def snapshot(self) -> dict[str, int]:
        total = dict.fromkeys(USAGE_KEYS, 0)
        for lm in self._lms:
            usage = lm.usage
            for k in USAGE_KEYS:
                total[k] += int(getattr(usage, k, 0))
        return total

    @staticmethod
    def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
        return {k: after[k] - before[k] for k in USAGE_KEYS}


class StepRecord:
    """Collects one step's record while the agent decides; :meth:`finish` returns the meta dict."""

    def __init__(self, agent: str, context: str) -> None:
        self.agent = agent
        self.context = context
        self.proposals: list[dict[str, Any]] = []
        self.rejected: list[dict[str, Any]] = []
        self.reflection_votes: list[list[bool]] = []
        self.reflection_yes: list[float] = []
        self.critic_scores: list[float] = []
        self.slow_thinking = False
        self.plan: dict[str, Any] | None = None
        self.executed = "proposal"
        self.extra: dict[str, Any] = {}

    # ---------------------------------------------------------------- what agents call
    def proposed(
        self,
        action: str,
        thought: str = "",
        logq: float | None = None,
        logp: float | None = None,
        source: str = "proposal",
        **more: Any,
    ) -> None:
        self.proposals.append(
            {"action": action, "thought": thought, "logq": logq, "logp": logp, "source": source}
            | more
        )

    def rejected_proposal(
        self, action: str, thought: str, by: str, reason: str, **more: Any
    ) -> None:
        self.rejected.append(
            {"action": action, "thought": thought, "by": by, "reason": reason} | more
        )

    def reflected(self, votes: Sequence[bool], yes_fraction: float) -> None:
        self.reflection_votes.append([bool(v) for v in votes])
        self.reflection_yes.append(float(yes_fraction))

    def critiqued(self, score: float) -> None:
        self.critic_scores.append(float(score))

    def planned(self, summary: dict[str, Any]) -> None:
        self.slow_thinking = True
        self.plan = summary

    def finish(
        self, usage: dict[str, int], between: dict[str, int] | None = None
    ) -> dict[str, Any]:
        """The meta dict (module docstring): ``usage`` = the counter differences over ``act``,
        ``between`` = those since the previous step, outside ``act``."""
        clash = set(self.extra) & set(SCHEMA_KEYS)
        if clash:
            raise ValueError(f"agent-specific meta keys {sorted(clash)} shadow schema keys")
        meta = {
            "agent": self.agent,
            "context": self.context,
            "proposals": self.proposals,
            "rejected_proposals": self.rejected,
            "rejections": len(self.rejected),
            "reflection_votes": self.reflection_votes,
            "reflection_yes_fraction": self.reflection_yes,
            "critic_scores": self.critic_scores,
            "slow_thinking": self.slow_thinking,
            "plan": self.plan,
            "llm_calls": int(usage["calls"]),
            "llm_tokens": int(
                usage["prompt_tokens"] + usage["generated_tokens"] + usage["scored_tokens"]
            ),
            "llm_usage": dict(usage),
            "llm_usage_between": dict(between or dict.fromkeys(USAGE_KEYS, 0)),
            "executed": self.executed,
            **self.extra,
        }
        return jsonable(meta)
