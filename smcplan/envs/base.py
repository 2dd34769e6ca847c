"""The one protocol every benchmark adapter implements, and the episode bookkeeping they share.

This module must not import any benchmark package (they are imported lazily by each adapter)
and nothing from ``smcplan.llm``, ``smcplan.memory`` or higher layers.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from smcplan.envs.grammar import action_verbs
from smcplan.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    SmcplanError,
    UnknownNameError,
    check_int,
    check_text,
)
from smcplan.options import MAX_SEED

__all__ = [
    "CLONEABLE_ENVS",
    "EnvError",
    "EnvClosedError",
    "BackendTimeout",
    "MissingBenchmark",
    "StepResult",
    "TextEnv",
    "BaseTextEnv",
    "unknown_choice",
    "INFO_KEYS",
]

#: The environments whose adapters implement ``clone()`` (the simulator world model's error names
#: them).
CLONEABLE_ENVS = (
    "twx:* (TextWorldExpress)",
    "alfworld:* (ALFWorld engine)",
    "toy:household",
    "toy:tiger",
    "webshop",
    "scienceworld:* (replays the episode: slow)",
)
#: Keys that every ``info`` dict (from ``reset`` and ``step``) holds, in every adapter.
INFO_KEYS = ("score", "won", "invalid", "admissible_actions", "steps", "truncated")


class EnvError(SmcplanError, RuntimeError):
    """A benchmark backend failed (crashed, hung past its timeout, or refused a request)."""


class BackendTimeout(EnvError):
    """A backend call exceeded its time limit (after the adapter's one restart)."""


class MissingBenchmark(SmcplanError, ImportError):
    """The benchmark's Python package is not installed: ``pip install 'smcplan[bench]'``."""


class EnvClosedError(EnvError):
    """``reset``/``step`` on an environment after ``close()``."""


def unknown_choice(kind: str, value: Any, known: Iterable[Any]) -> UnknownNameError:
    """``UnknownNameError("unknown <kind> <value!r>; known: a, b, ...")`` (a ``ValueError``)."""
    listed = ", ".join(str(k) for k in known)
    return UnknownNameError(f"unknown {kind} {value!r}; known: {listed}")


@dataclass
class StepResult:
    """What ``TextEnv.step`` returns, also usable as a 4-tuple (observation, reward, done, info):
    it unpacks, indexes (``result[2]`` is ``done``, slices too) and has ``len`` 4."""

    observation: str
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)

    def _tuple(self) -> tuple[str, float, bool, dict[str, Any]]:
        return (self.observation, self.reward, self.done, self.info)

    def __iter__(self):
        return iter(self._tuple())

    def __getitem__(self, index: int | slice) -> Any:
        return self._tuple()[index]

    def __len__(self) -> int:
        return 4


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

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give every adapter the same argument checks and closed state (see :meth:`_guard`)."""
        super().__init_subclass__(**kwargs)
        for method in ("reset", "step", "close"):
            fn = getattr(cls, method, None)
            if fn is not None and not getattr(fn, "_guarded", False):
                setattr(cls, method, _guard(method, fn))

    def __init__(self, name: str, max_steps: int) -> None:
        self.max_steps = check_int(max_steps, "max_steps", minimum=1)
        self.name = name
        self._closed_env = False
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
    def _require_open(self) -> None:
        if getattr(self, "_closed_env", False):
            raise EnvClosedError(
                f"{self.name}: the environment is closed; make a new one with "
                f"smcplan.envs.make({self.name!r})"
            )

    def _require_started(self) -> None:
        self._require_open()
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


def _guard(method: str, fn: Any) -> Any:
    """Wrap an adapter's ``reset``/``step``/``close`` with the checks every adapter shares.

    * ``reset(seed)``: the env must be open; ``seed`` is ``None`` or an integer in
      ``[0, MAX_SEED]`` (``1.5``, ``"3"`` and ``True`` raise
      :class:`~smcplan.errors.ArgumentTypeError`; the JVM backends take a Java ``int``).
    * ``step(action)``: the env must be open; ``action`` must be a ``str`` that UTF-8 can
      encode (a lone surrogate is refused here, before it reaches a backend: it crashes the
      TextWorldExpress JVM and leaves it unusable).
    * ``close()``: marks the env closed (idempotent); later calls raise :class:`EnvClosedError`.
    """

    @functools.wraps(fn)
    def reset(self: BaseTextEnv, seed: Any = None) -> Any:
        self._require_open()
        if seed is not None:
            seed = check_int(seed, f"{self.name}: seed")
            if seed < 0:
                raise InvalidArgumentError(
                    f"{self.name}: seed must be a non-negative int, got {seed}"
                )
            if seed > MAX_SEED:
                raise InvalidArgumentError(
                    f"{self.name}: seed must be <= {MAX_SEED} (the largest seed every env "
                    f"accepts); got {seed}"
                )
        return fn(self, seed)

    @functools.wraps(fn)
    def step(self: BaseTextEnv, action: Any) -> Any:
        self._require_open()
        if not isinstance(action, str):
            raise ArgumentTypeError(
                f"{self.name}: action must be a str; got {action!r} ({type(action).__name__}); "
                "pick one of env.admissible_actions()"
            )
        check_text(action, f"{self.name}: action")
        return fn(self, action)

    @functools.wraps(fn)
    def close(self: BaseTextEnv) -> Any:
        try:
            return fn(self)
        finally:
            self._closed_env = True

    wrapped = {"reset": reset, "step": step, "close": close}[method]
    wrapped._guarded = True  # type: ignore[attr-defined]
    return wrapped


def _clip01(x: float) -> float:
    return float(min(1.0, max(0.0, x)))
