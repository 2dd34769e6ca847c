r"""Tiger (Kaelbling, Littman & Cassandra 1998, §5.1), written as a NumPyro program.

A tiger is behind the left or the right door (uniform prior).  The agent may *listen*
(reward −1; it hears the tiger on the correct side with probability ``listen_accuracy`` = 0.85)
or *open* a door: +10 if the tiger is behind the other door, −100 if behind it.  Opening a door
resets the problem (the tiger is placed uniformly at random again) and yields an uninformative
observation (each side with probability 1/2).  Discount 0.95.

States ``tiger behind left door`` / ``tiger behind right door``; actions ``listen``,
``open left door``, ``open right door``; observations ``you hear the tiger behind the left door``
/ ``... right door``.

Imports numpyro and :mod:`smcplan.pomdp.program`; nothing from ``smcplan.smc`` or above.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from smcplan.pomdp.model import DiscretePOMDP
from smcplan.pomdp.program import POMDPProgram, compile_program

__all__ = ["tiger", "tiger_program", "LISTEN", "OPEN_LEFT", "OPEN_RIGHT", "LEFT", "RIGHT"]

LISTEN, OPEN_LEFT, OPEN_RIGHT = 0, 1, 2
LEFT, RIGHT = 0, 1
ACTIONS = ("listen", "open left door", "open right door")
OBSERVATIONS = (
    "you hear the tiger behind the left door",
    "you hear the tiger behind the right door",
)
STATES = ("tiger behind left door", "tiger behind right door")


def tiger_program(
    listen_accuracy: float = 0.85,
    listen_cost: float = 1.0,
    tiger_penalty: float = 100.0,
    treasure_reward: float = 10.0,
    discount: float = 0.95,
) -> POMDPProgram:
    """The Tiger POMDP as a :class:`~smcplan.pomdp.program.POMDPProgram` (see module docstring)."""
    if not 0.0 <= listen_accuracy <= 1.0:
        raise ValueError(f"listen_accuracy must lie in [0, 1]; got {listen_accuracy}")

    def initial():
        return {"tiger": numpyro.sample("tiger", dist.Categorical(probs=jnp.array([0.5, 0.5])))}

    def transition(s, a):
        reset = numpyro.sample("reset", dist.Categorical(probs=jnp.array([0.5, 0.5])))
        return {"tiger": jnp.where(a == LISTEN, s["tiger"], reset)}

    def observe(s, a):
        correct = jnp.where(s["tiger"] == LEFT, listen_accuracy, 1.0 - listen_accuracy)
        p_left = jnp.where(a == LISTEN, correct, 0.5)
        return numpyro.sample(
            "obs", dist.Categorical(probs=jnp.stack([p_left, 1.0 - p_left], axis=-1))
        )

    def reward(s, a, s_next):
        opened_tiger = ((a == OPEN_LEFT) & (s["tiger"] == LEFT)) | (
            (a == OPEN_RIGHT) & (s["tiger"] == RIGHT)
        )
        return jnp.where(
            a == LISTEN, -listen_cost, jnp.where(opened_tiger, -tiger_penalty, treasure_reward)
        )

    def state_name(values: Mapping[str, int]) -> str:
        return STATES[values["tiger"]]

    return POMDPProgram(
        name="tiger",
        state_factors={"tiger": 2},
        action_names=ACTIONS,
        observation_names=OBSERVATIONS,
        initial=initial,
        transition=transition,
        observe=observe,
        reward=reward,
        discount=discount,
        state_name=state_name,
    )


def tiger(
    listen_accuracy: float = 0.85,
    listen_cost: float = 1.0,
    tiger_penalty: float = 100.0,
    treasure_reward: float = 10.0,
    discount: float = 0.95,
) -> DiscretePOMDP:
    """The Tiger POMDP compiled to arrays (|S| = 2, |A| = 3, |O| = 2)."""
    return compile_program(
        tiger_program(listen_accuracy, listen_cost, tiger_penalty, treasure_reward, discount)
    )
