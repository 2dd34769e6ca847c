"""The particle filter converges to the exact belief and its likelihood estimate is unbiased.

Tolerances come from the Monte Carlo error, never from tuning:

* TV bound at N = 10^4: the Chan & Lai (2013) estimator of the asymptotic variance of a
  particle-filter estimate, from the genealogy of one run (multinomial resampling every step):
  :math:`\\hat\\sigma^2(\\varphi) = N \\sum_j (\\sum_{i: E_i = j} W_i (\\varphi(x_i) -
  \\hat\\pi(\\varphi)))^2`
  with :math:`E_i` the time-0 ancestor ("Eve") of particle i.  With :math:`\\varphi = [x = s]`
  each :math:`|\\hat b(s) - b(s)|` is below :math:`4 \\hat\\sigma_s / \\sqrt N` with probability
  0.99994, so :math:`TV \\le \\tfrac12 \\sum_s 4 \\hat\\sigma_s / \\sqrt N` fails with
  probability < 6e-5 × S per step (union bound).
* Unbiasedness: :math:`E[\\hat Z] = Z` (Del Moral 2004); the mean of :math:`\\hat Z / Z` over R
  independent runs must lie within 4 standard errors of 1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from smcplan.pomdp import (
    ParticleDegeneracyError,
    domains,
    exact_filter,
    optimal_proposal,
    particle_beliefs,
    particle_filter,
    simulate,
    states_to_indices,
)

from .conftest import random_pomdp

N_STEPS = 10


@pytest.fixture(scope="module")
def random_case():
    rng = np.random.default_rng(11)
    pomdp = random_pomdp(rng, 6, 2, 3)
    actions = rng.integers(0, 2, size=N_STEPS)
    episode = simulate(pomdp, actions, jax.random.key(5))
    with jax.enable_x64(True):
        exact, loglik = exact_filter(pomdp, actions, episode.observations)
    return pomdp, actions, episode.observations, np.asarray(exact), float(loglik)


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return 0.5 * np.abs(p - q).sum(-1)


def chan_lai_sd(result, num_states: int, particles: np.ndarray | None = None) -> np.ndarray:
    """sigma_hat per (time, state) of the Chan & Lai (2013) variance estimator (module docstring).
    """
    ancestors = np.asarray(result.ancestors)
    n = ancestors.shape[1]
    eve = np.arange(n)
    weights = np.exp(np.asarray(result.log_weights, np.float64))
    particles = np.asarray(result.particles if particles is None else particles)
    # time 0: N i.i.d. draws from b0, binomial standard deviation per state
    est0 = np.bincount(particles[0], weights=weights[0], minlength=num_states)
    sds = [np.sqrt(est0 * (1 - est0))]
    for t in range(ancestors.shape[0]):
        eve = eve[ancestors[t]]
        w, x = weights[t + 1], particles[t + 1]
        est = np.bincount(x, weights=w, minlength=num_states)
        sd = np.empty(num_states)
        for s in range(num_states):
            contrib = np.bincount(eve, weights=w * ((x == s) - est[s]), minlength=n)
            sd[s] = np.sqrt(n * np.sum(contrib**2))
        sds.append(sd)
    return np.stack(sds)


def test_bootstrap_filter_is_within_its_monte_carlo_error_of_the_exact_belief_at_n_1e4(random_case):
    pomdp, actions, observations, exact, _ = random_case
    n = 10_000
    result = particle_filter(
        pomdp,
        actions,
        observations,
        n,
        jax.random.key(0),
        resampling="multinomial",
        ess_threshold=1.0,
    )
    approx = np.asarray(particle_beliefs(result, pomdp.num_states), np.float64)
    sd = chan_lai_sd(result, pomdp.num_states)
    bound = 0.5 * (4.0 * sd / np.sqrt(n)).sum(-1)
    tv = total_variation(approx, exact)
    assert (tv <= bound).all(), (tv, bound)
    # the bound itself is of the Monte Carlo order: a few times 1/sqrt(N), not vacuous
    assert bound.max() < 0.1


def test_bootstrap_tv_decreases_like_one_over_sqrt_n(random_case):
    pomdp, actions, observations, exact, _ = random_case
    mean_tv = {}
    for n in (100, 1_000, 10_000):
        tvs = []
        for seed in range(10):
            result = particle_filter(pomdp, actions, observations, n, jax.random.key(100 + seed))
            approx = np.asarray(particle_beliefs(result, pomdp.num_states), np.float64)
            tvs.append(total_variation(approx, exact)[1:].mean())
        mean_tv[n] = float(np.mean(tvs))
    assert mean_tv[100] > mean_tv[1_000] > mean_tv[10_000], mean_tv
    # N^{-1/2}: each decade divides the error by sqrt(10) = 3.16; a biased filter would plateau.
    # The average of 10 runs has a relative spread of ~0.3, so a factor 4 over two decades
    # (10 expected) cannot fail by chance.
    assert mean_tv[100] / mean_tv[10_000] > 4.0, mean_tv


@pytest.mark.parametrize("guided", [False, True])
def test_likelihood_estimate_is_unbiased_in_the_exp_domain(random_case, guided):
    pomdp, actions, observations, _, loglik = random_case
    proposal = optimal_proposal(pomdp) if guided else None
    runs = 300
    ratios = np.array(
        [
            np.exp(
                float(
                    particle_filter(
                        pomdp,
                        actions,
                        observations,
                        50,
                        jax.random.key(1000 + r),
                        proposal=proposal,
                    ).log_likelihood
                )
                - loglik
            )
            for r in range(runs)
        ]
    )
    mean, stderr = ratios.mean(), ratios.std(ddof=1) / np.sqrt(runs)
    assert abs(mean - 1.0) < 4.0 * stderr + 1e-3, (mean, stderr)  # 1e-3: float32 rounding of log Z
    # and the estimate is not trivially exact (the test could fail)
    assert ratios.std() > 1e-3


def test_guided_filter_with_optimal_proposal_on_a_sparse_transition_converges_with_larger_ess():
    rng = np.random.default_rng(21)
    pomdp = random_pomdp(rng, 12, 3, 4, sparse_k=3)
    actions = rng.integers(0, 3, size=N_STEPS)
    observations = simulate(pomdp, actions, jax.random.key(9)).observations
    with jax.enable_x64(True):
        exact = np.asarray(exact_filter(pomdp, actions, observations)[0])
    n = 10_000
    proposal = optimal_proposal(pomdp)
    guided = particle_filter(
        pomdp,
        actions,
        observations,
        n,
        jax.random.key(1),
        proposal=proposal,
        resampling="multinomial",
        ess_threshold=1.0,
    )
    boot = particle_filter(
        pomdp,
        actions,
        observations,
        n,
        jax.random.key(1),
        resampling="multinomial",
        ess_threshold=1.0,
    )
    approx = np.asarray(particle_beliefs(guided, pomdp.num_states), np.float64)
    bound = 0.5 * (4.0 * chan_lai_sd(guided, pomdp.num_states) / np.sqrt(n)).sum(-1)
    assert (total_variation(approx, exact) <= bound).all()
    # the locally optimal proposal removes the variance of O(o|s') given the parent
    # (Var O(o|s') = Var p(o|s) + E Var(O(o|s') | s) >= Var p(o|s)), so its ESS is larger on average
    assert float(np.mean(guided.ess)) > float(np.mean(boot.ess))


def test_particle_filter_runs_the_numpyro_program_directly(tiger):
    program = domains.tiger_program()
    actions = ["listen", "listen", "listen", "open left door", "listen", "listen"]
    observations = simulate(tiger, actions, jax.random.key(3)).observations
    with jax.enable_x64(True):
        exact = np.asarray(exact_filter(tiger, actions, observations)[0])
    n = 10_000
    result = particle_filter(
        program,
        actions,
        observations,
        n,
        jax.random.key(4),
        resampling="multinomial",
        ess_threshold=1.0,
    )
    assert set(result.particles) == {"tiger"} and result.particles["tiger"].shape == (
        len(actions) + 1,
        n,
    )
    idx = states_to_indices(tiger, result.particles)
    weights = np.exp(np.asarray(result.log_weights, np.float64))
    approx = np.stack(
        [np.bincount(idx[t], weights=weights[t], minlength=2) for t in range(len(actions) + 1)]
    )
    bound = 4.0 * chan_lai_sd(result, 2, idx) / np.sqrt(n)
    assert (np.abs(approx - exact) <= bound).all()


def test_same_key_gives_the_same_run_and_schemes_are_selectable(tiger):
    actions, observations = ["listen"] * 4, [0, 0, 1, 0]
    a = particle_filter(tiger, actions, observations, 500, jax.random.key(7))
    b = particle_filter(tiger, actions, observations, 500, jax.random.key(7))
    np.testing.assert_array_equal(np.asarray(a.particles), np.asarray(b.particles))
    for scheme in ("multinomial", "stratified", "residual"):
        r = particle_filter(
            tiger,
            actions,
            observations,
            500,
            jax.random.key(7),
            resampling=scheme,
            ess_threshold=1.0,
        )
        assert bool(jnp.all(r.resampled))
    with pytest.raises(ValueError, match="unknown resampling 'sytematic'.*systematic"):
        particle_filter(
            tiger, actions, observations, 500, jax.random.key(7), resampling="sytematic"
        )


def test_an_observation_no_particle_explains_raises_naming_the_step(check_first):
    actions = ["open drawer 1", "go to drawer 2", "open drawer 2"]
    observations = [
        "you open the drawer 1. in it, you see a key 1.",
        "you arrive at the drawer 2. the drawer 2 is closed.",
        "you open the drawer 2. in it, you see a key 1.",
    ]
    with pytest.raises(ParticleDegeneracyError, match="step 2") as info:
        particle_filter(check_first, actions, observations, 200, jax.random.key(0))
    assert info.value.action == "open drawer 2"
