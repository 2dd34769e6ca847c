"""The trainers of ``smcplan train``: name → entry function, by import path.

Each entry is ``"module:function"``; the function takes a :class:`TrainRequest` (the command
line's shared flags plus the trainer's own ``--opt KEY=VALUE`` options) and returns a JSON-able
manifest (also written to ``<out>/train.json``).  Entries are import-path strings so the table
names every trainer before its module exists; :func:`trainer` resolves one, and an unknown name
raises :class:`~smcplan.errors.UnknownNameError` listing the known names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smcplan.errors import SmcplanError, UnknownNameError

__all__ = [
    "TRAINERS",
    "TrainRequest",
    "TrainerUnavailable",
    "refuse_flags",
    "trainer",
    "trainer_names",
]

TRAINERS: dict[str, str] = {
    "world-model": "smcplan.train.world_model:run",
    "critic": "smcplan.train.critic:run",
    "critic-head": "smcplan.train.critic_head:run",
    "rollout-labels": "smcplan.train.rollout_labels:run",
    "value-head": "smcplan.train.value_head:run",
    "value-siblings": "smcplan.train.value_siblings:run",
    "cold-start": "smcplan.train.rlvmr:run",
    "grpo-mr": "smcplan.train.grpo_mr:run",
    "grpo-mr-head": "smcplan.train.grpo_mr_head:run",
}


class TrainerUnavailable(SmcplanError, ImportError):
    """A registered trainer whose module or function is not there (not built yet, or broken)."""


@dataclass
class TrainRequest:
    """What ``smcplan train <name>`` asks a trainer for.  ``None`` fields keep the trainer's
    default; ``options`` holds the trainer's own ``--opt KEY=VALUE`` settings."""

    trainer: str
    out: Path
    data: list[Path] = field(default_factory=list)
    model: str | None = None
    resume: bool = False
    seed: int = 0
    max_steps: int | None = None
    epochs: float | None = None
    learning_rate: float | None = None
    batch_size: int | None = None
    save_steps: int | None = None
    progress: bool = True
    options: dict[str, Any] = field(default_factory=dict)


#: the shared ``smcplan train`` flags a trainer may not use, by their ``TrainRequest`` field
FLAG_FIELDS = {
    "--max-steps": "max_steps",
    "--epochs": "epochs",
    "--lr": "learning_rate",
    "--batch-size": "batch_size",
    "--save-steps": "save_steps",
}


def refuse_flags(request: TrainRequest, flags: tuple[str, ...], why: str) -> None:
    """Raise a typed error naming the first of ``flags`` that ``request`` sets (``why``: what
    the trainer does instead and the fix)."""
    from smcplan.errors import InvalidArgumentError

    for flag in flags:
        value = getattr(request, FLAG_FIELDS[flag])
        if value is not None:
            raise InvalidArgumentError(f"{flag}={value}: {why}")


def trainer_names() -> list[str]:
    """The registered trainer names, sorted."""
    return sorted(TRAINERS)


def trainer(name: str) -> Callable[[TrainRequest], dict[str, Any]]:
    """The entry function of trainer ``name``."""
    if name not in TRAINERS:
        raise UnknownNameError(f"unknown trainer {name!r}; known: {', '.join(trainer_names())}")
    module, _, function = TRAINERS[name].partition(":")
    try:
        entry = getattr(importlib.import_module(module), function)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise TrainerUnavailable(
            f"trainer {name!r} is registered as {TRAINERS[name]} but {module} does not exist "
            "yet in this checkout"
        ) from None
    except AttributeError:
        raise TrainerUnavailable(
            f"trainer {name!r}: {module} has no function {function!r}"
        ) from None
    return entry
