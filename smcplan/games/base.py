"""The contract of a game home (:class:`GameRules`) and the home of a game with no known rules
(:class:`NullRules`): what the planner's maps and twists ask a benchmark family.

A game home answers, for one benchmark family, the questions whose answers are the game's own
words: which actions never move the agent, which reply says a step failed, what the task asks for
(:class:`TaskGoal`), what a reply adds to the place map (:class:`MapFacts`), and which reply the
map already fixes (the known-reply rules that correct a world model's imagined reply).
:mod:`smcplan.planning` asks these questions through the protocol and never names a benchmark.

:class:`NullRules` answers them with no game knowledge: it reads places, containers and states
from the rule-based triplets (:func:`smcplan.memory.extract_triplets`), corrects no reply, parses
no goal, and counts a step as failed only where the environment's ``info["invalid"]`` says so.  A
new benchmark therefore runs without a home; its home subclasses :class:`NullRules` and overrides
what it knows.

Imports ``smcplan.memory`` only; never ``smcplan.planning``, ``smcplan.envs``, ``smcplan.llm``,
``smcplan.agents`` or ``smcplan.eval``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from smcplan.memory import Extraction, extract_triplets

__all__ = [
    "GameRules",
    "MapView",
    "MapFacts",
    "TaskGoal",
    "NullRules",
    "HELD",
    "NOT_THINGS",
    "match_goal",
    "goal_groups",
    "starts_with_any",
]

#: where the rule-based triplets put a held thing (``coin in inventory``)
HELD = "inventory"
#: triplet subjects and objects that name no thing of the world (the agent, its states)
NOT_THINGS = ("agent", "you", HELD, "open", "closed", "locked", "empty", "nothing")

Doors = Mapping[tuple[str, str], str]
Exits = Mapping[tuple[str, str], str]


class TaskGoal(NamedTuple):
    """What the task asks for: take ``obj`` (seen or said to be in ``obj_place``), then put it
    in/on ``receptacle`` (in ``receptacle_place``); ``None`` fields are not named by the task.

    ``tool`` and ``treated``: a step between taking and putting.  With a ``receptacle``, the held
    object must first be brought to a ``tool`` (a thing of that kind) and reach the state
    ``treated`` there (clean at a sink); with none, the ``tool`` itself must reach ``treated``
    while the object is held (a lamp turned on).  ``count``: how many objects of the kind must
    end in/on the receptacle."""

    obj: str
    obj_place: str | None = None
    receptacle: str | None = None
    receptacle_place: str | None = None
    tool: str | None = None
    treated: str | None = None
    count: int = 1


class MapFacts(NamedTuple):
    """What one reply adds to the place map: the agent's ``place`` after the step (the place
    before it when the reply names none), and the new ``links`` (pairs of places), ``exits``
    (``(p, d) -> q``), ``doors`` (``(p, d) -> "open" | "closed"``), ``where`` (thing -> place or
    container it is in/on) and ``states`` (thing -> state).  Later entries of each mapping
    overwrite earlier ones, and all overwrite the map's."""

    place: str | None
    links: frozenset[frozenset[str]]
    exits: dict[tuple[str, str], str]
    doors: dict[tuple[str, str], str]
    where: dict[str, str]
    states: dict[str, str]


class MapView(Protocol):
    """What a game home reads of a place map: the agent's place, the exits and the doors."""

    @property
    def place(self) -> str | None: ...

    @property
    def exits(self) -> Exits: ...

    @property
    def doors(self) -> Doors: ...


@runtime_checkable
class GameRules(Protocol):
    """The questions :mod:`smcplan.planning` asks a benchmark family (module docstring).

    ``family``: the family's name (``"none"`` for :class:`NullRules`); ``env_kind``: the rule set
    of :func:`smcplan.memory.extract_triplets` it reads with; ``complete_map``: every place is
    one step from every other (the map's distances are all 1); ``hold_penalty``: what the task
    twist subtracts for taking a thing the task does not name."""

    family: str
    env_kind: str
    complete_map: bool
    hold_penalty: float

    def triplets(self, observation: str, action: str | None, location: str | None = None) -> Any:
        """The rule-based triplets of ``observation`` (the reply to ``action``)."""
        ...

    def is_failure(self, reply: str, info: Mapping[str, Any] | None = None) -> bool:
        """True when the step that got ``reply`` failed or changed nothing."""
        ...

    def parse_goal(self, task: str) -> TaskGoal | None:
        """The goal the task text names, or None."""
        ...

    def stays_put(self, action: str | None) -> bool:
        """True for an action that never moves the agent."""
        ...

    def hides_only(self, action: str | None) -> bool:
        """True for an action whose reply shows nothing new."""
        ...

    def known_exit(self, exits: Exits, place: str | None, action: str | None) -> str | None:
        """The place ``action`` leads to from ``place`` by the map's ``exits``, or None."""
        ...

    def known_reply(
        self, doors: Doors, exits: Exits, place: str | None, action: str | None
    ) -> str | None:
        """The reply the map already decides for ``action`` at ``place``, or None."""
        ...

    def imagined_reply(
        self, doors: Doors, exits: Exits, place: str | None, action: str | None, observation: str
    ) -> str:
        """An imagined ``observation``, or the map's reply where the map decides the step."""
        ...

    def revealed_place(self, observation: str) -> str | None:
        """The place a reply says an opened passage shows, or None."""
        ...

    def door_after(self, action: str | None, observation: str) -> tuple[str, str] | None:
        """``(direction, state)`` of a door of the agent's place once the step is read."""
        ...

    def read(
        self,
        view: MapView,
        action: str | None,
        observation: str,
        triplets: Iterable[Any] | None = None,
        imagined: bool = False,
    ) -> MapFacts:
        """What ``observation`` (the reply to ``action``) adds to the map ``view``."""
        ...


def starts_with_any(reply: str, markers: Sequence[str]) -> bool:
    """True when ``reply`` (stripped) starts with one of ``markers``."""
    text = str(reply).strip()
    return any(text.startswith(m) for m in markers)


def goal_groups(patterns: Sequence[re.Pattern[str]], task: str) -> dict[str, Any] | None:
    """The named groups of the first of ``patterns`` found in ``task`` (lower-cased, blanks
    joined, the text after "your task is to:"), or None."""
    text = " ".join(str(task).lower().split())
    text = text.split("your task is to:")[-1].strip()
    for pattern in patterns:
        hit = pattern.search(text)
        if hit:
            return hit.groupdict()
    return None


def match_goal(patterns: Sequence[re.Pattern[str]], task: str) -> TaskGoal | None:
    """The :class:`TaskGoal` of the first of ``patterns`` found in ``task``
    (:func:`goal_groups`); named groups ``obj``, ``op`` (its place), ``rec`` (the receptacle) and
    ``rp`` (the receptacle's place).  A home whose templates name a tool, a state or a count
    reads its own further groups (:meth:`GameRules.parse_goal`)."""
    g = goal_groups(patterns, task)
    if g is None:
        return None
    return TaskGoal(g["obj"].strip(), g.get("op"), g.get("rec"), g.get("rp"))


class NullRules:
    """A game with no known rules (module docstring): reads the triplets of ``env_kind``
    (``"auto"``: the format is detected per observation), corrects nothing, parses no goal; a
    step failed where ``info["invalid"]`` says so or its reply starts with one of
    ``failure_replies`` (none by default)."""

    family = "none"
    complete_map = False
    hold_penalty = 0.0
    #: the triplet predicates that name a direction (``p north q``, ``p east door closed``)
    directions: tuple[str, ...] = ()

    def __init__(
        self,
        env_kind: str = "auto",
        failure_replies: Sequence[str] = (),
        goal_patterns: Sequence[re.Pattern[str]] = (),
    ) -> None:
        self.env_kind = env_kind
        self.failure_replies = tuple(failure_replies)
        self.goal_patterns = tuple(goal_patterns)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env_kind={self.env_kind!r})"

    def triplets(
        self, observation: str, action: str | None, location: str | None = None
    ) -> Extraction:
        """:func:`smcplan.memory.extract_triplets` with this home's ``env_kind``."""
        return extract_triplets(observation, action, env_kind=self.env_kind, location=location)

    def is_failure(self, reply: str, info: Mapping[str, Any] | None = None) -> bool:
        """``info["invalid"]`` where the environment reported it True; else whether ``reply``
        starts with one of :attr:`failure_replies` (an imagined reply has no ``info``)."""
        if info is not None and bool(info.get("invalid", False)):
            return True
        return starts_with_any(reply, self.failure_replies)

    def parse_goal(self, task: str) -> TaskGoal | None:
        """:func:`match_goal` over :attr:`goal_patterns`."""
        return match_goal(self.goal_patterns, task)

    def stays_put(self, action: str | None) -> bool:
        """False: no action is known to keep the agent in place."""
        return False

    def hides_only(self, action: str | None) -> bool:
        """False: no action is known to show nothing new."""
        return False

    def known_exit(self, exits: Exits, place: str | None, action: str | None) -> str | None:
        """None: no action is known to follow an exit."""
        return None

    def known_reply(
        self, doors: Doors, exits: Exits, place: str | None, action: str | None
    ) -> str | None:
        """None: the map decides no reply."""
        return None

    def imagined_reply(
        self, doors: Doors, exits: Exits, place: str | None, action: str | None, observation: str
    ) -> str:
        """``observation`` unchanged."""
        return observation

    def revealed_place(self, observation: str) -> str | None:
        """None: no reply is known to reveal a place."""
        return None

    def door_after(self, action: str | None, observation: str) -> tuple[str, str] | None:
        """None: no reply is known to change a door."""
        return None

    # the hooks of :meth:`read` (exact, unnormalised forms; a home with doors overrides them)
    def opened_door(self, action: str | None) -> str | None:
        """The direction of the door ``action`` opens, or None."""
        return None

    def move_direction(self, action: str | None) -> str | None:
        """The direction ``action`` moves in, or None."""
        return None

    def reveal_in(self, observation: str) -> str | None:
        """The place ``observation`` says an opened door shows (as :meth:`read` reads it)."""
        return None

    def impossible_reveal(self, exits: Exits, place: str, direction: str, room: str) -> bool:
        """False: any opened door may show any place."""
        return False

    def read(
        self,
        view: MapView,
        action: str | None,
        observation: str,
        triplets: Iterable[Any] | None = None,
        imagined: bool = False,
    ) -> MapFacts:
        """What ``observation`` adds to the map ``view`` (its ``place``, ``exits``, ``doors``).

        The triplets (of ``observation`` unless given) place the agent (``agent in|at p``), link
        places (``p d q`` for a direction d, ``p connects to q``), state doors (``p d door
        closed``), locate things (``x in|on y``) and state them (``x is s``).  The action
        corrects the place where the home knows it: an action that never moves keeps it
        (:meth:`stays_put`), a move through an exit the map knows goes where the map says
        (:meth:`known_exit`); an opened door that reveals a place adds the exit (not when the
        step is ``imagined`` and the place cannot be there, :meth:`impossible_reveal`), a move
        to another place adds the exit it took, and :meth:`door_after` sets the door's state.
        With ``imagined=True`` a reply the map decides is first replaced
        (:meth:`imagined_reply`); a real reply is read as it is."""
        before = view.place
        if imagined:
            reply = self.imagined_reply(view.doors, view.exits, before, action, observation)
            if reply != observation:
                observation, triplets = reply, None
        if triplets is None:
            triplets = self.triplets(str(observation), action)
        triples = [t.as_tuple() if hasattr(t, "as_tuple") else tuple(t) for t in triplets]
        place = before
        links: set[frozenset[str]] = set()
        exits: dict[tuple[str, str], str] = {}
        doors: dict[tuple[str, str], str] = {}
        where: dict[str, str] = {}
        states: dict[str, str] = {}
        for s, p, o in triples:
            if s == "agent" and p in ("in", "at"):
                place = o
        if before is not None and self.stays_put(action):
            place = before
        known = self.known_exit(view.exits, before, action)
        if known is not None and place is not None and place != before:
            place = known  # the map knows where this move leads; an imagined reply may not
        for s, p, o in triples:
            if s == "agent":
                continue
            if p in self.directions:
                exits[(s, p)] = o
                links.add(frozenset((s, o)))
            elif p == "connects to":
                links.add(frozenset((s, o)))
            elif p.endswith(" door") and p.split()[0] in self.directions:
                doors[(s, p.split()[0])] = o
            elif p in ("in", "on"):
                where[s] = o
            elif p == "is":
                states[s] = o
        opened, revealed = self.opened_door(action), self.reveal_in(observation)
        if opened is not None and revealed is not None and before is not None:
            q = known or revealed
            doors[(before, opened)] = "open"
            if not (imagined and self.impossible_reveal(view.exits, before, opened, q)):
                exits[(before, opened)] = q
                links.add(frozenset((before, q)))
        moved = self.move_direction(action)
        if moved is not None and before is not None and place is not None and place != before:
            exits[(before, moved)] = place
            links.add(frozenset((before, place)))
        if before is not None:
            state = self.door_after(action, observation)
            if state is not None:
                doors[(before, state[0])] = state[1]
        return MapFacts(place, frozenset(links), exits, doors, where, states)
