r"""Household: an ALFWorld-like search task in miniature, written as a NumPyro program.

An object (default ``key 1``) is hidden in one of ``n`` closed receptacles (default
``drawer 1``, ``drawer 2``, ``cabinet 1``); the task is to take it.

State (factors)
    ``key`` ∈ receptacles (where the object is), ``agent`` ∈ receptacles ∪ {middle of the room},
    ``open`` ⊆ receptacles (a bitmask), ``done`` ∈ {ongoing, succeeded, failed, over}.  The three
    ended states are single states ("task succeeded", "task failed", "task over"); any action in
    "succeeded"/"failed" leads to the absorbing "task over".  Starting in the middle, the
    reachable states number n^2 2^n (agent at a receptacle) + n (agent in the middle, all
    closed) + 3 (78 for n = 3).

Actions (4n + 1), deterministic
    ``go to R`` (the agent moves to R); ``open R`` / ``close R`` (only when at R, else nothing
    happens); ``take key 1 from R`` (only when at R): if the key is in R the task succeeds; if R is
    *closed* and the key is not there the agent grabs blindly, takes the wrong thing and the task
    fails; if R is open and empty nothing happens; ``look``.  With ``closed_take="fails"``
    (ALFWorld's rule: what a closed receptacle holds cannot be taken) any take from a closed R
    fails the task, key or not, so the key must be seen before it is taken.

Observations (readable, ALFWorld phrasing), a function of the arrival state and the action
    ``you arrive at the R. the R is closed.`` / ``... the R is open. in it, you see a key 1.`` /
    ``... the R is open. in it, you see nothing.``; ``you open the R. in it, you see a key 1.`` /
    ``you open the R. in it, you see nothing.``; ``you close the R.``;
    ``you pick up the key 1 from the R.``; ``you reach into the closed R and take the wrong thing.
    the task has failed.``; ``nothing happens.``; ``the task is over.``.  ``look`` says where the
    agent is (``you are facing the R.`` / ``you are in the middle of the room.``), or, with
    ``look_accuracy`` set, gives a noisy hint ``you think the key 1 is in the R.``: the true
    receptacle with probability ``look_accuracy``, otherwise one of the others uniformly.
    An open receptacle reveals its contents on arrival and on opening.

Rewards
    −``step_cost`` (1) for every action while the task is ongoing, plus ``success_reward`` (+10)
    on success and −``failure_penalty`` (10) on failure; 0 once the task has ended.  Discount 0.95.

Where greedy is wrong (:data:`CHECK_FIRST`, :func:`household_check_first`)
    Two drawers, key in drawer 1 with probability 0.7, agent standing at the closed drawer 1.
    One-step greedy takes blindly: :math:`Q_1(\text{take}) = 0.7 \cdot 9 + 0.3 \cdot (-11) = 3.0`
    against −1 for anything else.  Looking one step further, opening first is better:
    :math:`Q_2(\text{open drawer 1}) = -1 + 0.95\,(0.7 \cdot 9 + 0.3 \cdot (-1)) = 4.7 > 3.0`.
    The optimal first action for every horizon ≥ 2 is ``open drawer 1`` (check the receptacle
    before acting); tests/pomdp/test_solve.py checks this with :func:`~smcplan.pomdp.solve_exact`.

Imports numpyro and :mod:`smcplan.pomdp.program`; nothing from ``smcplan.smc`` or above.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from smcplan.pomdp.domains.compiled import compiled
from smcplan.pomdp.model import DiscretePOMDP
from smcplan.pomdp.program import POMDPProgram

__all__ = [
    "household",
    "household_program",
    "household_check_first",
    "CHECK_FIRST",
    "MIDDLE_OF_ROOM",
]

MIDDLE_OF_ROOM = "middle of the room"
ONGOING, SUCCEEDED, FAILED, OVER = 0, 1, 2, 3
GO, OPEN, CLOSE, TAKE, LOOK = 0, 1, 2, 3, 4
# per-receptacle observation slots
(
    _ARRIVE_CLOSED,
    _ARRIVE_SEE,
    _ARRIVE_EMPTY,
    _OPEN_SEE,
    _OPEN_EMPTY,
    _CLOSE,
    _PICK,
    _FAIL,
    _FACING,
    _HINT,
) = range(10)

#: The "check the receptacle before acting" scenario (module docstring).
CHECK_FIRST: dict[str, Any] = {
    "receptacles": ("drawer 1", "drawer 2"),
    "key_prior": (0.7, 0.3),
    "start": "drawer 1",
}


def household_program(
    receptacles: Sequence[str] = ("drawer 1", "drawer 2", "cabinet 1"),
    obj: str = "key 1",
    key_prior: Sequence[float] | None = None,
    start: str | None = None,
    initially_open: Sequence[str] = (),
    look_accuracy: float | None = None,
    step_cost: float = 1.0,
    success_reward: float = 10.0,
    failure_penalty: float = 10.0,
    discount: float = 0.95,
    closed_take: str = "blind",
) -> POMDPProgram:
    """The household search task as a :class:`~smcplan.pomdp.program.POMDPProgram` (module
    docstring)."""
    receptacles = tuple(receptacles)
    n = len(receptacles)
    if n < 1 or len(set(receptacles)) != n:
        raise ValueError(f"receptacles must be distinct and non-empty; got {receptacles}")
    # NumPy float64 constants: they keep full precision when compiled under x64
    prior = np.full(n, 1.0 / n) if key_prior is None else np.asarray(key_prior, dtype=np.float64)
    if prior.shape != (n,) or (prior < 0).any() or abs(float(prior.sum()) - 1.0) > 1e-9:
        raise ValueError(
            f"key_prior must be {n} probabilities summing to 1 (one per receptacle "
            f"{receptacles}); got {key_prior}"
        )
    places = receptacles + (MIDDLE_OF_ROOM,)
    if start is None:
        start = MIDDLE_OF_ROOM
    if start not in places:
        raise ValueError(f"unknown start {start!r}; known: {', '.join(repr(p) for p in places)}")
    start_idx = places.index(start)
    open0 = 0
    for r in initially_open:
        if r not in receptacles:
            raise ValueError(
                f"unknown receptacle {r!r} in initially_open; known: "
                f"{', '.join(map(repr, receptacles))}"
            )
        open0 |= 1 << receptacles.index(r)
    if look_accuracy is not None and not 0.0 <= look_accuracy <= 1.0:
        raise ValueError(f"look_accuracy must be None or lie in [0, 1]; got {look_accuracy}")
    noisy_look = look_accuracy is not None
    if closed_take not in ("blind", "fails"):
        raise ValueError(f"unknown closed_take {closed_take!r}; known: blind, fails")
    closed_fails = closed_take == "fails"
    fail_text = "knock things over" if closed_fails else "take the wrong thing"

    block = 10 if noisy_look else 9
    obs_names: list[str] = []
    for r in receptacles:
        obs_names += [
            f"you arrive at the {r}. the {r} is closed.",
            f"you arrive at the {r}. the {r} is open. in it, you see a {obj}.",
            f"you arrive at the {r}. the {r} is open. in it, you see nothing.",
            f"you open the {r}. in it, you see a {obj}.",
            f"you open the {r}. in it, you see nothing.",
            f"you close the {r}.",
            f"you pick up the {obj} from the {r}.",
            f"you reach into the closed {r} and {fail_text}. the task has failed.",
            f"you are facing the {r}.",
        ]
        if noisy_look:
            obs_names.append(f"you think the {obj} is in the {r}.")
    in_middle_obs, nothing_obs, over_obs = n * block, n * block + 1, n * block + 2
    obs_names += [f"you are in the {MIDDLE_OF_ROOM}.", "nothing happens.", "the task is over."]
    num_obs = len(obs_names)
    action_names = (
        [f"go to {r}" for r in receptacles]
        + [f"open {r}" for r in receptacles]
        + [f"close {r}" for r in receptacles]
        + [f"take {obj} from {r}" for r in receptacles]
        + ["look"]
    )

    def decode_action(a: Any) -> tuple[Any, Any]:
        a = jnp.asarray(a)
        kind = jnp.where(a < 4 * n, a // n, LOOK)
        target = jnp.where(a < 4 * n, a % n, 0)
        return kind, target

    def initial():
        key = numpyro.sample("key", dist.Categorical(probs=prior))
        return {
            "done": jnp.zeros_like(key),
            "key": key,
            "agent": jnp.full_like(key, start_idx),
            "open": jnp.full_like(key, open0),
        }

    def transition(s, a):
        kind, r = decode_action(a)
        ongoing = s["done"] == ONGOING
        at_r = s["agent"] == r
        bit = jnp.left_shift(1, r)
        r_open = (jnp.right_shift(s["open"], r) & 1) == 1
        agent = jnp.where(kind == GO, r, s["agent"])
        opened = jnp.where((kind == OPEN) & at_r, s["open"] | bit, s["open"])
        opened = jnp.where((kind == CLOSE) & at_r, opened & ~bit, opened)
        take = (kind == TAKE) & at_r
        if closed_fails:  # nothing can be taken from a closed receptacle
            done = jnp.where(
                take & ~r_open,
                FAILED,
                jnp.where(take & (s["key"] == r), SUCCEEDED, ONGOING),
            )
        else:
            done = jnp.where(
                take & (s["key"] == r),
                SUCCEEDED,
                jnp.where(take & ~r_open & (s["key"] != r), FAILED, ONGOING),
            )
        done = jnp.where(ongoing, done, OVER)
        ended = done != ONGOING  # ended states are single states: zero the other factors
        return {
            "done": done,
            "key": jnp.where(ended, 0, s["key"]),
            "agent": jnp.where(ended, 0, agent),
            "open": jnp.where(ended, 0, opened),
        }

    def observe(s, a):
        kind, r = decode_action(a)
        at_r = s["agent"] == r
        key_here = s["key"] == r
        r_open = (jnp.right_shift(s["open"], r) & 1) == 1
        arrive = r * block + jnp.where(
            r_open, jnp.where(key_here, _ARRIVE_SEE, _ARRIVE_EMPTY), _ARRIVE_CLOSED
        )
        opening = jnp.where(
            at_r, r * block + jnp.where(key_here, _OPEN_SEE, _OPEN_EMPTY), nothing_obs
        )
        closing = jnp.where(at_r, r * block + _CLOSE, nothing_obs)
        looking = jnp.where(s["agent"] == n, in_middle_obs, s["agent"] * block + _FACING)
        ongoing_obs = jnp.select(
            [kind == GO, kind == OPEN, kind == CLOSE, kind == TAKE],
            [arrive, opening, closing, nothing_obs],
            looking,
        )
        det = jnp.select(
            [s["done"] == OVER, s["done"] == SUCCEEDED, s["done"] == FAILED],
            [over_obs, r * block + _PICK, r * block + _FAIL],
            ongoing_obs,
        )
        probs = jax.nn.one_hot(det, num_obs)
        if noisy_look:
            other = (1.0 - look_accuracy) / (n - 1) if n > 1 else 0.0
            p_hint = jnp.where(
                jnp.arange(n) == s["key"][..., None], look_accuracy if n > 1 else 1.0, other
            )
            slots = jax.nn.one_hot(jnp.arange(n) * block + _HINT, num_obs)  # (n, num_obs)
            hint = p_hint @ slots
            use_hint = (kind == LOOK) & (s["done"] == ONGOING)
            probs = jnp.where(use_hint[..., None], hint, probs)
        return numpyro.sample("obs", dist.Categorical(probs=probs))

    def reward(s, a, s_next):
        ongoing = s["done"] == ONGOING
        r = (
            -step_cost
            + success_reward * (s_next["done"] == SUCCEEDED)
            - failure_penalty * (s_next["done"] == FAILED)
        )
        return jnp.where(ongoing, r, 0.0)

    def is_terminal(s):
        return s["done"] != ONGOING

    def state_name(v: Mapping[str, int]) -> str:
        if v["done"] != ONGOING:
            return {SUCCEEDED: "task succeeded", FAILED: "task failed", OVER: "task over"}[
                v["done"]
            ]
        opened = [receptacles[i] for i in range(n) if (v["open"] >> i) & 1]
        where, at = receptacles[v["key"]], places[v["agent"]]
        return f"{obj} in {where}; agent at {at}; open: {', '.join(opened) or 'nothing'}"

    return POMDPProgram(
        name="household",
        state_factors={"done": 4, "key": n, "agent": n + 1, "open": 2**n},
        action_names=tuple(action_names),
        observation_names=tuple(obs_names),
        initial=initial,
        transition=transition,
        observe=observe,
        reward=reward,
        discount=discount,
        state_name=state_name,
        is_terminal=is_terminal,
    )


household = compiled(
    household_program,
    "The household search task compiled to arrays (78 states, 13 actions, 30 observations by "
    "default).",
)


def household_check_first(**overrides: Any) -> DiscretePOMDP:
    """The :data:`CHECK_FIRST` scenario: greedy takes blindly, lookahead opens drawer 1 first."""
    return household(**{**CHECK_FIRST, **overrides})
