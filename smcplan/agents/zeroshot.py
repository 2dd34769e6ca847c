r"""Zero-shot planning, RLAW's Base-LLM baseline: the whole action sequence in one pass, open loop.

At the first step the model sees only the task, the first observation and the actions admissible
then, and writes the whole plan at once (greedy by default), as the JSON
``{"actions": [b_1, ..., b_L]}``, within ``plan_tokens`` new tokens (a command cut by that budget
is dropped; at most ``max_actions`` are kept). The agent then executes the plan without looking
at any later observation. Plan items are free text, so each is mapped onto
the admissible set :math:`A_t` of the step it is executed at:

* ``exact`` / ``normalized`` — :math:`b_t \in A_t`, literally or after case and whitespace
  folding (:func:`match_admissible`);
* ``logprob`` — otherwise (a *mismatch*, recorded) the admissible action the model would have
  written at that position of its own plan,

  .. math::

     a_t = \arg\max_{a \in A_t}
     \log p(\texttt{"}a\texttt{"} \mid x_0,\ \texttt{\{"actions": [}b_1, \dots, b_{t-1}\texttt{, "})

  — still open loop: the condition is the first observation and the plan as written;
* ``beyond_plan`` — the same scoring after the whole plan, when the episode outlives it.

With ``action_mode="free"`` the plan's commands are written under the benchmark's verb grammar
(:mod:`smcplan.llm.roles.free_action`) and executed as written, admissible or not
(``mapping="written"``); past the end of the plan the next command is written at that position
of the plan (``"written_beyond_plan"``).

Each step records the planned item, whether it mismatched, and how it was mapped
(``planned_action``, ``plan_mismatch``, ``mapping``; the plan itself at step 0).

Plan items are mapped by :func:`smcplan.agents.matching.match_admissible`. The plan is decoded
as the assistant prefix ``{"actions": ["`` plus a regular expression of escape-free strings
(:mod:`smcplan.llm.fields`), bounded by a token budget.

Imports the agents' base and, lazily, ``smcplan.llm``; never ``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from smcplan.agents.context import clip_text
from smcplan.agents.llm_agent import Decision, LLMAgent
from smcplan.agents.matching import match_admissible, normalize_action
from smcplan.agents.record import StepRecord
from smcplan.llm.fields import JSON_TEXT, field_text, regex
from smcplan.llm.templates import load_role

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["ZeroShotAgent", "match_admissible", "normalize_action"]

_PREFIX = '{"actions": ['
_SEP = '", "'
_PLAN_REGEX = JSON_TEXT + '(", "' + JSON_TEXT + ")*" + r'"\]\}'  # after the prefix '{"actions": ["'


class ZeroShotAgent(LLMAgent):
    """Plans the whole action sequence at the first step and executes it open loop (module doc).

    Parameters (beyond :class:`~smcplan.agents.llm_agent.LLMAgent`'s)
    ----------------------------------------------------------------
    plan_tokens, max_actions
        The plan's token budget and the most commands kept from it.
    plan_temperature
        Temperature of the plan's generation (0 = greedy, the baseline's default).
    plan
        A fixed plan executed (and mapped) instead of the model's, e.g. an expert's
        ``env.gold_actions()``; the model then only maps mismatched commands.
    max_observation_chars
        The first observation is clipped to this many characters in the prompt.
    """

    name = "zeroshot"
    default_context = "history"

    def __init__(
        self,
        lm: LanguageModel | None = None,
        *,
        plan_tokens: int = 128,
        max_actions: int = 20,
        plan_temperature: float = 0.0,
        plan: Sequence[str] | None = None,
        **config: Any,
    ) -> None:
        super().__init__(lm, **config)
        if max_actions < 1 or plan_tokens < 1:
            raise ValueError(
                f"need max_actions >= 1 and plan_tokens >= 1; got {max_actions}, {plan_tokens}"
            )
        if plan_temperature < 0:
            raise ValueError(f"plan_temperature must be >= 0; got {plan_temperature}")
        self.max_actions = int(max_actions)
        self.plan_tokens = int(plan_tokens)
        self.plan_temperature = float(plan_temperature)
        self.assets = load_role("zeroshot")
        self.fixed_plan = None if plan is None else [str(b) for b in plan]
        self.plan: list[str] | None = None
        self.plan_cut = False
        self._prompt: list[dict[str, str]] | None = None

    def on_reset(self, task: str, observation: str, admissible: list[str]) -> None:
        self.plan = None
        self._prompt = self.assets.messages(
            task=task,
            observation=clip_text(observation, self.history.max_observation_chars),
            admissible=admissible,
        )

    def make_plan(self) -> tuple[list[str], bool]:
        """The plan and whether the budget cut it: one constrained generation from the first
        observation's prompt (module docstring)."""
        from smcplan.llm.roles.free_action import action_regex

        assert self._prompt is not None, "reset() first"
        pattern = _PLAN_REGEX
        if self.free:
            item = action_regex(self.action_verbs)
            pattern = item + '(", "' + item + ")*" + r'"\]\}'
        ((s,),) = self.lm.sample(
            [self._prompt],
            regex(pattern),
            temperature=self.plan_temperature,
            max_new_tokens=self.plan_tokens,
            seed=self.next_seed(),
            assistant_prefix=_PREFIX + '"',
        )
        body = field_text(s.text, s.finished, '"]}')
        items = body.split(_SEP)
        if not s.finished:
            items = items[:-1]  # the command the budget cut
        return items[: self.max_actions], not s.finished

    def _plan_prefix(self, upto: int) -> str:
        assert self.plan is not None
        written = "".join(json.dumps(b, ensure_ascii=False) + ", " for b in self.plan[:upto])
        return _PREFIX + written + '"'

    def score_at(self, position: int, admissible: list[str]) -> np.ndarray:
        """``log p('"a"' | first prompt, plan[:position])`` for each admissible ``a``, one call."""
        assert self._prompt is not None
        prefix = self._plan_prefix(position)
        rows = [json.dumps(a, ensure_ascii=False)[1:] for a in admissible]  # a + closing quote
        # (candidates are JSON-escaped, as the model would have had to write them)
        return self.lm.logprob(
            [self._prompt] * len(rows), rows, add_eos=False, assistant_prefix=prefix
        )

    def _write_at(self, position: int) -> tuple[str, float]:
        """Free mode: the command written at ``position`` of the plan (open loop)."""
        from smcplan.llm.roles.free_action import generate_actions

        assert self._prompt is not None
        (w,) = generate_actions(
            self.lm, [self._prompt], [self._plan_prefix(position)], self.action_verbs,
            suffix='"', temperature=self.plan_temperature, max_new_tokens=self.action_tokens,
            seed=self.next_seed(),
        )
        return w.text, w.logp

    def decide(
        self, observation: str, admissible: list[str], info: dict[str, Any], rec: StepRecord
    ) -> Decision:
        if self.plan is None:
            if self.fixed_plan is not None:
                self.plan, self.plan_cut = list(self.fixed_plan), False
            else:
                self.plan, self.plan_cut = self.make_plan()
            rec.extra.update(zeroshot_plan=list(self.plan), zeroshot_plan_cut=self.plan_cut)
        t = self.t
        planned = self.plan[t] if t < len(self.plan) else None
        logp = None
        if self.free:
            action, how = planned, "written"
            if not planned or not planned.strip():
                action, logp = self._write_at(min(t, len(self.plan)))
                how = "written_beyond_plan" if planned is None else "written"
        else:
            action, how = match_admissible(planned, admissible)
        if action is None:
            scores = self.score_at(min(t, len(self.plan)), admissible)
            k = int(np.argmax(scores))
            action = admissible[k]
            logp = float(scores[k] - np.logaddexp.reduce(scores))
            how = "logprob" if planned is not None else "beyond_plan"
        rec.proposed(action, "", None, logp, "plan", planned=planned, mapping=how)
        rec.extra.update(
            plan_index=t,
            planned_action=planned,
            plan_mismatch=how == "logprob",
            mapping=how,
        )
        thought = (
            f"plan step {t + 1}/{len(self.plan)}: {planned}"
            if planned is not None
            else f"beyond the {len(self.plan)}-step plan"
        )
        return Decision(action, thought)

