"""The text ``plan()`` with the user's own proposal, world model and twist
(:mod:`smcplan.planning.custom`): plain functions and protocol objects on a real text env
(TextWorldExpress coin with the simulator world model; no language model), ``result.config``
naming what ran, the twisted weight computed from their numbers, a ``TextPlanner``'s tuple of
particles run by ``tsmc`` directly, and typed errors for everything that cannot be a component."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import smcplan
from smcplan.envs import make
from smcplan.errors import SmcplanError
from smcplan.planning import (
    ComponentError,
    Outcome,
    PlannerConfig,
    PlanningError,
    Proposed,
    Score,
    TextParticle,
    Transition,
    build_text_planner,
    run_text_planner,
    tsmc,
)
from smcplan.planning.outcome import DONE_ACTION
from tests.tolerance import smc_logweight_tol


@pytest.fixture(scope="module")
def coin():
    """twx:coin, dev seed 10000: the agent in the kitchen, whose only open exit is west."""
    env = make("twx:coin", split="dev", max_steps=25)
    obs, info = env.reset(10000)
    yield env, obs, list(info["admissible_actions"])
    env.close()


def every_action_once(key, particles, t, horizon):
    """Particle i takes the (i mod |A|)-th of its own admissible actions: q = 1/|A|."""
    actions, log_q = [], []
    for i, p in enumerate(particles):
        options = list(p.admissible) or [DONE_ACTION]
        actions.append(options[i % len(options)])
        log_q.append(-math.log(len(options)))
    return Proposed(actions, jnp.asarray(log_q))


def moved(key, particles, t, horizon):
    """delta = 1 iff the latest step entered another room (log psi: the count so far)."""

    def went(p, s):
        return float(p.steps[s - 1][1].startswith("You are in the living room"))

    delta = [went(p, t) for p in particles]
    log_psi = [sum(went(p, s) for s in range(1, t + 1)) for p in particles]
    return Score(jnp.asarray(delta), jnp.asarray(log_psi))


class Preferring:
    """A protocol object: q(a) proportional to 3 for 'move west', 1 otherwise, drawn from the
    key; returns log q and log p0 = -log|A| (the uniform prior)."""

    def __call__(self, key, particles, t, horizon):
        rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
        actions, log_q, log_p = [], [], []
        for p in particles:
            options = list(p.admissible)
            w = np.array([3.0 if a == "move west" else 1.0 for a in options])
            i = int(rng.choice(len(options), p=w / w.sum()))
            actions.append(options[i])
            log_q.append(math.log(w[i] / w.sum()))
            log_p.append(-math.log(len(options)))
        return Proposed(actions, jnp.asarray(log_q), jnp.asarray(log_p))


def test_a_custom_proposal_and_twist_steer_the_plan_on_twx_coin(coin):
    env, obs, actions = coin
    n = len(actions)
    res = smcplan.plan(
        env.task,
        None,
        actions,
        observation=obs,
        key=0,
        proposal=every_action_once,
        twist=moved,
        world_model="simulator",
        simulator=env.clone,
        num_particles=n,
        horizon=1,
        lam=5.0,
        choice="max_weight",
    )
    # every admissible action is tried once; only 'move west' (the open exit) enters a room
    assert sorted(res.step_actions[0]) == sorted(actions)
    assert res.action == "move west"
    # the one mover outweighs the n - 1 others e^5 to 1 each (float32 log-weights: the mass,
    # their exp, is off by at most their absolute error, relatively)
    assert res.action_mass["move west"] == pytest.approx(
        math.exp(5) / (math.exp(5) + n - 1), rel=smc_logweight_tol(1, n, 5.0 + math.log(n))
    )
    assert res.calls == {"proposal": 1, "world_model": 1, "twist": 1}
    cfg = res.config
    assert cfg["proposal_kind"] == cfg["proposal"] == "every_action_once"
    assert cfg["progress"] == cfg["twist"] == "moved"
    assert cfg["world_model_kind"] == "simulator" and cfg["oracle"] is True
    assert cfg["custom"] == ["proposal", "twist"]


def test_twisted_weights_use_the_custom_proposals_log_p_and_log_q(coin):
    """H = 1, no resampling: log W = normalise(log p0 - log q + log psi_1), exactly the numbers
    the proposal and twist returned."""
    env, obs, actions = coin
    res = smcplan.plan(
        env.task,
        None,
        actions,
        observation=obs,
        key=3,
        proposal=Preferring(),
        twist=moved,
        world_model="simulator",
        simulator=env.clone,
        num_particles=24,
        horizon=1,
        weighting="twisted",
    )
    firsts = res.step_actions[0]
    assert "move west" in firsts and len(set(firsts)) > 2  # the weights differ
    w = np.array([3.0 if a == "move west" else 1.0 for a in actions])
    log_q = np.array([math.log((3.0 if a == "move west" else 1.0) / w.sum()) for a in firsts])
    log_psi = np.array([float(a == "move west") for a in firsts])
    log_w = -math.log(len(actions)) - log_q + log_psi
    expected = log_w - np.logaddexp.reduce(log_w)
    # float32 weights against this float64 recomputation: one reweighting of 24 particles
    tol = smc_logweight_tol(1, 24, float(np.abs(log_w).max()) + math.log(24))
    np.testing.assert_allclose(np.asarray(res.log_weights, dtype=np.float64), expected, atol=tol)
    assert res.config["proposal_kind"] == "Preferring"


class RuleWorld:
    """A protocol object world model: 'take coin' wins, anything else 'Nothing happens.';
    the transition is sampled from the model (log_q = None) and reports log p = log 1/2."""

    oracle = False

    def __init__(self):
        self.calls = 0

    def __call__(self, key, particles, actions, t, horizon):
        self.calls += 1
        new, observations = [], []
        for p, a in zip(particles, actions, strict=True):
            won = a == "take coin"
            o = "You take the coin." if won else "Nothing happens."
            outcome = Outcome(score=float(won), gain=float(won), won=won, done=won)
            new.append(p.extend(a, o, outcome=outcome))
            observations.append(o)
        return Transition(new, observations, log_p=jnp.full(len(new), math.log(0.5)))


def test_a_custom_world_model_feeds_the_builtin_env_twist_without_a_language_model():
    world = RuleWorld()
    res = smcplan.plan(
        "find the coin and take it",
        None,
        ["look around", "take coin", "move west"],
        key=1,
        world_model=world,
        proposal="uniform",
        progress="env",
        num_particles=6,
        horizon=2,
        choice="max_weight",
    )
    assert res.action == "take coin" and world.calls == 2
    assert all(len(p.steps) == 2 for p in res.particles)
    # admissible sets are inherited by particles the world model extends
    assert all(p.admissible == ("look around", "take coin", "move west") for p in res.particles)
    cfg = res.config
    assert cfg["world_model_kind"] == cfg["world_model"] == "RuleWorld"
    assert cfg["oracle"] is False and cfg["custom"] == ["world_model"]
    assert cfg["progress"] == "env" and cfg["proposal_kind"] == "uniform"


def test_a_textplanners_tuple_of_particles_runs_in_tsmc_as_in_run_text_planner(coin):
    env, obs, actions = coin
    kw = dict(
        observation=obs,
        proposal=Preferring(),
        twist=moved,
        world_model="simulator",
        num_particles=6,
        horizon=2,
    )
    tp = build_text_planner(env.task, None, actions, simulator=env.clone, **kw)
    assert isinstance(tp.particles, tuple)
    key = jax.random.key(4)
    try:
        by_hand = tsmc(
            tp.particles,
            key,
            proposal=tp.proposal,
            world_model=tp.world_model,
            twist=tp.twist,
            **tp.config.tsmc_kwargs(),
        )
    finally:
        tp.world_model.close()
    built = run_text_planner(
        build_text_planner(env.task, None, actions, simulator=env.clone, **kw), key
    )
    assert by_hand.action == built.action
    assert [p.steps for p in by_hand.particles] == [p.steps for p in built.particles]
    np.testing.assert_array_equal(np.asarray(by_hand.log_weights), np.asarray(built.log_weights))


# --- what cannot be a component: typed errors naming the argument, the value and the fix ---


def takes_particles_only(particles):
    return Proposed([], jnp.zeros(0))


def world_without_actions(key, particles, t, horizon):
    return Transition(particles, [])


class NoCall:
    pass


ACTIONS = ["look around", "take coin", "move west"]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"proposal": "magic"},
            PlanningError,
            r"unknown proposal 'magic'; known: lm, uniform, or your own proposal as a callable "
            r"\(key, particles, t, horizon\) -> Proposed",
        ),
        (
            {"world_model": "dream"},
            PlanningError,
            r"unknown world_model 'dream'; known: lm, simulator, learned, or your own world_model",
        ),
        (
            {"proposal": 3},
            ComponentError,
            r"proposal=3 \(int\) is neither the name of a built-in \(proposal='lm' \| 'uniform'\) "
            r"nor a callable; pass a name or your own callable proposal\(key, particles, t, "
            r"horizon\) -> Proposed",
        ),
        (
            {"world_model": 2.5},
            ComponentError,
            r"world_model=2.5 \(float\) is neither the name of a built-in .* nor a callable",
        ),
        (
            {"twist": 42},
            ComponentError,
            r"twist=42 \(int\) is neither the name of a built-in \(progress='lm' \| 'env'",
        ),
        (
            {"twist": "env"},
            ComponentError,
            r"twist='env' is a string, and twist= takes your own callable twist\(key, particles, "
            r"t, horizon\) -> Score.*e\.g\. progress='env'",
        ),
        (
            {"proposal": takes_particles_only},
            ComponentError,
            r"proposal=takes_particles_only takes \(particles\), but the planner calls "
            r"proposal\(key, particles, t, horizon\).*def takes_particles_only\(key, particles, "
            r"t, horizon\)",
        ),
        (
            {"world_model": world_without_actions},
            ComponentError,
            r"world_model=world_without_actions takes \(key, particles, t, horizon\), but the "
            r"planner calls world_model\(key, particles, actions, t, horizon\)",
        ),
        (
            {"twist": lambda particles, t: None},
            ComponentError,
            r"twist=<lambda> takes \(particles, t\).*def my_twist\(key, particles, t, horizon\)",
        ),
        (
            {"proposal": Preferring},
            ComponentError,
            r"proposal=Preferring is a class; pass an instance, proposal=Preferring\(\.\.\.\)",
        ),
        (
            {"world_model": NoCall()},
            ComponentError,
            r"world_model=.*NoCall object.* \(NoCall\) is neither the name of a built-in",
        ),
        (
            {"proposal": every_action_once, "proposer": object()},
            PlanningError,
            r"proposer= is a role of the built-in proposal, unused with your own "
            r"proposal=every_action_once; drop proposer=",
        ),
        (
            {"proposal": every_action_once, "particles_per_action": 2},
            PlanningError,
            r"particles_per_action=2 .* with your own proposal=every_action_once set "
            r"particles_per_action=0",
        ),
        (
            {"progress": moved},
            PlanningError,
            r"progress must be a name .* got <function moved.*goes to twist= instead",
        ),
    ],
)
def test_what_cannot_be_a_component_is_a_typed_error_at_build(kwargs, error, match):
    with pytest.raises(error, match=match) as raised:
        build_text_planner("find the coin", None, ACTIONS, **kwargs)
    assert isinstance(raised.value, SmcplanError)
    if error is ComponentError:
        assert isinstance(raised.value, TypeError) and isinstance(raised.value, PlanningError)
    # plan() raises the same error, before anything runs
    with pytest.raises(error, match=match):
        smcplan.plan("find the coin", None, ACTIONS, **kwargs)


def uniform(key, particles, t, horizon):
    return Proposed(["look around"] * len(particles), jnp.zeros(len(particles)))


def echo(key, particles, actions, t, horizon):
    return Transition(
        [p.extend(a, "ok") for p, a in zip(particles, actions, strict=True)], ["ok"] * len(actions)
    )


def flat(key, particles, t, horizon):
    return Score(delta=jnp.zeros(len(particles)), log_psi=jnp.zeros(len(particles)))


@pytest.mark.parametrize(
    ("components", "error", "match"),
    [
        (
            {"proposal": lambda k, p, t, h: ["look around"] * len(p)},
            ComponentError,
            r"step 1: proposal=<lambda> returned list \['look around', .*; it must return "
            r"smcplan\.planning\.Proposed\(actions, log_q, log_p\)",
        ),
        (
            {"proposal": lambda k, p, t, h: Proposed([0] * len(p), jnp.zeros(len(p)))},
            ComponentError,
            r"step 1: proposal=<lambda> returned actions\[0\] = 0 \(int\); text actions are "
            r"strings",
        ),
        (
            {"proposal": lambda k, p, t, h: Proposed(["fly"] * len(p), jnp.zeros(len(p)))},
            PlanningError,
            r"step 1: proposal=<lambda> proposed 'fly' for particle 0, which is not an "
            r"admissible action \(look around, move west, take coin\)",
        ),
        (
            {"world_model": lambda k, p, a, t, h: Transition(list(p), ["ok"] * len(p))},
            PlanningError,
            r"step 1: world_model=<lambda> returned particles\[0\] with 0 steps after its "
            r"parent's 0; extend each particle by exactly one step",
        ),
        (
            {"world_model": lambda k, p, a, t, h: Transition(["x"] * len(p), ["ok"] * len(p))},
            ComponentError,
            r"step 1: world_model=<lambda> returned particles\[0\] of type str; return "
            r"particle\.extend\(action, observation, \.\.\.\)",
        ),
        (
            {
                "world_model": lambda k, p, a, t, h: Transition(
                    [q.extend(x, "ok") for q, x in zip(p, a)], [1] * len(p)
                )
            },
            ComponentError,
            r"step 1: world_model=<lambda> returned observations\[0\] = 1 \(int\)",
        ),
        (
            {"twist": lambda k, p, t, h: {"delta": 1.0}},
            ComponentError,
            r"step 1: twist=<lambda> returned dict .*; it must return "
            r"smcplan\.planning\.Score\(delta, log_psi\)",
        ),
        (
            {"twist": lambda k, p, t, h: Score(log_psi=jnp.zeros(len(p)))},
            PlanningError,
            r"weighting='nesyfs' needs a progress delta, but twist <lambda> returned delta=None",
        ),
        (
            {"twist": lambda k, p, t, h: Score(delta=jnp.zeros(len(p) + 1))},
            PlanningError,
            r"step 1: twist <lambda> delta has shape \(5,\); expected \(4,\)",
        ),
    ],
)
def test_a_component_that_returns_the_wrong_thing_is_named_at_the_step(components, error, match):
    kw = {"proposal": uniform, "world_model": echo, "twist": flat, **components}
    planner = build_text_planner("find the coin", None, ACTIONS, num_particles=4, horizon=1, **kw)
    with pytest.raises(error, match=match):
        run_text_planner(planner, 0)


def test_planner_config_holds_names_only_and_says_where_a_callable_goes():
    with pytest.raises(
        PlanningError,
        match=r"unknown proposal <function every_action_once.*"
        r"passed to plan\(\.\.\., proposal=\.\.\.\)",
    ):
        PlannerConfig(proposal=every_action_once)
    # a particle built by hand has no admissible set of its own; the planner's root has the real
    planner = build_text_planner(
        "find the coin", None, ACTIONS, proposal=uniform, world_model=echo, twist=flat
    )
    assert TextParticle(kg=None, root_observation="").admissible is None
    assert planner.particles[0].admissible == tuple(ACTIONS)


def test_check_component_takes_callables_only_and_names_the_builtins():
    from smcplan.planning.custom import check_component

    assert check_component("twist", moved) is moved
    with pytest.raises(ComponentError, match=r"proposal='lm' is a name, not a component"):
        check_component("proposal", "lm")
    with pytest.raises(PlanningError, match=r"unknown component role 'critic'"):
        check_component("critic", moved)
