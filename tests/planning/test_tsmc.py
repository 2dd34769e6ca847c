"""Specification of the generic planner (smcplan.planning.tsmc) on small synthetic components."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from smcplan.planning import PlanningError, Proposed, Score, Transition, tsmc
from tests.tolerance import smc_logweight_tol, smc_logz_tol

# ---------------------------------------------------------------- synthetic components


def coin_proposal(p_one: float):
    """a_t ~ Bernoulli(p_one) with log q; prior p0 = Bernoulli(1/2) reported as log_p."""

    def proposal(key, particles, t, horizon):
        n = particles.shape[0]
        a = jax.random.bernoulli(key, p_one, (n,)).astype(jnp.int32)
        log_q = jnp.where(a == 1, math.log(p_one), math.log(1 - p_one))
        return Proposed(actions=a, log_q=log_q, log_p=jnp.full((n,), math.log(0.5)))

    return proposal


def counter_world(key, particles, actions, t, horizon):
    """The particle is the running sum of its actions."""
    return Transition(particles=particles + actions, observations=actions)


def sum_twist(beta: float):
    """log psi_t = beta * (sum of actions so far); delta_t = last action."""

    def twist(key, particles, t, horizon):
        return Score(delta=None, log_psi=beta * particles.astype(jnp.float32))

    return twist


@dataclass(frozen=True)
class Hist:
    """A Python-object particle: its whole action history (never mutated)."""

    actions: tuple[int, ...] = ()


def hist_proposal(key, particles, t, horizon):
    n = len(particles)
    a = [int(x) for x in np.asarray(jax.random.randint(key, (n,), 0, 3))]
    return Proposed(actions=a, log_q=jnp.full((n,), -math.log(3)))


def hist_world(key, particles, actions, t, horizon):
    return Transition(
        particles=[Hist(p.actions + (a,)) for p, a in zip(particles, actions, strict=True)],
        observations=list(actions),
    )


def hist_progress(key, particles, t, horizon):
    """delta = 1 when the last action equals the step index mod 3 (arbitrary but varied)."""
    return Score(delta=jnp.asarray([float(p.actions[-1] == t % 3) for p in particles]))


# ---------------------------------------------------------------- weighting rules


def test_nesyfs_weights_are_exp_lambda_times_total_progress_without_resampling():
    lam, horizon, n = 0.7, 4, 64

    def twist(key, particles, t, horizon):
        return Score(
            delta=(particles % 2).astype(jnp.float32)
        )  # delta_t = parity of the running sum

    res = tsmc(
        jnp.zeros(n, jnp.int32),
        jax.random.key(3),
        proposal=coin_proposal(0.5),
        world_model=counter_world,
        twist=twist,
        horizon=horizon,
        weighting="nesyfs",
        lam=lam,
        ess_threshold=0.0,
    )
    # Recompute sum_t delta_t per particle from the recorded actions (no resampling: identity
    # ancestry).
    acts = np.stack([np.asarray(a) for a in res.step_actions])  # (H, N)
    delta_total = (np.cumsum(acts, axis=0) % 2).sum(axis=0)
    expected = lam * delta_total - np.log(np.sum(np.exp(lam * delta_total)))
    # float32: H reweightings of n particles, |log-weight| <= lam * H + log n
    m = lam * horizon + np.log(n)
    np.testing.assert_allclose(
        np.asarray(res.log_weights), expected, atol=smc_logweight_tol(horizon, n, m)
    )
    assert not np.asarray(res.resampled).any()
    np.testing.assert_array_equal(np.asarray(res.ancestry), np.tile(np.arange(n), (horizon, 1)))
    # log Z of the NeSyFS weighting: log mean exp(lam * sum delta) with no resampling.
    want = float(np.log(np.mean(np.exp(lam * delta_total))))
    assert res.log_Z == pytest.approx(want, abs=smc_logz_tol(horizon, n, m))


def test_twisted_weights_correct_a_biased_proposal_to_the_target_marginal_and_evidence():
    # Target: p0 = Bernoulli(1/2)^H, phi = exp(beta * sum a).  Steps are independent, so
    # P_target(a_1 = 1) = e^beta / (1 + e^beta) and Z = ((1 + e^beta) / 2)^H.  The proposal is
    # biased towards 0 (q = 0.2), so only the p0/q correction recovers these.
    beta, horizon, n, seeds = 1.0, 3, 128, 60
    p1 = math.exp(beta) / (1 + math.exp(beta))
    z = ((1 + math.exp(beta)) / 2) ** horizon
    masses, z_hats = [], []
    proposal, twist = (
        coin_proposal(0.2),
        sum_twist(beta),
    )  # built once: jit caches on the components
    for seed in range(seeds):
        res = tsmc(
            jnp.zeros(n, jnp.int32),
            jax.random.key(seed),
            proposal=proposal,
            world_model=counter_world,
            twist=twist,
            horizon=horizon,
            weighting="twisted",
            jit=True,
        )
        masses.append(res.action_mass.get(1, 0.0))
        z_hats.append(math.exp(res.log_Z))
    # The SMC estimates are consistent with O(1/N) bias; over `seeds` runs the mean has standard
    # error sd/sqrt(seeds).  Accept within 4 standard errors plus the O(1/N) = 1/128 bias bound.
    m, sd = np.mean(masses), np.std(masses, ddof=1)
    assert abs(m - p1) < 4 * sd / math.sqrt(seeds) + 1.0 / n, (m, p1, sd)
    # Z-hat is unbiased: no bias term.
    zm, zsd = np.mean(z_hats), np.std(z_hats, ddof=1)
    assert abs(zm - z) < 4 * zsd / math.sqrt(seeds), (zm, z, zsd)


def test_twisted_intermediate_twists_cancel_so_the_target_does_not_depend_on_them():
    # Same target with psi_t = exp(beta * sum) at t < H and the terminal potential at t = H, vs
    # psi_t = 1 for t < H: the final (unresampled) weights must be identical per particle when
    # the actions are identical (same key) and nothing is resampled.
    beta, horizon, n = 0.8, 3, 32

    def terminal_only(key, particles, t, horizon):
        lp = beta * particles.astype(jnp.float32) if t == horizon else jnp.zeros(particles.shape[0])
        return Score(log_psi=lp)

    kw = dict(
        proposal=coin_proposal(0.3),
        world_model=counter_world,
        horizon=horizon,
        weighting="twisted",
        ess_threshold=0.0,
    )
    a = tsmc(jnp.zeros(n, jnp.int32), jax.random.key(5), twist=sum_twist(beta), **kw)
    b = tsmc(jnp.zeros(n, jnp.int32), jax.random.key(5), twist=terminal_only, **kw)
    # float32; every log-weight <= H * (beta + log(0.7 / 0.3)) + log n in size
    m = horizon * (beta + np.log(0.7 / 0.3)) + np.log(n)
    tol = smc_logweight_tol(horizon, n, m)
    np.testing.assert_allclose(np.asarray(a.log_weights), np.asarray(b.log_weights), atol=tol)
    assert a.log_Z == pytest.approx(b.log_Z, abs=smc_logz_tol(horizon, n, m))


# ---------------------------------------------------------------- calls, ancestry, resampling


class Counting:
    """Wraps a component; records the batch size of every call."""

    def __init__(self, fn):
        self.fn, self.sizes = fn, []

    def __call__(self, *args):
        particles = args[1]
        self.sizes.append(len(particles) if isinstance(particles, list) else particles.shape[0])
        return self.fn(*args)


@pytest.mark.parametrize("horizon", [1, 2, 5])
def test_each_component_is_called_exactly_horizon_times_with_the_whole_batch(horizon):
    n = 7
    prop, world, twist = Counting(hist_proposal), Counting(hist_world), Counting(hist_progress)
    res = tsmc(
        [Hist()] * n,
        jax.random.key(0),
        proposal=prop,
        world_model=world,
        twist=twist,
        horizon=horizon,
    )
    for comp in (prop, world, twist):
        assert comp.sizes == [n] * horizon
    assert res.calls == {"proposal": horizon, "world_model": horizon, "twist": horizon}


def test_jit_reports_horizon_calls_per_component_even_from_the_compile_cache():
    proposal, twist = coin_proposal(0.5), sum_twist(1.0)
    for seed in range(2):  # the second call hits the cache: no Python re-execution
        res = tsmc(
            jnp.zeros(16, jnp.int32),
            jax.random.key(seed),
            proposal=proposal,
            world_model=counter_world,
            twist=twist,
            horizon=4,
            weighting="twisted",
            jit=True,
        )
        assert res.calls == {"proposal": 4, "world_model": 4, "twist": 4}


def test_first_actions_and_step_actions_follow_the_ancestry():
    n, horizon = 50, 4
    res = tsmc(
        [Hist()] * n,
        jax.random.key(11),
        proposal=hist_proposal,
        world_model=hist_world,
        twist=hist_progress,
        horizon=horizon,
        lam=2.0,
    )
    assert np.asarray(res.resampled).tolist() == [False] + [True] * (horizon - 1)
    anc = np.asarray(res.ancestry)
    np.testing.assert_array_equal(anc[0], np.arange(n))
    for i, particle in enumerate(res.particles):
        assert len(particle.actions) == horizon
        assert res.first_actions[i] == particle.actions[0]
        # walk back through the ancestry: position at step t -> its parent's position at t-1
        pos = i
        for t in range(horizon, 0, -1):
            assert res.step_actions[t - 1][pos] == particle.actions[t - 1]
            pos = anc[t - 1][pos]


def test_resampling_shares_python_objects_instead_of_copying_them():
    world = Counting(hist_world)
    seen: list[int] = []

    def recording_world(key, particles, actions, t, horizon):
        seen.append(len({id(p) for p in particles}))
        return world(key, particles, actions, t, horizon)

    tsmc(
        [Hist()] * 20,
        jax.random.key(2),
        proposal=hist_proposal,
        world_model=recording_world,
        twist=hist_progress,
        horizon=3,
        lam=5.0,
    )
    assert seen[0] == 1  # step 1: twenty references to the one root object
    assert all(
        k < 20 for k in seen[1:]
    )  # after resampling, duplicates are the same object, not copies


def test_adaptive_resampling_runs_exactly_when_ess_falls_below_the_threshold():
    kappa, n = 0.6, 200
    res = tsmc(
        jnp.zeros(n, jnp.int32),
        jax.random.key(4),
        proposal=coin_proposal(0.5),
        world_model=counter_world,
        twist=sum_twist(0.9),
        horizon=6,
        weighting="twisted",
        ess_threshold=kappa,
    )
    ess, resampled = np.asarray(res.ess), np.asarray(res.resampled)
    assert not resampled[0]
    np.testing.assert_array_equal(resampled[1:], ess[:-1] < kappa * n)
    assert resampled.any() and not resampled.all()  # the case exercises both branches


@pytest.mark.parametrize("scheme", ["multinomial", "systematic", "stratified", "residual"])
def test_every_resampling_scheme_of_smc_is_accepted(scheme):
    res = tsmc(
        [Hist()] * 9,
        jax.random.key(1),
        proposal=hist_proposal,
        world_model=hist_world,
        twist=hist_progress,
        horizon=3,
        resampling=scheme,
    )
    assert res.config["resampling"] == scheme and len(res.particles) == 9


def test_jit_and_eager_give_the_same_plan_for_the_same_key():
    kw = dict(
        proposal=coin_proposal(0.4),
        world_model=counter_world,
        twist=sum_twist(0.5),
        horizon=3,
        weighting="twisted",
    )
    a = tsmc(jnp.zeros(32, jnp.int32), jax.random.key(9), jit=False, **kw)
    b = tsmc(jnp.zeros(32, jnp.int32), jax.random.key(9), jit=True, **kw)
    # float32, jit vs eager; every log-weight <= H * (beta + log(0.6 / 0.4)) + log n in size
    m = 3 * (0.5 + np.log(0.6 / 0.4)) + np.log(32)
    tol = smc_logweight_tol(3, 32, m)
    np.testing.assert_allclose(np.asarray(a.log_weights), np.asarray(b.log_weights), atol=tol)
    np.testing.assert_array_equal(np.asarray(a.ancestry), np.asarray(b.ancestry))
    assert a.action == b.action and a.log_Z == pytest.approx(b.log_Z, abs=smc_logz_tol(3, 32, m))


# ---------------------------------------------------------------- choice and result


def test_max_weight_choice_returns_the_first_action_with_the_largest_mass():
    res = tsmc(
        [Hist()] * 30,
        jax.random.key(8),
        proposal=hist_proposal,
        world_model=hist_world,
        twist=hist_progress,
        horizon=2,
        choice="max_weight",
    )
    assert res.chosen_index is None
    assert res.action_mass[res.action] == max(res.action_mass.values())
    assert sum(res.action_mass.values()) == pytest.approx(1.0)


def test_sample_choice_takes_the_first_action_of_the_chosen_particle():
    res = tsmc(
        [Hist()] * 30,
        jax.random.key(8),
        proposal=hist_proposal,
        world_model=hist_world,
        twist=hist_progress,
        horizon=2,
    )
    assert res.action == res.particles[res.chosen_index].actions[0]
    assert np.exp(np.asarray(res.log_weights))[res.chosen_index] > 0


def test_to_dict_is_json_serialisable_and_summarises_the_run():
    res = tsmc(
        [Hist()] * 5,
        jax.random.key(0),
        proposal=hist_proposal,
        world_model=hist_world,
        twist=hist_progress,
        horizon=3,
    )
    d = json.loads(json.dumps(res.to_dict()))
    assert d["calls"] == {"proposal": 3, "world_model": 3, "twist": 3}
    assert len(d["ess"]) == 3 and d["num_particles"] == 5 and d["horizon"] == 3
    full = json.loads(json.dumps(res.to_dict(arrays=True)))
    assert np.array(full["ancestry"]).shape == (3, 5) and len(full["first_actions"]) == 5
    assert "PlanResult(" in repr(res)


# ---------------------------------------------------------------- bad input


def _run(particles=None, **kw):
    args = dict(proposal=hist_proposal, world_model=hist_world, twist=hist_progress, horizon=2)
    args.update(kw)
    return tsmc([Hist()] * 4 if particles is None else particles, jax.random.key(0), **args)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(particles=[]), "num_particles must be an integer >= 1; got 0"),
        (dict(horizon=0), "horizon must be an integer >= 1; got 0"),
        (dict(horizon=2.5), "horizon must be an integer >= 1; got 2.5"),
        (dict(weighting="twisty"), "unknown weighting 'twisty'; known: nesyfs, twisted"),
        (dict(choice="best"), "unknown choice 'best'; known: sample, max_weight"),
        (
            dict(resampling="sytematic"),
            "unknown resampling scheme 'sytematic'; known: multinomial, residual, stratified, "
            "systematic",
        ),
        (dict(lam=float("nan")), "lam must be a finite number"),
        (dict(jit=True), "jit=True needs pytree particles"),
    ],
)
def test_bad_settings_raise_errors_naming_the_value_and_the_valid_ones(kwargs, message):
    with pytest.raises(PlanningError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _run(**kwargs)


def test_a_component_returning_the_wrong_batch_size_is_named():
    def short_proposal(key, particles, t, horizon):
        return Proposed(actions=[0] * (len(particles) - 1), log_q=jnp.zeros(len(particles) - 1))

    with pytest.raises(
        PlanningError, match="step 1: proposal short_proposal actions holds 3 items for 4 particles"
    ):
        _run(proposal=short_proposal)

    def lossy_world(key, particles, actions, t, horizon):
        return Transition(particles=particles[:2], observations=actions)

    with pytest.raises(
        PlanningError, match="world model lossy_world particles holds 2 items for 4 particles"
    ):
        _run(world_model=lossy_world)

    def wide_twist(key, particles, t, horizon):
        return Score(delta=jnp.zeros((len(particles), 2)))

    with pytest.raises(
        PlanningError, match=r"twist wide_twist delta has shape \(4, 2\); expected \(4,\)"
    ):
        _run(twist=wide_twist)


def test_a_pytree_component_with_the_wrong_batch_size_is_named_under_jit_too():
    def short_world(key, particles, actions, t, horizon):
        return Transition(particles=particles[1:], observations=actions[1:])

    with pytest.raises(PlanningError, match="holds 15 items for 16 particles"):
        tsmc(
            jnp.zeros(16, jnp.int32),
            jax.random.key(0),
            proposal=coin_proposal(0.5),
            world_model=short_world,
            twist=sum_twist(1.0),
            horizon=2,
            weighting="twisted",
            jit=True,
        )


def test_missing_scores_and_invalid_log_probabilities_are_reported():
    def no_delta(key, particles, t, horizon):
        return Score(log_psi=jnp.zeros(len(particles)))

    with pytest.raises(PlanningError, match="weighting='nesyfs' needs a progress delta"):
        _run(twist=no_delta)
    with pytest.raises(PlanningError, match="weighting='twisted' needs log_psi"):
        _run(weighting="twisted")

    def nan_proposal(key, particles, t, horizon):
        return Proposed(actions=[0] * len(particles), log_q=jnp.full(len(particles), jnp.nan))

    with pytest.raises(PlanningError, match="log_q contains NaN"):
        _run(proposal=nan_proposal)


def test_all_particles_dying_is_an_error_not_a_nan_plan():
    def zero_twist(key, particles, t, horizon):
        return Score(log_psi=jnp.full(len(particles), -jnp.inf))

    with pytest.raises(PlanningError, match="step 1: every particle has weight zero"):
        _run(twist=zero_twist, weighting="twisted")
