"""The one protocol every benchmark adapter implements.

This module must not import any benchmark package (they are imported lazily by each adapter)
and nothing from ``smcplan.llm``, ``smcplan.memory`` or higher layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class EnvError(RuntimeError):
    """A benchmark backend failed (crashed, hung past its timeout, or refused a request)."""


class BackendTimeout(EnvError):
    """A backend call exceeded its time limit (after the adapter's one restart)."""


class MissingBenchmark(ImportError):
    """The benchmark's Python package is not installed: ``pip install 'smcplan[bench]'``."""


@dataclass
class StepResult:
    """What ``TextEnv.step`` returns, also usable as a 4-tuple (observation, reward, done, info)."""

    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)

    def __iter__(self):
        return iter((self.observation, self.reward, self.done, self.info))


@runtime_checkable
class TextEnv(Protocol):
    """A text environment under partial observability.

    Conventions shared by all adapters:

    * ``reset(seed)`` -> ``(observation, info)``; deterministic in ``seed``.
    * ``step(action)`` -> ``(observation, reward, done, info)``; ``info`` always holds
      ``score`` (normalised to [0, 1]), ``won`` (bool), ``invalid`` (bool: the backend
      rejected or did not understand the action) and ``admissible_actions`` (list[str]).
    * ``task``: the task description in natural language.
    * ``admissible_actions()``: the currently valid actions.
    * ``gold_actions()``: an expert/gold trajectory from the reset state, or ``None``.
    * ``clone()``: an independent copy in the same state, or ``NotImplementedError``.
    * ``close()``: frees the backend (JVM, subprocess); idempotent.
    """

    name: str

    @property
    def task(self) -> str: ...

    def reset(self, seed: int | None = None) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: str) -> StepResult: ...

    def admissible_actions(self) -> list[str]: ...

    def gold_actions(self) -> list[str] | None: ...

    def clone(self) -> TextEnv: ...

    def close(self) -> None: ...
