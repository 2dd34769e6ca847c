"""The one protocol every agent implements, and the per-step record it returns.

Agents may import ``smcplan.planning``, ``smcplan.memory``, ``smcplan.llm`` and ``smcplan.envs``
(only the protocol), never ``smcplan.eval`` or ``smcplan.cli``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class Step:
    """One decision of an agent.

    ``action`` is the action to execute (always one of the admissible actions given to ``act``);
    ``thought`` the free-text reasoning (may be empty); ``tag`` a meta-reasoning tag (RLVMR:
    ``planning``/``explore``/``reflection``/``monitor``) or ``None``; ``meta`` everything the
    evaluation records per step: rejected proposals, reflection votes, critic scores, whether
    slow thinking ran and a summary of its plan result, LLM calls and tokens (the schema of the
    language-model agents is in :mod:`smcplan.agents.record`).
    """

    action: str
    thought: str = ""
    tag: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class Agent(Protocol):
    """``reset`` at the start of an episode, then ``act`` once per environment step.

    ``end_episode(won, score)`` is called by the harness after the last step (Reflexion uses it
    to write a reflection for the next trial); agents without cross-episode state ignore it.
    ``episode_info()``, called right after ``end_episode``, returns what the episode meant to the
    agent as a JSON-serialisable dict (RLAW's return G, RLVMR's resolved process rewards), or
    ``None`` when there is nothing to say; the harness stores a dict in the trial's entry of the
    episode summary.
    """

    name: str

    def reset(self, task: str, observation: str, admissible_actions: list[str]) -> None: ...

    def act(
        self, observation: str, admissible_actions: list[str], info: dict[str, Any]
    ) -> Step: ...

    def end_episode(self, won: bool, score: float) -> None: ...

    def episode_info(self) -> dict[str, Any] | None: ...
