"""Garbage into the SMC kernels: a valid result or an InvalidWeightsError/argument error, never
NaN."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.errors import ArgumentTypeError, InvalidArgumentError
from smcplan.smc import InvalidWeightsError, resampling, weights
from tests.tolerance import log_softmax_tol, normalized_tol

from ._garbage import assert_no_nan, call, count_arg, vectors

KEY = jax.random.key(0)
SCHEMES = sorted(resampling.SCHEMES)


@settings(max_examples=60, deadline=None)
@given(scheme=st.sampled_from(SCHEMES), w=vectors(), m=count_arg(8))
def test_resampling_gives_indices_into_the_particles_or_a_typed_error(scheme, w, m):
    ok, out = call(resampling.SCHEMES[scheme], KEY, w, m)
    if ok:
        idx = np.asarray(out)
        n = np.shape(w)[0]
        assert idx.dtype == np.int32 and idx.shape == (m,)
        assert ((idx >= 0) & (idx < n)).all()


@settings(max_examples=60, deadline=None)
@given(fn=st.sampled_from(["normalize", "ess", "log_mean_exp", "log_sum_exp"]), lw=vectors())
def test_weight_functions_never_return_nan(fn, lw):
    ok, out = call(getattr(weights, fn), lw)
    if not ok:
        return
    assert_no_nan(out)
    if fn == "normalize":
        log_w, log_z = out
        # float32 log-softmax of n entries: its rounding grows with the largest finite |entry|
        # (huge entries leave no digits for the weights), then exp (relative) and a sum
        x = np.asarray(lw, np.float64)
        n, m = x.size, float(np.max(np.abs(x[np.isfinite(x)]), initial=0.0))
        tol = log_softmax_tol(n, m) + normalized_tol(n)
        assert np.exp(np.asarray(log_w, np.float64)).sum() == pytest.approx(1.0, rel=tol)
    if fn == "ess":
        n = np.shape(lw)[0]
        assert 1.0 - 1e-3 <= float(out) <= n * (1 + 1e-3)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_float_num_samples_is_a_type_error_naming_it(scheme):
    with pytest.raises(ArgumentTypeError, match=r"num_samples must be an integer; got 2\.5"):
        resampling.SCHEMES[scheme](KEY, [0.5, 0.5], 2.5)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_accepts_a_python_list(scheme):
    idx = resampling.SCHEMES[scheme](KEY, [0.0, 1.0, 0.0], 5)
    assert np.asarray(idx).tolist() == [1] * 5


def test_log_mean_exp_refuses_2d_empty_and_nan():
    with pytest.raises(InvalidWeightsError, match=r"shape \(N,\); got shape \(2, 2\)"):
        weights.log_mean_exp(np.zeros((2, 2)))
    with pytest.raises(InvalidWeightsError, match="at least one"):
        weights.log_mean_exp(np.zeros(0))
    with pytest.raises(InvalidWeightsError, match="NaN at indices \\[1\\]"):
        weights.log_mean_exp([0.0, np.nan])
    assert float(weights.log_mean_exp([-np.inf, -np.inf])) == -np.inf
    assert float(weights.log_mean_exp([0.0, 0.0])) == pytest.approx(0.0)


def test_weights_that_overflow_float32_are_refused_with_the_fix():
    with pytest.raises(InvalidWeightsError, match="divide by their maximum"):
        resampling.systematic(KEY, [1e308, 1.0], 2)
    with pytest.raises(InvalidWeightsError, match="all weights are zero"):
        resampling.systematic(KEY, [1e-320, 1e-320], 2)


def test_a_bad_key_names_the_fix():
    with pytest.raises(ArgumentTypeError, match=r"jax.random.key\(seed\)"):
        resampling.systematic(0, [0.5, 0.5], 2)


def test_errors_are_value_or_type_errors():
    assert issubclass(InvalidWeightsError, ValueError)
    assert issubclass(InvalidArgumentError, ValueError)
    assert issubclass(ArgumentTypeError, TypeError)
