"""The text planner in two steps: ``build_text_planner`` (inputs validated, components built, no
key) then ``run_text_planner`` (tsmc with a key); ``plan_text`` is both, so the two agree."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from smcplan.memory import KnowledgeGraph
from smcplan.planning import (
    PlannerConfig,
    PlanningError,
    TextPlanner,
    build_text_planner,
    run_text_planner,
)
from smcplan.planning.simulator import SimulatorWorldModel, UniformTextProposal
from smcplan.planning.text_components import plan_text
from smcplan.planning.text_particle import TextParticle
from tests.tolerance import EPS64, gamma

ACTIONS = ["go north", "take coin", "look around"]


def simulated(env, obs, **kw):
    return dict(
        observation=obs,
        world_model="simulator",
        simulator=env.clone,
        progress="env+novelty",
        proposal="uniform",
        num_particles=8,
        horizon=2,
        **kw,
    )


def same(a, b):
    assert a.action == b.action
    np.testing.assert_array_equal(np.asarray(a.log_weights), np.asarray(b.log_weights))
    assert [p.steps for p in a.particles] == [p.steps for p in b.particles]
    assert a.config == b.config
    assert a.calls == b.calls


def test_build_then_run_with_a_key_is_plan_text_with_that_key(drawer):
    env, obs, actions = drawer
    kw = simulated(env, obs, rollouts=2, rollout_steps=3)
    first = run_text_planner(build_text_planner(env.task, None, actions, **kw), 5)
    second = run_text_planner(build_text_planner(env.task, None, actions, **kw), 5)
    whole = plan_text(env.task, None, actions, key=5, **kw)
    same(first, whole)
    same(second, whole)
    assert whole.config["oracle"] is True and whole.config["clones"] > 0
    assert "rollout_env_steps" in whole.config and "informative" in whole.config


def test_building_draws_nothing_and_holds_the_components(drawer):
    env, obs, actions = drawer
    planner = build_text_planner(
        env.task, KnowledgeGraph(), actions, **simulated(env, obs), extractor="rule"
    )
    assert isinstance(planner, TextPlanner)
    assert isinstance(planner.config, PlannerConfig) and planner.simulated
    assert isinstance(planner.world_model, SimulatorWorldModel)
    assert isinstance(planner.proposal, UniformTextProposal)
    assert planner.world_model.clones == 0  # no environment copy before the run
    assert len(planner.particles) == 8
    assert all(isinstance(p, TextParticle) and p is planner.particles[0] for p in planner.particles)
    assert planner.particles[0].root_observation == obs and planner.particles[0].steps == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        planner.twist = None  # type: ignore[misc]


def test_a_planner_runs_once(drawer):
    env, obs, actions = drawer
    planner = build_text_planner(env.task, None, actions, **simulated(env, obs))
    run_text_planner(planner, 0)
    with pytest.raises(PlanningError, match="already run"):
        run_text_planner(planner, 0)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("t", None, []), {}),
        (("t", None, "look"), {}),
        ((3, None, ACTIONS), {}),
        (("t", {"coin": "kitchen"}, ACTIONS), {}),
        (("t", None, ACTIONS), {"config": {"num_particles": 2}}),
        (("t", None, ACTIONS), {"num_particles": 0}),
        (("t", None, ACTIONS), {"particles": 4}),
        (("t", None, ACTIONS), {"extractor": "magic"}),
        (("t", None, ACTIONS), {"world_model": "simulator"}),
        (("t", None, ACTIONS), {"world_model": "lm", "progress": "env", "proposal": "uniform"}),
        (("t", None, ACTIONS), {"config": PlannerConfig()}),  # the LM roles, no lm=
    ],
)
def test_build_raises_the_errors_plan_text_raises(args, kwargs):
    with pytest.raises(PlanningError) as built:
        build_text_planner(*args, **kwargs)
    with pytest.raises(PlanningError) as planned:
        plan_text(*args, **kwargs)
    assert type(built.value) is type(planned.value)
    assert str(built.value) == str(planned.value)


def test_a_bad_key_is_refused_when_the_planner_runs(drawer):
    env, obs, actions = drawer
    planner = build_text_planner(env.task, None, actions, **simulated(env, obs))
    with pytest.raises(PlanningError, match="key must be a jax.random key or an int seed"):
        run_text_planner(planner, "seven")


@pytest.mark.parametrize("k", [1, 2])
def test_particles_per_action_gives_every_admissible_action_k_first_particles(drawer, k):
    """N = k|A| and, through the stratified uniform proposal, each admissible action is the
    first action of exactly k particles: the mass of an action is k times its mean weight."""
    env, obs, actions = drawer
    kw = {**simulated(env, obs), "particles_per_action": k, "horizon": 1}
    planner = build_text_planner(env.task, None, actions, **kw)
    assert len(planner.particles) == k * len(actions)
    result = run_text_planner(planner, 3)
    firsts = [p.steps[0][0] for p in result.particles]
    assert sorted(firsts) == sorted(a for a in actions for _ in range(k))
    w = np.exp(np.asarray(result.log_weights, dtype=np.float64))
    for action in actions:
        mine = [wi for wi, a in zip(w, firsts, strict=True) if a == action]
        # float64: k adds on each side, a division and a product
        assert result.action_mass[action] == pytest.approx(
            k * np.mean(mine), rel=gamma(2 * k + 2, EPS64)
        )


@pytest.mark.parametrize(
    ("value", "proposal", "match"),
    [
        (-1, "uniform", "particles_per_action must be an integer >= 0; got -1"),
        (1.5, "uniform", "particles_per_action must be an integer >= 0; got 1.5"),
        (True, "uniform", "particles_per_action must be an integer >= 0; got True"),
        (2, "lm", "particles_per_action=2 .* needs proposal='uniform' \\(got proposal='lm'\\)"),
    ],
)
def test_a_bad_particles_per_action_is_refused(value, proposal, match):
    with pytest.raises(PlanningError, match=match):
        PlannerConfig(particles_per_action=value, proposal=proposal)
