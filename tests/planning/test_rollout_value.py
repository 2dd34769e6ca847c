"""The ``env`` twist's Monte Carlo leaf value (``rollouts=M``): uniform rollouts on clones of each
particle's environment, checked against the exact expectation computed by enumerating every
action sequence on the real toy household, with a tolerance derived from the exact variance.
"""

from __future__ import annotations

import math

import jax
import pytest

import smcplan
from smcplan.envs import make
from smcplan.planning import PlannerConfig, PlanningError
from smcplan.planning.progress import EnvProgress
from smcplan.planning.text_particle import TextParticle
from tests.planning.household import drawer_household


@pytest.fixture()
def drawer():
    """:func:`tests.planning.household.drawer_household`, a fresh env per test."""
    env, obs, actions = drawer_household()
    yield env, obs, actions
    env.close()


def exact_moments(env, obs, actions, score, steps, gamma, untried=False, tried=None):
    r"""(E[G], E[G^2]) of :math:`G = \sum_{r\le R}\gamma^{r-1}(\Delta s_r + [won_r] - [lost_r])`
    by enumerating every action from clones of ``env``: under the uniform policy, or
    (``untried``) under ``rollout_policy="untried"``: uniform over the actions not yet taken in
    this (observation, admissible set) state along the rollout, all of them once every one was
    tried; ``tried`` maps states to the actions taken there so far."""
    tried = {} if tried is None else tried
    if steps == 0 or not actions:
        return 0.0, 0.0
    here = tried.get((obs, tuple(actions)), frozenset()) if untried else frozenset()
    pool = [a for a in actions if a not in here] or actions
    m1 = m2 = 0.0
    for a in pool:
        twin = env.clone()
        try:
            new_obs, _r, done, info = twin.step(a)
            new = float(info.get("score", score) or 0.0)
            won = bool(info.get("won", False))
            lost = bool(done and not won and not info.get("truncated", False))
            r = new - score + float(won) - float(lost)
            if done:
                g1, g2 = 0.0, 0.0
            else:
                nxt = list(info.get("admissible_actions") or twin.admissible_actions())
                after = {**tried, (obs, tuple(actions)): here | {a}} if untried else tried
                g1, g2 = exact_moments(twin, new_obs, nxt, new, steps - 1, gamma, untried, after)
        finally:
            twin.close()
        m1 += r + gamma * g1
        m2 += r * r + 2 * gamma * r * g1 + gamma * gamma * g2
    return m1 / len(pool), m2 / len(pool)


def test_the_leaf_value_is_the_uniform_policys_discounted_return_within_its_standard_error(drawer):
    # the particle's own admissible set ("open drawer 1" only) gives the rollouts' first action;
    # every later action is uniform over the clone's set, so every score event is discounted
    env, obs, _actions = drawer
    first = ["open drawer 1"]
    steps, gamma, m = 3, 0.5, 1500
    mean, second = exact_moments(env, obs, first, 0.0, steps, gamma)
    sd = math.sqrt(max(second - mean * mean, 0.0))
    assert mean > 0.0 and sd > 0.0  # open, then take wins at rollout step 2
    particle = TextParticle(
        kg=None, root_observation=obs, admissible=tuple(first), env=env.clone()
    )
    twist = EnvProgress(rollouts=m, rollout_steps=steps, discount=gamma)
    estimate = twist.leaf_value(jax.random.key(7), particle)
    # the mean of m i.i.d. returns: |error| <= 4 standard errors fails with probability < 1e-4
    assert abs(estimate - mean) <= 4 * sd / math.sqrt(m), (estimate, mean, sd)
    assert twist.leaf_value(jax.random.key(7), particle) == estimate  # the key decides
    assert 0 < twist.rollout_env_steps <= 2 * m * steps
    assert env.actions == [] and particle.env.actions == []  # rollouts step their own clones
    particle.env.close()


def test_the_untried_leaf_value_is_that_policys_return_within_its_standard_error():
    # drawer 2 holds the key, the agent starts at drawer 1 offered every action but the takes;
    # the estimate matches the untried walk's exact return, enumerated with its per-state memory
    env = make("toy:household", receptacles=("drawer 1", "drawer 2"), key_prior=(0.0, 1.0),
               start="drawer 1")
    obs, info = env.reset(0)
    first = [a for a in info["admissible_actions"] if not a.startswith("take")]
    steps, gamma, m = 3, 0.9, 1500
    try:
        mean, second = exact_moments(env, obs, first, 0.0, steps, gamma, untried=True)
        sd = math.sqrt(max(second - mean * mean, 0.0))
        assert sd > 0.0
        particle = TextParticle(kg=None, root_observation=obs, admissible=tuple(first),
                                env=env.clone())
        twist = EnvProgress(rollouts=m, rollout_steps=steps, discount=gamma, policy="untried")
        estimate = twist.leaf_value(jax.random.key(11), particle)
        # the mean of m i.i.d. returns: |error| <= 4 standard errors fails with probability < 1e-4
        assert abs(estimate - mean) <= 4 * sd / math.sqrt(m), (estimate, mean, sd)
        assert env.actions == [] and particle.env.actions == []
        particle.env.close()
    finally:
        env.close()


class _Logged:
    """A toy env whose clones log every step as (observation, admissible set, action)."""

    def __init__(self, env, logs, obs):
        self.env, self.logs, self.obs = env, logs, obs
        self.log: list = []
        logs.append(self.log)

    def clone(self):
        return _Logged(self.env.clone(), self.logs, self.obs)

    def admissible_actions(self):
        return self.env.admissible_actions()

    def step(self, action):
        self.log.append((self.obs, tuple(self.env.admissible_actions()), action))
        out = self.env.step(action)
        self.obs = out[0]
        return out

    def close(self):
        self.env.close()


@pytest.mark.parametrize("policy", ["uniform", "untried"])
def test_an_untried_rollout_takes_no_action_twice_in_a_state_while_others_are_untried(policy):
    env = make("toy:household", receptacles=("drawer 1", "drawer 2", "shelf 1"),
               key_prior=(0.0, 0.0, 1.0), start="drawer 1")
    obs, info = env.reset(0)
    first = [a for a in info["admissible_actions"] if not a.startswith("take")]
    logs: list = []
    root = _Logged(env.clone(), logs, obs)
    particle = TextParticle(kg=None, root_observation=obs, admissible=tuple(first), env=root)
    try:
        EnvProgress(rollouts=40, rollout_steps=8, policy=policy).leaf_value(
            jax.random.key(2), particle
        )
        repeats = 0
        for log in logs:
            taken: dict = {}
            for k, (o, acts, a) in enumerate(log):
                acts = tuple(first) if k == 0 else acts  # the particle's own set comes first
                here = taken.setdefault((o, acts), set())
                repeats += a in here and len(here) < len(set(acts))
                here.add(a)
        assert sum(map(len, logs)) > 40
        # uniform redoes actions in place (the check can fail); untried never does
        assert (repeats > 0) if policy == "uniform" else (repeats == 0), repeats
    finally:
        root.close()
        env.close()


def test_rollouts_break_the_ties_of_a_sparse_score_and_leave_the_real_env_alone():
    # drawer 2 holds the key and the agent starts at drawer 1; offered every action but the takes
    # (a take here ends the episode lost), no one-step action scores, so the plain env twist
    # gives every particle delta 0 (degenerate); the leaf value does not (the rollouts may take)
    env = make("toy:household", receptacles=("drawer 1", "drawer 2"), key_prior=(0.0, 1.0),
               start="drawer 1")
    obs, info = env.reset(0)
    actions = [a for a in info["admissible_actions"] if not a.startswith("take")]
    common = dict(observation=obs, world_model="simulator", simulator=env.clone, progress="env",
                  proposal="uniform", num_particles=8, horizon=1, choice="max_weight")
    try:
        plain = smcplan.plan(env.task, None, actions, key=3, **common)
        rolled = smcplan.plan(env.task, None, actions, key=3, rollouts=4, rollout_steps=4, **common)
        again = smcplan.plan(env.task, None, actions, key=3, rollouts=4, rollout_steps=4, **common)
        assert plain.degenerate and not rolled.degenerate
        assert rolled.config["rollouts"] == 4 and rolled.config["rollout_env_steps"] > 0
        assert rolled.action == again.action
        assert [float(w) for w in rolled.log_weights] == [float(w) for w in again.log_weights]
        assert env.actions == []
    finally:
        env.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rollouts": -1}, r"rollouts must be an integer >= 0; got -1"),
        ({"rollouts": True}, r"rollouts must be an integer >= 0; got True"),
        ({"rollout_steps": 0}, r"rollout_steps must be an integer >= 1; got 0"),
        ({"rollout_discount": 0.0}, r"rollout_discount must be a number in \(0, 1\]; got 0.0"),
        ({"rollout_discount": float("nan")}, r"rollout_discount must be a number in \(0, 1\]"),
        ({"rollout_policy": "greedy"},
         r"rollout_policy must be one of uniform, untried; got 'greedy'"),
        ({"rollouts": 2, "progress": "task", "world_model": "simulator"},
         r"rollouts=2 is the 'env' twist's leaf value, but progress is 'task'; add 'env'"),
        ({"rollouts": 2, "progress": "env", "world_model": "lm"},
         r"rollouts=2 rolls out copies of the environment; it needs world_model='simulator'"),
    ],
)
def test_bad_rollout_settings_name_the_argument_and_the_fix(kwargs, message):
    with pytest.raises(PlanningError, match=message):
        PlannerConfig.from_options(**kwargs)
    with pytest.raises(PlanningError, match=message):
        smcplan.plan("take the key", None, ["look"], proposal="uniform", **kwargs)


def test_a_custom_twist_with_rollouts_is_refused(drawer):
    env, obs, actions = drawer
    with pytest.raises(PlanningError, match="twist= replaces that twist"):
        smcplan.plan(env.task, None, actions, world_model="simulator", simulator=env.clone,
                     progress="env", proposal="uniform", rollouts=2, twist=EnvProgress())
