"""DiscretePOMDP validation and the two transition layouts (dense and sparse) behind one API."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from smcplan.pomdp import DenseTransition, DiscretePOMDP, POMDPValidationError, SparseTransition
from tests.tolerance import EPS64, chain_tol, sum_tol

from .conftest import random_pomdp


def tiny(**overrides):
    args = dict(
        T=np.array([[[0.9, 0.1], [0.0, 1.0]], [[0.5, 0.5], [0.5, 0.5]]]),
        O=np.array([[[1.0, 0.0], [0.2, 0.8]], [[0.5, 0.5], [0.5, 0.5]]]),
        R=np.zeros((2, 2)),
        b0=np.array([0.5, 0.5]),
        discount=0.9,
        state_names=["cold", "hot"],
        action_names=["wait", "poke"],
        observation_names=["quiet", "noise"],
    )
    args.update(overrides)
    return DiscretePOMDP(**args)


def test_a_valid_pomdp_exposes_arrays_sizes_and_names():
    p = tiny()
    assert (p.num_states, p.num_actions, p.num_observations) == (2, 2, 2)
    assert p.T.shape == (2, 2, 2) and p.O.shape == (2, 2, 2) and p.R.shape == (2, 2)
    assert (
        p.action_index("poke") == 1
        and p.observation_index("noise") == 1
        and p.state_index("hot") == 1
    )


def test_a_transition_row_not_summing_to_one_names_the_action_and_state():
    T = np.array([[[0.9, 0.1], [0.0, 1.0]], [[0.5, 0.5], [0.3, 0.5]]])  # noqa: N806
    with pytest.raises(POMDPValidationError, match=r"T\['poke', 'hot', :\] sums to 0.8"):
        tiny(T=T)


def test_an_observation_row_not_summing_to_one_names_the_action_and_state():
    O = np.array([[[1.0, 0.0], [0.2, 0.7]], [[0.5, 0.5], [0.5, 0.5]]])  # noqa: N806, E741
    with pytest.raises(POMDPValidationError, match=r"O\['wait', 'hot', :\] sums to 0.9"):
        tiny(O=O)


def test_negative_probabilities_shape_mismatches_and_bad_discount_are_rejected():
    with pytest.raises(
        POMDPValidationError, match="negative probability for action 'wait' in state 'cold'"
    ):
        tiny(T=np.array([[[1.1, -0.1], [0.0, 1.0]], [[0.5, 0.5], [0.5, 0.5]]]))
    with pytest.raises(POMDPValidationError, match=r"R must have shape \(S, A\) = \(2, 2\)"):
        tiny(R=np.zeros((2, 3)))
    with pytest.raises(POMDPValidationError, match="discount must lie in"):
        tiny(discount=1.5)
    with pytest.raises(POMDPValidationError, match="b0 must be a probability vector"):
        tiny(b0=np.array([0.7, 0.7]))
    with pytest.raises(POMDPValidationError, match="non-finite"):
        tiny(R=np.array([[0.0, np.nan], [0.0, 0.0]]))


def test_duplicate_names_are_rejected_with_both_indices():
    with pytest.raises(
        POMDPValidationError, match="action name 'wait' is used twice \\(indices 0 and 1\\)"
    ):
        tiny(action_names=["wait", "wait"])
    with pytest.raises(
        POMDPValidationError, match="3 state names given but the arrays have 2 states"
    ):
        tiny(state_names=["a", "b", "c"])


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(KeyError, match="unknown observation 'bang'.*'quiet', 'noise'"):
        tiny().observation_index("bang")
    with pytest.raises(IndexError, match=r"action index 5 out of range \[0, 2\)"):
        tiny().action_index(5)


def test_sparse_transition_out_of_range_successor_is_rejected():
    nxt = np.zeros((2, 2, 1), np.int32)
    nxt[1, 0, 0] = 7
    with pytest.raises(POMDPValidationError, match="'poke' in state 'cold' points outside"):
        tiny(T=SparseTransition(nxt, np.ones((2, 2, 1))))


def test_sparse_and_dense_layouts_agree_on_predict_sample_and_log_prob():
    rng = np.random.default_rng(0)
    sparse = random_pomdp(rng, 20, 3, 2, sparse_k=4)
    dense = DiscretePOMDP(sparse.T, sparse.O, sparse.R, sparse.b0, sparse.discount)
    assert isinstance(dense.transition, DenseTransition) and isinstance(
        sparse.transition, SparseTransition
    )
    with jax.enable_x64(True):
        ts, td = sparse.device().transition, dense.device().transition
        b = jnp.asarray(rng.dirichlet(np.ones(20)))
        for a in range(3):
            np.testing.assert_allclose(
                np.asarray(ts.predict(b, a)),
                np.asarray(td.predict(b, a)),
                rtol=0,
                atol=sum_tol(20, 1.0, EPS64),  # float64 b @ T: 20 terms b_s T_ss' <= 1
            )
        states = jnp.asarray(rng.integers(0, 20, 50), jnp.int32)
        nxt = ts.sample(jax.random.key(0), states, 1)
        np.testing.assert_allclose(
            np.asarray(ts.log_prob(states, 1, nxt)),
            np.asarray(td.log_prob(states, 1, nxt)),
            # a log of the same float64 entry: relative rounding, absolute near log 1 = 0
            rtol=chain_tol(2, EPS64),
            atol=EPS64,
        )
        # sampled successors are always possible, and their frequencies match T (chi-square style
        # bound)
        many = np.asarray(ts.sample(jax.random.key(1), jnp.full(20_000, 3, jnp.int32), 2))
        freq = np.bincount(many, minlength=20) / many.size
        sd = np.sqrt(sparse.T[2, 3] * (1 - sparse.T[2, 3]) / many.size)
        assert (np.abs(freq - sparse.T[2, 3]) <= 5 * sd + 1e-12).all()


def test_dense_materialisation_of_a_huge_sparse_transition_refuses():
    n = 12_000
    big = SparseTransition(np.zeros((2, n, 1), np.int32), np.ones((2, n, 1)))
    with pytest.raises(MemoryError, match="use pomdp.transition"):
        big.dense()


def test_device_arrays_follow_the_x64_setting_and_are_cached():
    p = tiny()
    assert p.device().O.dtype == jnp.float32
    assert p.device() is p.device()
    with jax.enable_x64(True):
        assert p.device().O.dtype == jnp.float64
