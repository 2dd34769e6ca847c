"""What an episode has seen, read from its observations: the places visited, the entities named,
the actions taken, whether the last one failed, and the place map (:class:`Seen`); how one
observation is read (:func:`place_and_entities`, :func:`looks_failed`; a particle's steps,
:func:`steps_read`, one at a time :func:`step_read`).

The count-based and rule-based twists (:mod:`smcplan.planning.twist_rules`) and the task twist
(:mod:`smcplan.planning.twist_task`) score a particle's imagined steps against it.  Every
game-specific answer (which action never moves, which reply failed, which reply the map already
decides) comes from the game's home, a :class:`smcplan.games.GameRules` passed as ``env_kind``
(or the env name :func:`smcplan.games.rules_for` resolves).  Imports ``smcplan.games`` and the
place map; never agents, eval or cli.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from smcplan.games import NOT_THINGS, GameRules, rules_for
from smcplan.planning.places import PlaceMap, read_step

__all__ = ["Seen", "place_and_entities", "looks_failed", "steps_read", "step_read"]

_PLACE_PREDICATES = ("in", "at")


def looks_failed(observation: str, env_kind: GameRules | str = "auto") -> bool:
    """True when ``observation`` is one of the game's failure or no-op replies
    (:meth:`smcplan.games.GameRules.is_failure` with no ``info``: the ``auto`` home knows every
    text game's)."""
    return rules_for(env_kind).is_failure(observation)


class Seen(NamedTuple):
    """What the episode has seen so far (for ``novelty``, ``untried``, ``rlvmr`` and ``task``):
    the places visited, the entities named, the actions executed, whether the last real action
    failed (the env's ``invalid`` flag or a failure reply, :func:`looks_failed`), the current
    score, the current place, the steps spent at each place (``visits``: ``(place, n)``),
    the place map read from every observation (``layout``, :mod:`smcplan.planning.places`) and
    how often each action was taken from each place (``tried``: ``((place, action), n)``, the
    place the agent was in before it, ``""`` where none was read yet)."""

    places: frozenset[str] = frozenset()
    entities: frozenset[str] = frozenset()
    actions: tuple[str, ...] = ()
    last_failed: bool = False
    score: float = 0.0
    place: str | None = None
    visits: tuple[tuple[str, int], ...] = ()
    layout: PlaceMap = PlaceMap()
    tried: tuple[tuple[tuple[str, str], int], ...] = ()

    def after(
        self,
        observation: str,
        action: str | None,
        info: dict[str, Any],
        env_kind: GameRules | str = "auto",
    ) -> Seen:
        """What has been seen once ``observation`` (the result of ``action``) arrived, read by
        the game's home ``env_kind``: the step failed where ``info["invalid"]`` is True or the
        reply is a failure reply (:meth:`~smcplan.games.GameRules.is_failure`)."""
        rules = rules_for(env_kind)
        place, names = place_and_entities(observation, action, rules)
        place = (
            self.place
            if self.place is not None and rules.stays_put(action)
            else place or self.place
        )
        visits = dict(self.visits)
        if place is not None:
            visits[place] = visits.get(place, 0) + 1
        tried = dict(self.tried)
        if action:
            key = (self.place or "", action)
            tried[key] = tried.get(key, 0) + 1
        return Seen(
            places=self.places | ({place} if place else set()),
            entities=self.entities | names,
            actions=(*self.actions, action) if action else self.actions,
            last_failed=rules.is_failure(observation, info),
            score=float(info.get("score", self.score) or 0.0),
            place=place,
            visits=tuple(sorted(visits.items())),
            layout=read_step(self.layout, action, observation, rules),
            tried=tuple(sorted(tried.items())),
        )


def place_and_entities(
    observation: str,
    action: str | None = None,
    env_kind: GameRules | str = "auto",
    triplets: Iterable[Any] | None = None,
) -> tuple[str | None, set[str]]:
    """The agent's place after ``observation`` (``None`` if it names none) and the entities it
    names, read from its rule-based triplets (the game home ``env_kind``'s, or ``triplets`` when
    given)."""
    if triplets is None:
        triplets = rules_for(env_kind).triplets(str(observation), action)
    place, names = None, set()
    for t in triplets:
        s, p, o = t.as_tuple() if hasattr(t, "as_tuple") else tuple(t)
        if s == "agent" and p in _PLACE_PREDICATES:
            place = o
        if p == "is":  # a state ("fridge is closed"), not a new thing
            continue
        for e in (s, o):
            if e not in NOT_THINGS:
                names.add(e)
    return place, names


def steps_read(
    particle: Any,
    env_kind: GameRules | str,
    layout: PlaceMap | None = None,
    start: str | None = None,
) -> list[tuple[str | None, set[str]]]:
    """The place and the entities of each of ``particle.steps`` (its own triplets where it kept
    them, else the rule-based ones; a place the agent's extractor did not mark is read by rule;
    no place after an action that never moves, :meth:`~smcplan.games.GameRules.stays_put`, so
    the reader keeps the place it had; no entities after an action that only hides,
    :meth:`~smcplan.games.GameRules.hides_only`), by the game's home ``env_kind``.  With the
    episode's ``layout`` and the place the particle ``start`` s from, a move or a door whose
    destination the map knows (:meth:`~smcplan.games.GameRules.known_exit`) reads as that place,
    whatever the imagined reply names: the reply's place name replaced by the known one; a step
    whose reply the map decides and the imagined one contradicts
    (:meth:`~smcplan.games.GameRules.imagined_reply`, with the doors the particle's own earlier
    steps opened or closed) reads as the map's reply."""
    rules = rules_for(env_kind)
    out = []
    here = start
    doors = dict(layout.doors) if layout is not None else {}
    for i in range(len(particle.steps)):
        place, names, here, doors = step_read(particle, i, rules, layout, here, doors)
        out.append((place, names))
    return out


def step_read(
    particle: Any,
    i: int,
    rules: GameRules,
    layout: PlaceMap | None,
    here: str | None,
    doors: dict[tuple[str, str], str],
) -> tuple[str | None, set[str], str | None, dict[tuple[str, str], str]]:
    """Step ``i`` of :func:`steps_read`: ``(place, entities, here, doors)``, from the place
    ``here`` the particle is in before it and the ``doors`` as its earlier steps left them
    (``dict(layout.doors)`` before step 0); returns the ones after it (``doors`` is never
    written: a changed door gives a new dict)."""
    a, o = particle.steps[i]
    known = (
        particle.triplets[i]
        if i < len(getattr(particle, "triplets", ())) and particle.triplets[i]
        else None
    )
    if layout is not None:
        reply = rules.imagined_reply(doors, layout.exits, here, a, o)
        if reply != o:
            o, known = reply, None
    door = rules.door_after(a, o) if here is not None else None
    if door is not None:  # the particle's own door changes, for its later steps
        doors = {**doors, (here, door[0]): door[1]}
    place, names = place_and_entities(o, a, rules, triplets=known)
    if place is None and known is not None:  # the agent's own extractor may not mark places
        place, _ = place_and_entities(o, a, rules)
    if rules.stays_put(a):  # the place it names is the one the agent was in (or a slip)
        place = None
    if rules.hides_only(a):  # closing shows nothing new
        names = set()
    mapped = rules.known_exit(layout.exits, here, a) if layout is not None else None
    if mapped is not None:
        if place is not None:  # the reply says the agent moved: to where the map says
            names = (names - {place}) | {mapped}
            place = mapped
        revealed = rules.revealed_place(o)
        if revealed is not None:  # the door opens onto the room the map already knows
            names = (names - {revealed}) | {mapped}
    return place, names, place or here, doors
