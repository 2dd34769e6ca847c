"""Fixtures shared by the planning tests."""

from __future__ import annotations

import pytest

from smcplan.envs import make


@pytest.fixture(scope="module")
def drawer():
    """The toy household with the agent at the closed drawer 1, which holds the key (a blind take
    fails): ``(env, observation, admissible actions)``, one env per test module."""
    env = make(
        "toy:household",
        receptacles=("drawer 1", "drawer 2"),
        key_prior=(1.0, 0.0),
        start="drawer 1",
        closed_take="fails",
    )
    obs, info = env.reset(0)
    yield env, obs, info["admissible_actions"]
    env.close()
