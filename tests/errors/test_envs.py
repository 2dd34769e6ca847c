"""Garbage into the environments: a valid step or a typed error; closed envs say so."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan import envs
from smcplan.envs import EnvError, StepResult
from smcplan.envs.base import EnvClosedError
from smcplan.errors import ArgumentTypeError, UnknownNameError

from ._garbage import bad_scalar, call

HOUSEHOLD = envs.make("toy:household")
seeds = st.one_of(st.integers(0, 50), st.none(), bad_scalar)
actions = st.one_of(
    st.sampled_from(list(HOUSEHOLD.pomdp.action_names)), st.text(max_size=8), bad_scalar
)


@settings(max_examples=60, deadline=None)
@given(seed=seeds, action=actions)
def test_toy_reset_and_step(seed, action):
    ok, out = call(HOUSEHOLD.reset, seed)
    if not ok:
        return
    observation, info = out
    assert isinstance(observation, str) and set(envs.base.INFO_KEYS) <= set(info)
    ok, res = call(HOUSEHOLD.step, action)
    if ok:
        assert isinstance(res, StepResult) and 0.0 <= res.info["score"] <= 1.0
        assert res.info["invalid"] == (action not in HOUSEHOLD.pomdp.action_names)


@pytest.mark.parametrize("seed", [1.5, "3", True, -1, 2.0, b"3", [3]])
def test_reset_takes_only_a_non_negative_integer_seed(seed):
    env = envs.make("toy:tiger")
    with pytest.raises((ArgumentTypeError, ValueError), match="seed"):
        env.reset(seed)


def test_step_and_reset_after_close_name_the_fix():
    env = envs.make("toy:tiger")
    env.reset(0)
    env.close()
    env.close()  # idempotent
    with pytest.raises(
        EnvClosedError, match=r"closed; make a new one with smcplan.envs.make\('toy:tiger'\)"
    ):
        env.step("listen")
    with pytest.raises(EnvClosedError, match="closed"):
        env.reset(0)
    assert issubclass(EnvClosedError, EnvError)


def test_webshop_step_none_is_a_type_error():
    env = envs.make("webshop")
    env.reset(0)
    with pytest.raises(ArgumentTypeError, match="action must be a str; got None"):
        env.step(None)
    env.close()


def test_step_result_is_a_4_tuple():
    env = envs.make("toy:tiger")
    env.reset(0)
    res = env.step("listen")
    observation, reward, done, info = res
    assert (res[0], res[1], res[2], res[3]) == (observation, reward, done, info)
    assert res[-1] is info and res[:2] == (observation, reward) and len(res) == 4
    assert tuple(res) == (observation, reward, done, info)


def test_unknown_make_options_list_the_valid_keys():
    with pytest.raises(
        UnknownNameError,
        match=r"unknown option 'bogus' for env 'toy:household'; valid: .*max_steps.*receptacles",
    ):
        envs.make("toy:household", bogus=1)
    with pytest.raises(
        UnknownNameError, match=r"unknown option 'bogus' for env 'webshop'; valid: .*human_goals"
    ):
        envs.make("webshop", bogus=1)
    with pytest.raises(ValueError, match="unknown env 'twx:con'"):
        envs.make("twx:con")


@pytest.mark.slow
def test_textworld_express_rejects_bad_seeds_and_actions_and_says_when_closed():
    env = envs.make("twx:coin")
    try:
        with pytest.raises(ArgumentTypeError, match=r"twx:coin: seed must be an integer; got 1\.5"):
            env.reset(1.5)
        with pytest.raises(ArgumentTypeError, match="seed must be an integer; got '10000'"):
            env.reset("10000")
        env.reset(10000)
        with pytest.raises(ArgumentTypeError, match="action must be a str; got None"):
            env.step(None)
        assert env.step(env.admissible_actions()[0])[2] in (True, False)
    finally:
        env.close()
    with pytest.raises(EnvClosedError, match="closed"):
        env.step("look around")
    with pytest.raises(EnvClosedError, match="closed"):
        env.reset(10000)


@pytest.mark.parametrize(
    "name", ["twx:coin", "scienceworld:boil", "alfworld:pick_and_place", "webshop", "toy:tiger"]
)
def test_every_env_family_lists_its_options(name):
    options = envs.env_options(name)
    assert "max_steps" in options and "bogus" not in options
    with pytest.raises(
        UnknownNameError, match=rf"unknown option 'bogus' for env '{name}'; valid: .*max_steps"
    ):
        envs.make(name, bogus=1)
