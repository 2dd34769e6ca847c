"""The exact Bayes filter against hand values and a float64 NumPy reference written here."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.pomdp import (
    ImpossibleObservationError,
    bayes_update,
    exact_filter,
    exact_update,
    simulate,
)
from tests.tolerance import EPS64, bayes_filter_tol, bayes_loglik_tol, gamma, normalized_tol

from .conftest import random_pomdp


def numpy_filter(T: np.ndarray, O: np.ndarray, b0: np.ndarray, actions, observations):  # noqa: N803, E741
    """Reference: b'(s') = O[a,s',o] sum_s T[a,s,s'] b(s) / eta, log-likelihood = sum log eta
    (float64)."""
    beliefs, loglik, b = [b0], 0.0, b0
    for a, o in zip(actions, observations, strict=True):
        joint = O[a, :, o] * (b @ T[a])
        eta = joint.sum()
        b = joint / eta
        loglik += np.log(eta)
        beliefs.append(b)
    return np.stack(beliefs), loglik


def test_tiger_one_listen_hearing_left_gives_085(tiger):
    b = exact_update(tiger, tiger.b0, "listen", "you hear the tiger behind the left door")
    # float32, one step over 2 states
    np.testing.assert_allclose(np.asarray(b), [0.85, 0.15], rtol=bayes_filter_tol(1, 2))


def test_tiger_two_agreeing_listens_give_085_squared_ratio(tiger):
    hear_left = "you hear the tiger behind the left door"
    b = exact_update(tiger, exact_update(tiger, tiger.b0, "listen", hear_left), "listen", hear_left)
    expected = 0.85**2 / (0.85**2 + 0.15**2)
    np.testing.assert_allclose(float(b[0]), expected, rtol=bayes_filter_tol(2, 2))


def test_tiger_opening_a_door_resets_the_belief_to_uniform(tiger):
    b = exact_update(tiger, np.array([0.97, 0.03]), "open right door", 0)
    np.testing.assert_allclose(np.asarray(b), [0.5, 0.5], rtol=bayes_filter_tol(1, 2))


def test_tiger_log_likelihood_equals_sum_over_hidden_paths(tiger):
    # p(o_{1:T} | a_{1:T}) = sum over s_{0:T} b0(s0) prod_t T(s_t|s_{t-1},a_t) O(o_t|s_t,a_t)
    actions = [0, 0, 1, 0, 2]
    observations = [0, 1, 1, 0, 0]
    T, O = tiger.T, tiger.O  # noqa: N806, E741
    total = 0.0
    for path in itertools.product(range(2), repeat=len(actions) + 1):
        p = tiger.b0[path[0]]
        for t, (a, o) in enumerate(zip(actions, observations, strict=True)):
            p *= T[a, path[t], path[t + 1]] * O[a, path[t + 1], o]
        total += p
    with jax.enable_x64(True):
        _, loglik = exact_filter(tiger, actions, observations)
    # float64 filter vs the float64 path sum (64 products of 11 factors: gamma(11 + 63))
    tol = bayes_loglik_tol(5, 2, np.log(total), EPS64) + gamma(11 + 63, EPS64)
    np.testing.assert_allclose(float(loglik), np.log(total), rtol=0, atol=tol)


@pytest.mark.parametrize("sizes", [(2, 2, 2), (5, 3, 4), (17, 4, 3), (64, 6, 8)])
@pytest.mark.parametrize("sparse_k", [None, 3])
def test_exact_filter_equals_float64_numpy_reference_on_random_pomdps(sizes, sparse_k):
    n_s, n_a, n_o = sizes
    rng = np.random.default_rng(n_s * 100 + (sparse_k or 0))
    pomdp = random_pomdp(rng, n_s, n_a, n_o, sparse_k=sparse_k)
    actions = rng.integers(0, n_a, size=25)
    observations = rng.integers(0, n_o, size=25)  # every observation has positive probability
    ref_beliefs, ref_loglik = numpy_filter(pomdp.T, pomdp.O, pomdp.b0, actions, observations)
    with jax.enable_x64(True):
        beliefs, loglik = exact_filter(pomdp, actions, observations)
        assert beliefs.dtype == jnp.float64
        # float64: only rounding differs (25 steps of length-S sums, tests/tolerance.py)
        np.testing.assert_allclose(
            np.asarray(beliefs), ref_beliefs, rtol=bayes_filter_tol(25, n_s, EPS64), atol=0
        )
        ll_tol = bayes_loglik_tol(25, n_s, ref_loglik, EPS64)
        np.testing.assert_allclose(float(loglik), ref_loglik, rtol=0, atol=ll_tol)
    # default float32: the same bounds with float32's eps (beliefs <= 1: relative -> absolute)
    beliefs32, loglik32 = exact_filter(pomdp, actions, observations)
    assert beliefs32.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(beliefs32), ref_beliefs, atol=bayes_filter_tol(25, n_s))
    ll_tol32 = bayes_loglik_tol(25, n_s, ref_loglik)
    np.testing.assert_allclose(float(loglik32), ref_loglik, rtol=0, atol=ll_tol32)


def test_exact_update_equals_first_step_of_exact_filter():
    pomdp = random_pomdp(np.random.default_rng(7), 9, 3, 4)
    with jax.enable_x64(True):
        b1 = exact_update(pomdp, pomdp.b0, 2, 1)
        beliefs, _ = exact_filter(pomdp, [2], [1])
        tol = bayes_filter_tol(1, 9, EPS64)
        np.testing.assert_allclose(np.asarray(b1), np.asarray(beliefs[1]), rtol=tol)


def test_bayes_update_is_jittable_and_vmappable_over_beliefs():
    pomdp = random_pomdp(np.random.default_rng(3), 6, 2, 3, sparse_k=2)
    arrays = pomdp.device()
    beliefs = jnp.asarray(np.random.default_rng(4).dirichlet(np.ones(6), size=5), arrays.O.dtype)
    batched = jax.jit(jax.vmap(lambda b: bayes_update(arrays.transition, arrays.O, b, 1, 2)))
    new_beliefs, log_eta = batched(beliefs)
    for i in range(5):
        single = exact_update(pomdp, beliefs[i], 1, 2)
        tol = bayes_filter_tol(1, 6)  # float32, one step over 6 states
        np.testing.assert_allclose(np.asarray(new_beliefs[i]), np.asarray(single), rtol=tol)
    ref = np.log(np.asarray(beliefs, np.float64) @ pomdp.T[1] @ pomdp.O[1][:, 2])
    for i in range(5):
        ll_tol = bayes_loglik_tol(1, 6, ref[i])
        np.testing.assert_allclose(float(log_eta[i]), ref[i], rtol=0, atol=ll_tol)


def test_impossible_observation_raises_naming_step_action_and_observation(check_first):
    # the key is in drawer 1 w.p. 0.7: seeing it, then opening drawer 2 and seeing it again is
    # impossible
    actions = ["open drawer 1", "go to drawer 2", "open drawer 2"]
    observations = [
        "you open the drawer 1. in it, you see a key 1.",
        "you arrive at the drawer 2. the drawer 2 is closed.",
        "you open the drawer 2. in it, you see a key 1.",
    ]
    with pytest.raises(ImpossibleObservationError) as info:
        exact_filter(check_first, actions, observations)
    assert info.value.step == 2
    assert (
        "step 2" in str(info.value)
        and "open drawer 2" in str(info.value)
        and "you open the drawer 2" in str(info.value)
    )
    with pytest.raises(ImpossibleObservationError, match="nothing happens"):
        exact_update(check_first, check_first.b0, "open drawer 1", "nothing happens.")


def test_unknown_action_name_lists_the_known_ones(tiger):
    with pytest.raises(KeyError, match="unknown action 'jump'.*'listen'"):
        exact_update(tiger, tiger.b0, "jump", 0)


def test_filter_of_a_simulated_rocksample_episode_tracks_the_true_position(rocksample44):
    actions = [
        "move east",
        "move east",
        "check rock 1",
        "move south",
        "sample rock",
        "check rock 4",
    ]
    episode = simulate(rocksample44, actions, jax.random.key(0))
    beliefs, loglik = exact_filter(rocksample44, actions, episode.observations)
    assert np.isfinite(float(loglik))
    # the rover's position is known exactly: all belief mass sits on states with the true position
    x, y = rocksample44.factors["x"], rocksample44.factors["y"]
    for t, s in enumerate(episode.states):
        mass = np.asarray(beliefs[t])[(x == x[s]) & (y == y[s])].sum()
        # float32 beliefs after t steps (relative error of a total mass 1) summed over <= S
        # entries (a normalised vector's sum)
        n_s = rocksample44.num_states
        tol = bayes_filter_tol(t, n_s) + normalized_tol(n_s)
        assert mass == pytest.approx(1.0, abs=tol)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_filter_equals_brute_force_over_hidden_paths_on_random_pomdps(seed):
    # identity: p(o_{1:T}) = sum_{s_{0:T}} b0(s0) prod_t T(s_t|s_{t-1},a_t) O(o_t|s_t,a_t), and
    # b_T(s) is the share of that sum over paths ending in s
    rng = np.random.default_rng(seed)
    pomdp = random_pomdp(rng, 3, 2, 2, alpha=0.5)
    actions, observations = rng.integers(0, 2, 4), rng.integers(0, 2, 4)
    T, O = pomdp.T, pomdp.O  # noqa: N806, E741
    by_last = np.zeros(3)
    for path in itertools.product(range(3), repeat=5):
        p = pomdp.b0[path[0]]
        for t in range(4):
            p *= T[actions[t], path[t], path[t + 1]] * O[actions[t], path[t + 1], observations[t]]
        by_last[path[-1]] += p
    with jax.enable_x64(True):
        beliefs, loglik = exact_filter(pomdp, actions, observations)
        # float64 filter vs the float64 path sum (243 products of 9 factors, 3 states)
        ll = np.log(by_last.sum())
        brute = gamma(9 + 243, EPS64)
        tol = bayes_loglik_tol(4, 3, ll, EPS64) + brute
        np.testing.assert_allclose(float(loglik), ll, rtol=0, atol=tol)
        np.testing.assert_allclose(
            np.asarray(beliefs[-1]),
            by_last / by_last.sum(),
            rtol=bayes_filter_tol(4, 3, EPS64) + 2 * brute,
            atol=0,
        )
