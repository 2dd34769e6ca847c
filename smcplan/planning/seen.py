"""What an episode has seen, read from its observations: the places visited, the entities named,
the actions taken, whether the last one failed, and the place map (:class:`Seen`); how one
observation is read (:func:`place_and_entities`, :func:`looks_failed`, :func:`steps_read`).

The count-based and rule-based twists (:mod:`smcplan.planning.twist_rules`) and the task twist
(:mod:`smcplan.planning.places`) score a particle's imagined steps against it.  Imports
``smcplan.memory`` (rule extraction) and the place map; never agents, eval or cli.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from smcplan.memory import extract_triplets
from smcplan.planning.places import (
    PlaceMap,
    door_after,
    hides_only,
    imagined_reply,
    known_exit,
    read_step,
    revealed_place,
    stays_put,
)

__all__ = ["Seen", "place_and_entities", "looks_failed", "steps_read"]

_PLACE_PREDICATES = ("in", "at")
_SELF = ("agent", "you", "inventory", "open", "closed", "locked", "empty", "nothing")

_FAILED = (
    "Unknown action",
    "No known action matches that input",
    "Nothing happens",
    "nothing happens",
    "That is already",
    "You can't",
    "I'm not sure",
)


def looks_failed(observation: str) -> bool:
    """True when the observation is one of the text games' failure or no-op replies ("That is
    already open", "Nothing happens", "You can't ...")."""
    text = str(observation).strip()
    return any(text.startswith(m) for m in _FAILED)


class Seen(NamedTuple):
    """What the episode has seen so far (for ``novelty``, ``rlvmr`` and ``task``): the places
    visited, the entities named, the actions executed, whether the last real action failed (the
    env's ``invalid`` flag or a failure reply, :func:`looks_failed`), the
    current score, the current place, the steps spent at each place (``visits``: ``(place, n)``)
    and the place map read from every observation (``layout``, :mod:`smcplan.planning.places`)."""

    places: frozenset[str] = frozenset()
    entities: frozenset[str] = frozenset()
    actions: tuple[str, ...] = ()
    last_failed: bool = False
    score: float = 0.0
    place: str | None = None
    visits: tuple[tuple[str, int], ...] = ()
    layout: PlaceMap = PlaceMap()

    def after(
        self, observation: str, action: str | None, info: dict[str, Any], env_kind: str = "auto"
    ) -> Seen:
        """What has been seen once ``observation`` (the result of ``action``) arrived."""
        place, names = place_and_entities(observation, action, env_kind)
        place = self.place if self.place is not None and stays_put(action) else place or self.place
        visits = dict(self.visits)
        if place is not None:
            visits[place] = visits.get(place, 0) + 1
        return Seen(
            places=self.places | ({place} if place else set()),
            entities=self.entities | names,
            actions=(*self.actions, action) if action else self.actions,
            last_failed=bool(info.get("invalid", False)) or looks_failed(observation),
            score=float(info.get("score", self.score) or 0.0),
            place=place,
            visits=tuple(sorted(visits.items())),
            layout=read_step(self.layout, action, observation, env_kind),
        )


def place_and_entities(
    observation: str,
    action: str | None = None,
    env_kind: str = "auto",
    triplets: Iterable[Any] | None = None,
) -> tuple[str | None, set[str]]:
    """The agent's place after ``observation`` (``None`` if it names none) and the entities it
    names, read from its rule-based triplets (or from ``triplets`` when given)."""
    if triplets is None:
        triplets = extract_triplets(str(observation), action, env_kind=env_kind)
    place, names = None, set()
    for t in triplets:
        s, p, o = t.as_tuple() if hasattr(t, "as_tuple") else tuple(t)
        if s == "agent" and p in _PLACE_PREDICATES:
            place = o
        if p == "is":  # a state ("fridge is closed"), not a new thing
            continue
        for e in (s, o):
            if e not in _SELF:
                names.add(e)
    return place, names


def steps_read(
    particle: Any, env_kind: str, layout: PlaceMap | None = None, start: str | None = None
) -> list[tuple[str | None, set[str]]]:
    """The place and the entities of each of ``particle.steps`` (its own triplets where it kept
    them, else the rule-based ones; a place the agent's extractor did not mark is read by rule;
    no place after an action that never moves, :func:`~smcplan.planning.places.stays_put`, so
    the reader keeps the place it had; no entities after ``close X``,
    :func:`~smcplan.planning.places.hides_only`).  With the episode's ``layout`` and the place
    the particle ``start`` s from, a move or a door whose destination the map knows
    (:func:`~smcplan.planning.places.known_exit`) reads as that place, whatever the imagined
    reply names: the reply's room name replaced by the known one; a step whose reply the map
    decides and the imagined one contradicts (:func:`~smcplan.planning.places.imagined_reply`,
    with the doors the particle's own earlier steps opened or closed: a move into a door last
    seen closed, a move through a known exit read as staying, an open door opened again) reads
    as the map's reply."""
    out = []
    here = start
    doors = dict(layout.doors) if layout is not None else {}
    for i, (a, o) in enumerate(particle.steps):
        known = (
            particle.triplets[i]
            if i < len(getattr(particle, "triplets", ())) and particle.triplets[i]
            else None
        )
        if layout is not None:
            reply = imagined_reply(doors, layout.exits, here, a, o, env_kind)
            if reply != o:
                o, known = reply, None
        door = door_after(a, o) if here is not None else None
        if door is not None:  # the particle's own door changes, for its later steps
            doors[(here, door[0])] = door[1]
        place, names = place_and_entities(o, a, env_kind, triplets=known)
        if place is None and known is not None:  # the agent's own extractor may not mark places
            place, _ = place_and_entities(o, a, env_kind)
        if stays_put(a):  # the place it names is the one the agent was in (or a model's slip)
            place = None
        if hides_only(a):  # closing shows nothing new
            names = set()
        mapped = known_exit(layout, here, a) if layout is not None else None
        if mapped is not None:
            if place is not None:  # the reply says the agent moved: to where the map says
                names = (names - {place}) | {mapped}
                place = mapped
            revealed = revealed_place(o)
            if revealed is not None:  # the door opens onto the room the map already knows
                names = (names - {revealed}) | {mapped}
        here = place or here
        out.append((place, names))
    return out
