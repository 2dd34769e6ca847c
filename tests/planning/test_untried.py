"""The ``untried`` twist: a count-based bonus over (place, action) pairs, from the episode's
real steps (:attr:`Seen.tried`) and the particle's own path; exact values by hand, the carried
summary against an independent whole-path reading, and the planner's choice on a real twx:coin
state."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import smcplan
import tests.planning.test_twist_carry as carry
from smcplan.envs import make
from smcplan.planning.outcome import DONE_ACTION
from smcplan.planning.progress import make_progress
from smcplan.planning.seen import Seen
from smcplan.planning.text_particle import TextParticle
from smcplan.planning.twist_reread import steps_read
from smcplan.planning.twist_rules import UntriedProgress
from tests.tolerance import chain_tol

PANTRY = (
    "You are in the pantry. In one part of the room you see a shelf. "
    "\nTo the North you see a closed plain door. "
)
FAILED = "You can't move there, the door is closed."
KITCHEN = "You are in the kitchen. In one part of the room you see a stove. "


def test_seen_counts_each_action_from_the_place_it_was_taken_in():
    seen = Seen().after(PANTRY, None, {}, "generic")
    assert seen.place == "pantry" and seen.tried == ()
    for _ in range(2):
        seen = seen.after(FAILED, "move north", {}, "generic")
    assert seen.place == "pantry"  # the failure names no place: the agent is where it was
    seen = seen.after(PANTRY, "look around", {}, "generic")
    assert seen.tried == ((("pantry", "look around"), 1), (("pantry", "move north"), 2))
    # before any place is read the key is ""
    assert Seen().after(FAILED, "inventory", {}, "generic").tried == ((("", "inventory"), 1),)


def test_untried_scores_what_was_done_there_not_what_the_world_model_promises():
    seen = Seen().after(PANTRY, None, {}, "generic")
    for _ in range(2):
        seen = seen.after(FAILED, "move north", {}, "generic")
    root = TextParticle(kg=None, root_observation=FAILED)
    dreamt = root.extend("move north", KITCHEN)  # tried twice here: 1/sqrt(3), new room or not
    opened = root.extend("open door to north", "You open the plain door, revealing the kitchen.")
    look = root.extend("look around", PANTRY)  # never taken: 1
    look_again = look.extend("look around", PANTRY)  # once on the path: 1/sqrt(2)
    moved_on = dreamt.extend("move north", KITCHEN)  # from the kitchen: a new pair, 1
    done = root.extend(DONE_ACTION, "")
    twist = UntriedProgress(seen, "generic")
    key = jax.random.key(0)
    one = twist(key, [dreamt, opened, look, done], 1, 2)
    np.testing.assert_allclose(
        np.asarray(one.delta), [1 / np.sqrt(3), 1.0, 1.0, 0.0], rtol=chain_tol(3)
    )  # float32 sqrt, division, cast
    two = twist(key, [look_again, moved_on], 2, 2)
    np.testing.assert_allclose(
        np.asarray(two.delta), [1 / np.sqrt(2), 1.0], rtol=chain_tol(3)
    )  # as above
    np.testing.assert_allclose(
        np.asarray(two.log_psi), [1 + 1 / np.sqrt(2), 1 / np.sqrt(3) + 1], rtol=chain_tol(4)
    )  # and one (positive) sum


def untried_reference(seen, rules, particle):
    """The deltas read from the root, written apart from the twist's carried fold."""
    tried, place, out = dict(seen.tried), seen.place or "", []
    reads = steps_read(particle, rules, seen.layout, seen.place)
    for (action, _), (read, _) in zip(particle.steps, reads, strict=True):
        if action == DONE_ACTION:
            out.append(0.0)
            continue
        n = tried.get((place, action), 0)
        out.append(1.0 / float(np.sqrt(1.0 + n)))
        tried[(place, action)] = n + 1
        place = read or place
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(carry.episode(), carry.tree())
def test_the_carried_summary_equals_reading_the_whole_path(ep, batches):
    seen, _, env_kind = ep
    twist = UntriedProgress(seen, env_kind)
    key = jax.random.key(0)
    for t, batch in enumerate(batches, start=1):
        twist(key, batch, t, len(batches))
        for p in batch:
            old = untried_reference(seen, twist.rules, p)
            carried = twist.carried(p)
            assert carried.delta == old[-1] and carried.steps == len(old)
            assert float(carried.total) == float(sum(old))


def test_on_a_real_coin_state_a_move_that_failed_twice_weighs_least_only_with_untried():
    # dev seed 10003 starts in the kitchen with a closed door to the south; "move south" fails
    # twice for real.  With the simulator (the true replies), novelty scores that failure the
    # same as the other actions that stay in the kitchen ("look around", "inventory"); adding
    # untried puts it strictly below every other action
    env = make("twx:coin", split="dev", max_steps=25)
    try:
        obs, info = env.reset(10003)
        seen = Seen().after(obs, None, info, "generic")
        for _ in range(2):
            step = env.step("move south")
            obs, info = step[0], step[-1]
            seen = seen.after(obs, "move south", info, "generic")
        assert obs.startswith("You can't move there") and seen.place == "kitchen"
        common = dict(
            observation=obs,
            world_model="simulator",
            simulator=env.clone,
            env_kind="generic",
            seen=seen,
            proposal="uniform",
            particles_per_action=1,
            horizon=1,
            choice="max_weight",
            key=0,
        )
        actions = env.admissible_actions()
        alone = smcplan.plan(env.task, None, actions, progress="novelty", **common).action_mass
        both = smcplan.plan(env.task, None, actions, progress="novelty+untried", **common)
        assert alone["move south"] == alone["look around"] == alone["inventory"]
        others = [m for a, m in both.action_mass.items() if a != "move south"]
        assert both.action_mass["move south"] < min(others)
        assert both.action != "move south" and env.actions == ["move south"] * 2
    finally:
        env.close()


def test_untried_is_a_progress_name_and_sums_with_the_others():
    twist = make_progress("novelty+untried", seen=Seen(), env_kind="generic")
    assert [name for name, _ in twist.parts] == ["novelty", "untried"]
    assert isinstance(twist.parts[1][1], UntriedProgress)


@pytest.mark.parametrize("spec", ["untried+untried", "untryed"])
def test_bad_untried_specs_name_the_fix(spec):
    from smcplan.planning import PlanningError

    with pytest.raises(PlanningError, match="untried|twice"):
        make_progress(spec)
