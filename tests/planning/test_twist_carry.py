"""The rule-based twists carry their summary per particle (``smcplan.planning.twist_carry``) and
give exactly the numbers of reading each particle's whole path from the root
(``smcplan.planning.twist_reread``, the implementation before): over random trees of imagined
steps (shared parents, as after resampling), random real episodes before them, every game home
and the ``done``/``invalid`` outcomes, each particle's delta and log psi are equal as float64
(the sum is the same left fold) and so as the float32 arrays the planner gets."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcplan.games.twx import ALREADY_CLOSED, ALREADY_OPEN, BLOCKED_REPLY, INVALID_REPLY
from smcplan.planning.outcome import DONE_ACTION, Outcome
from smcplan.planning.progress import Seen, make_progress
from smcplan.planning.text_particle import TextParticle
from smcplan.planning.twist_env import EnvProgress
from smcplan.planning.twist_reread import (
    env_deltas,
    novelty_deltas,
    reread_score,
    rlvmr_deltas,
    task_deltas,
)
from smcplan.planning.twist_rules import NoveltyProgress, ProcessProgress
from smcplan.planning.twist_task import TaskProgress

# few rooms and directions, so that paths often meet the doors and exits the episode knows
ROOMS = ("kitchen", "living room", "backyard", "vault", "hall")
DIRS = ("north", "west")
TASKS = (
    "Your task is to search the environment and find the coin.  Once you find the coin, take it.",
    "Your task is to take the coin that is located in the hall, and put it into the box found "
    "in the vault. A map is provided, that you may find helpful.",
    "Your task is to: put a kettle in countertop.",
    "Your task is to boil water.",
)
ACTIONS = (
    *(f"move {d}" for d in DIRS),
    *(f"open door to {d}" for d in DIRS),
    *(f"close door to {d}" for d in DIRS),
    "look around",
    "inventory",
    "take coin",
    "put coin in box",
    "go to drawer 1",
    "take kettle 1 from drawer 1",
    DONE_ACTION,
)

room = st.sampled_from(ROOMS)
direction = st.sampled_from(DIRS)


@st.composite
def observation(draw):
    kind = draw(st.integers(-3, 7))
    if kind <= 0:
        here, thing = draw(room), draw(st.sampled_from(("coin", "box", "sofa", "stove")))
        exits = draw(st.lists(st.tuples(direction, room, st.integers(0, 2)), max_size=3))
        parts = [f"You are in the {here}. In one part of the room you see a {thing}. \n"]
        for d, q, door in exits:
            if door == 0:
                parts.append(f"To the {d.title()} you see the {q}. ")
            else:
                state = "closed" if door == 1 else "open"
                parts.append(f"To the {d.title()} you see a {state} wood door. ")
        return "".join(parts)
    if kind == 1:
        return f"You open the wood door, revealing the {draw(room)}. "
    if kind == 2:
        return f"You close the door to the {draw(room)}."
    if kind == 3:
        return draw(st.sampled_from((BLOCKED_REPLY, ALREADY_OPEN, ALREADY_CLOSED, INVALID_REPLY)))
    if kind == 4:
        return (
            "The map reads:\n  The vault connects to the hall.\n  The hall connects to the vault.\n"
        )
    if kind == 5:
        return "You arrive at drawer 1. On the drawer 1, you see a kettle 1."
    if kind == 6:
        return "You pick up the coin. "
    return f"You are in the {draw(room)}. "


triplet = st.tuples(
    st.sampled_from(("agent", "coin", "door", "kettle 1")),
    st.sampled_from(("in", "at", "is", "north")),
    st.sampled_from((*ROOMS, "closed", "open", "inventory")),
)
outcome = st.builds(
    Outcome,
    score=st.sampled_from((0.0, 0.5, 1.0)),
    gain=st.sampled_from((0.0, 0.25, 1.0, -1.0)),
    won=st.booleans(),
    lost=st.booleans(),
    done=st.booleans(),
    invalid=st.booleans(),
)


@st.composite
def step(draw):
    """(action, observation, triplets, outcome): the reply is often the one the action makes
    (a move arrives, an opened door reveals a room), else any observation."""
    action = draw(st.sampled_from(ACTIONS))
    obs = draw(observation())
    if draw(st.booleans()):
        if action.startswith("move "):
            obs = f"You are in the {draw(room)}. "
        elif action.startswith("open door"):
            obs = f"You open the wood door, revealing the {draw(room)}. "
        elif action.startswith("close door"):
            obs = f"You close the door to the {draw(room)}."
    trip = draw(st.one_of(st.just(()), st.lists(triplet, max_size=3).map(tuple)))
    return action, obs, trip, draw(outcome)


@st.composite
def episode(draw):
    """What the episode has seen (a random real prefix), the task and the game's home."""
    env_kind = draw(st.sampled_from(("twx", "auto", "alfworld", "toy")))
    seen = Seen()
    for action, obs, _, oc in draw(st.lists(step(), max_size=4)):
        info = {"score": oc.score, "invalid": oc.invalid}
        seen = seen.after(obs, None if action == DONE_ACTION else action, info, env_kind)
    return seen, draw(st.sampled_from(TASKS)), env_kind


@st.composite
def tree(draw):
    """N particles H steps deep; each step's particle i extends a random parent of the step
    before (shared parents, as resampling makes)."""
    n, h = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    root = TextParticle(kg=None, root_observation="root", admissible=ACTIONS)
    batches, batch = [], [root] * n
    for _ in range(h):
        parents = draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n))
        batch = [
            batch[j].extend(a, o, outcome=oc, triplets=trip)
            for j, (a, o, trip, oc) in zip(
                parents, draw(st.lists(step(), min_size=n, max_size=n)), strict=True
            )
        ]
        batches.append(batch)
    return batches


def twists(seen, task, env_kind):
    return [
        (NoveltyProgress(seen, env_kind), lambda tw, p: novelty_deltas(seen, tw.rules, p)),
        (ProcessProgress(seen, env_kind), lambda tw, p: rlvmr_deltas(seen, tw.rules, p)),
        (
            TaskProgress(task, seen.layout, env_kind),
            lambda tw, p: task_deltas(tw.root, tw.goal, tw.rules, p),
        ),
        (EnvProgress(), lambda tw, p: env_deltas(tw.horizon, p)),
    ]


def same_score(new, old):
    np.testing.assert_array_equal(np.asarray(new.delta), np.asarray(old.delta))
    np.testing.assert_array_equal(np.asarray(new.log_psi), np.asarray(old.log_psi))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episode(), tree())
def test_carried_twists_equal_rereading_the_whole_path(ep, batches):
    seen, task, env_kind = ep
    horizon = len(batches)
    key = jax.random.key(0)
    for twist, reference in twists(seen, task, env_kind):
        for t, batch in enumerate(batches, start=1):
            new = twist(key, batch, t, horizon)
            for p in batch:  # float64, before the planner's float32 arrays
                old = reference(twist, p)
                carried = twist.carried(p)
                assert carried.delta == old[-1] and carried.steps == len(old)
                assert float(carried.total) == float(sum(old))
                assert twist.deltas(p) == old
            same_score(new, reread_score(twist, key, batch, t, horizon))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episode(), tree())
def test_a_particle_without_its_parents_summary_is_read_from_the_root(ep, batches):
    """A particle made by ``dataclasses.replace`` (no ``parent_memo``) or a plain object (no
    ``memo``) gets the same numbers, read from the root; so does the twist's first call at a
    deep step (no summary stored yet)."""
    seen, task, env_kind = ep
    horizon, key = len(batches), jax.random.key(1)
    last = batches[-1]
    orphans = [dataclasses.replace(p, root_score=p.root_score) for p in last]
    plain = [SimpleNamespace(steps=p.steps, triplets=p.triplets, outcomes=p.outcomes) for p in last]
    assert all(o.parent_memo is None for o in orphans)
    for batch in (last, orphans, plain):
        for twist, _ in twists(seen, task, env_kind):
            new = twist(key, batch, horizon, horizon)
            same_score(new, reread_score(twist, key, batch, horizon, horizon))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(episode(), tree())
def test_a_sum_of_carried_twists_equals_the_sum_of_the_rereads(ep, batches):
    seen, task, env_kind = ep
    horizon, key = len(batches), jax.random.key(2)
    summed = make_progress("env+novelty+rlvmr+task", task=task, seen=seen, env_kind=env_kind)
    for t, batch in enumerate(batches, start=1):
        new = summed(key, batch, t, horizon)
        parts = [
            reread_score(tw, k, batch, t, horizon)
            for k, (_, tw) in zip(jax.random.split(key, 4), summed.parts, strict=True)
        ]
        # SumTwist's own sum of the parts' arrays
        for field in ("delta", "log_psi"):
            expected = sum(jnp.asarray(getattr(p, field), dtype=float) for p in parts)
            np.testing.assert_array_equal(np.asarray(getattr(new, field)), np.asarray(expected))


def test_one_planner_step_reads_one_step_per_particle():
    """The carried twist advances each particle by exactly one step per planner step (the
    reread read t steps at step t)."""
    kitchen = "You are in the kitchen. \nTo the West you see the living room. "
    seen = Seen().after(kitchen, None, {}, "twx")
    twist = NoveltyProgress(seen, "twx")
    calls = []
    advance = twist.advance
    twist.advance = lambda state, p, i: (calls.append(i), advance(state, p, i))[1]
    p = TextParticle(kg=None, root_observation="")
    for t in range(1, 11):
        p = p.extend("move west", "You are in the living room. ")
        calls.clear()
        twist(jax.random.key(0), [p, p], t, 10)
        assert calls == [t - 1]  # one step, once for the shared particle
