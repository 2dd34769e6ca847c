r"""The task-aware twist ``progress="task"``: a place map read from the observations, the goal the
task names, and the progress of a particle toward it.

**The map** :math:`M` (:class:`PlaceMap`, pure and immutable; :func:`read_step` adds one step) is
read from the rule-based triplets of every observation: the places the agent has been in
(``agent in|at p``), links between places (``p north q``, the map's ``p connects to q``, "You open
the wood door, revealing the q" after "open door to d" in p, and the move itself), doors (``p
east door closed``), where each thing was last seen (``coin in pantry``, ``kettle 1 in cabinet 1``)
and what is held (``... in inventory``).  In ALFWorld every receptacle is one "go to" away
(``complete``: distance 1 between any two places).

**The frontier** :math:`F(M)`: the known but unvisited places (extra cost 0), the doors of a
place whose other side is unknown (closed: extra cost 2, open, then move; open: extra cost 1,
move; a real reply always names what an opened door reveals, so only an imagined one, "That is
already open." for a closed door, leaves an open door unknown) and, in ALFWorld, the
visited receptacles last seen closed (extra cost 1: open).  :math:`d_M(\ell, p)` is the
shortest path (a link costs 1, 2 through a door last seen closed) and
:math:`d_F(\ell) = \min_{(p, c) \in F} d_M(\ell, p) + c`.

**The goal** (:func:`parse_goal`): the object the task names (``coin``, ``kettle``), where the task
says it is (mapreader: "the coin that is located in the washroom"), the receptacle it must go to
(``box``, ``countertop``) and where that is ("the box found in the vault").  Stage
:math:`s = 0` until an object of the goal's type is held, 1 while held, 2 once put in/on the
receptacle.  The **target** is the goal object's place (stage 0) or the receptacle's (stage 1),
from the map (nearest instance of the type) or else the task; with no goal (a task this parser
does not know) the twist explores.

**The cost-to-go** :math:`D_{M,s}(\ell) = d_M(\ell, \text{target})` when the target is known
and connected to :math:`\ell` in :math:`M`, else :math:`d_F(\ell)` (search the frontier).

**The progress** of a particle's step t.  A move is read on the map *after* the step
(:math:`M' = M_t`), so that going back and forth on an unchanged map nets zero and discovering
a dead end is not punished as moving away; a step that stays in place compares the cost before
and after it (:math:`M' = M_{t-1}`: opening a door turns a cost-2 door into a cost-1 room),
except when the stage advances (the target changes; the stage term counts it):

.. math:: \delta_t = \tfrac12\big(D_{M',s_t}(\ell_{t-1}) - D_{M_t,s_t}(\ell_t)\big)
   + [s_t > s_{t-1}] + [\text{explored}_t,\ \text{searching}]
   + [\text{target connected in } M_t \text{ and not in } M_{t-1}]
   - \tfrac14[\text{wasted}_t] - \tfrac12[\text{took a thing the task does not name}]

(a step toward the target or the frontier earns 1/2, away loses 1/2; taking the object or
putting it earns 1; *exploring* while the target is unknown earns 1 — entering an unvisited
place, or in ALFWorld opening the closed receptacle the agent stands at; reading a
map or exploring that connects the target earns 1; a *wasted* step, one that moves nowhere and
adds no link, exit, sighting or opening and moves no goal object — a failed move, "look",
"inventory", closing a door, carrying a thing the task does not name — loses 1/4, so that of
two paths reaching the same place the shorter one wins; taking a thing the task does not name
loses 1/2 more: ALFWorld's agent holds one thing, so it blocks the goal object).  Steps after
the particle's episode ended score 0; :math:`\log\psi_t = \sum_{s\le t}\delta_s`.  LLM-free
and exact given the observations.

Imports ``smcplan.memory`` (rule extraction) and the planner's component types only.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from smcplan.memory import extract_triplets
from smcplan.planning.components import Score
from smcplan.planning.outcome import DONE_ACTION

__all__ = [
    "PlaceMap",
    "TaskGoal",
    "read_step",
    "door_state_after",
    "door_after",
    "DOOR_ACTION",
    "stays_put",
    "hides_only",
    "known_exit",
    "blocked_move",
    "move_into_closed_door",
    "BLOCKED_REPLY",
    "ALREADY_OPEN",
    "ALREADY_CLOSED",
    "known_reply",
    "imagined_reply",
    "impossible_reveal",
    "revealed_place",
    "parse_goal",
    "frontier_distance",
    "cost_to_go",
    "stage",
    "explored",
    "wasted",
    "TaskProgress",
]

_DIRS = ("north", "south", "east", "west", "up", "down")
_REVEAL = re.compile(r"revealing the ([a-z][a-z ]*?)\s*\.", re.I)
_OPEN_DOOR = re.compile(r"^open door to (\w+)$")
#: ``open door to d`` / ``close door to d`` (groups: the verb, the direction)
DOOR_ACTION = re.compile(r"^(open|close) door to (\w+)$")
_MOVE = re.compile(r"^(?:move|go) (\w+)$")
# the actions that report or change an object in the agent's place, in every text game here:
# none of them relocates the agent
_STAYS = re.compile(r"^(?:look|look around|inventory|examine .+|look at .+|open .+|close .+)$")


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


def known_exit(m: PlaceMap, place: str | None, action: str | None) -> str | None:
    """The place that ``move d`` / ``go d`` / ``open door to d`` from ``place`` leads to by the
    map (``m.exits[(place, d)]``, read from real observations: an exit the room's description
    lists, a door opened, a move made), or None where the map does not know.  Where it knows, an
    imagined reply that names another place is a world model's guess and the map overrides it
    (a learned model that has seen the kitchen imagines "You are in the kitchen." behind every
    door: on twx:coin it shuttled the agent between two rooms it knew, each imagined as new)."""
    if place is None:
        return None
    a = str(action or "").strip().lower()
    step = _MOVE.match(a) or _OPEN_DOOR.match(a)
    return m.exits.get((place, step.group(1))) if step else None


#: TextWorldExpress's reply to a move into a closed door
BLOCKED_REPLY = "You can't move there, the door is closed."


def blocked_move(m: PlaceMap, place: str | None, action: str | None) -> bool:
    """True for ``move d`` / ``go d`` from ``place`` where the map (read from real observations:
    a door the room's description shows closed, one the agent closed, one a move bumped into)
    last saw the door to ``d`` closed.  In these games that move fails and moves nobody, so an
    imagined reply that walks through the door is a world model's slip; :func:`read_step` with
    ``imagined=True`` and :func:`~smcplan.planning.seen.steps_read` read it as
    :data:`BLOCKED_REPLY` (a learned model on twx:coin predicted a failed move as a move into a
    room 6 times in 7, and the twists paid an unvisited room for walking into a closed door)."""
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


#: TextWorldExpress's replies to opening an open door and closing a closed one
ALREADY_OPEN = "That is already open."
ALREADY_CLOSED = "That is already closed."


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

    The moves and doors of these games are deterministic, so where the map knows the door and
    the room an imagined reply that says otherwise is a world model's slip.  Read on twx:coin dev
    traces (seeds 10001, 10003, 10006, lost): the learned model answered a move out of the
    corridor with "You are in the corridor." (read as not moving, so every move scored as a
    wasted step and the agent chose among them at random) and an open door with "You open the
    wood door to the laundry room." (read as opening it, so the agent opened open doors again
    and again).  Only imagined steps are read this way (:func:`read_step` with
    ``imagined=True``, :func:`~smcplan.planning.seen.steps_read`); a real reply is never
    rewritten.  A door closed from its other side is not seen from this one, so a door the agent
    closed behind it reads from the other room as last seen there."""
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


_HOLD = "inventory"


def revealed_place(observation: str) -> str | None:
    """The room an opened door reveals ("You open the wood door, revealing the kitchen." ->
    ``"kitchen"``), or None."""
    found = _REVEAL.search(" ".join(str(observation).split()))
    return found.group(1).lower() if found else None


def kind_of(entity: str) -> str:
    """``"kettle 1"`` -> ``"kettle"`` (ALFWorld numbers its instances)."""
    return re.sub(r"\s+\d+$", "", entity.strip().lower())


@dataclass(frozen=True)
class PlaceMap:
    """What the observations said about places (module docstring); never mutated: :func:`read_step`
    returns a new map.  ``exits[(p, d)] = q``; ``doors[(p, d)] = "open" | "closed"``;
    ``where[e]`` = the place or container e was last seen in/on; ``states[e]`` = its last state."""

    place: str | None = None
    visited: frozenset[str] = frozenset()
    links: frozenset[frozenset[str]] = frozenset()
    exits: dict[tuple[str, str], str] = field(default_factory=dict)
    doors: dict[tuple[str, str], str] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)
    complete: bool = False
    opened: frozenset[str] = frozenset()

    @property
    def places(self) -> frozenset[str]:
        """Every place the map knows: visited, linked, or (ALFWorld) a receptacle in the room."""
        named = {p for link in self.links for p in link} | {q for q in self.exits.values()}
        if self.complete:
            named |= {e for e, w in self.where.items() if w == "room"}
        return frozenset(self.visited | named) - {"room"}

    def held(self) -> frozenset[str]:
        return frozenset(e for e, w in self.where.items() if w == _HOLD)


def read_step(
    m: PlaceMap,
    action: str | None,
    observation: str,
    env_kind: str = "auto",
    triplets: Iterable[Any] | None = None,
    imagined: bool = False,
) -> PlaceMap:
    """The map after ``observation`` (the result of ``action``, read with the rule extractor
    unless ``triplets`` are given).  With ``imagined=True`` (a particle's step, not the env's)
    a step whose reply the map already decides (:func:`known_reply`: a move into a door last
    seen closed, a move through a known exit, opening an open door, ...) reads as that reply
    where the imagined one tells another event (:func:`imagined_reply`), and an imagined reveal
    of a room that cannot be there (:func:`impossible_reveal`) opens the door onto an unknown
    room; a real reply is always read as it is."""
    if imagined:
        reply = imagined_reply(m.doors, m.exits, m.place, action, observation, env_kind)
        if reply != observation:
            observation, triplets = reply, None
    if triplets is None:
        triplets = extract_triplets(str(observation), action, env_kind=env_kind)
    triples = [t.as_tuple() if hasattr(t, "as_tuple") else tuple(t) for t in triplets]
    complete = m.complete or env_kind == "alfworld"
    before = m.place
    place, links = before, set(m.links)
    exits, doors, where, states = dict(m.exits), dict(m.doors), dict(m.where), dict(m.states)
    for s, p, o in triples:
        if s == "agent" and p in ("in", "at"):
            place = o
    if before is not None and stays_put(action):
        place = before
    known = known_exit(m, before, action)
    if known is not None and place is not None and place != before:
        place = known  # the map knows where this move leads; an imagined reply may not
    for s, p, o in triples:
        if s == "agent":
            continue
        if p in _DIRS:
            exits[(s, p)] = o
            links.add(frozenset((s, o)))
        elif p == "connects to":
            links.add(frozenset((s, o)))
        elif p.endswith(" door") and p.split()[0] in _DIRS:
            doors[(s, p.split()[0])] = o
        elif p in ("in", "on"):
            where[s] = o
        elif p == "is":
            states[s] = o
    opened = _OPEN_DOOR.match(str(action or "").strip().lower())
    revealed = _REVEAL.search(str(observation))
    if opened and revealed and before is not None:
        d = opened.group(1)
        q = known or revealed.group(1).strip().lower()
        doors[(before, d)] = "open"
        if not (imagined and impossible_reveal(m, before, d, q)):
            exits[(before, d)] = q
            links.add(frozenset((before, q)))
    moved = _MOVE.match(str(action or "").strip().lower())
    if moved and before is not None and place is not None and place != before:
        exits[(before, moved.group(1))] = place
        links.add(frozenset((before, place)))
    if before is not None:
        state = door_after(action, observation)
        if state is not None:
            doors[(before, state[0])] = state[1]
    visited = m.visited | ({place} if place is not None else set())
    opened = m.opened | {e for e, state in states.items() if state == "open"}
    return PlaceMap(place, visited, frozenset(links), exits, doors, where, states, complete, opened)


def imagined_reply(
    doors: Mapping[tuple[str, str], str],
    exits: Mapping[tuple[str, str], str],
    place: str | None,
    action: str | None,
    observation: str,
    env_kind: str = "auto",
) -> str:
    """An imagined ``observation`` of ``action`` at ``place``, or :func:`known_reply` where the
    map decides the step and the imagined reply tells another event: a move that the reply does
    not take anywhere else (a failure, a "You are in" the same room), a door opened, closed or
    found as it was where the map knows otherwise.  A reply that already tells the map's event
    is kept, with what else it says (a move into another room is then read as the room the map
    knows, :func:`known_exit`; the rest of the reply, e.g. a thing seen there, stays)."""
    forced = known_reply(doors, exits, place, action)
    if forced is None:
        return observation
    if forced == BLOCKED_REPLY:  # no imagined reply makes a closed door passable
        return forced
    text = " ".join(str(observation).split())
    if forced.startswith("You are in "):
        named = [
            t.as_tuple()[2]
            for t in extract_triplets(text, action, env_kind=env_kind)
            if t.as_tuple()[:2] in (("agent", "in"), ("agent", "at"))
        ]
        return observation if named and named[-1] != place else forced
    if forced.startswith("You open "):
        return observation if revealed_place(text) not in (None, place) else forced
    if forced.startswith("You close "):
        return observation if text.lower().startswith("you close ") else forced
    return forced  # "That is already open/closed.": the door is as the map last saw it


def impossible_reveal(m: PlaceMap, place: str, direction: str, room: str) -> bool:
    """True when a door of ``place`` cannot open onto ``room``: it is ``place`` itself, or the
    map already has ``room`` behind another exit of ``place`` (a room of these games joins a
    neighbour once).  A real reply never says so; an imagined one that does is a world model's
    guess of a room it has seen (the learned model answered an unknown door of the corridor with
    "revealing the laundry room", the room south of it), and :func:`read_step` reads it as a door
    opened onto a room it does not know: frontier at extra cost 1, as the game's reply would be
    before the room is named."""
    if room == place:
        return True
    return any(p == place and d != direction and q == room for (p, d), q in m.exits.items())


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


def _door_closed(m: PlaceMap, a: str, b: str) -> bool:
    return any(
        q == b and m.doors.get((a, d)) == "closed" for (p, d), q in m.exits.items() if p == a
    )


def distances(m: PlaceMap, source: str | None) -> dict[str, float]:
    """Shortest path costs from ``source`` (a link costs 1, 2 through a door seen closed; every
    pair costs 1 in a ``complete`` map)."""
    if source is None:
        return {}
    if m.complete:
        return {p: (0.0 if p == source else 1.0) for p in m.places | {source}}
    adj: dict[str, set[str]] = {}
    for link in m.links:
        if len(link) == 2:
            a, b = tuple(link)
            adj.setdefault(a, set()).add(b)
            adj.setdefault(b, set()).add(a)
    dist, heap = {source: 0.0}, [(0.0, source)]
    while heap:
        d, a = heapq.heappop(heap)
        if d > dist.get(a, float("inf")):
            continue
        for b in sorted(adj.get(a, ())):
            nd = d + (2.0 if _door_closed(m, a, b) or _door_closed(m, b, a) else 1.0)
            if nd < dist.get(b, float("inf")):
                dist[b] = nd
                heapq.heappush(heap, (nd, b))
    return dist


def frontier(m: PlaceMap) -> list[tuple[str, float]]:
    """:math:`F(M)`: ``(place, extra cost)`` pairs (module docstring)."""
    out = [(p, 0.0) for p in sorted(m.places - m.visited)]
    for (p, d), state in sorted(m.doors.items()):
        if (p, d) not in m.exits and state in ("closed", "open"):
            out.append((p, 2.0 if state == "closed" else 1.0))
    if m.complete:
        out += [
            (p, 1.0) for p in sorted(m.visited) if m.states.get(p) == "closed" and p not in m.opened
        ]
    return out


def frontier_distance(m: PlaceMap, place: str | None) -> float | None:
    r""":math:`d_F(\ell)`; ``None`` when no frontier place is reachable from ``place``."""
    dist = distances(m, place)
    costs = [dist[p] + c for p, c in frontier(m) if p in dist]
    return min(costs) if costs else None


class TaskGoal(NamedTuple):
    """What the task asks for: take ``obj`` (seen or said to be in ``obj_place``), then put it
    in/on ``receptacle`` (in ``receptacle_place``); ``None`` fields are not named by the task."""

    obj: str
    obj_place: str | None = None
    receptacle: str | None = None
    receptacle_place: str | None = None


_GOALS = (
    # TWX mapreader
    re.compile(
        r"take the (?P<obj>[a-z ]+?) that is located in the (?P<op>[a-z ]+?), and put it "
        r"into the (?P<rec>[a-z ]+?) found in the (?P<rp>[a-z ]+?)\."
    ),
    # ALFWorld pick (and clean/heat/cool) and place
    re.compile(
        r"put (?:a|an|some|two) (?:clean |hot |cool )?(?P<obj>[a-z ]+?) (?:in|on|in/on) "
        r"(?P<rec>[a-z ]+?)\.?$"
    ),
    re.compile(
        r"(?:clean|heat|cool) (?:a|an|some) (?P<obj>[a-z ]+?) and put it (?:in|on|in/on) "
        r"(?P<rec>[a-z ]+?)\.?$"
    ),
    # TWX coin
    re.compile(r"find the (?P<obj>[a-z ]+?)\.\s+once you find the [a-z ]+?, take it"),
)


def parse_goal(task: str) -> TaskGoal | None:
    """The goal a known task template names (mapreader, coin, ALFWorld pick-and-place and its
    clean/heat/cool variants); ``None`` otherwise."""
    text = " ".join(str(task).lower().split())
    text = text.split("your task is to:")[-1].strip()
    for pattern in _GOALS:
        hit = pattern.search(text)
        if hit:
            g = hit.groupdict()
            return TaskGoal(g["obj"].strip(), g.get("op"), g.get("rec"), g.get("rp"))
    return None


def stage(m: PlaceMap, goal: TaskGoal | None) -> int:
    """0 before a goal object is held, 1 while held, 2 once one is in/on a goal receptacle."""
    if goal is None:
        return 0
    if goal.receptacle and any(
        kind_of(e) == goal.obj and kind_of(w) == goal.receptacle for e, w in m.where.items()
    ):
        return 2
    return 1 if any(kind_of(e) == goal.obj for e in m.held()) else 0


def _located(m: PlaceMap, name: str, said: str | None) -> set[str]:
    """The known places of things of kind ``name`` (a container's own place when it is not one),
    else the place the task said."""
    places = m.places
    out = set()
    for e, w in m.where.items():
        if kind_of(e) != name or w == _HOLD:
            continue
        spot = w if w in places else m.where.get(w)
        if spot in places:
            out.add(spot)
    if not out and m.complete:
        out = {p for p in places if kind_of(p) == name}
    if not out and said:
        out = {said}
    return out


def cost_to_go(m: PlaceMap, goal: TaskGoal | None, place: str | None) -> tuple[float | None, bool]:
    r"""(:math:`D_{M,s}(\ell)`, whether the target is known and connected); ``None`` cost when
    neither the target nor a frontier is reachable."""
    s = stage(m, goal)
    if goal is not None and s < 2:
        targets = (
            _located(m, goal.obj, goal.obj_place)
            if s == 0
            else (_located(m, goal.receptacle, goal.receptacle_place) if goal.receptacle else set())
        )
        dist = distances(m, place)
        known = [dist[t] for t in targets if t in dist]
        if known:
            return min(known), True
    return frontier_distance(m, place), False


class TaskProgress:
    r"""``progress="task"``: :math:`\delta_t` of the module docstring, from the episode's map
    ``root`` (:attr:`smcplan.planning.progress.Seen.layout`) and the particle's own steps."""

    __name__ = "task"

    def __init__(self, task: str, root: PlaceMap | None = None, env_kind: str = "auto") -> None:
        self.goal = parse_goal(task)
        self.root = root or PlaceMap()
        self.env_kind = env_kind

    def deltas(self, particle: Any) -> list[float]:
        m, out, done = self.root, [], False
        outcomes = getattr(particle, "outcomes", ())
        for i, (a, o) in enumerate(particle.steps):
            if done or a == DONE_ACTION:
                out.append(0.0)
                continue
            new = read_step(m, a, o, self.env_kind, imagined=True)
            out.append(step_progress(m, new, self.goal))
            m = new
            done = bool(i < len(outcomes) and outcomes[i].done)
        return out

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
        per = [self.deltas(p) for p in particles]
        return Score(jnp.asarray([d[-1] for d in per]), jnp.asarray([float(sum(d)) for d in per]))


def step_progress(before: PlaceMap, after: PlaceMap, goal: TaskGoal | None) -> float:
    r""":math:`\delta_t` for one step from map ``before`` to map ``after`` (module docstring)."""
    cost_now, connected = cost_to_go(after, goal, after.place)
    cost_then, was_connected = cost_to_go(before, goal, before.place)
    advanced = stage(after, goal) > stage(before, goal)
    # moving: both costs on the new map; staying: what the step taught about the same place
    cost_prev = (
        cost_to_go(after, goal, before.place)[0]
        if after.place != before.place
        else (None if advanced else cost_then)
    )
    delta = 0.0
    if cost_now is not None and cost_prev is not None:
        delta += 0.5 * (cost_prev - cost_now)
    if advanced:
        delta += 1.0
    if not was_connected and explored(before, after):
        delta += 1.0
    if connected and not was_connected and stage(after, goal) == stage(before, goal):
        delta += 1.0
    if wasted(before, after, goal):
        delta -= 0.25
    if goal is not None and any(kind_of(e) != goal.obj for e in after.held() - before.held()):
        delta -= 0.5  # a detour: the hands (ALFWorld holds one thing) are now full
    return delta


def explored(before: PlaceMap, after: PlaceMap) -> bool:
    """The step reached a frontier element: entered an unvisited place (in a ``complete`` map,
    ALFWorld, one not found closed) or, in a ``complete`` map, opened the closed receptacle it
    stands at (its contents are what exploring it means there; in TextWorldExpress opening a
    door is only a step toward the room)."""
    entered = {p for p, c in frontier(before) if c == 0.0}
    if after.place != before.place and after.place in entered:
        # an ALFWorld receptacle found closed shows nothing yet: opening it explores it
        return not (after.complete and after.states.get(after.place) == "closed")
    return bool(
        after.complete
        and after.place == before.place
        and (after.place, 1.0) in frontier(before)
        and (after.place, 1.0) not in frontier(after)
    )


def wasted(before: PlaceMap, after: PlaceMap, goal: TaskGoal | None = None) -> bool:
    """A step that moved nowhere and taught nothing: same place, no new link, exit, sighting
    (a thing not seen before), opened door or opened receptacle, and no goal object moved (a
    failed move, "look", "inventory", closing a door, carrying a thing the task does not name)."""
    moved = {e for e, w in after.where.items() if before.where.get(e, w) != w}
    return (
        after.place == before.place
        and after.links <= before.links
        and after.exits.items() <= before.exits.items()
        and after.where.keys() <= before.where.keys()
        and not (goal is not None and any(kind_of(e) == goal.obj for e in moved))
        and after.opened <= before.opened
        and not any(s == "open" and before.doors.get(k) != "open" for k, s in after.doors.items())
    )


def with_place(m: PlaceMap, place: str | None) -> PlaceMap:
    """``m`` with the agent at ``place`` (tests and hand-made maps)."""
    return replace(m, place=place, visited=m.visited | ({place} if place else set()))
