"""ReAct (Yao et al. 2023, "ReAct: Synergizing Reasoning and Acting in Language Models").

At each step the model sees the task and the trajectory so far (newest turns cut to the token
budget, :mod:`smcplan.agents.context`), writes a one-sentence thought z_t, then acts:

    z_t ~ p(z | task, h_t, o_t),     a_t = argmax_{a in A_t} log p(a | task, h_t, o_t, z_t)

(``temperature=0``, the paper's greedy decoding; ``temperature > 0`` samples a_t from the
softmax of those scores over the admissible set A_t). The action is always admissible: it is
chosen by scoring every admissible action (:class:`smcplan.llm.ActionProposal`), not parsed from
free text.

Imports the agents' base and, lazily, ``smcplan.llm``; never ``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from smcplan.agents.llm_agent import Decision, LLMAgent
from smcplan.agents.record import StepRecord

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["ReactAgent"]


class ReactAgent(LLMAgent):
    """Thought, then an admissible action, with the history in context (module docstring).

    Defaults: history context, a sampled thought (``thought_temperature=1.0``) and a greedy
    action given the thought (``temperature=0``). Other keywords: see :class:`LLMAgent`.
    """

    name = "react"
    default_context = "history"

    def __init__(
        self,
        lm: LanguageModel | None = None,
        *,
        think: bool = True,
        temperature: float = 0.0,
        thought_temperature: float = 1.0,
        **config: Any,
    ) -> None:
        super().__init__(
            lm,
            think=think,
            temperature=temperature,
            thought_temperature=thought_temperature,
            **config,
        )

    def decide(
        self, observation: str, admissible: list[str], info: dict[str, Any], rec: StepRecord
    ) -> Decision:
        cand = self.propose(self.context(observation), admissible)
        rec.proposed(cand.action, cand.thought, cand.logq, cand.logp, cand.source)
        return Decision(cand.action, cand.thought.strip())
