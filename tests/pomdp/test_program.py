"""Compiling NumPyro programs into arrays by enumeration."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers

from smcplan.pomdp import POMDPProgram, ProgramError, compile_program, states_to_indices
from tests.tolerance import EPS64, chain_tol

STATES = 5


def machine_program(**overrides) -> POMDPProgram:
    """A wear-and-tear machine: level in 0..4 (only 0..3 reachable from level 0 under 'run').

    run:    with p = 0.3 it breaks a bit (level+1, capped at 3) and then, *depending on that first
            choice*, a second site adds one more level with p = 0.5 only if it broke;
    repair: level 0.
    Observation: a noisy gauge reading level >= 2 with accuracy 0.9; reward -level.
    """

    def initial():
        return {"level": jnp.asarray(0)}

    def transition(s, a):
        broke = numpyro.sample("broke", dist.Bernoulli(probs=0.3))
        extra = numpyro.sample("extra", dist.Bernoulli(probs=jnp.where(broke == 1, 0.5, 0.0)))
        worse = jnp.minimum(s["level"] + broke + extra, 3)
        return {"level": jnp.where(a == 0, worse, 0)}

    def observe(s, a):
        high = s["level"] >= 2
        p_high = jnp.where(high, 0.9, 0.1)
        return numpyro.sample("obs", dist.Categorical(probs=jnp.stack([1 - p_high, p_high], -1)))

    def reward(s, a, s_next):
        return -1.0 * s["level"] + 0.0 * a

    args = dict(
        name="machine",
        state_factors={"level": STATES},
        action_names=("run", "repair"),
        observation_names=("gauge low", "gauge high"),
        initial=initial,
        transition=transition,
        observe=observe,
        reward=reward,
        discount=0.9,
        state_name=lambda v: f"level {v['level']}",
    )
    args.update(overrides)
    return POMDPProgram(**args)


def expected_run_row(level: int) -> np.ndarray:
    """T(run) written out by hand: P(+0) = 0.7, P(+1) = 0.3 * 0.5, P(+2) = 0.3 * 0.5, capped at 3.
    """
    row = np.zeros(4)
    for inc, p in ((0, 0.7), (1, 0.15), (2, 0.15)):
        row[min(level + inc, 3)] += p
    return row


def test_compiled_arrays_equal_the_hand_enumeration_with_dependent_sites():
    pomdp = compile_program(machine_program())
    assert pomdp.state_names == ("level 0", "level 1", "level 2", "level 3")  # level 4 unreachable
    T = pomdp.T  # noqa: N806
    for level in range(4):
        # float64 products/sums of <= 3 probabilities, in two orders
        np.testing.assert_allclose(T[0, level], expected_run_row(level), rtol=chain_tol(3, EPS64))
        np.testing.assert_allclose(T[1, level], [1, 0, 0, 0])
    np.testing.assert_allclose(pomdp.O[0, :, 1], [0.1, 0.1, 0.9, 0.9], rtol=chain_tol(3, EPS64))
    np.testing.assert_allclose(pomdp.R[:, 0], [0, -1, -2, -3])
    np.testing.assert_allclose(pomdp.b0, [1, 0, 0, 0])
    assert pomdp.T.dtype == np.float64


def test_expected_reward_averages_over_the_next_state():
    def reward(s, a, s_next):
        return 10.0 * (s_next["level"] == 3)

    pomdp = compile_program(machine_program(reward=reward))
    # from level 2, running reaches level 3 with probability 0.3
    # an expectation over 4 next states: products and a length-4 sum
    np.testing.assert_allclose(pomdp.R[2, 0], 10 * 0.3, rtol=chain_tol(3 + 4, EPS64))


def test_transition_samples_of_the_program_match_the_compiled_row():
    program = machine_program()
    pomdp = compile_program(program)
    keys = jax.random.split(jax.random.key(0), 20_000)
    levels = jax.vmap(
        lambda k: handlers.seed(program.transition, rng_seed=k)({"level": jnp.asarray(1)}, 0)[
            "level"
        ]
    )(keys)
    freq = np.bincount(np.asarray(levels), minlength=4) / keys.shape[0]
    expected = pomdp.T[0, 1]
    sd = np.sqrt(expected * (1 - expected) / keys.shape[0])
    assert (np.abs(freq - expected) <= 5 * sd + 1e-12).all()


def test_sparse_and_dense_compilation_give_the_same_matrix():
    dense = compile_program(machine_program(), transition_format="dense")
    sparse = compile_program(machine_program(), transition_format="sparse")
    np.testing.assert_allclose(dense.T, sparse.T, rtol=chain_tol(3, EPS64))
    with pytest.raises(ValueError, match="unknown transition_format 'csr'"):
        compile_program(machine_program(), transition_format="csr")


def test_a_continuous_site_is_rejected_with_its_name():
    def transition(s, a):
        numpyro.sample("noise", dist.Normal(0.0, 1.0))
        return s

    with pytest.raises(
        ProgramError, match="site 'noise' has distribution Normal without finite support"
    ):
        compile_program(machine_program(transition=transition))


def test_a_missing_obs_site_is_rejected():
    def observe(s, a):
        return numpyro.sample("reading", dist.Bernoulli(probs=0.5))

    with pytest.raises(ProgramError, match="no sample site named 'obs'; sites: \\['reading'\\]"):
        compile_program(machine_program(observe=observe))


def test_factor_and_observation_values_out_of_range_are_named():
    def transition(s, a):
        return {"level": s["level"] + 7 * (a == 0)}

    with pytest.raises(ProgramError, match=r"factor 'level' took value 7, outside \[0, 5\)"):
        compile_program(machine_program(transition=transition))

    def observe(s, a):
        return numpyro.sample("obs", dist.Categorical(probs=jnp.array([0.2, 0.3, 0.5])))

    with pytest.raises(ProgramError, match=r"site 'obs' took value 2, outside \[0, 2\)"):
        compile_program(machine_program(observe=observe))


def test_states_to_indices_maps_factored_states_and_rejects_unknown_ones():
    pomdp = compile_program(machine_program())
    np.testing.assert_array_equal(
        states_to_indices(pomdp, {"level": np.array([[3, 0], [1, 2]])}), [[3, 0], [1, 2]]
    )
    with pytest.raises(ValueError, match="not a state|outside"):
        states_to_indices(pomdp, {"level": np.array([4])})
