"""The three domains: Tiger's published arrays, RockSample against pomdp-py, household semantics."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from smcplan.pomdp import SparseTransition, domains, exact_filter, exact_update
from tests.tolerance import EPS64, bayes_filter_tol, chain_tol, normalized_tol


def test_tiger_compiles_to_the_published_arrays(tiger):
    np.testing.assert_allclose(tiger.T[0], np.eye(2))
    np.testing.assert_allclose(tiger.T[1:], 0.5)
    np.testing.assert_allclose(tiger.O[0], [[0.85, 0.15], [0.15, 0.85]])
    np.testing.assert_allclose(tiger.O[1:], 0.5)
    np.testing.assert_allclose(tiger.R, [[-1, -100, 10], [-1, 10, -100]])
    np.testing.assert_allclose(tiger.b0, [0.5, 0.5])
    assert tiger.discount == 0.95
    assert tiger.action_names == ("listen", "open left door", "open right door")
    assert domains.tiger(listen_accuracy=0.7).O[0, 0, 0] == pytest.approx(0.7)


@pytest.mark.parametrize(("n", "k"), [(2, 1), (4, 4), (5, 5)])
def test_rocksample_has_n2_2k_plus_1_states_and_a_deterministic_sparse_transition(n, k):
    pomdp = domains.rocksample(n, k)
    assert pomdp.num_states == n * n * 2**k + 1
    assert pomdp.num_actions == 5 + k
    assert (
        isinstance(pomdp.transition, SparseTransition)
        and pomdp.transition.next_state.shape[-1] == 1
    )
    assert pomdp.state_names[-1] == "exited" and pomdp.terminal[-1] and pomdp.terminal.sum() == 1


def test_rocksample_7_8_has_12545_states_and_compiles_sparse():
    pomdp = domains.rocksample(7, 8)
    assert pomdp.num_states == 12_545
    assert pomdp.transition.next_state.shape == (13, 12_545, 1)
    b = exact_update(pomdp, pomdp.b0, "check rock 1", "the rock looks good")
    # a float32 normalised vector of 12545 entries (a missing normalisation: off by 1 - P(o))
    assert float(b.sum()) == pytest.approx(1.0, abs=normalized_tol(12_545))


def test_rocksample_matches_pomdp_py_on_every_nonterminal_state_and_action(rocksample44):
    rs = pytest.importorskip("pomdp_py.problems.rocksample.rocksample_problem")
    pomdp = rocksample44
    n, k = pomdp.metadata["n"], pomdp.metadata["k"]
    rock_locs = {pos: i for i, pos in enumerate(pomdp.metadata["rock_positions"])}

    def in_exit(pos):
        return pos[0] == n

    trans = rs.RSTransitionModel(n, rock_locs, in_exit)
    obs_model = rs.RSObservationModel(rock_locs, half_efficiency_dist=20)
    rew = rs.RSRewardModel(rock_locs, in_exit)
    actions = [rs.MoveNorth, rs.MoveSouth, rs.MoveEast, rs.MoveWest, rs.SampleAction()] + [
        rs.CheckAction(i) for i in range(k)
    ]
    f = pomdp.factors
    nxt_idx = np.asarray(pomdp.transition.next_state)[..., 0]
    for s in range(pomdp.num_states):
        if f["done"][s]:
            continue
        rocks = tuple("good" if (f["rocks"][s] >> i) & 1 else "bad" for i in range(k))
        state = rs.State((int(f["x"][s]), int(f["y"][s])), rocks, False)
        for a, action in enumerate(actions):
            ref_next = trans.sample(state, action)
            ours = nxt_idx[a, s]
            if ref_next.terminal:
                assert pomdp.state_names[ours] == "exited"
            else:
                ours_rocks = tuple(
                    "good" if (f["rocks"][ours] >> i) & 1 else "bad" for i in range(k)
                )
                assert (int(f["x"][ours]), int(f["y"][ours]), ours_rocks) == (
                    *ref_next.position,
                    ref_next.rocktypes,
                )
            assert pomdp.R[s, a] == rew.sample(state, action, ref_next)
            if isinstance(action, rs.CheckAction) and not ref_next.terminal:
                for o, quality in ((1, "good"), (2, "bad")):
                    ref = obs_model.probability(rs.Observation(quality), ref_next, action)
                    # both float64 from a few products (pomdp_py's exp of the distance)
                    assert pomdp.O[a, ours, o] == pytest.approx(ref, rel=chain_tol(8, EPS64))


def test_household_check_first_scenario_is_documented_correctly(check_first):
    assert check_first.action_names == (
        "go to drawer 1", "go to drawer 2", "open drawer 1", "open drawer 2",
        "close drawer 1", "close drawer 2", "take key 1 from drawer 1", "take key 1 from drawer 2",
        "look",
    )  # fmt: skip
    start = np.flatnonzero(check_first.b0)
    assert [check_first.state_names[s] for s in start] == [
        "key 1 in drawer 1; agent at drawer 1; open: nothing",
        "key 1 in drawer 2; agent at drawer 1; open: nothing",
    ]
    np.testing.assert_allclose(check_first.b0[start], [0.7, 0.3])


def test_household_opening_reveals_the_contents_and_taking_ends_the_task(check_first):
    b = exact_update(
        check_first,
        check_first.b0,
        "open drawer 1",
        "you open the drawer 1. in it, you see nothing.",
    )
    key_in_2 = [
        i for i, name in enumerate(check_first.state_names) if name.startswith("key 1 in drawer 2")
    ]
    n_s = check_first.num_states  # float32 one-step belief, summed
    tol = bayes_filter_tol(1, n_s) + normalized_tol(n_s)
    assert float(np.asarray(b)[key_in_2].sum()) == pytest.approx(1.0, abs=tol)
    actions = ["open drawer 1", "take key 1 from drawer 1", "look"]
    observations = [
        "you open the drawer 1. in it, you see a key 1.",
        "you pick up the key 1 from the drawer 1.",
        "the task is over.",
    ]
    beliefs, _ = exact_filter(check_first, actions, observations)
    assert check_first.state_names[int(np.argmax(beliefs[2]))] == "task succeeded"
    assert check_first.terminal[check_first.state_index("task succeeded")]
    s = check_first.state_index("key 1 in drawer 1; agent at drawer 1; open: drawer 1")
    assert check_first.R[s, check_first.action_index("take key 1 from drawer 1")] == pytest.approx(
        9.0
    )


def test_household_blind_take_from_the_wrong_closed_receptacle_fails():
    pomdp = domains.household()
    s = pomdp.state_index("key 1 in cabinet 1; agent at drawer 2; open: nothing")
    a = pomdp.action_index("take key 1 from drawer 2")
    nxt = int(np.argmax(pomdp.T[a, s]))
    assert pomdp.state_names[nxt] == "task failed"
    assert pomdp.R[s, a] == pytest.approx(-11.0)
    fail = pomdp.observation_index(
        "you reach into the closed drawer 2 and take the wrong thing. the task has failed."
    )
    assert pomdp.O[a, nxt, fail] == 1.0


def test_household_default_sizes_and_noisy_look(household):
    # |S| = n * n * 2^n (agent at a receptacle) + n (all closed, agent in the middle) + 3 ended
    n = 3
    assert household.num_states == n * n * 2**n + n + 3
    assert household.num_actions == 4 * n + 1
    noisy = domains.household(look_accuracy=0.8)
    s = noisy.state_index("key 1 in drawer 2; agent at middle of the room; open: nothing")
    look = noisy.action_index("look")
    hint = noisy.observation_index("you think the key 1 is in the drawer 2.")
    other = noisy.observation_index("you think the key 1 is in the cabinet 1.")
    assert noisy.O[look, s, hint] == pytest.approx(0.8) and noisy.O[
        look, s, other
    ] == pytest.approx(0.1)


def test_household_program_runs_under_numpyro_seed_for_simulation():
    from numpyro import handlers

    program = domains.household_program(look_accuracy=0.9)
    state = handlers.seed(program.initial, rng_seed=jax.random.key(0))()
    nxt = handlers.seed(program.transition, rng_seed=jax.random.key(1))(state, 0)
    assert int(nxt["agent"]) == 0  # "go to drawer 1"
