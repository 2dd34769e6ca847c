r"""RockSample(n, k) (Smith & Simmons 2004, "Heuristic search value iteration for POMDPs"),
written as a NumPyro program.

A rover on an n × n grid knows the positions of k rocks but not which are *good*.

State (factors)
    ``x``, ``y`` ∈ [0, n) (x grows east, y grows south, as in pomdp-py), ``rocks`` ∈ [0, 2^k)
    (bit i set ⇔ rock i is good), ``done`` ∈ {0, 1}.  Exiting is one absorbing state, so
    :math:`|S| = n^2 2^k + 1` (RockSample(7,8): 12,545).

Actions (5 + k), deterministic
    ``move north|south|east|west`` (moves off the grid leave the rover in place, except that
    moving east from the last column exits: +10 and the episode ends); ``sample rock`` (at a
    rock: +10 if good, −10 if bad, and the rock becomes bad; elsewhere 0);
    ``check rock i`` (i = 1..k, reward 0).

Observations
    ``you observe nothing`` after anything but a check (and in the exited state);
    after ``check rock i`` the sensor reads ``the rock looks good`` / ``the rock looks bad``,
    correct with efficiency :math:`\eta = \tfrac12 (1 + 2^{-d / d_0})`, :math:`d` the Euclidean
    distance to rock i and :math:`d_0` = ``half_efficiency_distance`` = 20.

Initial belief: rover at ``start`` (default (0, ⌊n/2⌋)), each rock good with probability 1/2.
Rock positions are ``rock_positions`` or k distinct cells (not the start) drawn with
``numpy.random.default_rng(seed)``.  Discount 0.95.  Rewards and sensor follow pomdp-py's
``rocksample_problem`` (which bench/exact_filter.py compares against).

The transition has one next state per (action, state), so it compiles to a
:class:`~smcplan.pomdp.model.SparseTransition` with K = 1.

Imports numpyro and :mod:`smcplan.pomdp.program`; nothing from ``smcplan.smc`` or above.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from smcplan.pomdp.model import DiscretePOMDP
from smcplan.pomdp.program import POMDPProgram, compile_program

__all__ = [
    "rocksample",
    "rocksample_program",
    "default_rock_positions",
    "NORTH",
    "SOUTH",
    "EAST",
    "WEST",
    "SAMPLE",
]

NORTH, SOUTH, EAST, WEST, SAMPLE = 0, 1, 2, 3, 4
NONE_OBS, GOOD_OBS, BAD_OBS = 0, 1, 2
OBSERVATIONS = ("you observe nothing", "the rock looks good", "the rock looks bad")


def default_rock_positions(
    n: int, k: int, start: tuple[int, int], seed: int = 0
) -> tuple[tuple[int, int], ...]:
    """k distinct cells of the n × n grid, none at ``start``, drawn with ``default_rng(seed)``."""
    cells = [(x, y) for x in range(n) for y in range(n) if (x, y) != tuple(start)]
    if k > len(cells):
        raise ValueError(
            f"cannot place {k} rocks on a {n}x{n} grid with the start cell excluded ({len(cells)} "
            "cells)"
        )
    chosen = np.random.default_rng(seed).choice(len(cells), size=k, replace=False)
    return tuple(cells[i] for i in sorted(chosen))


def rocksample_program(
    n: int = 4,
    k: int = 4,
    rock_positions: Sequence[tuple[int, int]] | None = None,
    start: tuple[int, int] | None = None,
    half_efficiency_distance: float = 20.0,
    discount: float = 0.95,
    seed: int = 0,
) -> POMDPProgram:
    """RockSample(n, k) as a :class:`~smcplan.pomdp.program.POMDPProgram` (module docstring)."""
    if n < 1 or k < 0:
        raise ValueError(f"RockSample needs n >= 1 and k >= 0; got n={n}, k={k}")
    start = (0, n // 2) if start is None else (int(start[0]), int(start[1]))
    if not (0 <= start[0] < n and 0 <= start[1] < n):
        raise ValueError(f"start {start} is outside the {n}x{n} grid")
    if rock_positions is None:
        rock_positions = default_rock_positions(n, k, start, seed)
    rock_positions = tuple((int(x), int(y)) for x, y in rock_positions)
    if len(rock_positions) != k or len(set(rock_positions)) != k:
        raise ValueError(f"need {k} distinct rock positions; got {rock_positions}")
    for pos in rock_positions:
        if not (0 <= pos[0] < n and 0 <= pos[1] < n):
            raise ValueError(f"rock position {pos} is outside the {n}x{n} grid")

    # NumPy constants (float64/int64 under x64 during compilation)
    rock_x = np.asarray([p[0] for p in rock_positions] or [0], dtype=np.int64)
    rock_y = np.asarray([p[1] for p in rock_positions] or [0], dtype=np.int64)
    rock_at = np.full((n, n), -1, dtype=np.int64)
    for i, (x, y) in enumerate(rock_positions):
        rock_at[x, y] = i
    dx = np.asarray([0, 0, 1, -1] + [0] * (1 + k), dtype=np.int64)
    dy = np.asarray([-1, 1, 0, 0] + [0] * (1 + k), dtype=np.int64)
    action_names = ("move north", "move south", "move east", "move west", "sample rock") + tuple(
        f"check rock {i + 1}" for i in range(k)
    )

    def initial():
        rocks = jnp.asarray(0)
        for i in range(k):
            good = numpyro.sample(f"rock_{i + 1}", dist.Bernoulli(probs=0.5))
            rocks = rocks + jnp.left_shift(good.astype(rocks.dtype), i)
        return {
            "done": jnp.zeros_like(rocks),
            "x": jnp.full_like(rocks, start[0]),
            "y": jnp.full_like(rocks, start[1]),
            "rocks": rocks,
        }

    def _step(s, a):
        a = jnp.asarray(a)
        is_move = a < SAMPLE
        ex, ey = s["x"] + jnp.asarray(dx)[a], s["y"] + jnp.asarray(dy)[a]
        exiting = is_move & (ex >= n) & (s["done"] == 0)
        here = jnp.asarray(rock_at)[jnp.clip(s["x"], 0, n - 1), jnp.clip(s["y"], 0, n - 1)]
        sampling = (a == SAMPLE) & (here >= 0) & (s["done"] == 0)
        good_here = (jnp.right_shift(s["rocks"], jnp.maximum(here, 0)) & 1) == 1
        return ex, ey, exiting, here, sampling, good_here

    def transition(s, a):
        ex, ey, exiting, here, sampling, _ = _step(s, a)
        rocks = jnp.where(
            sampling, s["rocks"] & ~jnp.left_shift(1, jnp.maximum(here, 0)), s["rocks"]
        )
        done = (s["done"] == 1) | exiting
        return {
            "done": done.astype(s["rocks"].dtype),
            "x": jnp.where(done, 0, jnp.clip(ex, 0, n - 1)),
            "y": jnp.where(done, 0, jnp.clip(ey, 0, n - 1)),
            "rocks": jnp.where(done, 0, rocks),
        }

    def observe(s, a):
        a = jnp.asarray(a)
        checking = (a > SAMPLE) & (s["done"] == 0)
        i = jnp.clip(a - SAMPLE - 1, 0, max(k - 1, 0))
        dist_to_rock = jnp.sqrt(
            (s["x"] - jnp.asarray(rock_x)[i]) ** 2.0 + (s["y"] - jnp.asarray(rock_y)[i]) ** 2.0
        )
        efficiency = 0.5 * (1.0 + 2.0 ** (-dist_to_rock / half_efficiency_distance))
        good = (jnp.right_shift(s["rocks"], i) & 1) == 1
        p_good = jnp.where(good, efficiency, 1.0 - efficiency)
        check_probs = jnp.stack([jnp.zeros_like(p_good), p_good, 1.0 - p_good], axis=-1)
        none_probs = jnp.asarray([1.0, 0.0, 0.0])
        probs = jnp.where(checking[..., None], check_probs, none_probs)
        return numpyro.sample("obs", dist.Categorical(probs=probs))

    def reward(s, a, s_next):
        _, _, exiting, _, sampling, good_here = _step(s, a)
        return jnp.where(exiting, 10.0, jnp.where(sampling, jnp.where(good_here, 10.0, -10.0), 0.0))

    def is_terminal(s):
        return s["done"] == 1

    def state_name(v: Mapping[str, int]) -> str:
        if v["done"]:
            return "exited"
        rocks = "".join("G" if (v["rocks"] >> i) & 1 else "B" for i in range(k))
        return f"rover at ({v['x']}, {v['y']}); rocks {rocks or '-'}"

    return POMDPProgram(
        name=f"rocksample({n},{k})",
        state_factors={"done": 2, "x": n, "y": n, "rocks": 2**k},
        action_names=action_names,
        observation_names=OBSERVATIONS,
        initial=initial,
        transition=transition,
        observe=observe,
        reward=reward,
        discount=discount,
        state_name=state_name,
        is_terminal=is_terminal,
        metadata={
            "n": n,
            "k": k,
            "rock_positions": rock_positions,
            "start": start,
            "half_efficiency_distance": half_efficiency_distance,
        },
    )


def rocksample(
    n: int = 4,
    k: int = 4,
    rock_positions: Sequence[tuple[int, int]] | None = None,
    start: tuple[int, int] | None = None,
    half_efficiency_distance: float = 20.0,
    discount: float = 0.95,
    seed: int = 0,
) -> DiscretePOMDP:
    """RockSample(n, k) compiled to arrays (sparse K = 1 transition); |S| = n² 2^k + 1.

    ``pomdp.metadata`` holds ``n``, ``k``, ``rock_positions``, ``start``,
    ``half_efficiency_distance``.
    """
    return compile_program(
        rocksample_program(n, k, rock_positions, start, half_efficiency_distance, discount, seed)
    )
