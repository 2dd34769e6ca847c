"""Text view of the toy POMDPs: gold paths, determinism, invalid actions, clone, sampling."""

from __future__ import annotations

import math

import pytest

from smcplan.envs import TextEnv, make
from smcplan.envs.toy import ToyPOMDPEnv


@pytest.fixture(scope="module")
def household():
    return make("toy:household")


@pytest.fixture(scope="module")
def tiger():
    return make("toy:tiger")


def test_household_gold_path_wins_on_several_seeds(household):
    assert isinstance(household, TextEnv)
    places = set()
    for seed in range(6):
        observation, info = household.reset(seed)
        assert "drawer 1" in observation and household.task == "Your task is to: take the key 1."
        assert info["admissible_actions"] == list(household.pomdp.action_names)
        places.add(household.state_name.split(";")[0])
        result = None
        for action in household.gold_actions():
            result = household.step(action)
        assert result.done and result.info["won"] and result.info["score"] == 1.0
    assert len(places) > 1  # the key is not always in the same receptacle


def test_tiger_gold_opens_the_treasure_door(tiger):
    for seed in range(5):
        tiger.reset(seed)
        (action,) = tiger.gold_actions()
        result = tiger.step(action)
        assert result.done and result.info["won"] and result.info["pomdp_reward"] == 10.0
        assert "treasure" in result.observation


def test_household_blind_grab_in_the_wrong_closed_receptacle_fails(household):
    household.reset(0)
    wrong = next(r for r in ("drawer 1", "drawer 2", "cabinet 1")
                 if not household.state_name.startswith(f"key 1 in {r};"))
    household.step(f"go to {wrong}")
    result = household.step(f"take key 1 from {wrong}")
    assert result.done and not result.info["won"] and result.info["score"] == 0.0
    assert result.info["pomdp_reward"] == -11.0  # step cost 1 + failure penalty 10


def test_invalid_action_changes_nothing(household):
    household.reset(1)
    before = household.state_name
    result = household.step("fly to the moon")
    assert result.info["invalid"] and result.observation == "nothing happens."
    assert household.state_name == before and not result.done


def test_reset_is_deterministic_and_clone_shares_the_future(tiger):
    def listen(env, n):
        return [env.step("listen").observation for _ in range(n)]

    tiger.reset(7)
    first = listen(tiger, 10)
    tiger.reset(7)
    assert listen(tiger, 10) == first
    tiger.reset(7)
    listen(tiger, 3)
    twin = tiger.clone()
    assert listen(twin, 7) == listen(tiger, 7) == first[3:]
    assert "state" not in str(sorted(twin.step("listen").info))  # no hidden state in info


def test_listening_is_right_with_the_models_accuracy():
    # Each listen is correct with p = 0.85 independently, so over n = 2000 listens the share of
    # correct ones has sd sqrt(p (1 - p) / n) = 0.0080; accept 4 sd (0.032), a 6e-5 false alarm.
    env = ToyPOMDPEnv("tiger", max_steps=10**6)
    env.reset(3)
    side = "left" if "left" in env.state_name else "right"
    n = 2000
    correct = sum(side in env.step("listen").observation for _ in range(n))
    assert abs(correct / n - 0.85) < 4 * math.sqrt(0.85 * 0.15 / n)


def test_domain_parameters_and_custom_models(household):
    env = make("toy:household", receptacles=("drawer 1", "shelf 1"), key_prior=(0.0, 1.0))
    env.reset(0)
    assert env.gold_actions() == ["go to shelf 1", "take key 1 from shelf 1"]
    same = make("toy:household", pomdp=household.pomdp)
    assert same.pomdp is household.pomdp
    with pytest.raises(ValueError, match="not both"):
        ToyPOMDPEnv("household", pomdp=household.pomdp, key_prior=(1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match="known: household, tiger"):
        ToyPOMDPEnv("rocks")
