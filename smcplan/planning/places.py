r"""The place map of an episode and its distances: what the task twist
(:mod:`smcplan.planning.twist_task`) and the map notes read.

**The map** :math:`M` (:class:`PlaceMap`, pure and immutable; :func:`read_step` adds one step)
is read from every observation by the game's home (:class:`smcplan.games.GameRules`, whose
:meth:`~smcplan.games.GameRules.read` says what a reply adds: the places the agent has been in,
links between places, exits ``(p, d) -> q``, doors ``(p, d) -> open | closed``, where each
thing was last seen and what is held).  In a ``complete`` map every place is one step from every
other (distance 1 between any two places).

**The frontier** :math:`F(M)`: the known but unvisited places (extra cost 0), the doors of a
place whose other side is unknown (closed: extra cost 2, open, then move; open: extra cost 1,
move) and, in a ``complete`` map, the visited places last seen closed (extra cost 1: open).
:math:`d_M(\ell, p)` is the shortest path (Dijkstra: a link costs 1, 2 through a door last seen
closed) and :math:`d_F(\ell) = \min_{(p, c) \in F} d_M(\ell, p) + c`.

**The cost-to-go** :math:`D_{M,s}(\ell) = d_M(\ell, \text{target})` when the goal's target
(:class:`smcplan.games.TaskGoal`; stage :math:`s`, :func:`stage`) is known and connected to
:math:`\ell` in :math:`M`, else :math:`d_F(\ell)` (search the frontier).  The target of stage
:math:`s` cycles per object: a goal object not yet put (nearest instance of its kind), then the
goal's tool where the task names a treatment (the sink that cleans it, the lamp to turn on), then
the receptacle; a task of :math:`c` objects passes the cycle :math:`c` times.  In a
``complete`` map a target last seen closed costs 1/2 more (it must be opened).

Never names a benchmark: the game's words live in :mod:`smcplan.games`.  Imports
``smcplan.games`` only.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from smcplan.games import HELD, GameRules, TaskGoal, rules_for

__all__ = [
    "PlaceMap",
    "TaskGoal",
    "read_step",
    "revealed_place",
    "kind_of",
    "distances",
    "frontier",
    "frontier_distance",
    "cost_to_go",
    "stage",
    "final_stage",
    "explored",
    "wasted",
    "with_place",
]


def kind_of(entity: str) -> str:
    """``"kettle 1"`` -> ``"kettle"``: the kind of a numbered instance."""
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
        """Every place the map knows: visited, linked, or (``complete``) a thing in the room."""
        named = {p for link in self.links for p in link} | {q for q in self.exits.values()}
        if self.complete:
            named |= {e for e, w in self.where.items() if w == "room"}
        return frozenset(self.visited | named) - {"room"}

    def held(self) -> frozenset[str]:
        """The things last seen held (in :data:`smcplan.games.HELD`)."""
        return frozenset(e for e, w in self.where.items() if w == HELD)


def read_step(
    m: PlaceMap,
    action: str | None,
    observation: str,
    env_kind: GameRules | str = "auto",
    triplets: Iterable[Any] | None = None,
    imagined: bool = False,
) -> PlaceMap:
    """The map after ``observation`` (the result of ``action``): ``m`` with what the game's home
    ``env_kind`` (a :class:`~smcplan.games.GameRules`, or the env name that
    :func:`smcplan.games.rules_for` resolves) reads from it (:meth:`GameRules.read`: from the
    rule triplets unless ``triplets`` are given).  With ``imagined=True`` (a particle's step,
    not the env's) a step whose reply the map already decides reads as that reply where the
    imagined one tells another event; a real reply is always read as it is."""
    rules = rules_for(env_kind)
    facts = rules.read(m, action, observation, triplets, imagined)
    place = facts.place
    states = {**m.states, **facts.states}
    return PlaceMap(
        place,
        m.visited | ({place} if place is not None else set()),
        m.links | facts.links,
        {**m.exits, **facts.exits},
        {**m.doors, **facts.doors},
        {**m.where, **facts.where},
        states,
        m.complete or rules.complete_map,
        m.opened | {e for e, state in states.items() if state == "open"},
    )


def revealed_place(observation: str, env_kind: GameRules | str = "auto") -> str | None:
    """The place ``observation`` says an opened passage shows, by the game's home
    (:meth:`GameRules.revealed_place`), or None."""
    return rules_for(env_kind).revealed_place(observation)


def _door_closed(m: PlaceMap, a: str, b: str) -> bool:
    return any(
        q == b and m.doors.get((a, d)) == "closed" for (p, d), q in m.exits.items() if p == a
    )


def distances(m: PlaceMap, source: str | None) -> dict[str, float]:
    """Shortest path costs from ``source`` (Dijkstra: a link costs 1, 2 through a door seen
    closed; every pair costs 1 in a ``complete`` map)."""
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


def _per_object(goal: TaskGoal) -> int:
    """The stages one object of the goal passes: held, treated (with a tool), put (with a
    receptacle)."""
    return 1 + (goal.tool is not None) + (goal.receptacle is not None)


def final_stage(goal: TaskGoal | None) -> int:
    """The stage at which every object of the goal has passed all of its stages (0: no goal)."""
    return 0 if goal is None else goal.count * _per_object(goal)


def _done_with(m: PlaceMap, goal: TaskGoal) -> set[str]:
    """The goal objects in/on a goal receptacle, in the ``treated`` state where the goal asks
    for one."""
    if not goal.receptacle:
        return set()
    return {
        e
        for e, w in m.where.items()
        if kind_of(e) == goal.obj
        and kind_of(w) == goal.receptacle
        and (goal.tool is None or m.states.get(e) == goal.treated)
    }


def _is_treated(m: PlaceMap, goal: TaskGoal, held: list[str]) -> bool:
    """A held goal object is in the ``treated`` state (with a receptacle), or a ``tool`` is (with
    none: the lamp is on while the object is held)."""
    if goal.receptacle:
        return any(m.states.get(e) == goal.treated for e in held)
    return any(kind_of(t) == goal.tool and st == goal.treated for t, st in m.states.items())


def stage(m: PlaceMap, goal: TaskGoal | None) -> int:
    """How far the goal is: per object, one stage for holding it, one for its treatment (with a
    tool) and one for putting it (with a receptacle), :math:`c` objects in turn; so 0 before a
    goal object is held, 1 while held, 2 once put in/on a goal receptacle for a plain
    take-and-put, up to :func:`final_stage`."""
    if goal is None:
        return 0
    per, done = _per_object(goal), _done_with(m, goal)
    if goal.receptacle and len(done) >= goal.count:
        return final_stage(goal)
    held = [e for e in m.held() if kind_of(e) == goal.obj]
    s = len(done) * per
    if held:
        s += 1 + (goal.tool is not None and _is_treated(m, goal, held))
    return min(s, final_stage(goal))


def _located(m: PlaceMap, name: str, said: str | None, skip: set[str] | None = None) -> set[str]:
    """The known places of things of kind ``name`` (a container's own place when it is not one),
    else the place the task said; things in ``skip`` are not counted."""
    places = m.places
    out = set()
    for e, w in m.where.items():
        if kind_of(e) != name or w == HELD or e in (skip or ()):
            continue
        spot = w if w in places else m.where.get(w)
        if spot in places:
            out.add(spot)
    if not out and m.complete:
        out = {p for p in places if kind_of(p) == name}
    if not out and said:
        out = {said}
    return out


def _targets(m: PlaceMap, goal: TaskGoal, s: int) -> set[str]:
    """Where stage ``s`` leads: a goal object not yet done, then the tool (if any), then the
    receptacle (if any)."""
    step = s % _per_object(goal)
    if step == 0:
        return _located(m, goal.obj, goal.obj_place, _done_with(m, goal))
    if step == 1 and goal.tool is not None:
        return _located(m, goal.tool, None)
    if goal.receptacle:
        return _located(m, goal.receptacle, goal.receptacle_place)
    return set()


def _closed(m: PlaceMap, place: str) -> float:
    r"""1/2 for a place of a ``complete`` map last seen closed (a receptacle to open before a thing
    goes in or comes out), else 0.  Any :math:`c \in (0, 1)` makes both halves of reaching a
    closed target pay (going there: :math:`(1 - c)/2`; opening it: :math:`c/2`) and going on from
    it to another target of unknown state pay nothing; with :math:`c = 1` reaching it pays
    nothing, so a target that turned out closed looked no better than any other place."""
    return 0.5 if m.complete and m.states.get(place) == "closed" else 0.0


def cost_to_go(m: PlaceMap, goal: TaskGoal | None, place: str | None) -> tuple[float | None, bool]:
    r"""(:math:`D_{M,s}(\ell)`, whether the target is known and connected); ``None`` cost when
    neither the target nor a frontier is reachable."""
    s = stage(m, goal)
    if goal is not None and s < final_stage(goal):
        dist = distances(m, place)
        known = [dist[t] + _closed(m, t) for t in _targets(m, goal, s) if t in dist]
        if known:
            return min(known), True
    return frontier_distance(m, place), False


def explored(before: PlaceMap, after: PlaceMap) -> bool:
    """The step reached a frontier element: entered an unvisited place (in a ``complete`` map,
    one not found closed) or, in a ``complete`` map, opened the closed place it stands at (its
    contents are what exploring it means there; elsewhere opening a door is only a step toward
    the place behind it)."""
    entered = {p for p, c in frontier(before) if c == 0.0}
    if after.place != before.place and after.place in entered:
        # a place found closed in a complete map shows nothing yet: opening it explores it
        return not (after.complete and after.states.get(after.place) == "closed")
    return bool(
        after.complete
        and after.place == before.place
        and (after.place, 1.0) in frontier(before)
        and (after.place, 1.0) not in frontier(after)
    )


def wasted(before: PlaceMap, after: PlaceMap, goal: TaskGoal | None = None) -> bool:
    """A step that moved nowhere and taught nothing: same place, no new link, exit, sighting
    (a thing not seen before), opened door or opened receptacle, no goal object moved and no
    goal object or tool changed state (a failed move, "look", "inventory", closing a door,
    carrying a thing the task does not name)."""
    moved = {e for e, w in after.where.items() if before.where.get(e, w) != w}
    return (
        after.place == before.place
        and after.links <= before.links
        and after.exits.items() <= before.exits.items()
        and after.where.keys() <= before.where.keys()
        and not (goal is not None and any(kind_of(e) == goal.obj for e in moved))
        and not (goal is not None and _goal_state_changed(before, after, goal))
        and after.opened <= before.opened
        and not any(s == "open" and before.doors.get(k) != "open" for k, s in after.doors.items())
    )


def _goal_state_changed(before: PlaceMap, after: PlaceMap, goal: TaskGoal) -> bool:
    """A goal object or a tool of the goal changed state (cleaned, heated, a lamp turned on)."""
    kinds = {goal.obj, goal.tool}
    return any(kind_of(e) in kinds and before.states.get(e) != st for e, st in after.states.items())


def with_place(m: PlaceMap, place: str | None) -> PlaceMap:
    """``m`` with the agent at ``place`` (tests and hand-made maps)."""
    return replace(m, place=place, visited=m.visited | ({place} if place else set()))
