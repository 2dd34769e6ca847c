r"""The reference: the rule-based twists as they were before they carried their summary per
particle (issue 52), reading each particle's whole path from the root at every step.  Kept,
unchanged, for the characterisation test (``tests/planning/test_twist_carry.py``: the carried
twists give exactly these numbers) and for ``bench/twist_cost.py`` (their cost per planner step
against the carried ones); the planner never calls it.

:func:`reread_score` is a twist's :class:`~smcplan.planning.components.Score` computed this way;
each ``*_deltas`` function is the former ``deltas`` method of its twist, :func:`steps_read` the
former :func:`smcplan.planning.seen.steps_read`.  Imports the place map and ``smcplan.games``;
never agents, eval or cli.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.games import GameRules, rules_for
from smcplan.planning.components import Score
from smcplan.planning.outcome import DONE_ACTION
from smcplan.planning.places import PlaceMap, read_step
from smcplan.planning.seen import Seen, place_and_entities
from smcplan.planning.twist_task import step_progress

__all__ = [
    "reread_score",
    "steps_read",
    "novelty_deltas",
    "rlvmr_deltas",
    "task_deltas",
    "env_deltas",
]


def reread_score(twist: Any, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
    """What ``twist`` (a :class:`~smcplan.planning.twist_rules.NoveltyProgress`,
    :class:`~smcplan.planning.twist_rules.ProcessProgress`,
    :class:`~smcplan.planning.twist_task.TaskProgress` or
    :class:`~smcplan.planning.twist_env.EnvProgress`) returned before it carried its summary:
    every particle's deltas recomputed from its whole path, the Monte Carlo leaf value added at
    t = H as before."""
    name = getattr(twist, "__name__", "")
    if name == "env":
        twist.horizon = int(horizon)
        per = [env_deltas(twist.horizon, p) for p in particles]
        if twist.rollouts > 0 and t == twist.horizon:
            keys = jax.random.split(key, len(particles))
            for i, (p, k) in enumerate(zip(particles, keys, strict=True)):
                per[i][-1] += twist.leaf_value(k, p)
    elif name == "novelty":
        per = [novelty_deltas(twist.seen, twist.rules, p) for p in particles]
    elif name == "rlvmr":
        per = [rlvmr_deltas(twist.seen, twist.rules, p) for p in particles]
    elif name == "task":
        per = [task_deltas(twist.root, twist.goal, twist.rules, p) for p in particles]
    else:
        raise ValueError(f"no reference for twist {name!r}; known: env, novelty, rlvmr, task")
    return Score(jnp.asarray([d[-1] for d in per]), jnp.asarray([float(sum(d)) for d in per]))


def steps_read(
    particle: Any,
    env_kind: GameRules | str,
    layout: PlaceMap | None = None,
    start: str | None = None,
) -> list[tuple[str | None, set[str]]]:
    """The place and the entities of each of ``particle.steps``, read from the root (the former
    :func:`smcplan.planning.seen.steps_read`, whose docstring states the rules)."""
    rules = rules_for(env_kind)
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
            reply = rules.imagined_reply(doors, layout.exits, here, a, o)
            if reply != o:
                o, known = reply, None
        door = rules.door_after(a, o) if here is not None else None
        if door is not None:  # the particle's own door changes, for its later steps
            doors[(here, door[0])] = door[1]
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
        here = place or here
        out.append((place, names))
    return out


def novelty_deltas(seen: Seen, rules: GameRules, particle: Any) -> list[float]:
    """The former ``NoveltyProgress.deltas``."""
    visits, entities, place = dict(seen.visits), set(seen.entities), seen.place
    out = []
    for (a, _), (read, names) in zip(
        particle.steps,
        steps_read(particle, rules, seen.layout, seen.place),
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


def rlvmr_deltas(seen: Seen, rules: GameRules, particle: Any) -> list[float]:
    """The former ``ProcessProgress.deltas``."""
    actions, places = set(seen.actions), set(seen.places)
    prev_failed = seen.last_failed
    prev_action = seen.actions[-1] if seen.actions else None
    out = []
    reads = steps_read(particle, rules, seen.layout, seen.place)
    outcomes = getattr(particle, "outcomes", ())
    for i, (a, o) in enumerate(particle.steps):
        failed = (
            bool(outcomes[i].invalid)
            if i < len(outcomes) and outcomes[i].invalid
            else rules.is_failure(o)
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


def task_deltas(root: PlaceMap, goal: Any, rules: GameRules, particle: Any) -> list[float]:
    """The former ``TaskProgress.deltas``."""
    m, out, done = root, [], False
    outcomes = getattr(particle, "outcomes", ())
    for i, (a, o) in enumerate(particle.steps):
        if done or a == DONE_ACTION:
            out.append(0.0)
            continue
        new = read_step(m, a, o, rules, imagined=True)
        out.append(step_progress(m, new, goal, rules))
        m = new
        done = bool(i < len(outcomes) and outcomes[i].done)
    return out


def env_deltas(horizon: int, particle: Any) -> list[float]:
    """The former ``EnvProgress.deltas``."""
    out, done = [], False
    for t, oc in enumerate(particle.outcomes, start=1):
        end = (1 + horizon - t) * (float(oc.won) - float(oc.lost))
        out.append(0.0 if done else float(oc.gain) + end)
        done = done or oc.done
    return out
