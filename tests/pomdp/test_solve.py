"""solve_exact: the known Tiger policy, values checked by hand, and a brute-force recursion."""

from __future__ import annotations

import numpy as np
import pytest

from smcplan.pomdp import TreeTooLargeError, exact_q_values, solve_exact
from tests.tolerance import expectimax_tol

from .conftest import random_pomdp


def recursive_q(pomdp, belief: np.ndarray, horizon: int) -> np.ndarray:
    """Independent reference: the expectimax recursion written directly, one belief at a time."""
    T, O, R, gamma = pomdp.T, pomdp.O, pomdp.R, pomdp.discount  # noqa: N806, E741
    q = belief @ R
    if horizon == 1:
        return q
    q = q.copy()
    for a in range(pomdp.num_actions):
        predicted = belief @ T[a]
        for o in range(pomdp.num_observations):
            joint = predicted * O[a, :, o]
            p_o = joint.sum()
            if p_o > 0:
                q[a] += gamma * p_o * recursive_q(pomdp, joint / p_o, horizon - 1).max()
    return q


def test_tiger_listens_at_the_uniform_belief_for_every_horizon(tiger):
    for horizon in range(1, 7):
        action, _ = solve_exact(tiger, tiger.b0, horizon)
        assert tiger.action_names[action] == "listen", horizon


def test_tiger_opens_the_far_door_when_confident_for_every_horizon(tiger):
    for horizon in range(1, 7):
        action, _ = solve_exact(tiger, np.array([0.995, 0.005]), horizon)
        assert tiger.action_names[action] == "open right door", horizon
        action, _ = solve_exact(tiger, np.array([0.005, 0.995]), horizon)
        assert tiger.action_names[action] == "open left door", horizon


def test_tiger_horizon_one_threshold_is_p_above_099_over_110(tiger):
    # Q_1(open right) = 10 p - 100 (1 - p) > Q_1(listen) = -1  <=>  p > 99/110 = 0.9
    assert tiger.action_names[solve_exact(tiger, np.array([0.89, 0.11]), 1)[0]] == "listen"
    assert tiger.action_names[solve_exact(tiger, np.array([0.91, 0.09]), 1)[0]] == "open right door"


def test_tiger_values_checked_by_hand(tiger):
    # horizon 1 after two agreeing listens: p = .85^2 / (.85^2 + .15^2); open right: 10 p - 100 (1 -
    # p)
    p = 0.85**2 / (0.85**2 + 0.15**2)
    action, value = solve_exact(tiger, np.array([p, 1 - p]), 1)
    assert tiger.action_names[action] == "open right door"
    tol = expectimax_tol(2, 2, 2, 100.0)  # float64, |R| <= 100 (the float64 p rounds too)
    assert value == pytest.approx(10 * p - 100 * (1 - p), abs=tol)
    # horizon 2 at uniform: listen (-1), then every posterior (0.85 or 0.15) still prefers
    # listening (-1 > 10*.85 - 100*.15 = -6.5), so V_2 = -1 + 0.95 * -1 = -1.95;
    # opening first gives -45 + 0.95 * V_1(uniform) = -45 - 0.95.
    q = exact_q_values(tiger, tiger.b0, 2)
    np.testing.assert_allclose(q, [-1.95, -45.95, -45.95], atol=expectimax_tol(2, 2, 2, 100.0))


@pytest.mark.parametrize("horizon", [1, 2, 3, 4])
def test_exact_q_values_equal_a_direct_recursion_on_random_pomdps(horizon):
    rng = np.random.default_rng(horizon)
    pomdp = random_pomdp(rng, 4, 3, 3)
    belief = rng.dirichlet(np.ones(4))
    np.testing.assert_allclose(
        exact_q_values(pomdp, belief, horizon),
        recursive_q(pomdp, belief, horizon),
        rtol=0,
        atol=expectimax_tol(horizon, 4, 3, float(np.abs(pomdp.R).max())),
    )


def test_exact_q_values_equal_a_direct_recursion_on_tiger_horizon_5(tiger):
    belief = np.array([0.7, 0.3])
    np.testing.assert_allclose(
        exact_q_values(tiger, belief, 5),
        recursive_q(tiger, belief, 5),
        rtol=0,
        atol=expectimax_tol(5, 2, 2, 100.0),
    )


def test_household_greedy_takes_blindly_but_lookahead_opens_the_drawer_first(check_first):
    names = check_first.action_names
    # horizon 1: blind take 0.7 * (10 - 1) + 0.3 * (-1 - 10) = 3.0 beats every other action (-1)
    action, value = solve_exact(check_first, check_first.b0, 1)
    assert names[action] == "take key 1 from drawer 1"
    n_s, n_o = check_first.num_states, check_first.num_observations
    r_max = float(np.abs(check_first.R).max())
    assert value == pytest.approx(3.0, abs=expectimax_tol(1, n_s, n_o, r_max))
    # horizon 2: open (-1), then take if seen: -1 + 0.95 * (0.7 * 9 + 0.3 * -1) = 4.7
    q2 = exact_q_values(check_first, check_first.b0, 2)
    tol2 = expectimax_tol(2, n_s, n_o, r_max)
    assert q2[check_first.action_index("open drawer 1")] == pytest.approx(4.7, abs=tol2)
    assert q2[check_first.action_index("take key 1 from drawer 1")] == pytest.approx(3.0, abs=tol2)
    for horizon in (2, 3, 4):
        assert names[solve_exact(check_first, check_first.b0, horizon)[0]] == "open drawer 1", (
            horizon
        )


def test_too_deep_a_tree_raises_instead_of_exhausting_memory(household):
    with pytest.raises(TreeTooLargeError, match="horizon 9"):
        solve_exact(household, household.b0, 9)


def test_solve_exact_rejects_a_bad_belief(tiger):
    with pytest.raises(ValueError, match="probability vector"):
        solve_exact(tiger, np.array([0.7, 0.7]), 2)
