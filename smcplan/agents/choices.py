"""What the language-model agents pass around while choosing an action: a proposed
:class:`Candidate`, a judge's :class:`Judgement`, the :class:`Outcome` of a generate-and-test
loop and the :class:`Decision` returned by ``LLMAgent.decide`` (re-exported by
:mod:`smcplan.agents.llm_agent`). Pure data, no model calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from smcplan.errors import SmcplanError

__all__ = ["AgentError", "Candidate", "Decision", "Judgement", "Outcome"]


class AgentError(SmcplanError, RuntimeError):
    """An agent broke its contract (e.g. chose an action outside the admissible set)."""


class Decision(NamedTuple):
    """What :meth:`LLMAgent.decide` returns: the action to execute, a thought and a tag."""

    action: str
    thought: str = ""
    tag: str | None = None


@dataclass
class Candidate:
    """A proposed action before it is judged: the proposer's thought and log-probabilities
    (``None`` when the proposer has none) and anything else worth recording in ``info``."""

    action: str
    thought: str = ""
    logq: float | None = None
    logp: float | None = None
    source: str = "proposal"
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Judgement:
    """A judge's verdict on a :class:`Candidate`: ``accept``, a ``score`` (higher is better; the
    yes-fraction of a reflection, the critique score of a critic), the ``reason`` fed back to
    the next proposal, the judge's name ``by`` and extra fields for the record."""

    accept: bool
    score: float
    reason: str
    by: str
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Outcome:
    """Result of :meth:`LLMAgent.generate_and_test`: the accepted candidate (``None`` when all
    were rejected) and every (candidate, judgement) pair in order."""

    accepted: Candidate | None
    tried: list[tuple[Candidate, Judgement]]

    def best(self) -> Candidate:
        """The tried candidate with the highest score (the first among equals)."""
        if not self.tried:
            raise AgentError("no candidate was proposed")
        return max(self.tried, key=lambda cj: cj[1].score)[0]
