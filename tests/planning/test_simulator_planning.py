"""The simulator world model (an oracle: each particle steps its own clone of the environment),
the LLM-free twists, degenerate weights and the planner settings, on real environments.

The lookahead case is the toy household with ALFWorld's rule that nothing can be taken from a
closed receptacle (``closed_take="fails"``): the agent stands at the closed drawer 1 that holds
the key.  Taking at once fails the task; opening first and taking next wins.  With horizon 1 the
env twist sees only the failure of a blind take (every other action scores 0), so the choice among
the 8 other actions is left to the particle counts; with horizon 3 the particles that open and
then take win, and they all started with "open drawer 1".
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import smcplan
from smcplan.envs import make
from smcplan.planning import PlannerConfig, PlanningError, Proposed, Score, Transition, tsmc
from smcplan.planning.progress import (
    EnvProgress,
    NoveltyProgress,
    ProcessProgress,
    Seen,
    make_progress,
)
from smcplan.planning.simulator import SimulatorWorldModel, UniformTextProposal
from smcplan.planning.text_particle import TextParticle
from tests.tolerance import chain_tol, smc_logweight_tol


def simulated_plan(env, obs, actions, horizon, key, n=512, **kw):
    return smcplan.plan(
        env.task,
        None,
        actions,
        observation=obs,
        key=key,
        world_model="simulator",
        simulator=env.clone,
        progress="env",
        proposal="uniform",
        num_particles=n,
        horizon=horizon,
        choice="max_weight",
        **kw,
    )


def test_lookahead_opens_the_drawer_before_taking_the_key_and_a_one_step_planner_does_not(drawer):
    # H = 3: "open drawer 1" is the first action of every "open, take" (win at step 2) and of the
    # "open, harmless action, take" paths; any other first action reaches the win only by
    # "x, open, take".  Measured 20/20 at N = 512 (19/20 at N = 128 and 256).  H = 1: a blind take
    # fails (delta -1), the 8 other actions all score 0, so "open drawer 1" wins only when its
    # particle count happens to be the largest: about 1 run in 8 (binomial(20, 1/8) >= 11 has
    # probability 1e-6).
    env, obs, actions = drawer
    deep = [simulated_plan(env, obs, actions, 3, seed).action for seed in range(20)]
    shallow = [simulated_plan(env, obs, actions, 1, seed).action for seed in range(20)]
    assert deep.count("open drawer 1") >= 19
    assert shallow.count("open drawer 1") <= 10
    assert "take key 1 from drawer 1" not in shallow
    assert (
        env.actions == []
        and env.state_name == "key 1 in drawer 1; agent at drawer 1; open: nothing"
    )


def test_env_progress_weights_differ_when_outcomes_differ(drawer):
    env, obs, actions = drawer
    res = simulated_plan(env, obs, actions, 1, 0, n=18)
    w = np.exp(np.asarray(res.log_weights))
    lost = [p.outcomes[-1].lost for p in res.particles]
    assert any(lost) and not all(lost)
    assert not res.degenerate and res.tie_break is None
    # a blind take loses: its particle weighs e^{-lam (1 + H - t)} = e^{-1} of any other
    others = [wi for wi, bad in zip(w, lost, strict=True) if not bad]
    for wi, bad in zip(w, lost, strict=True):
        if bad:
            # float32: the log-weights' difference (one reweighting of 18, |lw| <= 1 + log 18)
            # becomes a relative error of the ratio, plus two exps and the division
            tol = smc_logweight_tol(1, 18, 1 + np.log(18)) + chain_tol(3)
            np.testing.assert_allclose(wi / others[0], np.exp(-1.0), rtol=tol)
    # the winner of a two-step plan outweighs a particle that only wandered
    deep = simulated_plan(env, obs, actions, 2, 1, n=81)
    won = [any(o.won for o in p.outcomes) for p in deep.particles]
    assert any(won)
    wd = np.exp(np.asarray(deep.log_weights))
    assert min(wd[np.asarray(won)]) > max(wd[~np.asarray(won)])


def test_simulator_particles_leave_the_real_env_alone_and_resampled_children_get_own_clones(
    drawer,
):
    env, obs, actions = drawer
    world = SimulatorWorldModel(env.clone)
    root = TextParticle(kg=None, root_observation=obs)
    first = world(
        jax.random.key(0), [root] * 2, ["open drawer 1", "go to drawer 2"], 1, 2
    ).particles
    assert first[0].env is not first[1].env and env.actions == []
    # resampling made both children of particle 0: each gets its own environment
    second = world(
        jax.random.key(1),
        [first[0], first[0]],
        ["take key 1 from drawer 1", "close drawer 1"],
        2,
        2,
    ).particles
    a, b = second
    assert a.env is not b.env
    assert a.env.actions == ["open drawer 1", "take key 1 from drawer 1"] and a.outcomes[-1].won
    assert b.env.actions == ["open drawer 1", "close drawer 1"] and not b.outcomes[-1].done
    assert first[1].env.actions == ["go to drawer 2"]  # the sibling is unchanged
    assert env.actions == [] and env.state_name.endswith("open: nothing")  # and so is the real env
    world.close()


def _assert_clones_independent(env, action_of):
    before_actions, before_admissible = env.actions, env.admissible_actions()
    world = SimulatorWorldModel(env.clone)
    root = TextParticle(kg=None, root_observation="")
    acts = [action_of(before_admissible, i) for i in range(3)]
    first = world(jax.random.key(0), [root] * 3, acts, 1, 2).particles
    assert len({id(p.env) for p in first}) == 3
    assert [p.env.actions[-1] for p in first] == acts
    assert env.actions == before_actions and env.admissible_actions() == before_admissible
    # a resampled particle appears twice: the second child steps a clone made before either stepped
    p0 = first[0]
    nxt = list(p0.admissible)[:2]
    second = world(
        jax.random.key(1), [p0, p0, first[1]], [nxt[0], nxt[-1], list(first[1].admissible)[0]], 2, 2
    ).particles
    assert second[0].env is p0.env and second[1].env is not p0.env
    assert second[0].env.actions == [*before_actions, acts[0], nxt[0]]
    assert second[1].env.actions == [*before_actions, acts[0], nxt[-1]]
    assert second[2].env.actions == [*before_actions, acts[1], list(first[1].admissible)[0]]
    assert env.actions == before_actions and env.admissible_actions() == before_admissible
    assert world.clones == 4
    world.close()


def test_clone_independence_on_textworld_express():
    env = make("twx:coin", split="dev", max_steps=25)
    try:
        env.reset(10000)
        env.step("move west")
        _assert_clones_independent(env, lambda acts, i: acts[i])
    finally:
        env.close()


def test_clone_independence_on_the_alfworld_engine(tmp_path):
    pytest.importorskip("alfworld")
    pytest.importorskip("fast_downward")
    env = make("alfworld:pick_and_place", seed=0, cache_dir=str(tmp_path), max_steps=25)
    try:
        env.reset()
        env.step(env.gold_actions()[0])
        _assert_clones_independent(env, lambda acts, i: acts[i])
    finally:
        env.close()


class RecordingProposer:
    """The real proposal role (tiny model), recording the admissible set each particle saw."""

    def __init__(self, inner):
        self.inner, self.seen = inner, []

    def __call__(self, tasks, triplets, observations, admissible, seed=None):
        self.seen.append([list(a) for a in admissible])
        return self.inner(tasks, triplets, observations, admissible, seed=seed)


def test_each_particles_own_admissible_actions_reach_the_proposal():
    from smcplan.llm import ActionProposal
    from smcplan.llm.testing import tiny_model

    env = make("twx:coin", split="dev", max_steps=25)
    try:
        obs, info = env.reset(10000)
        proposer = RecordingProposer(ActionProposal(tiny_model(), temperature=1.0))
        res = smcplan.plan(
            env.task,
            None,
            info["admissible_actions"],
            observation=obs,
            key=0,
            world_model="simulator",
            simulator=env.clone,
            progress="novelty",
            proposal="lm",
            proposer=proposer,
            num_particles=4,
            horizon=2,
            ess_threshold=0.0,
        )
        assert proposer.seen[0] == [sorted(info["admissible_actions"])] * 4
        # without resampling, step 2's particle i extends step 1's particle i: it proposed from the
        # admissible set its own clone reported after its first action
        after_first = []
        for p in res.particles:
            twin = env.clone()
            twin.step(p.steps[0][0])
            after_first.append(twin.admissible_actions())
            twin.close()
        assert proposer.seen[1] == after_first
        assert all(p.steps[1][0] in adm for p, adm in zip(res.particles, after_first, strict=True))
    finally:
        env.close()


def _constant_components(deltas_per_step):
    def proposal(key, particles, t, horizon):
        n = len(particles)
        return Proposed(
            [f"a{i}" for i in range(n)], jnp.log(jnp.arange(1, n + 1) / (n * (n + 1) / 2))
        )

    def world(key, particles, actions, t, horizon):
        return Transition(list(particles), list(actions))

    def twist(key, particles, t, horizon):
        return Score(delta=jnp.asarray(deltas_per_step[t - 1], dtype=float))

    return proposal, world, twist


@pytest.mark.parametrize(
    ("deltas", "degenerate"),
    [
        ([[0, 0, 0, 0], [0, 0, 0, 0]], True),
        ([[1, 1, 1, 1], [0.5, 0.5, 0.5, 0.5]], True),
        ([[0, 0, 0, 0], [0, 0, 1, 0]], False),
        ([[1, 0, 0, 0], [0, 0, 0, 0]], False),
    ],
)
def test_degenerate_is_true_exactly_when_every_delta_is_equal_and_the_tie_break_is_recorded(
    deltas, degenerate
):
    proposal, world, twist = _constant_components(deltas)
    res = tsmc(
        [None] * 4,
        jax.random.key(0),
        proposal=proposal,
        world_model=world,
        twist=twist,
        horizon=2,
        tie_break="proposal",
    )
    assert res.degenerate is degenerate
    if degenerate:
        # the documented tie-break: the step-1 action with the largest proposal probability
        assert res.tie_break == "proposal" and res.action == "a3"
    else:
        assert res.tie_break is None
    trace = res.trace()
    assert [s["delta"] for s in trace["steps"]] == [[float(x) for x in row] for row in deltas]


def test_the_trace_has_the_viewer_schema_and_truncates_large_runs(drawer):
    env, obs, actions = drawer
    res = simulated_plan(env, obs, actions, 2, 0, n=6)
    trace = res.trace()
    assert (
        trace["truncated"] is False and trace["action"] == res.action and len(trace["steps"]) == 2
    )
    for t, step in enumerate(trace["steps"], start=1):
        assert step["t"] == t and len(step["actions"]) == len(step["observations"]) == 6
        assert len(step["ancestors"]) == len(step["weights"]) == len(step["log_weights"]) == 6
        assert step["resampled"] is (t > 1) and np.isclose(sum(step["weights"]), 1.0)
        assert all(len(o) <= 160 for o in step["observations"])
    assert trace["steps"][0]["ancestors"] == list(range(6))
    big = simulated_plan(env, obs, actions, 1, 0, n=70).trace()
    assert big["truncated"] is True and len(big["steps"][0]["actions"]) == 64


def test_novelty_counts_places_and_entities_not_text_and_env_counts_score():
    kitchen = (
        "You are in the kitchen. In one part of the room you see a stove. "
        "\nTo the West you see the living room. "
    )
    living = (
        "You are in the living room. In one part of the room you see a sofa. "
        "\nTo the East you see the kitchen. "
    )
    seen = Seen().after(kitchen, None, {}, "twx")
    assert seen.place == "kitchen" and seen.visits == (("kitchen", 1),)
    p = TextParticle(kg=None, root_observation=kitchen)
    moved = p.extend("move west", living)  # a new place (1) and a new entity, the sofa (1)
    stayed = p.extend("look around", kitchen)  # kitchen seen once: 1/sqrt(2), nothing new
    again = stayed.extend("look around", kitchen)  # and again: 1/sqrt(3)
    key = jax.random.key(0)
    score = NoveltyProgress(seen, "twx")(key, [moved, stayed, again], 1, 1)
    np.testing.assert_allclose(
        np.asarray(score.delta), [1.0, 0.5 / np.sqrt(2), 0.5 / np.sqrt(3)], rtol=chain_tol(3)
    )  # float32 sqrt, division, cast
    np.testing.assert_allclose(
        float(score.log_psi[2]), 0.5 / np.sqrt(2) + 0.5 / np.sqrt(3), rtol=chain_tol(4)
    )  # and one (positive) sum
    assert float(EnvProgress()(key, [moved], 1, 1).delta[0]) == 0.0


def test_rlvmr_scores_the_action_that_just_failed_again_as_a_repetition_whatever_is_imagined():
    # the real last step failed ("That is already open.", a text reply, not an invalid flag);
    # redoing it is a repetition (0) even where the imagined observation reads as a new place,
    # a different action is the corrective one (1)
    kitchen = "You are in the kitchen. \nTo the North you see the patio door, which is open. "
    seen = Seen().after(kitchen, None, {}, "twx").after(
        "That is already open.", "open door to north", {}, "twx"
    )
    assert seen.last_failed and seen.actions == ("open door to north",)
    p = TextParticle(kg=None, root_observation="That is already open.")
    dreamt = "You are in the backyard. In one part of the room you see a grill. "
    again = p.extend("open door to north", dreamt)
    other = p.extend("move north", dreamt)
    score = ProcessProgress(seen, "twx")(jax.random.key(0), [again, other], 1, 1)
    np.testing.assert_array_equal(np.asarray(score.delta), [0.0, 1.0])
    # without the failure the imagined move explores a new place (1); opening a door never
    # moves the agent (places.stays_put), so the same reply to it is a slip and explores nothing
    fine = Seen().after(kitchen, None, {}, "twx").after(kitchen, "open door to north", {}, "twx")
    assert not fine.last_failed
    score = ProcessProgress(fine, "twx")(jax.random.key(0), [other, again], 1, 1)
    np.testing.assert_array_equal(np.asarray(score.delta), [1.0, 0.0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"progress": "curiosity"},
            r"unknown progress 'curiosity'.*valid: lm, env, rlvmr, novelty",
        ),
        (
            {"progress": "env+magic"},
            r"unknown progress 'magic' in 'env\+magic'; valid: lm, env, rlvmr, novelty",
        ),
        ({"world_model": "dream"}, "unknown world_model 'dream'; known: lm, simulator"),
        ({"world_model": "simulator"}, "needs simulator= a clone factory"),
        ({"tie_break": "coin"}, "unknown tie_break 'coin'; known: proposal, none"),
        (
            {"particles": 3},
            "unknown planner option\\(s\\) 'particles'; known: num_particles",
        ),
    ],
)
def test_bad_planner_settings_name_the_valid_ones(kwargs, message):
    with pytest.raises(PlanningError, match=message):
        smcplan.plan("take the key", None, ["look"], proposal="uniform", **kwargs)
    with pytest.raises(PlanningError):
        make_progress("novelty+novelty")


def test_the_simulator_on_an_environment_without_clone_names_those_that_have_one():
    from smcplan.agents.nesyfs import NeSyFSAgent
    from smcplan.envs.base import BaseTextEnv
    from smcplan.llm.testing import tiny_model

    class NoClone(BaseTextEnv):
        def __init__(self):
            super().__init__("custom:noclone", 5)

    agent = NeSyFSAgent(
        tiny_model(), world_model="simulator", progress="env", slow_thinking="always"
    )
    assert agent.needs_simulator
    with pytest.raises(
        PlanningError, match=r"'custom:noclone' has none\. Environments that support it: twx:\*"
    ):
        agent.attach_simulator(NoClone().clone, NoClone())


def test_planner_config_is_validated_once_with_one_set_of_defaults():
    cfg = PlannerConfig()
    assert (cfg.num_particles, cfg.horizon, cfg.ess_threshold, cfg.weighting) == (
        4,
        2,
        1.0,
        "nesyfs",
    )
    assert (
        PlannerConfig.from_options(progress="env+novelty", world_model="simulator").progress
        == "env+novelty"
    )
    with pytest.raises(PlanningError, match="unknown planner option"):
        PlannerConfig.from_options(N=3)


def test_uniform_proposal_is_stratified_over_siblings():
    prop = UniformTextProposal(["a", "b", "c"])
    root = TextParticle(kg=None, root_observation="")
    out = prop(jax.random.key(3), [root] * 6, 1, 1)
    assert sorted(out.actions[:3]) == ["a", "b", "c"] and out.actions[3:] == out.actions[:3]
    np.testing.assert_allclose(np.asarray(out.log_q), -np.log(3.0))
