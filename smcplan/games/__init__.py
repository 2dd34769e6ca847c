"""Game knowledge, one home per benchmark family: reply grammar, failure replies, task (goal)
parsing, map reading and the replies the map already fixes, behind one small protocol
(:class:`GameRules`).

=================  ===========================================================================
family             home
=================  ===========================================================================
``twx``            :mod:`smcplan.games.twx` (TextWorldExpress: moves, doors, coin, mapreader)
``alfworld``       :mod:`smcplan.games.alfworld` (pick-and-place templates, a complete map)
``scienceworld``   :mod:`smcplan.games.scienceworld`
``webshop``        :mod:`smcplan.games.webshop`
``toy``            :mod:`smcplan.games.toy` (the toy POMDP text envs)
``auto``           the text homes together: every known reply and task template, for an
                   episode whose format is not known (the default before this package)
``generic``        :class:`NullRules` by name (:data:`GENERIC`): no game knowledge at all, the
                   generic cell every game-specific result is reported beside (agents:
                   ``env_kind="generic"``; the knowledge graph still reads with ``auto``)
anything else      :class:`NullRules`: no correction, no goal, the env's ``invalid`` flag only
=================  ===========================================================================

:func:`rules_for` resolves an env name or rule-set name (``"twx:coin"``,
``"textworld_express"``, ``"alfworld"``, ``"auto"``) to its home, once per episode; agents hand
it to :mod:`smcplan.planning` (``plan(..., env_kind=rules)``), which asks it, never a benchmark
name.  To add a benchmark: write ``smcplan/games/<family>.py`` with a subclass of
:class:`NullRules` overriding what the game's text fixes, and add the family to
:data:`FAMILIES` (and its names to :data:`ALIASES`).

A failed step: the env's ``info["invalid"]`` flag where it is True; otherwise (and always for an
imagined reply, which has no ``info``) whether the reply starts with one of the failure replies.
Every text home (twx, alfworld, scienceworld, auto) reads the failure replies of all homes
(:data:`FAILURE_REPLIES`: a world model's imagined reply may use another game's wording) and
tries the task templates of all homes (:data:`GOALS`), as the planner did before this package;
each list is written once, in its family's module, and a family's own lists are its module's
``FAILURE_REPLIES`` and ``GOALS`` (narrowing a home to them is a one-line change in
:data:`FAMILIES`, to be measured).

Layer: above ``smcplan.memory``, below ``smcplan.planning``; imports ``smcplan.memory`` only.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from smcplan.games import alfworld, scienceworld, toy, twx, webshop
from smcplan.games.base import (
    HELD,
    NOT_THINGS,
    GameRules,
    MapFacts,
    MapView,
    NullRules,
    TaskGoal,
    match_goal,
)

__all__ = [
    "GameRules",
    "MapView",
    "MapFacts",
    "TaskGoal",
    "NullRules",
    "FAMILIES",
    "ALIASES",
    "FAILURE_REPLIES",
    "INVALID_REPLIES",
    "GOALS",
    "HELD",
    "NOT_THINGS",
    "rules_for",
    "GENERIC",
    "family_of",
    "parse_goal",
    "is_failure",
    "DEFAULT_WORLD_MODEL",
]

#: every text home's failure replies, each listed once in its home
FAILURE_REPLIES = (
    *twx.FAILURE_REPLIES,
    *scienceworld.FAILURE_REPLIES,
    *alfworld.FAILURE_REPLIES,
    *toy.FAILURE_REPLIES,
    *webshop.FAILURE_REPLIES,
)
#: the replies to an action a game does not understand (each env flags them ``invalid``)
INVALID_REPLIES = (twx.INVALID_REPLY, scienceworld.INVALID_REPLY, alfworld.INVALID_REPLY)
#: every home's task templates, in the order ``auto`` tries them
GOALS = (twx.GOALS[0], *alfworld.GOALS, twx.GOALS[1], *scienceworld.GOALS)

#: the shipped learned world model that ``smcplan.plan``'s text defaults load
#: (:data:`smcplan.planning.config.PLAN_TEXT_DEFAULTS`): the only one shipped so far, its home's
DEFAULT_WORLD_MODEL = twx.WORLD_MODEL

#: family -> the home's rules, built for an ``env_kind``
FAMILIES: dict[str, Any] = {
    "twx": lambda kind: twx.TwxRules(kind, FAILURE_REPLIES, GOALS),
    "alfworld": lambda kind: alfworld.AlfworldRules(kind, FAILURE_REPLIES, GOALS),
    "scienceworld": lambda kind: scienceworld.ScienceWorldRules(kind, FAILURE_REPLIES, GOALS),
    "webshop": lambda kind: webshop.WebShopRules("auto"),
    "toy": lambda kind: toy.ToyRules("auto"),
    "auto": lambda kind: twx.TwxRules("auto", FAILURE_REPLIES, GOALS),
}
#: the rule set with no game knowledge: :class:`NullRules` (no reply corrected, no goal parsed, no
#: known exit; a failure is the env's ``invalid`` flag or a failure reply of any home), read with
#: the ``auto`` triplet grammar; an agent's ``env_kind="generic"``
GENERIC = "generic"

#: other names of the families (the part of an env name before ":" is looked up)
ALIASES = {
    "textworld_express": "twx",
    "textworldexpress": "twx",
    "textworld-express": "twx",
    "alfred": "alfworld",
    "sciworld": "scienceworld",
    "science_world": "scienceworld",
}


def family_of(name: str) -> str | None:
    """The family of an env or rule-set name (``"twx:coin"`` -> ``"twx"``), or None."""
    head = str(name).strip().lower().split(":", 1)[0]
    head = ALIASES.get(head, head)
    return head if head in FAMILIES else None


def rules_for(name: GameRules | str | None = "auto") -> GameRules:
    """The home of ``name``: a :class:`GameRules` is returned as it is; ``None`` and ``"auto"``
    give the ``auto`` home; an env or rule-set name gives its family's home, reading triplets
    with ``name`` (``"twx:coin"`` reads as ``textworld_express``); an unknown name gives
    :class:`NullRules` (reading with ``"auto"``)."""
    if name is None:
        name = "auto"
    if not isinstance(name, str):
        if isinstance(name, GameRules):
            return name
        raise TypeError(
            f"rules must be a smcplan.games.GameRules or an env name, got {type(name).__name__}"
        )
    return _home(name)


@lru_cache(maxsize=64)
def _home(name: str) -> GameRules:
    family = family_of(name)
    if family is None:
        return NullRules("auto")
    return FAMILIES[family](name)


def parse_goal(task: str) -> TaskGoal | None:
    """The goal any home's task template names (:data:`GOALS`), or None."""
    return match_goal(GOALS, task)


def is_failure(reply: str, info: dict[str, Any] | None = None) -> bool:
    """:meth:`GameRules.is_failure` of the ``auto`` home (every text home's failure replies)."""
    return rules_for("auto").is_failure(reply, info)
