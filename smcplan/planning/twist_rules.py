r"""The count-based and rule-based twists ``progress="novelty"``, ``progress="untried"`` and
``progress="rlvmr"``
(the math is in :mod:`smcplan.planning.progress`), all LLM-free: each scores a particle's
imagined path against what the episode has seen (:class:`~smcplan.planning.seen.Seen`), with
:math:`\log\psi_t = \sum_{s\le t}\delta_s`, one step per planner step from the summary the
particle carries (:mod:`smcplan.planning.twist_carry`).  ``env_kind`` is the game's home
(:class:`smcplan.games.GameRules`, or the env name that resolves it): it reads the steps and says
which imagined reply failed (a step's own ``invalid`` flag, where its outcome has one, decides
first).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from smcplan.games import GameRules, rules_for
from smcplan.planning.outcome import DONE_ACTION
from smcplan.planning.seen import Seen, step_read
from smcplan.planning.twist_carry import Incremental

__all__ = ["Cumulative", "NoveltyProgress", "ProcessProgress", "UntriedProgress"]

#: The base of the cumulative twists (:class:`~smcplan.planning.twist_carry.Incremental`: the
#: summary of the path carried per particle, one step per planner step).
Cumulative = Incremental


class _SeenTwist(Incremental):
    """A cumulative twist read against what the episode has seen (``seen``) by the game's home
    ``env_kind``; :meth:`reader_start` is the place and doors the step reader starts from."""

    def __init__(self, seen: Seen | None = None, env_kind: GameRules | str = "auto") -> None:
        self.seen = seen or Seen()
        self.env_kind = env_kind
        self.rules = rules_for(env_kind)

    def reader_start(self) -> tuple[str | None, dict[tuple[str, str], str]]:
        """The real place and the doors of the episode's map, before any imagined step."""
        return self.seen.place, dict(self.seen.layout.doors)


class NoveltyProgress(_SeenTwist):
    r""":math:`\delta_t = \tfrac12(1/\sqrt{1 + n(\ell_t)} + [\text{a new entity}])` (module
    docstring).  Carries per particle: the reader's place and doors
    (:func:`~smcplan.planning.seen.step_read`), the visit counts, the entities seen and the
    current place."""

    __name__ = "novelty"

    def start(self) -> Any:
        seen = self.seen
        return self.reader_start(), dict(seen.visits), frozenset(seen.entities), seen.place

    def advance(self, state: Any, particle: Any, i: int) -> tuple[Any, float]:
        (here, doors), visits, entities, place = state
        read, names, here, doors = step_read(particle, i, self.rules, self.seen.layout, here, doors)
        if particle.steps[i][0] == DONE_ACTION:
            return ((here, doors), visits, entities, place), 0.0
        place = read or place
        count = 0.0
        if place is not None:
            n = visits.get(place, 0)
            count = 1.0 / float(np.sqrt(1.0 + n))
            visits = {**visits, place: n + 1}
        delta = 0.5 * (count + float(bool(names - entities)))
        entities = entities | names if names - entities else entities
        return ((here, doors), visits, entities, place), delta


class UntriedProgress(_SeenTwist):
    r""":math:`\delta_t = 1/\sqrt{1 + m(\ell_{t-1}, a_t)}` (:mod:`smcplan.planning.progress`):
    :math:`m` counts how often action :math:`a_t` was taken from place :math:`\ell_{t-1}`, in
    the episode (:attr:`Seen.tried`) and earlier on the particle's path.  Carries per particle:
    the reader's place and doors, the counts and the current place (``""`` while none is
    read)."""

    __name__ = "untried"

    def start(self) -> Any:
        return self.reader_start(), dict(self.seen.tried), self.seen.place or ""

    def advance(self, state: Any, particle: Any, i: int) -> tuple[Any, float]:
        (here, doors), tried, place = state
        read, _, here, doors = step_read(particle, i, self.rules, self.seen.layout, here, doors)
        action = particle.steps[i][0]
        if action == DONE_ACTION:
            return ((here, doors), tried, place), 0.0
        key = (place, action)
        n = tried.get(key, 0)
        tried = {**tried, key: n + 1}
        return ((here, doors), tried, read or place), 1.0 / float(np.sqrt(1.0 + n))


class ProcessProgress(_SeenTwist):
    r"""RLVMR's explore and reflection rules on imagined steps (module docstring).  Carries per
    particle: the reader's place and doors, the actions and places seen, and whether the last
    step failed and its action."""

    __name__ = "rlvmr"

    def start(self) -> Any:
        seen = self.seen
        prev_action = seen.actions[-1] if seen.actions else None
        return (
            self.reader_start(),
            frozenset(seen.actions),
            frozenset(seen.places),
            seen.last_failed,
            prev_action,
        )

    def advance(self, state: Any, particle: Any, i: int) -> tuple[Any, float]:
        (here, doors), actions, places, prev_failed, prev_action = state
        a, o = particle.steps[i]
        outcomes = getattr(particle, "outcomes", ())
        failed = (
            bool(outcomes[i].invalid)
            if i < len(outcomes) and outcomes[i].invalid
            else self.rules.is_failure(o)
        )
        place, _, here, doors = step_read(particle, i, self.rules, self.seen.layout, here, doors)
        if a == DONE_ACTION or failed:
            d = 0.0
        elif prev_failed and a != prev_action:
            d = 1.0  # reflection: a different action right after a failure
        elif prev_failed and a == prev_action:
            d = 0.0  # repetition: the action that has just failed, again
        elif a not in actions or (place is not None and place not in places):
            d = 1.0  # explore: a new action or a new place
        else:
            d = 0.0  # repetition
        actions = actions if a in actions else actions | {a}
        if place is not None and place not in places:
            places = places | {place}
        return ((here, doors), actions, places, failed, a), d
