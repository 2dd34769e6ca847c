r"""The count-based and rule-based twists ``progress="novelty"`` and ``progress="rlvmr"``
(the math is in :mod:`smcplan.planning.progress`), both LLM-free: each scores a particle's whole
imagined path against what the episode has seen (:class:`~smcplan.planning.seen.Seen`), with
:math:`\log\psi_t = \sum_{s\le t}\delta_s`.  ``env_kind`` is the game's home
(:class:`smcplan.games.GameRules`, or the env name that resolves it): it reads the steps and says
which imagined reply failed (a step's own ``invalid`` flag, where its outcome has one, decides
first).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.games import GameRules, rules_for
from smcplan.planning.components import Score
from smcplan.planning.outcome import DONE_ACTION
from smcplan.planning.seen import Seen, steps_read

__all__ = ["Cumulative", "NoveltyProgress", "ProcessProgress"]


class Cumulative:
    """log psi_t = sum of the particle's deltas so far (computed from its whole path)."""

    def deltas(self, particle: Any) -> list[float]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
        per = [self.deltas(p) for p in particles]
        return Score(jnp.asarray([d[-1] for d in per]), jnp.asarray([float(sum(d)) for d in per]))


class NoveltyProgress(Cumulative):
    r""":math:`\delta_t = \tfrac12(1/\sqrt{1 + n(\ell_t)} + [\text{a new entity}])` (module
    docstring)."""

    __name__ = "novelty"

    def __init__(self, seen: Seen | None = None, env_kind: GameRules | str = "auto") -> None:
        self.seen = seen or Seen()
        self.env_kind = env_kind
        self.rules = rules_for(env_kind)

    def deltas(self, particle: Any) -> list[float]:
        visits, entities, place = dict(self.seen.visits), set(self.seen.entities), self.seen.place
        out = []
        for (a, _), (read, names) in zip(
            particle.steps,
            steps_read(particle, self.rules, self.seen.layout, self.seen.place),
            strict=True,
        ):
            if a == DONE_ACTION:
                out.append(0.0)
                continue
            place = read or place
            count = 0.0
            if place is not None:
                n = visits.get(place, 0)
                count = 1.0 / float(np.sqrt(1.0 + n))
                visits[place] = n + 1
            out.append(0.5 * (count + float(bool(names - entities))))
            entities |= names
        return out


class ProcessProgress(Cumulative):
    r"""RLVMR's explore and reflection rules on imagined steps (module docstring)."""

    __name__ = "rlvmr"

    def __init__(self, seen: Seen | None = None, env_kind: GameRules | str = "auto") -> None:
        self.seen = seen or Seen()
        self.env_kind = env_kind
        self.rules = rules_for(env_kind)

    def deltas(self, particle: Any) -> list[float]:
        actions, places = set(self.seen.actions), set(self.seen.places)
        prev_failed = self.seen.last_failed
        prev_action = self.seen.actions[-1] if self.seen.actions else None
        out = []
        reads = steps_read(particle, self.rules, self.seen.layout, self.seen.place)
        outcomes = getattr(particle, "outcomes", ())
        for i, (a, o) in enumerate(particle.steps):
            failed = (
                bool(outcomes[i].invalid)
                if i < len(outcomes) and outcomes[i].invalid
                else self.rules.is_failure(o)
            )
            place = reads[i][0]
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
            out.append(d)
            actions.add(a)
            if place is not None:
                places.add(place)
            prev_failed, prev_action = failed, a
        return out
