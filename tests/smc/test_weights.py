"""Specification of log-weight arithmetic (smcplan.smc.weights)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.smc import InvalidWeightsError, ess, log_mean_exp, normalize
from smcplan.smc.weights import Weights
from tests.tolerance import (
    EPS32,
    EPS64,
    chain_tol,
    log_softmax_tol,
    logsumexp_tol,
    normalized_tol,
)


def np_normalize(lw):
    lw = np.asarray(lw, np.float64)
    m = lw.max()
    lz = m + np.log(np.exp(lw - m).sum())
    return lw - lz, lz


def np_ess(lw):
    w = np.exp(np.asarray(lw, np.float64) - np.max(lw))
    return w.sum() ** 2 / (w**2).sum()


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.one_of(st.floats(-1e4, 1e4), st.just(-np.inf)), min_size=1, max_size=40).filter(
        lambda x: max(x) > -np.inf
    )
)
def test_normalize_and_ess_equal_the_float64_numpy_reference(lw):
    with jax.enable_x64(True):
        out, lz = normalize(jnp.asarray(lw, jnp.float64))
        ref, ref_lz = np_normalize(lw)
        # float64 log-sum-exp / log-softmax of n entries of size <= m (tests/tolerance.py)
        n, m = len(lw), float(np.max(np.abs(np.asarray(lw)[np.isfinite(lw)])))
        np.testing.assert_allclose(np.asarray(lz), ref_lz, rtol=0, atol=logsumexp_tol(n, m, EPS64))
        finite = np.isfinite(ref)
        lsm = log_softmax_tol(n, m, EPS64)
        np.testing.assert_allclose(np.asarray(out)[finite], ref[finite], rtol=0, atol=lsm)
        assert np.isneginf(np.asarray(out)[~finite]).all()
        # ESS = 1 / sum W^2: each W carries exp of the log-softmax error (relative), squared
        # (2x), then a sum of n and the reciprocal
        ess_tol = 2 * lsm + chain_tol(n + 2, EPS64)
        np.testing.assert_allclose(
            float(ess(jnp.asarray(lw, jnp.float64))), np_ess(lw), rtol=ess_tol
        )


def test_float32_is_stable_when_log_weights_span_ten_thousand():
    lw = jnp.asarray([0.0, -1e4, 1e4, 1e4 - 1.0, -jnp.inf], jnp.float32)
    out, lz = normalize(lw)
    assert np.isfinite(float(lz)) and abs(float(lz) - (1e4 + np.log1p(np.exp(-1.0)))) < 1e-2
    # float32 holds 1e4 only to ulp(1e4) = 2**-10, so each normalised log-weight is exact to about
    # 1e-3 in the exponent; the normalised weights then sum to one within ~2e-3 relative.
    # (the float32 log-softmax bound of 5 entries of size 1e4, relative after exp, plus the sum)
    tol = log_softmax_tol(5, 1e4) + normalized_tol(5)
    np.testing.assert_allclose(float(jnp.sum(jnp.exp(out))), 1.0, rtol=tol)
    assert 1.0 <= float(ess(lw)) <= 2.0


def test_ess_bounds_and_log_mean_exp():
    assert float(ess(jnp.zeros(8))) == pytest.approx(8.0)
    assert float(ess(jnp.asarray([0.0, -jnp.inf, -jnp.inf]))) == pytest.approx(1.0)
    x = np.array([0.1, 2.0, -3.0])
    # float32 log-sum-exp of 3 entries of size <= 3, minus the rounded log 3
    assert float(log_mean_exp(jnp.asarray(x))) == pytest.approx(
        np.log(np.mean(np.exp(x))), abs=logsumexp_tol(3, 3.0) + EPS32 * np.log(3)
    )


@pytest.mark.parametrize(
    "bad, message",
    [
        ([0.0, np.nan], "NaN"),
        ([np.inf, 0.0], r"\+inf"),
        ([-np.inf, -np.inf], "no particle"),
        ([[0.0]], "shape"),
    ],
)
def test_bad_log_weights_raise_a_typed_error(bad, message):
    with pytest.raises(InvalidWeightsError, match=message):
        normalize(jnp.asarray(bad))
    with pytest.raises(InvalidWeightsError, match=message):
        ess(jnp.asarray(bad))


def test_weights_object_keeps_lw_W_and_ess_together():
    w = Weights(jnp.log(jnp.asarray([1.0, 3.0])))
    # float32: log of [1, 3] (one rounding each), a 2-entry log-softmax, exp (relative)
    w_tol = log_softmax_tol(2, np.log(3)) + chain_tol(2)
    np.testing.assert_allclose(np.asarray(w.W), [0.25, 0.75], rtol=w_tol)
    assert float(w.ess) == pytest.approx(1 / (0.25**2 + 0.75**2), rel=2 * w_tol + chain_tol(4))
    assert float(w.log_z) == pytest.approx(np.log(4.0), abs=logsumexp_tol(2, np.log(3)))


class WeightsVariantsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_normalize_shapes_with_and_without_jit(self):
        out, lz = self.variant(normalize)(jnp.asarray([0.0, 1.0, -jnp.inf]))
        chex.assert_shape(out, (3,))
        chex.assert_shape(lz, ())
        chex.assert_tree_all_finite(lz)
