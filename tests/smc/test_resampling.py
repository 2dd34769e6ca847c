"""Specification of the resampling schemes (smcplan.smc.resampling)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.smc import InvalidWeightsError, resampling
from smcplan.smc.resampling import multinomial, offspring_counts, residual, stratified, systematic

SCHEMES = {
    "multinomial": multinomial,
    "systematic": systematic,
    "stratified": stratified,
    "residual": residual,
}


def counts_over_keys(scheme, weights, num_samples, num_keys, seed=0):
    keys = jax.random.split(jax.random.key(seed), num_keys)
    idx = jax.vmap(lambda k: scheme(k, weights, num_samples))(keys)
    return np.asarray(
        jax.vmap(lambda i: offspring_counts(i, weights.shape[0]))(idx), dtype=np.float64
    )


def offspring_variance_bound(name, w, m):
    """Var(O_i) per scheme (exact, or an upper bound), from the scheme's definition.

    multinomial: Binomial(M, w_i) marginal -> M w (1 - w).
    systematic: O_i is floor(Mw) or ceil(Mw) with P(ceil) = frac(Mw) -> f (1 - f).
    residual: floor(Mw) + Binomial(R, r_i), r_i = frac(Mw_i)/R -> R r (1 - r).
    stratified: never worse than multinomial (Douc, Cappe & Moulines 2005) -> M w (1 - w).
    """
    mw = m * w
    if name == "systematic":
        f = mw - np.floor(mw)
        return f * (1 - f)
    if name == "residual":
        frac = mw - np.floor(mw)
        r_total = frac.sum()
        r = frac / r_total if r_total > 0 else np.zeros_like(frac)
        return r_total * r * (1 - r)
    return m * w * (1 - w)


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_mean_offspring_counts_equal_M_times_w_within_five_standard_errors(name):
    # Unbiasedness E[O_i] = M w_i.  Over K independent keys the mean count has standard error
    # sqrt(Var(O_i)/K); a 5-sigma band fails with probability < 6e-7 per entry (Bonferroni over
    # 10 entries x 4 schemes < 3e-5), and the seed is fixed.  A +1e-9 floor covers Var = 0.
    w = np.array([0.02, 0.05, 0.08, 0.1, 0.13, 0.15, 0.2, 0.22, 0.0, 0.05])
    w = w / w.sum()
    m, k = 10, 4000
    counts = counts_over_keys(SCHEMES[name], jnp.asarray(w, jnp.float32), m, k)
    assert (counts.sum(axis=1) == m).all()
    se = np.sqrt(offspring_variance_bound(name, w, m) / k)
    np.testing.assert_array_less(np.abs(counts.mean(axis=0) - m * w), 5 * se + 1e-9)


def test_systematic_offspring_counts_are_floor_or_ceil_of_M_w():
    w = np.random.default_rng(0).dirichlet(np.ones(37))
    for m in (37, 100, 1000):
        counts = counts_over_keys(systematic, jnp.asarray(w, jnp.float32), m, 200)
        mw = m * w
        # float32 CDF rounding can move M*C_i by at most ~N*M*2^-23 < 5e-3 here.
        assert (counts >= np.floor(mw - 5e-3)).all() and (counts <= np.ceil(mw + 5e-3)).all()


def test_residual_deterministic_part_is_exact():
    w = np.random.default_rng(1).dirichlet(np.ones(20) * 0.5)
    m = 50
    counts = counts_over_keys(residual, jnp.asarray(w, jnp.float32), m, 300)
    assert (counts >= np.floor(m * w - 1e-4)).all()
    # weights on the 1/M grid: the residual is empty and the result is deterministic
    grid = np.array([3, 0, 5, 2], dtype=np.float64) / 10
    c = counts_over_keys(residual, jnp.asarray(grid, jnp.float32), 10, 50)
    assert (c == np.array([3, 0, 5, 2])).all()


def test_multinomial_pooled_draws_follow_the_categorical_law():
    # K keys x M draws are K*M i.i.d. Cat(w) draws; Pearson chi-square with 3 degrees of freedom
    # has its 1e-4 upper quantile at 21.1 (fixed seed).
    w = np.array([0.1, 0.2, 0.3, 0.4])
    keys = jax.random.split(jax.random.key(3), 20000)
    draws = np.asarray(
        jax.vmap(lambda k: multinomial(k, jnp.asarray(w, jnp.float32), 5))(keys)
    ).ravel()
    observed = np.bincount(draws, minlength=4)
    expected = draws.size * w
    assert ((observed - expected) ** 2 / expected).sum() < 21.1


@settings(max_examples=60, deadline=None)
@given(
    weights=st.lists(
        st.one_of(st.just(0.0), st.floats(1e-12, 1.0), st.just(1.0)), min_size=1, max_size=50
    ).filter(lambda w: sum(w) > 0),
    m=st.integers(1, 60),
    name=st.sampled_from(sorted(SCHEMES)),
    seed=st.integers(0, 2**31 - 1),
)
def test_any_weights_give_m_valid_indices_and_dead_particles_get_no_offspring(
    weights, m, name, seed
):
    w = jnp.asarray(weights, jnp.float32)
    idx = np.asarray(SCHEMES[name](jax.random.key(seed), w, m))
    assert idx.shape == (m,) and idx.dtype == np.int32
    assert ((idx >= 0) & (idx < len(weights))).all()
    counts = np.bincount(idx, minlength=len(weights))
    assert counts.sum() == m
    assert (counts[np.asarray(weights) == 0.0] == 0).all()


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_single_particle_and_one_dominant_weight(name):
    assert (np.asarray(SCHEMES[name](jax.random.key(0), jnp.ones(1), 7)) == 0).all()
    w = jnp.asarray([1e-30, 1.0 - 1e-7, 1e-7, 0.0], jnp.float32)
    idx = np.asarray(SCHEMES[name](jax.random.key(0), w, 100))
    assert (np.bincount(idx, minlength=4)[1] >= 99) and (np.bincount(idx, minlength=4)[3] == 0)


@pytest.mark.parametrize("name", sorted(SCHEMES))
@pytest.mark.parametrize(
    "bad, message",
    [
        ([0.5, float("nan")], "NaN"),
        ([0.5, -0.1], ">= 0"),
        ([0.0, 0.0], "zero"),
        ([[0.5, 0.5]], "shape"),
        ([0.5, float("inf")], "inf"),
    ],
)
def test_bad_weights_raise_a_typed_error_naming_the_problem(name, bad, message):
    with pytest.raises(InvalidWeightsError, match=message):
        SCHEMES[name](jax.random.key(0), jnp.asarray(bad), 3)


def test_bad_weights_inside_jit_are_caught_by_the_checked_path():
    from smcplan.smc import checked

    safe = checked(systematic, static_argnums=2)
    err, _ = safe(jax.random.key(0), jnp.asarray([0.5, jnp.nan]), 4)
    with pytest.raises(Exception, match="NaN"):
        err.throw()
    err, idx = safe(jax.random.key(0), jnp.asarray([0.5, 0.5]), 4)
    err.throw()
    assert idx.shape == (4,)


def test_the_registry_holds_the_checked_public_schemes():
    assert {n: resampling.SCHEMES[n] for n in SCHEMES} == SCHEMES


def test_a_registered_scheme_is_checked_like_the_built_in_ones():
    def first(key, weights, num_samples):
        """Every child from particle 0."""
        return jnp.zeros(num_samples, jnp.int32)

    try:
        public = resampling.register("first")(first)
        assert resampling.get("first") is public and public.__doc__ == first.__doc__
        assert (np.asarray(public(jax.random.key(0), jnp.ones(3), 2)) == 0).all()
        with pytest.raises(InvalidWeightsError, match="NaN"):
            resampling.get("first")(jax.random.key(0), jnp.asarray([0.5, jnp.nan]), 2)
        with pytest.raises(ValueError, match="num_samples must be >= 1"):
            public(jax.random.key(0), jnp.ones(3), 0)
        with pytest.raises(ValueError, match="'first' is already registered"):
            resampling.register("first")(first)
    finally:
        resampling.SCHEMES.pop("first", None)


def test_unknown_scheme_names_the_known_ones():
    with pytest.raises(ValueError, match="multinomial, residual, stratified, systematic"):
        resampling.get("sistematic")


class ResamplingVariantsTest(chex.TestCase):
    @chex.variants(with_jit=True, without_jit=True)
    def test_shape_and_dtype_with_and_without_jit(self):
        w = jnp.asarray([0.1, 0.6, 0.3])
        for scheme in SCHEMES.values():
            fn = self.variant(scheme, static_argnums=2)
            idx = fn(jax.random.key(1), w, 8)
            chex.assert_shape(idx, (8,))
            chex.assert_type(idx, jnp.int32)
            assert int(jnp.max(idx)) < 3
