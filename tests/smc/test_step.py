"""Specification of the generic SMC step (smcplan.smc.step) on a discrete HMM with exact answers."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from smcplan import smc
from tests.tolerance import chain_tol, smc_logz_tol

# A 3-state HMM: x_0 ~ p0, x_t | x_{t-1} ~ A[x_{t-1}], y_t | x_t ~ B[x_t].
P0 = np.array([0.5, 0.3, 0.2])
A = np.array([[0.8, 0.15, 0.05], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
B = np.array([[0.7, 0.2, 0.1], [0.1, 0.7, 0.2], [0.25, 0.25, 0.5]])
Y = np.array([0, 0, 1, 2, 1, 1, 0, 2, 2, 1])


def forward_log_likelihood(p0, a, b, ys):
    """log p(y_1..T) by the forward algorithm in float64 (x_0 unobserved, y_t emitted by x_t)."""
    alpha = p0.copy()
    log_lik = 0.0
    for y in ys:
        alpha = (alpha @ a) * b[:, y]
        c = alpha.sum()
        log_lik += np.log(c)
        alpha /= c
    return log_lik


def run_filter(key, num_particles, ess_threshold, scheme="systematic"):
    a, b = jnp.asarray(A), jnp.asarray(B)
    k0, key = jax.random.split(key)
    state = smc.init(jax.random.choice(k0, 3, (num_particles,), p=jnp.asarray(P0)))

    def body(state, inputs):
        k, y = inputs
        propagate = lambda kk, x: jax.random.categorical(kk, jnp.log(a[x]))  # noqa: E731
        log_weight = lambda x_new, x_old: jnp.log(b[x_new, y])  # noqa: E731
        state, info = smc.step(k, state, propagate, log_weight, scheme, ess_threshold)
        return state, info

    keys = jax.random.split(key, len(Y))
    state, infos = jax.lax.scan(body, state, (keys, jnp.asarray(Y)))
    return state, infos


@pytest.mark.parametrize("ess_threshold", [1.0, 0.5, 0.0])
def test_summed_log_z_increments_estimate_the_forward_log_likelihood_without_bias(ess_threshold):
    # Z-hat = exp(sum of increments) is unbiased for Z (Del Moral 2004).  Over K seeds the mean of
    # Z-hat/Z has standard error s/sqrt(K) with s the sample std of the ratios; a 5-sigma band
    # (fixed seeds) checks unbiasedness.
    log_z = forward_log_likelihood(P0, A, B, Y)
    run = jax.jit(jax.vmap(lambda k: jnp.sum(run_filter(k, 512, ess_threshold)[1].log_Z_increment)))
    estimates = np.asarray(run(jax.random.split(jax.random.key(7), 200)), dtype=np.float64)
    ratios = np.exp(estimates - log_z)
    assert abs(ratios.mean() - 1.0) < 5 * ratios.std(ddof=1) / np.sqrt(len(ratios))


def test_filtering_distribution_matches_the_exact_posterior():
    # Exact filtering marginal p(x_T | y_1..T); the particle estimate's TV distance at N = 20000
    # is O(sqrt(S/N)) ~ 0.012; 0.03 leaves 2.5x margin (fixed seed).
    alpha = P0.copy()
    for y in Y:
        alpha = (alpha @ A) * B[:, y]
        alpha /= alpha.sum()
    state, _ = run_filter(jax.random.key(11), 20000, 0.5)
    w = np.exp(np.asarray(state.log_weights, np.float64))
    est = np.bincount(np.asarray(state.particles), weights=w, minlength=3)
    assert 0.5 * np.abs(est / est.sum() - alpha).sum() < 0.03


def test_resampling_resets_weights_and_adaptive_rule_follows_the_threshold():
    state = smc.SMCState(jnp.arange(4), jnp.log(jnp.asarray([0.97, 0.01, 0.01, 0.01])))
    ident = lambda k, x: x  # noqa: E731
    zero = lambda x_new, x_old: jnp.zeros(x_new.shape[0])  # noqa: E731
    new, info = smc.step(jax.random.key(0), state, ident, zero, "systematic", 0.5)
    assert bool(info.resampled)  # ESS ~ 1.06 < 2
    # float32: the reset weights are a rounded -log 4; the increment is the log-sum-exp of the
    # normalised weights (sizes <= -log 0.01) with zero increments
    np.testing.assert_allclose(
        np.asarray(new.log_weights), np.full(4, -np.log(4)), rtol=chain_tol(2)
    )
    m = -np.log(0.01)
    assert float(info.log_Z_increment) == pytest.approx(0.0, abs=smc_logz_tol(1, 4, m))
    uniform = smc.SMCState(jnp.arange(4), jnp.full(4, -jnp.log(4.0)))
    _, info = smc.step(jax.random.key(0), uniform, ident, zero, "systematic", 0.5)
    assert not bool(info.resampled)
    assert (np.asarray(info.ancestors) == np.arange(4)).all()
    _, info = smc.step(jax.random.key(0), state, ident, zero, "systematic", 0.0)
    assert not bool(info.resampled)


class StepVariantsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_step_shapes_with_and_without_jit(self):
        state = smc.init({"x": jnp.zeros((5, 2)), "t": jnp.zeros(5, jnp.int32)})

        def propagate(k, p):
            return {"x": p["x"] + jax.random.normal(k, p["x"].shape), "t": p["t"] + 1}

        def log_weight(new, old):
            return -0.5 * jnp.sum(new["x"] ** 2, axis=1)

        fn = self.variant(lambda k, s: smc.step(k, s, propagate, log_weight, "stratified", 0.5))
        new, info = fn(jax.random.key(0), state)
        chex.assert_shape(new.particles["x"], (5, 2))
        chex.assert_shape(new.log_weights, (5,))
        chex.assert_shape(info.ancestors, (5,))
        chex.assert_type(info.ancestors, jnp.int32)
        chex.assert_tree_all_finite(info.log_Z_increment)
