r"""Sampling episodes from a discrete POMDP for a given action sequence.

:math:`s_0 \sim b_0`, then for each :math:`a_t`: :math:`s_{t+1} \sim T(\cdot \mid s_t, a_t)`,
:math:`o_{t+1} \sim O(\cdot \mid s_{t+1}, a_t)`, reward :math:`R(s_t, a_t)`.  One ``lax.scan``;
randomness only from the explicit key.

Imports jax/numpy and :mod:`smcplan.pomdp` modules only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.pomdp.model import DiscretePOMDP

__all__ = ["Episode", "simulate"]


class Episode(NamedTuple):
    """States (T+1,), observations (T,), rewards (T,) of one simulated episode (NumPy arrays)."""

    states: np.ndarray
    observations: np.ndarray
    rewards: np.ndarray


@jax.jit
def _rollout(
    arrays: Any, key: jax.Array, state0: jax.Array, actions: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    def body(state: jax.Array, inputs: tuple[jax.Array, jax.Array]):
        k, a = inputs
        k_t, k_o = jax.random.split(k)
        nxt = arrays.transition.sample(k_t, state[None], a)[0]
        obs = jax.random.categorical(k_o, jnp.log(arrays.O[a, nxt]))
        return nxt, (nxt, obs.astype(jnp.int32), arrays.R[state, a])

    keys = jax.random.split(key, actions.shape[0])
    _, (states, obs, rewards) = jax.lax.scan(body, state0, (keys, actions))
    return jnp.concatenate([state0[None], states]), obs, rewards


def simulate(
    pomdp: DiscretePOMDP,
    actions: Sequence[int | str] | Any,
    key: jax.Array,
    state: int | str | None = None,
) -> Episode:
    """Simulate ``actions`` from ``state`` (default: drawn from :math:`b_0`); see module docstring.
    """
    acts = pomdp.action_indices(actions)
    k0, k1 = jax.random.split(key)
    arrays = pomdp.device()
    if state is None:
        s0 = jax.random.categorical(k0, jnp.log(arrays.b0)).astype(jnp.int32)
    else:
        s0 = jnp.int32(pomdp.state_index(state))
    states, obs, rewards = _rollout(arrays, k1, s0, jnp.asarray(acts))
    return Episode(np.asarray(states), np.asarray(obs), np.asarray(rewards))
