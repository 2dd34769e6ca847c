"""Garbage into the POMDP entry points: a valid belief/plan or a typed error, never NaN."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from smcplan.errors import ArgumentTypeError
from smcplan.pomdp import domains, exact_filter, exact_update, particle_filter, solve_exact
from smcplan.pomdp.checks import BELIEF_ATOL, InvalidBeliefError

from ._garbage import assert_no_nan, bad_scalar, call, count_arg, vectors

TIGER = domains.tiger()
KEY = jax.random.key(0)

beliefs = st.one_of(vectors(), st.sampled_from([[0.5, 0.5], [1.0, 0.0], [0.3, 0.7], None]))
action_like = st.one_of(
    st.sampled_from([0, 1, 2, "listen", "open left door", np.int32(1)]), bad_scalar
)
observation_like = st.one_of(st.sampled_from([0, 1, "hear left", "hear right"]), bad_scalar)
sequences = st.one_of(
    st.lists(action_like, max_size=3),
    st.sampled_from([[0, 0], ["listen", "listen"], np.array([0, 0]), np.array([0.0, 1.0])]),
    bad_scalar,
)


def _valid_belief(b):
    b = np.asarray(b, np.float64)
    assert b.shape == (TIGER.num_states,)
    assert (b >= 0).all() and abs(b.sum() - 1) <= 1e-4


@settings(max_examples=80, deadline=None)
@given(b=beliefs, a=action_like, o=observation_like)
def test_exact_update(b, a, o):
    if b is None:
        return
    ok, out = call(exact_update, TIGER, b, a, o)
    if ok:
        _valid_belief(out)


@settings(max_examples=60, deadline=None)
@given(acts=sequences, obs=sequences, b0=beliefs)
@example(acts=[], obs=[0, []], b0=[])  # ragged: numpy has no shape for it (found by hypothesis)
def test_exact_filter(acts, obs, b0):
    ok, out = call(exact_filter, TIGER, acts, obs, belief0=b0)
    if ok:
        beliefs_, loglik = out
        for b in np.asarray(beliefs_):
            _valid_belief(b)
        assert float(loglik) <= 1e-5 and not np.isnan(float(loglik))


@settings(max_examples=30, deadline=None)
@given(n=count_arg(8), ess=st.one_of(st.sampled_from([0.0, 0.5, 1.0]), bad_scalar), acts=sequences)
def test_particle_filter(n, ess, acts):
    ok, out = call(particle_filter, TIGER, acts, acts, n, KEY, ess_threshold=ess)
    if ok:
        assert_no_nan(out.log_weights)
        assert_no_nan(out.log_likelihood)


@settings(max_examples=40, deadline=None)
@given(
    h=st.one_of(
        st.integers(1, 3), bad_scalar.filter(lambda x: not (type(x) is int and 3 < x < 10**6))
    ),
    b=beliefs,
)
def test_solve_exact(h, b):
    ok, out = call(solve_exact, TIGER, b, h)
    if ok:
        action, value = out
        assert 0 <= action < TIGER.num_actions and np.isfinite(value)


def test_an_unnormalised_or_negative_belief_names_its_sum_and_negative_entries():
    with pytest.raises(
        InvalidBeliefError, match=r"sums to 1 and has 1 negative entries \(\[1\] = -0\.5\)"
    ):
        exact_update(TIGER, [1.5, -0.5], 0, 0)
    with pytest.raises(
        InvalidBeliefError, match=r"belief0 must be a probability vector for tiger: it sums to 4"
    ):
        exact_filter(TIGER, [0], [0], belief0=[3.0, 1.0])
    with pytest.raises(InvalidBeliefError, match="non-finite entries at states \\[0\\]"):
        exact_update(TIGER, [np.nan, 0.5], 0, 0)
    # within the stated tolerance a belief is accepted as is
    exact_update(TIGER, [0.5 + BELIEF_ATOL / 2, 0.5], 0, 0)


@pytest.mark.parametrize("action", [1.0, True, np.float32(1.0), None])
def test_an_action_must_be_a_name_or_an_integer(action):
    with pytest.raises(ArgumentTypeError, match="action must be a name"):
        exact_update(TIGER, [0.5, 0.5], action, 0)


def test_float_counts_are_type_errors():
    with pytest.raises(ArgumentTypeError, match=r"num_particles must be an integer; got 2\.5"):
        particle_filter(TIGER, [0], [0], 2.5, KEY)
    with pytest.raises(ArgumentTypeError, match=r"horizon must be an integer; got 1\.5"):
        solve_exact(TIGER, [0.5, 0.5], 1.5)
