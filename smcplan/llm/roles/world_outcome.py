r"""What a learned world model writes: the next observation, and optionally the reward and ending.

A world model trained with ``targets=("observation",)`` (the default, and the format of the
shipped ``twx-coin-world-model``) writes the next observation alone.  One trained with
``targets=("observation", "reward", "done")`` writes, in **one generation**, a first line with
the outcome and then the observation::

    Reward: +0.25 | Done: no
    You open the wood door, revealing the bathroom.

* ``Reward``: the change of the episode's normalised score :math:`r_t = s_t - s_{t-1} \in
  [-1, 1]` (:class:`smcplan.envs.base.BaseTextEnv`), written with 3 significant digits and a
  sign (``+0``, ``+1``, ``-0.333``);
* ``Done``: ``no`` (the episode goes on, or it was only cut by the step limit, which is not a
  property of the world), ``won`` or ``lost`` (ended without winning).

The outcome line comes first so that a reply cut at ``max_new_tokens`` still carries it, and a
planner that reads only the event may stop early.  :func:`parse_completion` never raises and
never invents a number: a field it cannot read is 0 / ``no`` with its ``*_ok`` flag false, and a
reply without an outcome line is all observation.  The targets of an adapter folder are read
from its ``world_model.json`` (:data:`TARGETS_FILE`, written by ``smcplan train world-model``)
or a shipped artifact's ``manifest.json`` field ``targets``; without either, the old format.

Must not import ``smcplan.memory``, ``smcplan.envs``, torch or transformers.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from smcplan.errors import InvalidArgumentError

__all__ = [
    "TARGET_FIELDS",
    "DEFAULT_TARGETS",
    "FULL_TARGETS",
    "ENDINGS",
    "TARGETS_FILE",
    "PredictedOutcome",
    "check_targets",
    "ending_of",
    "format_completion",
    "outcome_line",
    "parse_completion",
    "read_targets",
]

#: what a world model may be trained to write
TARGET_FIELDS = ("observation", "reward", "done")
#: the old format: the next observation only
DEFAULT_TARGETS: tuple[str, ...] = ("observation",)
#: one generation gives all three
FULL_TARGETS: tuple[str, ...] = TARGET_FIELDS
#: the values of ``Done:``
ENDINGS = ("no", "won", "lost")
#: the file in an adapter folder that records what its model writes
TARGETS_FILE = "world_model.json"

_REWARD = re.compile(r"\breward\s*:\s*(\S+)", re.IGNORECASE)
_DONE = re.compile(r"\bdone\s*:\s*([A-Za-z]+)", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def check_targets(targets: Sequence[str] | str, argument: str = "targets") -> tuple[str, ...]:
    """``targets`` as a tuple in :data:`TARGET_FIELDS` order; ``"observation"`` is required
    and a comma-separated string (``"observation,reward,done"``) is accepted."""
    items = targets.split(",") if isinstance(targets, str) else targets
    if not isinstance(items, Sequence) or not all(isinstance(t, str) for t in items):
        raise InvalidArgumentError(
            f"{argument} must be a list of names from {', '.join(TARGET_FIELDS)}; got {targets!r}"
        )
    names = [t.strip() for t in items]
    unknown = [t for t in names if t not in TARGET_FIELDS]
    if unknown or "observation" not in names or len(set(names)) != len(names):
        raise InvalidArgumentError(
            f"{argument}={list(names)!r}: give each of {', '.join(TARGET_FIELDS)} at most once, "
            '\'observation\' always, e.g. ["observation","reward","done"]'
        )
    return tuple(t for t in TARGET_FIELDS if t in names)


def read_targets(folder: str | os.PathLike[str] | None) -> tuple[str, ...]:
    """What the world model in ``folder`` writes: ``world_model.json``'s ``targets``, else the
    ``manifest.json``'s, else :data:`DEFAULT_TARGETS` (the shipped coin model's format)."""
    if folder is None:
        return DEFAULT_TARGETS
    for name in (TARGETS_FILE, "manifest.json"):
        path = Path(folder) / name
        if not path.is_file():
            continue
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"{path}: not valid JSON ({exc}); rewrite it") from None
        if isinstance(body, dict) and "targets" in body:
            return check_targets(body["targets"], f"{path}: targets")
    return DEFAULT_TARGETS


def ending_of(done: bool, won: bool, truncated: bool = False) -> str:
    """The ``Done:`` word of a transition: ``won``, ``lost`` (ended, not won, not by the step
    limit) or ``no``."""
    if won:
        return "won"
    return "lost" if done and not truncated else "no"


def _reward_text(reward: float) -> str:
    r = float(reward)
    if not math.isfinite(r):
        raise InvalidArgumentError(f"reward must be finite; got {reward!r}")
    text = f"{r:+.3g}"
    return "+0" if text in ("+0", "-0") else text


def outcome_line(reward: float, ending: str, targets: Sequence[str] = FULL_TARGETS) -> str:
    """``"Reward: +1 | Done: won"`` (the fields of ``targets`` only; ``""`` for none)."""
    if ending not in ENDINGS:
        raise InvalidArgumentError(f"ending must be one of {', '.join(ENDINGS)}; got {ending!r}")
    parts = []
    if "reward" in targets:
        parts.append(f"Reward: {_reward_text(reward)}")
    if "done" in targets:
        parts.append(f"Done: {ending}")
    return " | ".join(parts)


def format_completion(
    observation: str, reward: float = 0.0, ending: str = "no", targets: Sequence[str] = ()
) -> str:
    """The training completion: the observation alone (``targets`` without reward and done),
    else :func:`outcome_line` then a newline then the observation."""
    targets = check_targets(targets or DEFAULT_TARGETS)
    line = outcome_line(reward, ending, targets)
    return f"{line}\n{observation}" if line else str(observation)


@dataclass(frozen=True)
class PredictedOutcome:
    """A world model's reply read (:func:`parse_completion`): the ``observation``, the
    ``reward`` (0 when unread) and ``ending`` (``no`` when unread); ``reward_ok`` /
    ``done_ok``: the field was there and well formed."""

    observation: str
    reward: float = 0.0
    ending: str = "no"
    reward_ok: bool = False
    done_ok: bool = False

    @property
    def done(self) -> bool:
        return self.ending != "no"

    @property
    def won(self) -> bool:
        return self.ending == "won"

    @property
    def lost(self) -> bool:
        return self.ending == "lost"


def _reward_of(line: str) -> float | None:
    m = _REWARD.search(line)
    if m is None:
        return None
    token = m.group(1).rstrip("|,;")
    if _NUMBER.fullmatch(token) is None:
        return None
    value = float(token)
    return value if math.isfinite(value) and -1.0 <= value <= 1.0 else None


def parse_completion(text: str, targets: Sequence[str] = FULL_TARGETS) -> PredictedOutcome:
    """Read a world model's reply (module docstring).  With ``targets`` the observation alone,
    the whole (stripped) text is the observation.  Otherwise the first line is the outcome line
    when it names ``Reward:`` or ``Done:``; a reward that is not one number in [-1, 1] reads 0
    and a ``Done:`` that is not one of :data:`ENDINGS` reads ``no``, each with its flag false;
    a first line naming neither is part of the observation."""
    text = str(text).strip()
    if "reward" not in targets and "done" not in targets:
        return PredictedOutcome(text)
    first, _, rest = text.partition("\n")
    has_reward, has_done = _REWARD.search(first), _DONE.search(first)
    if has_reward is None and has_done is None:
        return PredictedOutcome(text)
    reward = _reward_of(first) if "reward" in targets else None
    word = has_done.group(1).lower() if has_done is not None and "done" in targets else None
    ending = word if word in ENDINGS else None
    return PredictedOutcome(
        rest.strip(),
        0.0 if reward is None else reward,
        ending or "no",
        reward is not None,
        ending is not None,
    )
