"""ALFWorld's home: its task templates (pick and place, and the clean / heat / cool variants),
its failure reply ("Nothing happens.", which the env also flags ``invalid``) and its map:
every receptacle is one "go to" away (``complete_map``), and the task twist's one-hand penalty
(the agent holds one thing, so taking another blocks the goal object).

The room-and-door rules of :class:`~smcplan.games.twx.TwxRules` are kept as they ran before this
home existed; ALFWorld's actions (``go to X``, ``open X``) never match a door or move rule.

Imports :mod:`smcplan.games.base` and :mod:`smcplan.games.twx` only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from smcplan.games.twx import TwxRules

__all__ = ["AlfworldRules", "INVALID_REPLY", "FAILURE_REPLIES", "GOALS"]

#: the engine's reply to an action it cannot apply (the env flags it ``invalid``)
INVALID_REPLY = "Nothing happens"
FAILURE_REPLIES = (INVALID_REPLY,)

#: pick (and clean/heat/cool) and place
GOALS = (
    re.compile(
        r"put (?:a|an|some|two) (?:clean |hot |cool )?(?P<obj>[a-z ]+?) (?:in|on|in/on) "
        r"(?P<rec>[a-z ]+?)\.?$"
    ),
    re.compile(
        r"(?:clean|heat|cool) (?:a|an|some) (?P<obj>[a-z ]+?) and put it (?:in|on|in/on) "
        r"(?P<rec>[a-z ]+?)\.?$"
    ),
)


class AlfworldRules(TwxRules):
    """ALFWorld's :class:`~smcplan.games.base.GameRules` (module docstring)."""

    family = "alfworld"
    complete_map = True

    def __init__(
        self,
        env_kind: str = "alfworld",
        failure_replies: Sequence[str] = FAILURE_REPLIES,
        goal_patterns: Sequence[re.Pattern[str]] = GOALS,
    ) -> None:
        super().__init__(env_kind, failure_replies, goal_patterns)
