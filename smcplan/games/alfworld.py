"""ALFWorld's home: its task templates (all six task types: pick and place, its clean / heat /
cool variants, two objects, and looking at an object under a lamp),
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

from smcplan.games.base import TaskGoal, goal_groups
from smcplan.games.twx import TwxRules

__all__ = [
    "AlfworldRules",
    "INVALID_REPLY",
    "FAILURE_REPLIES",
    "GOALS",
    "TREATMENTS",
    "LAMP_ON",
    "COUNTS",
]

#: the engine's reply to an action it cannot apply (the env flags it ``invalid``)
INVALID_REPLY = "Nothing happens"
FAILURE_REPLIES = (INVALID_REPLY,)

#: ALFWorld's task templates (the six task types, each with its two phrasings); the named groups
#: ``n`` (a count word), ``treat`` (a treatment word) and ``tool`` (a lamp) feed :data:`TREATMENTS`
#: and :data:`COUNTS`
GOALS = (
    re.compile(
        r"put (?P<n>a|an|some|two) (?P<treat>clean |hot |cool )?(?P<obj>[a-z ]+?) "
        r"(?:in|on|in/on) (?P<rec>[a-z ]+?)\.?$"
    ),
    re.compile(
        r"(?P<treat>clean|heat|cool) (?:a|an|some) (?P<obj>[a-z ]+?) and put it (?:in|on|in/on) "
        r"(?P<rec>[a-z ]+?)\.?$"
    ),
    re.compile(
        r"find (?P<n>two) (?P<obj>[a-z ]+?) and put them (?:in|on|in/on) (?P<rec>[a-z ]+?)\.?$"
    ),
    re.compile(r"look at (?P<obj>[a-z ]+?) under the (?P<tool>[a-z]+lamp)\.?$"),
    re.compile(r"examine the (?P<obj>[a-z ]+?) with the (?P<tool>[a-z]+lamp)\.?$"),
)

#: a treatment word of the templates -> (the receptacle that treats, the state the object ends
#: in, as the rule triplets read the engine's "You clean the X using the sinkbasin 1.")
TREATMENTS = {
    "clean": ("sinkbasin", "clean"),
    "hot": ("microwave", "hot"),
    "heat": ("microwave", "hot"),
    "cool": ("fridge", "cold"),
}
#: the state a lamp of ``look at X under the lamp`` must reach ("You turn on the desklamp 1.")
LAMP_ON = "on"
#: a count word of the templates -> how many objects must be put
COUNTS = {"two": 2}


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

    def parse_goal(self, task: str) -> TaskGoal | None:
        """The goal of ALFWorld's templates (:data:`GOALS`): the object, the receptacle, the
        treatment's receptacle and state (:data:`TREATMENTS`: "clean some pot and put it in
        cabinet" -> tool ``sinkbasin``, treated ``clean``), the lamp to turn on ("look at keychain
        under the floorlamp" -> tool ``floorlamp``, treated :data:`LAMP_ON`, no receptacle) and the
        count (:data:`COUNTS`: "put two cd in dresser" -> 2)."""
        g = goal_groups(self.goal_patterns, task)
        if g is None:
            return None
        tool, treated = TREATMENTS.get((g.get("treat") or "").strip(), (None, None))
        if g.get("tool"):
            tool, treated = g["tool"], LAMP_ON
        return TaskGoal(
            g["obj"].strip(),
            None,
            g.get("rec"),
            None,
            tool,
            treated,
            COUNTS.get(g.get("n") or "", 1),
        )
