"""The toy household the planning tests plan in."""

from __future__ import annotations

from smcplan.envs import make


def drawer_household():
    """The toy household with the agent at the closed drawer 1, which holds the key: a blind take
    fails (lost); "open drawer 1" then "take key 1 from drawer 1" wins.  Returns
    ``(env, observation, admissible actions)``; the caller closes ``env``."""
    env = make(
        "toy:household",
        receptacles=("drawer 1", "drawer 2"),
        key_prior=(1.0, 0.0),
        start="drawer 1",
        closed_take="fails",
    )
    obs, info = env.reset(0)
    return env, obs, list(info["admissible_actions"])
