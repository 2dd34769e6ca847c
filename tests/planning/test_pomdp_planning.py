"""plan() on toy POMDPs with exact components, checked against exact answers (smcplan.pomdp)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import smcplan
from smcplan.planning import PlanningError, plan, tsmc
from smcplan.planning import pomdp_components as pc
from smcplan.planning.belief_tree import belief_tree
from smcplan.pomdp import DiscretePOMDP, exact_filter, exact_q_values, solve_exact
from smcplan.pomdp.domains import household_check_first, tiger
from tests.tolerance import EPS64, chain_tol, expectimax_tol

TIGER = tiger()
HOUSE = household_check_first()


def random_pomdp(seed: int, s: int = 4, a: int = 2, o: int = 3) -> DiscretePOMDP:
    """Dirichlet(1) transitions and observations, as in tests/pomdp."""
    rng = np.random.default_rng(seed)
    return DiscretePOMDP(
        rng.dirichlet(np.ones(s), size=(a, s)),
        rng.dirichlet(np.ones(o), size=(a, s)),
        rng.normal(size=(s, a)),
        rng.dirichlet(np.ones(s)),
        0.9,
        name=f"random{seed}",
    )


# ---------------------------------------------------------------- exact values


@pytest.mark.parametrize("horizon", [1, 2, 3, 4])
@pytest.mark.parametrize("p_left", [0.5, 0.8, 0.999])
def test_belief_tree_q_values_equal_solve_exact_on_tiger(horizon, p_left):
    b = np.array([p_left, 1 - p_left])
    tree = belief_tree(TIGER, b, horizon)
    np.testing.assert_allclose(
        tree.q_values[0][0],
        exact_q_values(TIGER, b, horizon),
        rtol=0,
        atol=expectimax_tol(horizon, 2, 2, 100.0),  # float64, |R| <= 100
    )


@pytest.mark.parametrize("horizon", [1, 2, 3])
def test_belief_tree_q_values_equal_solve_exact_on_household(horizon):
    tree = belief_tree(HOUSE, HOUSE.b0, horizon)
    np.testing.assert_allclose(
        tree.q_values[0][0],
        exact_q_values(HOUSE, HOUSE.b0, horizon),
        atol=expectimax_tol(
            horizon, HOUSE.num_states, HOUSE.num_observations, float(np.abs(HOUSE.R).max())
        ),
    )


def test_soft_values_equal_brute_force_enumeration_of_the_twisted_target():
    # F_0(b) = E_{p0}[exp(beta * G_H)] by explicit enumeration of all (a, o) sequences.
    pomdp, beta, horizon = random_pomdp(1), 0.7, 3
    T, O, R = pomdp.T, pomdp.O, pomdp.R  # noqa: N806, E741

    def f(b, depth):
        if depth == horizon:
            return 1.0
        total = 0.0
        for a in range(pomdp.num_actions):
            pred = b @ T[a]
            inner = sum(
                (pred * O[a, :, o]).sum()
                * f(pred * O[a, :, o] / (pred * O[a, :, o]).sum(), depth + 1)
                for o in range(pomdp.num_observations)
            )
            total += (
                math.exp(beta * pomdp.discount**depth * (b @ R[:, a])) * inner / pomdp.num_actions
            )
        return total

    tree = belief_tree(pomdp, pomdp.b0, horizon, beta=beta)
    # float64: the weights' chain as in expectimax_tol (relative: the value is a positive
    # expectation), plus exp turning the exponent's absolute error (beta * expectimax_tol with
    # |R| <= r_max) into a relative one, plus the exp/log roundings
    s, o, r_max = pomdp.num_states, pomdp.num_observations, float(np.abs(R).max())
    rel = expectimax_tol(horizon, s, o, 1.0) / horizon + beta * expectimax_tol(horizon, s, o, r_max)
    rel += chain_tol(2 * horizon + 2, EPS64)
    assert math.exp(tree.log_soft[0][0]) == pytest.approx(f(pomdp.b0, 0), rel=rel)


def test_inverse_cdf_row_sampling_draws_each_entry_with_its_probability_and_never_a_zero():
    probs = np.array([[0.0, 0.2, 0.0, 0.5, 0.3], [1.0, 0.0, 0.0, 0.0, 0.0]])
    m = 100_000
    draws = np.asarray(
        pc.sample_rows(
            jax.random.key(0), np.repeat(probs, m, axis=0).reshape(2, m, 5).transpose(1, 0, 2)
        )
    )
    for row in range(2):
        counts = np.bincount(draws[:, row], minlength=5)
        # binomial counts: within 5 standard deviations of m p (and exactly 0 where p = 0)
        sd = np.sqrt(m * probs[row] * (1 - probs[row]))
        assert np.all(np.abs(counts - m * probs[row]) <= 5 * sd + 1e-9), counts
        assert np.all(counts[probs[row] == 0] == 0)


# ---------------------------------------------------------------- Tiger agreement with solve_exact

# With the exact value twist, delta_t = 1 iff a_t is optimal at its parent belief.  Under the
# NeSyFS weighting the first step multiplies the weight of the optimal first action by e^lam; the
# later steps contribute factors of the same law to every first-action group (in Tiger one action
# in three is optimal at every belief of the tree), so the weight mass of the optimal first action
# is about e^lam / (e^lam + |A| - 1) = 0.987 for lam = 5, |A| = 3, and choice="sample" picks it with
# that probability.  Over 200 runs the agreement rate has s.d. sqrt(0.987 * 0.013 / 200) = 0.008,
# so the bar of 95% sits more than 4 s.d. below the expected rate.
TIGER_BELIEFS = {
    "uniform": [0.5, 0.5],
    "confident left": [0.999, 0.001],
    "confident right": [0.001, 0.999],
}


@pytest.mark.parametrize("name", list(TIGER_BELIEFS))
def test_tiger_plan_with_exact_components_agrees_with_solve_exact_in_95_percent_of_200_runs(name):
    belief = np.array(TIGER_BELIEFS[name])
    best, _ = solve_exact(TIGER, belief, 3)
    agree = sum(
        plan(TIGER, belief, seed, 256, 3, weighting="nesyfs", lam=5.0, twist="value").action == best
        for seed in range(200)
    )
    assert agree >= 190, (name, TIGER.action_names[best], agree)


def test_tiger_confident_beliefs_really_call_for_opening_the_far_door():
    # The agreement test above is only meaningful if the confident beliefs change the answer.
    assert TIGER.action_names[solve_exact(TIGER, [0.5, 0.5], 3)[0]] == "listen"
    assert TIGER.action_names[solve_exact(TIGER, [0.999, 0.001], 3)[0]] == "open right door"
    assert TIGER.action_names[solve_exact(TIGER, [0.001, 0.999], 3)[0]] == "open left door"


def test_tiger_twisted_plan_with_the_value_twist_listens_at_the_uniform_belief():
    # The twisted target p0 * exp(G_3) puts mass 1 - 1e-22 on listening at the uniform belief
    # (belief_tree soft values), so every one of 200 runs must listen.
    agree = sum(plan(TIGER, None, seed, 256, 3, twist="value").action == 0 for seed in range(200))
    assert agree == 200


# ---------------------------------------------------------------- household: lookahead is needed


def test_household_lookahead_opens_the_drawer_first_while_a_one_step_planner_takes_blindly():
    # solve_exact: take blindly at H = 1 (Q = 3.0), open drawer 1 first at H >= 2.
    assert HOUSE.action_names[solve_exact(HOUSE, HOUSE.b0, 1)[0]] == "take key 1 from drawer 1"
    assert HOUSE.action_names[solve_exact(HOUSE, HOUSE.b0, 3)[0]] == "open drawer 1"
    # Reward potential only (no value oracle): lookahead comes from simulated rollouts.  With
    # N = 1024 uniform rollouts the expected number of "open drawer 1, see the key, take it"
    # rollouts is 1024 * (1/9) * 0.7 * (1/9) = 8.85, each weighted e^{2 * 7.55} against e^{2 * 3}
    # for each of the ~114 blind takes, so open wins unless no such rollout exists: probability
    # e^{-8.85} = 1.4e-4 per run.  At H = 1 the target is exp(2 r_1): take (r = 3) has mass 0.9997.
    kw = dict(twist="reward", beta=2.0, choice="max_weight")
    deep = [plan(HOUSE, None, seed, 1024, 3, **kw).action_name() for seed in range(20)]
    shallow = [plan(HOUSE, None, seed, 1024, 1, **kw).action_name() for seed in range(20)]
    assert deep == ["open drawer 1"] * 20
    assert shallow == ["take key 1 from drawer 1"] * 20


def test_household_cumulative_reward_twist_is_myopic_and_resampling_makes_it_greedy():
    # The documented failure mode: resampling on the reward so far discards the open-first
    # rollouts (weight e^{-2} vs e^{6} after step 1) before their reward arrives.
    acts = [
        plan(
            HOUSE, None, seed, 256, 3, twist="reward_cumulative", beta=2.0, choice="max_weight"
        ).action_name()
        for seed in range(5)
    ]
    assert acts.count("take key 1 from drawer 1") >= 4


# ---------------------------------------------------------------- twisted SMC is properly weighted


def test_twisted_with_unit_twist_and_q_equal_p_is_a_bootstrap_filter_with_unbiased_evidence():
    # Actions fixed (q = p0 = 1), states from T, observations clamped to data and weighted by
    # O(o_t | s', a): exactly the bootstrap filter, so Z-hat is unbiased for p(o_1:T | a_1:T).
    # Over M = 200 seeds, mean(Z-hat / Z) must be within 4 standard errors of 1.
    for pomdp, steps in ((TIGER, 6), (random_pomdp(7), 6)):
        actions, observations = simulate_fixed(pomdp, steps)
        _, log_lik = exact_filter(pomdp, actions, observations)
        proposal, world, twist = (
            pc.FixedActions(actions),
            pc.ObservedWorldModel(pomdp, observations),
            pc.NoTwist(),
        )
        ratios = []
        for seed in range(200):
            k1, k2 = jax.random.split(jax.random.key(seed))
            res = tsmc(
                pc.init_particles(pomdp, None, k1, 32),
                k2,
                proposal=proposal,
                world_model=world,
                twist=twist,
                horizon=steps,
                weighting="twisted",
                jit=True,
            )
            ratios.append(math.exp(res.log_Z - float(log_lik)))
        m, se = np.mean(ratios), np.std(ratios, ddof=1) / math.sqrt(len(ratios))
        assert abs(m - 1.0) < 4 * se, (pomdp.name, m, se)
        assert se > 0  # the estimate is random: the test can fail


def simulate_fixed(pomdp: DiscretePOMDP, steps: int) -> tuple[list[int], list[int]]:
    """A reproducible action/observation record from the POMDP itself (policy: cycle the actions).
    """
    rng = np.random.default_rng(0)
    s = rng.choice(pomdp.num_states, p=pomdp.b0)
    actions, observations = [], []
    for t in range(steps):
        a = t % pomdp.num_actions
        s = rng.choice(pomdp.num_states, p=pomdp.T[a, s])
        actions.append(a)
        observations.append(int(rng.choice(pomdp.num_observations, p=pomdp.O[a, s])))
    return actions, observations


def test_twisted_with_the_soft_twist_and_a_biased_proposal_recovers_the_exact_target():
    # Target p0 * exp(beta G_3) on Tiger at b = (0.97, 0.03), proposal softmax(0.1 * expected
    # reward) = (0.39, 0.00, 0.61) for (listen, open left, open right) at the root: q != p0, so the
    # p0/q correction is exercised (and no action the target needs is starved of particles).  The
    # exact target marginal of the first action
    # and Z = F_0(b) come from the belief tree.  Action-mass estimates are consistent with O(1/N)
    # bias, Z-hat is unbiased: check both within 4 standard errors over 100 seeds.
    belief, beta, horizon, n = np.array([0.97, 0.03]), 1.0, 3, 256
    tree = belief_tree(TIGER, belief, horizon, beta=beta)
    marg = np.exp(tree.log_soft_q[0][0] - tree.log_soft_q[0][0].max())
    marg /= marg.sum()
    masses, ratios = [], []
    for seed in range(100):
        res = plan(
            TIGER,
            belief,
            seed,
            n,
            horizon,
            proposal="softmax",
            proposal_beta=0.1,
            twist="soft_value",
            beta=beta,
        )
        masses.append(res.action_mass.get(0, 0.0))
        ratios.append(math.exp(res.log_Z - tree.log_soft[0][0]))
    m, se = np.mean(masses), np.std(masses, ddof=1) / 10
    assert abs(m - marg[0]) < 4 * se + 1.0 / n, (m, marg[0], se)
    r, rse = np.mean(ratios), np.std(ratios, ddof=1) / 10
    assert abs(r - 1.0) < 4 * rse, (r, rse)


# ---------------------------------------------------------------- calls, dispatch, bad input


@pytest.mark.parametrize("horizon", [1, 4])
def test_plan_calls_each_component_exactly_horizon_times(horizon):
    res = plan(TIGER, None, 0, 64, horizon)
    assert res.calls == {"proposal": horizon, "world_model": horizon, "twist": horizon}
    assert np.asarray(res.ancestry).shape == (horizon, 64) and np.asarray(res.ess).shape == (
        horizon,
    )


def test_smcplan_plan_is_the_planner_and_the_result_names_actions():
    res = smcplan.plan(TIGER, [0.5, 0.5], jax.random.key(1), 128, 2)
    assert res.action_name() in TIGER.action_names and res.to_dict()["action"] == res.action_name()
    assert set(res.to_dict()["action_mass"]) <= set(TIGER.action_names)


def test_restricting_the_action_set_restricts_the_plan():
    res = plan(TIGER, None, 0, 64, 2, actions=["open left door", "open right door"])
    assert set(res.action_mass) <= {1, 2}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(num_particles=0), "num_particles must be an integer >= 1; got 0"),
        (dict(horizon=0), "horizon must be an integer >= 1; got 0"),
        (
            dict(actions=[]),
            "the action set is empty; give at least one of listen, open left door, open right door",
        ),
        (dict(actions=["jump"]), "unknown action 'jump' in tiger; known: 'listen'"),
        (dict(belief=[1.0]), r"belief must have shape \(S,\) = \(2,\)"),
        (dict(belief=[0.7, 0.7]), "belief must be a probability vector"),
        (
            dict(twist="oracle"),
            "unknown twist 'oracle'; known: reward, reward_cumulative, value, soft_value, none",
        ),
        (dict(proposal="llm"), "unknown proposal 'llm'; known: uniform, softmax"),
        (dict(horizon=20, twist="value"), "an exact value twist over horizon 20 on tiger needs"),
        (dict(key="seed"), "key must be a jax.random key or an int seed"),
    ],
)
def test_bad_plan_input_raises_clear_errors(kwargs, message):
    args = dict(belief=None, key=0, num_particles=16, horizon=2)
    args.update(kwargs)
    with pytest.raises(PlanningError, match=message):
        plan(TIGER, **args)


def test_plan_rejects_what_it_cannot_dispatch():
    with pytest.raises(PlanningError, match="plan\\(\\) takes a DiscretePOMDP .* or a task string"):
        plan(42)


def test_help_shows_both_entries_and_the_overloads_are_the_entry_functions():
    import inspect
    from typing import get_overloads

    import smcplan
    from smcplan.planning.plan import entry_signature, plan_pomdp
    from smcplan.planning.text_components import plan_text

    doc = smcplan.plan.__doc__
    assert entry_signature(plan_pomdp) in doc and entry_signature(plan_text) in doc
    assert "pomdp: DiscretePOMDP," in doc and "task: str," in doc and "{entries}" not in doc
    for entry, impl in zip(get_overloads(smcplan.plan), (plan_pomdp, plan_text), strict=True):
        *head, options = inspect.signature(entry).parameters.values()
        params = list(inspect.signature(impl).parameters.values())
        assert head == params[: len(head)] and options.kind is options.VAR_KEYWORD
        rest = params[len(head):]
        assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in rest), impl.__name__
