"""TextWorldExpress's home: its action grammar (``move d``, ``open door to d``, ``close door to
d``), its replies (:data:`BLOCKED_REPLY`, :data:`ALREADY_OPEN`, :data:`ALREADY_CLOSED`, "You
open the X door, revealing the q."), its failure replies, its task templates (coin, mapreader)
and the known-reply rules that correct a world model's imagined reply where the place map
already knows the answer (:func:`known_reply`, :func:`imagined_reply`, :func:`blocked_move`,
:func:`known_exit`, :func:`impossible_reveal`, :func:`door_state_after`).  :class:`TwxRules`
binds them into a :class:`~smcplan.games.base.GameRules`.

The rules were written after reading lost twx:coin episodes of a learned world model; the
moves and doors of these games are deterministic, so where the map (read from real
observations) knows the door and the room, an imagined reply that says otherwise is a world
model's slip.  The room-and-door grammar is shared by the homes whose games use it
(:mod:`smcplan.games.scienceworld`'s ``open door to X``) or that kept it as measured
(:mod:`smcplan.games.alfworld`, whose actions never match it).

Imports ``smcplan.memory`` and :mod:`smcplan.games.base` only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from smcplan.games.base import Exits, NullRules

__all__ = [
    "TwxRules",
    "DIRECTIONS",
    "DOOR_ACTION",
    "BLOCKED_REPLY",
    "ALREADY_OPEN",
    "ALREADY_CLOSED",
    "INVALID_REPLY",
    "FAILURE_REPLIES",
    "GOALS",
    "stays_put",
    "hides_only",
    "known_exit",
    "blocked_move",
    "move_into_closed_door",
    "known_reply",
    "imagined_reply",
    "impossible_reveal",
    "revealed_place",
    "door_state_after",
    "door_after",
]

#: the directions of the exits and doors (the triplets' predicates ``p north q``)
DIRECTIONS = ("north", "south", "east", "west", "up", "down")
_REVEAL = re.compile(r"revealing the ([a-z][a-z ]*?)\s*\.", re.I)
_OPEN_DOOR = re.compile(r"^open door to (\w+)$")
#: ``open door to d`` / ``close door to d`` (groups: the verb, the direction)
DOOR_ACTION = re.compile(r"^(open|close) door to (\w+)$")
_MOVE = re.compile(r"^(?:move|go) (\w+)$")
# the actions that report or change an object in the agent's place, in every text game here:
# none of them relocates the agent
_STAYS = re.compile(r"^(?:look|look around|inventory|examine .+|look at .+|open .+|close .+)$")

#: TextWorldExpress's reply to a move into a closed door
BLOCKED_REPLY = "You can't move there, the door is closed."
#: TextWorldExpress's replies to opening an open door and closing a closed one
ALREADY_OPEN = "That is already open."
ALREADY_CLOSED = "That is already closed."
#: the reply to an action the game does not understand (the env flags it ``invalid``)
INVALID_REPLY = "Unknown action"
#: the replies that start a failed or no-op step ("I'm not sure" kept from the earlier shared
#: list, which named no game for it)
FAILURE_REPLIES = (INVALID_REPLY, "That is already", "You can't", "I'm not sure")

#: the learned world model shipped for this family (``models/trained/``, a LoRA adapter on
#: SmolLM2-135M trained on coin transitions; :mod:`smcplan.llm.artifacts`)
WORLD_MODEL = "twx-coin-world-model"
#: the task templates: mapreader, then coin
GOALS = (
    re.compile(
        r"take the (?P<obj>[a-z ]+?) that is located in the (?P<op>[a-z ]+?), and put it "
        r"into the (?P<rec>[a-z ]+?) found in the (?P<rp>[a-z ]+?)\."
    ),
    re.compile(r"find the (?P<obj>[a-z ]+?)\.\s+once you find the [a-z ]+?, take it"),
)


def _exits(m: Any) -> Exits:
    """A map's ``exits`` (a place map or the mapping itself)."""
    return getattr(m, "exits", m)


def stays_put(action: str | None) -> bool:
    """True for an action that never moves the agent in the text games here (``look``, ``look
    around``, ``inventory``, ``examine X``, ``look at X``, ``open X``, ``close X``): an
    observation that follows it names the place the agent was in.  So an *imagined* reply that
    names another place (a world model's slip: "You are in the kitchen." after ``look around`` in
    the living room) does not move the agent on the map or in :class:`~smcplan.planning.seen.Seen`,
    and earns no novelty; a real reply never differs."""
    return bool(_STAYS.match(str(action or "").strip().lower()))


def hides_only(action: str | None) -> bool:
    """True for ``close X``: closing hides what was open and shows nothing the agent had not
    seen (it can only close what it sees), so the names in its reply are not new things and earn
    no entity novelty (an imagined "You close the wood door to the living room." naming a room
    the model guessed would otherwise pay 0.5 for closing a door)."""
    return str(action or "").strip().lower().startswith("close ")


def known_exit(m: Any, place: str | None, action: str | None) -> str | None:
    """The place that ``move d`` / ``go d`` / ``open door to d`` from ``place`` leads to by the
    map (``m.exits[(place, d)]``; ``m`` is a place map or its ``exits`` mapping, read from real
    observations: an exit the room's description lists, a door opened, a move made), or None
    where the map does not know.  Where it knows, an imagined reply that names another place is
    a world model's guess and the map overrides it (a learned model that has seen the kitchen
    imagines "You are in the kitchen." behind every door: on twx:coin it shuttled the agent
    between two rooms it knew, each imagined as new)."""
    if place is None:
        return None
    a = str(action or "").strip().lower()
    step = _MOVE.match(a) or _OPEN_DOOR.match(a)
    return _exits(m).get((place, step.group(1))) if step else None


def blocked_move(m: Any, place: str | None, action: str | None) -> bool:
    """True for ``move d`` / ``go d`` from ``place`` where the map (read from real observations:
    a door the room's description shows closed, one the agent closed, one a move bumped into)
    last saw the door to ``d`` closed.  In these games that move fails and moves nobody, so an
    imagined reply that walks through the door is a world model's slip; the planner's map and
    twists read it as :data:`BLOCKED_REPLY` (a learned model on twx:coin predicted a failed move
    as a move into a room 6 times in 7, and the twists paid an unvisited room for walking into a
    closed door)."""
    return move_into_closed_door(m.doors, place, action)


def move_into_closed_door(
    doors: Mapping[tuple[str, str], str], place: str | None, action: str | None
) -> bool:
    """:func:`blocked_move` on a bare ``doors`` mapping (``(place, d) -> "open" | "closed"``),
    for a reader that follows a particle's own door changes without rebuilding the map."""
    if place is None:
        return False
    step = _MOVE.match(" ".join(str(action or "").strip().lower().split()))
    return bool(step) and doors.get((place, step.group(1))) == "closed"


def known_reply(
    doors: Mapping[tuple[str, str], str],
    exits: Mapping[tuple[str, str], str],
    place: str | None,
    action: str | None,
) -> str | None:
    """The game's reply to ``action`` at ``place`` where the map (read from real observations)
    already decides it, else None; the first sentence the world model is trained to predict:

    * ``move d``: the door to ``d`` last seen closed: :data:`BLOCKED_REPLY`
      (:func:`move_into_closed_door`); else a known exit to q: "You are in the q.";
    * ``open door to d``: open: :data:`ALREADY_OPEN`; closed, and the room behind it known:
      "You open the door, revealing the q.";
    * ``close door to d``: closed: :data:`ALREADY_CLOSED`; open onto a known room: "You close
      the door to the q.".

    Read on twx:coin dev traces (seeds 10001, 10003, 10006, lost): the learned model answered a
    move out of the corridor with "You are in the corridor." (read as not moving, so every move
    scored as a wasted step and the agent chose among them at random) and an open door with "You
    open the wood door to the laundry room." (read as opening it, so the agent opened open doors
    again and again).  Only imagined steps are read this way; a real reply is never rewritten.
    A door closed from its other side is not seen from this one, so a door the agent closed
    behind it reads from the other room as last seen there."""
    if place is None:
        return None
    a = " ".join(str(action or "").strip().lower().split())
    moved = _MOVE.match(a)
    if moved:
        if move_into_closed_door(doors, place, a):
            return BLOCKED_REPLY
        q = exits.get((place, moved.group(1)))
        return None if q is None or q == place else f"You are in the {q}."
    door = DOOR_ACTION.match(a)
    if door is None:
        return None
    verb, d = door.groups()
    state, q = doors.get((place, d)), exits.get((place, d))
    known_room = q is not None and q != place
    if verb == "open":
        if state == "open":
            return ALREADY_OPEN
        known_door = state == "closed" and known_room
        return f"You open the door, revealing the {q}." if known_door else None
    if state == "closed":
        return ALREADY_CLOSED
    return f"You close the door to the {q}." if state == "open" and known_room else None


def revealed_place(observation: str) -> str | None:
    """The room an opened door reveals ("You open the wood door, revealing the kitchen." ->
    ``"kitchen"``), or None."""
    found = _REVEAL.search(" ".join(str(observation).split()))
    return found.group(1).lower() if found else None


def imagined_reply(
    doors: Mapping[tuple[str, str], str],
    exits: Mapping[tuple[str, str], str],
    place: str | None,
    action: str | None,
    observation: str,
    env_kind: str = "auto",
    rules: Any = None,
) -> str:
    """An imagined ``observation`` of ``action`` at ``place``, or :func:`known_reply` where the
    map decides the step and the imagined reply tells another event: a move that the reply does
    not take anywhere else (a failure, a "You are in" the same room), a door opened, closed or
    found as it was where the map knows otherwise.  A reply that already tells the map's event
    is kept, with what else it says (a move into another room is then read as the room the map
    knows, :func:`known_exit`; the rest of the reply, e.g. a thing seen there, stays).  The
    reply's place is read with the triplets of ``rules`` (else of ``env_kind``)."""
    forced = known_reply(doors, exits, place, action)
    if forced is None:
        return observation
    if forced == BLOCKED_REPLY:  # no imagined reply makes a closed door passable
        return forced
    text = " ".join(str(observation).split())
    if forced.startswith("You are in "):
        reader = rules if rules is not None else TwxRules(env_kind)
        named = [
            t.as_tuple()[2]
            for t in reader.triplets(text, action)
            if t.as_tuple()[:2] in (("agent", "in"), ("agent", "at"))
        ]
        return observation if named and named[-1] != place else forced
    if forced.startswith("You open "):
        return observation if revealed_place(text) not in (None, place) else forced
    if forced.startswith("You close "):
        return observation if text.lower().startswith("you close ") else forced
    return forced  # "That is already open/closed.": the door is as the map last saw it


def impossible_reveal(m: Any, place: str, direction: str, room: str) -> bool:
    """True when a door of ``place`` cannot open onto ``room``: it is ``place`` itself, or the
    map (``m``: a place map or its ``exits``) already has ``room`` behind another exit of
    ``place`` (a room of these games joins a neighbour once).  A real reply never says so; an
    imagined one that does is a world model's guess of a room it has seen (the learned model
    answered an unknown door of the corridor with "revealing the laundry room", the room south of
    it), and the planner's map reads it as a door opened onto a room it does not know: frontier
    at extra cost 1, as the game's reply would be before the room is named."""
    if room == place:
        return True
    return any(p == place and d != direction and q == room for (p, d), q in _exits(m).items())


def door_state_after(action: str | None, observation: str) -> tuple[str, str] | None:
    """``(direction, "open" | "closed")`` that the reply ``observation`` to ``action`` states
    of the door to ``direction`` of the agent's place, or None: "You close the X door ..."
    after ``close door to d`` (closed), "That is already open." / "... already closed." after
    ``open``/``close door to d``, and "You can't move there, the door is closed." after ``move
    d`` (closed).  The rule triplets of these replies name the door, not its direction, so
    without this a door the agent closed stayed open on the map (an RLAW critic's notes then
    said "no closed door is left" while ``move north`` hit the closed door 14 times)."""
    a = " ".join(str(action or "").strip().lower().split())
    o = " ".join(str(observation).strip().lower().split())
    door = DOOR_ACTION.match(a)
    if door:
        verb, d = door.groups()
        if verb == "close" and (o.startswith("you close ") or "already closed" in o):
            return d, "closed"
        if verb == "open" and "already open" in o:
            return d, "open"
        return None
    moved = _MOVE.match(a)
    if moved and "the door is closed" in o:
        return moved.group(1), "closed"
    return None


def door_after(action: str | None, observation: str) -> tuple[str, str] | None:
    """:func:`door_state_after`, and ``(d, "open")`` for ``open door to d`` whose reply reveals
    a room: the state of the door to ``d`` of the agent's place once the step is read."""
    state = door_state_after(action, observation)
    door = DOOR_ACTION.match(" ".join(str(action or "").strip().lower().split()))
    if state is None and door and door.group(1) == "open" and revealed_place(observation):
        return door.group(2), "open"
    return state


class TwxRules(NullRules):
    """TextWorldExpress's :class:`~smcplan.games.base.GameRules`: the module's grammar, replies,
    failure replies (``failure_replies``, this family's by default) and task templates
    (``goal_patterns``, :data:`GOALS` by default)."""

    family = "twx"
    #: ALFWorld's agent holds one thing: taking another blocks the goal; kept on every text home
    #: as measured (issue 52: changing it for a family is a behaviour change to be measured)
    hold_penalty = 0.5
    directions = DIRECTIONS

    def __init__(
        self,
        env_kind: str = "auto",
        failure_replies: Sequence[str] = FAILURE_REPLIES,
        goal_patterns: Sequence[re.Pattern[str]] = GOALS,
    ) -> None:
        super().__init__(env_kind, failure_replies, goal_patterns)

    def stays_put(self, action: str | None) -> bool:
        """:func:`stays_put`."""
        return stays_put(action)

    def hides_only(self, action: str | None) -> bool:
        """:func:`hides_only`."""
        return hides_only(action)

    def known_exit(self, exits: Exits, place: str | None, action: str | None) -> str | None:
        """:func:`known_exit`."""
        return known_exit(exits, place, action)

    def known_reply(
        self, doors: Exits, exits: Exits, place: str | None, action: str | None
    ) -> str | None:
        """:func:`known_reply`."""
        return known_reply(doors, exits, place, action)

    def imagined_reply(
        self, doors: Exits, exits: Exits, place: str | None, action: str | None, observation: str
    ) -> str:
        """:func:`imagined_reply`, the reply's place read with this home's triplets."""
        return imagined_reply(doors, exits, place, action, observation, rules=self)

    def revealed_place(self, observation: str) -> str | None:
        """:func:`revealed_place`."""
        return revealed_place(observation)

    def door_after(self, action: str | None, observation: str) -> tuple[str, str] | None:
        """:func:`door_after`."""
        return door_after(action, observation)

    def opened_door(self, action: str | None) -> str | None:
        """``d`` of ``open door to d``."""
        hit = _OPEN_DOOR.match(str(action or "").strip().lower())
        return hit.group(1) if hit else None

    def move_direction(self, action: str | None) -> str | None:
        """``d`` of ``move d`` / ``go d``."""
        hit = _MOVE.match(str(action or "").strip().lower())
        return hit.group(1) if hit else None

    def reveal_in(self, observation: str) -> str | None:
        """The room of "..., revealing the q." as written (not blank-joined)."""
        hit = _REVEAL.search(str(observation))
        return hit.group(1).strip().lower() if hit else None

    def impossible_reveal(self, exits: Exits, place: str, direction: str, room: str) -> bool:
        """:func:`impossible_reveal`."""
        return impossible_reveal(exits, place, direction, room)
