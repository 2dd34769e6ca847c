"""The one protocol every benchmark adapter implements, and the episode bookkeeping they share.

This module must not import any benchmark package (they are imported lazily by each adapter)
and nothing from ``smcplan.llm``, ``smcplan.memory`` or higher layers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from smcplan.envs.grammar import action_verbs

__all__ = [
    "EnvError",
    "BackendTimeout",
    "MissingBenchmark",
    "StepResult",
    "TextEnv",
    "BaseTextEnv",
    "unknown_choice",
    "INFO_KEYS",
]

#: Keys that every ``info`` dict (from ``reset`` and ``step``) holds, in every adapter.
INFO_KEYS = ("score", "won", "invalid", "admissible_actions", "steps", "truncated")


class EnvError(RuntimeError):
    """A benchmark backend failed (crashed, hung past its timeout, or refused a request)."""


class BackendTimeout(EnvError):
    """A backend call exceeded its time limit (after the adapter's one restart)."""


class MissingBenchmark(ImportError):
    """The benchmark's Python package is not installed: ``pip install 'smcplan[bench]'``."""


def unknown_choice(kind: str, value: Any, known: Iterable[Any]) -> ValueError:
    """``ValueError("unknown <kind> <value!r>; known: a, b, ...")`` — errors name the valid values.
    """
    listed = ", ".join(str(k) for k in known)
    return ValueError(f"unknown {kind} {value!r}; known: {listed}")


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
      rejected or did not understand the action) and ``admissible_actions`` (list[str]),
      plus ``steps`` (actions taken since reset) and ``truncated`` (ended by the step limit);
      benchmarks with a command grammar add ``action_verbs`` (:mod:`smcplan.envs.grammar`).
      ``reward`` is the change of the normalised score, so rewards sum to the final score.
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


class BaseTextEnv:
    """Episode bookkeeping shared by the adapters (not a backend: subclasses talk to one).

    Per episode it tracks the normalised score ``s_t`` in [0, 1], the step count ``t`` and the
    actions taken, and turns a backend's per-step report into a ``StepResult`` with

        reward_t = s_t - s_{t-1},    done_t = backend_done or won or t >= max_steps,

    so that ``sum_t reward_t = s_T`` whatever the backend's own reward convention is.
    """

    name: str = "base"

    def __init__(self, name: str, max_steps: int) -> None:
        if max_steps <= 0:
            raise ValueError(f"max_steps must be positive, got {max_steps}")
        self.name = name
        self.max_steps = int(max_steps)
        self._task = ""
        self._score = 0.0
        self._steps = 0
        self._done = True
        self._won = False
        self._started = False
        self._admissible: list[str] = []
        self._actions: list[str] = []
        self._seed: int | None = None

    # -- protocol -------------------------------------------------------------------------
    @property
    def task(self) -> str:
        """The task of the current episode (``""`` before the first reset)."""
        return self._task

    @property
    def seed(self) -> int | None:
        """The seed (or variation / goal index) of the current episode."""
        return self._seed

    @property
    def actions(self) -> list[str]:
        """The actions taken since the last reset, in order."""
        return list(self._actions)

    @property
    def done(self) -> bool:
        return self._done

    def admissible_actions(self) -> list[str]:
        self._require_started()
        return list(self._admissible)

    def gold_actions(self) -> list[str] | None:
        return None

    def clone(self) -> TextEnv:
        raise NotImplementedError(f"{self.name}: this backend cannot copy its state")

    def close(self) -> None:
        """Nothing to free by default."""

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- helpers for subclasses -----------------------------------------------------------
    def _require_started(self) -> None:
        if not self._started:
            raise EnvError(f"{self.name}: call reset() first")

    def _require_running(self) -> None:
        self._require_started()
        if self._done:
            raise EnvError(f"{self.name}: the episode is over; call reset()")

    def _begin(
        self,
        observation: str,
        *,
        task: str,
        admissible: Sequence[str],
        seed: int | None,
        score: float = 0.0,
        extra: dict[str, Any] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        self._task = task
        self._score = _clip01(score)
        self._steps = 0
        self._done = False
        self._won = False
        self._started = True
        self._admissible = list(admissible)
        self._actions = []
        self._seed = seed
        info = self._info(invalid=False, truncated=False, extra=extra)
        return observation, info

    def _finish(
        self,
        observation: str,
        action: str,
        *,
        score: float,
        won: bool,
        invalid: bool,
        backend_done: bool,
        admissible: Sequence[str],
        extra: dict[str, Any] | None = None,
    ) -> StepResult:
        new_score = _clip01(score)
        reward = new_score - self._score
        self._score = new_score
        self._won = bool(won)
        self._steps += 1
        self._actions.append(action)
        self._admissible = list(admissible)
        truncated = not (backend_done or won) and self._steps >= self.max_steps
        self._done = bool(backend_done or won or truncated)
        info = self._info(invalid=invalid, truncated=truncated, extra=extra)
        return StepResult(observation, reward, self._done, info)

    def _info(self, *, invalid: bool, truncated: bool, extra: dict[str, Any] | None) -> dict:
        info: dict[str, Any] = {
            "score": self._score,
            "won": self._won,
            "invalid": bool(invalid),
            "admissible_actions": list(self._admissible),
            "steps": self._steps,
            "truncated": bool(truncated),
        }
        verbs = action_verbs(self.name)
        if verbs:
            info["action_verbs"] = list(verbs)
        if extra:
            info.update(extra)
        return info


def _clip01(x: float) -> float:
    return float(min(1.0, max(0.0, x)))
