"""ScienceWorld's home: its failure reply ("No known action matches that input.", which the env
also flags ``invalid``); no task template yet (the task twist explores).  Its ``open door to X``
follows the room-and-door rules of :class:`~smcplan.games.twx.TwxRules`, as before this home
existed.

Imports :mod:`smcplan.games.base` and :mod:`smcplan.games.twx` only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from smcplan.games.twx import TwxRules

__all__ = ["ScienceWorldRules", "INVALID_REPLY", "FAILURE_REPLIES", "GOALS"]

#: the reply to an action the game does not understand (the env flags it ``invalid``)
INVALID_REPLY = "No known action matches that input"
FAILURE_REPLIES = (INVALID_REPLY,)
GOALS = ()


class ScienceWorldRules(TwxRules):
    """ScienceWorld's :class:`~smcplan.games.base.GameRules` (module docstring)."""

    family = "scienceworld"

    def __init__(
        self,
        env_kind: str = "scienceworld",
        failure_replies: Sequence[str] = FAILURE_REPLIES,
        goal_patterns: Sequence[re.Pattern[str]] = GOALS,
    ) -> None:
        super().__init__(env_kind, failure_replies, goal_patterns)
