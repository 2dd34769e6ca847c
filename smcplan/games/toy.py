"""The toy POMDP text envs' home (``toy:tiger``, ``toy:household``): no place map rule and no
reply correction; their failure reply is "nothing happens." (an action that names no POMDP
action, which the env also flags ``invalid``).

Imports :mod:`smcplan.games.base` only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from smcplan.games.base import NullRules

__all__ = ["ToyRules", "INVALID_REPLY", "FAILURE_REPLIES"]

INVALID_REPLY = "nothing happens"
FAILURE_REPLIES = (INVALID_REPLY,)


class ToyRules(NullRules):
    """The toy envs' :class:`~smcplan.games.base.GameRules` (module docstring)."""

    family = "toy"

    def __init__(
        self,
        env_kind: str = "auto",
        failure_replies: Sequence[str] = FAILURE_REPLIES,
        goal_patterns: Sequence[re.Pattern[str]] = (),
    ) -> None:
        super().__init__(env_kind, failure_replies, goal_patterns)
