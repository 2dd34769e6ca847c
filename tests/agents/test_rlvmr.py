"""Specification of RLVMR: the verifiable reward rules (pure) and the agent on real environments.

Reward expectations are written out by hand from the rules of arXiv 2507.22844 as released
(``process_trajectory_rlvmr_rewards`` and ``ppo_trainer.yaml``: every meta reward 1.0, invalid
format penalty 0.1), step by step in the comments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from smcplan.agents import make
from smcplan.agents.rlvmr import RLVMRAgent
from smcplan.agents.rlvmr_rewards import (
    TAGS,
    RewardConfig,
    RLVMRTwist,
    TaggedStep,
    format_response,
    imagined_trajectory,
    is_repeat,
    looks_invalid,
    parse_response,
    step_reward,
    total_reward,
    trajectory_rewards,
)
from smcplan.planning import PlannerConfig, Proposed, Transition, plan, tsmc
from tests.agents.conftest import check_record, play
from tests.agents.test_rlaw import smollm2
from tests.tolerance import normalized_tol, smc_logweight_tol

S = TaggedStep


# ------------------------------------------------------------------ format check
def test_parse_response_reads_a_well_formed_answer():
    p = parse_response("<explore>maybe the coin is east</explore>\n<action>move east</action>")
    assert (p.tag, p.content, p.action, p.well_formed) == (
        "explore", "maybe the coin is east", "move east", True,
    )


@pytest.mark.parametrize(
    "text, problem",
    [
        ("<action>move east</action>", "expected one meta-reasoning tag"),
        ("<planning>a</planning><explore>b</explore><action>x</action>", "found 2"),
        ("<monitor> </monitor><action>x</action>", "empty <monitor>"),
        ("<action>x</action><monitor>later</monitor>", "before <action>"),
        ("<monitor>m</monitor><action>x</action><action>y</action>", "found 2"),
        ("<monitor>m</monitor> move east", "found 0"),
        ("<monitor>m</monitor><action>  </action>", "empty <action>"),
        ("<thinking>m</thinking><action>x</action>", "found 0"),
    ],
)
def test_parse_response_rejects_malformed_answers(text, problem):
    p = parse_response(text)
    assert not p.well_formed and p.tag is None
    assert problem in p.problem


def test_format_response_round_trips_through_parse_response():
    for tag in TAGS:
        p = parse_response(format_response(tag, "why", "open door"))
        assert (p.tag, p.content, p.action, p.well_formed) == (tag, "why", "open door", True)
    with pytest.raises(ValueError, match="unknown meta-reasoning tag 'think'; known: planning"):
        format_response("think", "x", "y")


# ------------------------------------------------------------------ the rules, by hand
def test_planning_is_rewarded_only_if_the_episode_succeeds():
    traj = [S("planning", "look around"), S("monitor", "move east")]
    assert [r.total for r in trajectory_rewards(traj, success=True)] == [1.0, 0.0]
    assert [r.total for r in trajectory_rewards(traj, success=False)] == [0.0, 0.0]
    pending = step_reward(traj, 0, success=None)
    assert pending.pending and pending.total == 0.0


def test_explore_is_rewarded_only_for_an_action_no_earlier_well_formed_step_took():
    traj = [
        S("explore", "look around"),  # t0: new -> +1
        S("explore", "move east"),  # t1: new -> +1
        S("explore", "look around"),  # t2: taken at t0 -> 0
        S(None, "take coin", well_formed=False),  # t3: malformed -> -0.1
        S("explore", "take coin"),  # t4: only a malformed step took it -> new -> +1
        S("monitor", "open door"),  # t5: monitor -> 0
        S("explore", "open door"),  # t6: taken at t5 (well-formed, any tag) -> 0
    ]
    assert [r.total for r in trajectory_rewards(traj, success=False)] == pytest.approx(
        [1.0, 1.0, 0.0, -0.1, 1.0, 0.0, 0.0]
    )
    assert [is_repeat(traj, t) for t in range(len(traj))] == [
        False, False, True, False, False, False, True,
    ]


def test_reflection_is_rewarded_only_after_an_invalid_step_with_a_changed_action():
    traj = [
        S("reflection", "look around"),  # t0: nothing failed yet -> 0
        S("monitor", "open door", valid=False),  # t1: monitor -> 0 (env rejected it)
        S("reflection", "open door"),  # t2: prev invalid, same action -> 0
        S("reflection", "move west"),  # t3: prev (t2) valid -> 0
        S("monitor", "take key", valid=False),  # t4: -> 0
        S("reflection", "move north"),  # t5: prev invalid, changed -> +1
        S(None, None, well_formed=False),  # t6: malformed -> -0.1
        S("reflection", "move north"),  # t7: prev malformed counts as invalid, action changed
        #     (None -> "move north") -> +1
    ]
    got = [r.total for r in trajectory_rewards(traj, success=True)]
    assert got == pytest.approx([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, -0.1, 1.0])
    assert step_reward(traj, 2).rule == "action unchanged after failure"
    assert step_reward(traj, 3).rule == "previous action was valid"


def test_first_step_reflection_follows_the_released_code_when_asked():
    traj = [S("reflection", "look around")]
    assert step_reward(traj, 0).total == 0.0
    assert step_reward(traj, 0, config=RewardConfig(first_step_reflection=True)).total == 1.0


def test_monitor_is_never_rewarded_and_malformed_steps_only_pay_the_penalty():
    traj = [
        S("monitor", "a"),
        S("monitor", "b", valid=False),
        S("planning", "c", well_formed=False),
    ]
    rs = trajectory_rewards(traj, success=True)
    assert [(r.meta, r.format) for r in rs] == [(0.0, 0.0), (0.0, 0.0), (0.0, -0.1)]


def test_a_whole_episode_sums_to_the_hand_computed_return():
    # A 6-step episode that succeeds:
    #   t0 planning "look around"           -> +1 (success)
    #   t1 explore  "move east"             -> +1 (new)
    #   t2 explore  "move east" (rejected)  -> 0  (repeat of t1)
    #   t3 reflection "move west"           -> +1 (t2 invalid, action changed)
    #   t4 <malformed>                      -> -0.1
    #   t5 monitor "take coin"              -> 0
    traj = [
        S("planning", "look around"),
        S("explore", "move east"),
        S("explore", "move east", valid=False),
        S("reflection", "move west"),
        S(None, "take coin", well_formed=False),
        S("monitor", "take coin"),
    ]
    assert total_reward(traj, success=True) == pytest.approx(1 + 1 + 0 + 1 - 0.1 + 0)
    assert total_reward(traj, success=False) == pytest.approx(0 + 1 + 0 + 1 - 0.1 + 0)
    scaled = RewardConfig(planning=2.0, explore=0.5, reflection=3.0, format_penalty=1.0)
    assert total_reward(traj, True, scaled) == pytest.approx(2 + 0.5 + 0 + 3 - 1 + 0)


def test_rewards_of_a_step_do_not_depend_on_later_steps():
    traj = [S("explore", "a"), S("reflection", "b"), S("explore", "a", valid=False)]
    for t in range(len(traj)):
        assert step_reward(traj[: t + 1], t, True) == step_reward(traj, t, True)


def test_bad_inputs_name_the_valid_values():
    with pytest.raises(
        ValueError, match="unknown meta-reasoning tag 'plan'; known: planning, explore"
    ):
        S("plan", "a")
    with pytest.raises(IndexError, match="step 3 out of range for a trajectory of 1 steps"):
        step_reward([S("monitor", "a")], 3)
    with pytest.raises(ValueError, match="format_penalty is a cost"):
        RewardConfig(format_penalty=-1)


# ------------------------------------------------------------------ the twist
@dataclass(frozen=True)
class Particle:
    steps: tuple[tuple[str, str], ...] = ()
    tags: tuple[str, ...] = ()


def test_twist_scores_new_and_repeated_imagined_actions_by_the_rules():
    prefix = [S("explore", "look around")]
    twist = RLVMRTwist(imagined_trajectory(prefix), beta=2.0)
    particles = [
        Particle((("move east", "You are in the hallway."),)),  # new -> r = 1
        Particle((("look around", "You are in the kitchen."),)),  # repeat of the prefix -> 0
        Particle(  # reflection after an imagined rejection, changed action -> 1 + ... see below
            (("take key", "Unknown action"), ("move west", "ok")), ("monitor", "reflection")
        ),
    ]
    score = twist(jax.random.key(0), particles, 1, 2)
    # particle 0: prefix explore (+1) + explore new (+1)            -> sum 2, last 1 -> delta 1
    # particle 1: prefix (+1) + explore repeat (0)                  -> sum 1, last 0 -> delta 0
    # particle 2: prefix (+1) + monitor (0) + reflection fixed (+1) -> sum 2, last 1 -> delta 1
    assert score.delta.tolist() == [1.0, 0.0, 1.0]
    assert score.log_psi.tolist() == pytest.approx([4.0, 2.0, 4.0])


def test_looks_invalid_recognises_the_benchmarks_rejections():
    assert looks_invalid("Unknown action")
    assert looks_invalid("No known action matches that input.")
    assert looks_invalid("  Nothing happens.")
    assert not looks_invalid("You take the coin.")


def test_planner_with_the_rlvmr_twist_prefers_a_first_action_that_explores():
    """tsmc with the LLM-free twist: half of the proposals repeat the last real action.

    Proposal: uniform over {repeat, new} (log q = log 1/2); world model: echoes "ok". With
    weighting="nesyfs", w = exp(lam * delta) with delta = 1 for "new" and 0 for the repeat, so
    the exact normalised weight of the "new" first action after one step is
    e^lam / (e^lam + 1) whatever the split, provided both actions were proposed. Each action is
    proposed to exactly half of 8 particles, so the mass is exactly that value.
    """
    prefix = [S("explore", "look around")]

    def proposal(key, particles, t, horizon):
        n = len(particles)
        acts = ["look around" if i % 2 else "move east" for i in range(n)]
        return Proposed(acts, jnp.full((n,), math.log(0.5)))

    def world(key, particles, actions, t, horizon):
        new = [Particle(p.steps + ((a, "ok"),)) for p, a in zip(particles, actions, strict=True)]
        return Transition(new, ["ok"] * len(new))

    lam = 2.0
    result = tsmc(
        [Particle()] * 8,
        jax.random.key(1),
        proposal=proposal,
        world_model=world,
        twist=RLVMRTwist(imagined_trajectory(prefix)),
        horizon=1,
        weighting="nesyfs",
        lam=lam,
        choice="max_weight",
    )
    assert result.action == "move east"
    expected = math.exp(lam) / (math.exp(lam) + 1)
    # float32: one reweighting of 8 particles (|lw| <= lam + log 8), exp, a normalised sum
    tol = smc_logweight_tol(1, 8, lam + math.log(8)) + normalized_tol(8)
    assert result.action_mass["move east"] == pytest.approx(expected, rel=tol)


def test_the_twist_weights_language_model_imagined_futures_by_the_rules(tiny_lm):
    """``smcplan.plan`` for text agents (LM proposal and observation model) with the LLM-free
    RLVMR twist instead of the progress model. With resampling before every step, the final
    weights are exactly W_i = e^{lam delta_i} / sum_j e^{lam delta_j}, delta_i the rule's verdict
    on particle i's last imagined step (a new action or not, given the real prefix and its own
    earlier imagined step)."""
    admissible = ["look", "open drawer 1", "go to cabinet 1", "take key 1 from drawer 1"]
    prefix = [S("explore", "look"), S("monitor", "open drawer 1")]
    trajectory = imagined_trajectory(prefix)
    lam = 1.5
    result = plan(
        "take the key 1",
        None,
        admissible,
        lm=tiny_lm,
        config=PlannerConfig(),  # the LM proposal and observation model (not plan()'s defaults)
        observation="You see a drawer 1 and a cabinet 1.",
        key=3,
        num_particles=6,
        horizon=2,
        lam=lam,
        observation_tokens=8,
        twist=RLVMRTwist(trajectory),
    )
    assert result.action in admissible
    assert all(len(p.steps) == 2 for p in result.particles)
    delta = np.array([step_reward(trajectory(p), 3).total > 0 for p in result.particles], float)
    expected = lam * delta - np.logaddexp.reduce(lam * delta)
    tol = smc_logweight_tol(2, 6, lam + np.log(6))  # float32, 2 steps, |lw| <= lam + log 6
    np.testing.assert_allclose(np.asarray(result.log_weights), expected, rtol=0, atol=tol)


# ------------------------------------------------------------------ the agent

def check_rlvmr_record(p, agent: RLVMRAgent, t: int) -> dict:
    meta = check_record(p, agent="rlvmr", context="history")
    parsed = parse_response(meta["rlvmr_response"])
    assert parsed.well_formed == meta["rlvmr_well_formed"]
    assert meta["rlvmr_response"].endswith(f"<action>{p.step.action}</action>")
    assert p.step.tag == meta["rlvmr_tag"] == parsed.tag
    assert p.step.thought == parsed.content
    # the recorded reward is the rule applied to the trajectory up to this step (validity of the
    # earlier steps as the agent learnt it from info["invalid"])
    assert meta["rlvmr_reward"] == step_reward(agent.trajectory[: t + 1], t, None).to_dict()
    assert meta["guided"] == (meta["model_choice"] != p.step.action)
    # constrained: tag openings scored, the tag's line sampled, the actions scored; free: 2 calls
    assert meta["llm_calls"] == (3 if agent.constrained else 2)
    if agent.constrained:
        logp, bonus = meta["rlvmr_tag_logp"], meta["rlvmr_tag_bonus"]
        assert set(logp) == set(bonus) == set(agent.tags)
        assert meta["tag_guided"] == (p.step.tag != max(logp, key=logp.get))
    return meta


def test_rlvmr_plays_toy_household_with_admissible_actions_and_consistent_records(
    tiny_lm, household_env
):
    agent = make("rlvmr", lm=tiny_lm, seed=0)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=4)
    for t, p in enumerate(played):
        meta = check_rlvmr_record(p, agent, t)
        assert meta["rlvmr_well_formed"]  # the constrained block is always well formed
    # end_episode resolved the planning rewards with the outcome (a loss here)
    assert agent.episode_rewards == trajectory_rewards(agent.trajectory, False)
    assert agent.episode_return == pytest.approx(sum(r.total for r in agent.episode_rewards))
    info = agent.episode_info()
    assert info["rlvmr_return"] == agent.episode_return
    assert [r["meta"] + r["format"] for r in info["rlvmr_rewards"]] == pytest.approx(
        [r.total for r in agent.episode_rewards]
    )


@pytest.mark.slow
def test_rlvmr_plays_textworld_express_coin_with_admissible_actions_and_consistent_records(
    tiny_lm, coin_env
):
    agent = make("rlvmr", lm=tiny_lm, seed=0)
    played = play(agent, coin_env, tiny_lm, seed=10000, max_steps=4)
    assert len(played) == 4 or played[-1].done
    for t, p in enumerate(played):
        check_rlvmr_record(p, agent, t)


def test_explore_guidance_breaks_a_repetition_loop(tiny_lm, household_env):
    """Only <explore> allowed: with the guide's beta = inf, or beta = 100 >> any log-prob gap
    among the 13 actions of the random model, every step takes an action not taken before
    while one is left; beta = 0 (the paper's plain inference) repeats the model's favourite."""
    for beta in (float("inf"), 100.0):
        guided = RLVMRAgent(tiny_lm, seed=0, tags=("explore",), guidance=beta)
        played = play(guided, household_env, tiny_lm, seed=0, max_steps=5)
        actions = [p.step.action for p in played]
        assert len(set(actions)) == len(actions)
        assert all(p.step.meta["rlvmr_reward"]["total"] == 1.0 for p in played)
    plain = RLVMRAgent(tiny_lm, seed=0, tags=("explore",), guidance=0.0)
    played = play(plain, household_env, tiny_lm, seed=0, max_steps=5)
    assert not any(p.step.meta["guided"] for p in played)
    assert len({p.step.action for p in played}) < len(played)  # the random model loops


def test_tag_guidance_makes_the_agent_explore_while_something_is_new(tiny_lm, household_env):
    """The guide (beta_g = beta_a = inf, as in rlvmr+guide): explore can earn 1 while an
    admissible action is untried, the other tags 0 (first step: nothing failed yet; no invalid
    action in this domain), so every step explores, with a new action each time. beta_g = 0 at
    temperature 0: the model's best tag."""
    agent = RLVMRAgent(tiny_lm, seed=0, guidance=math.inf, tag_guidance=math.inf)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=4)
    assert [p.step.tag for p in played] == ["explore"] * len(played)
    assert len({p.step.action for p in played}) == len(played)
    for t, p in enumerate(played):
        meta = check_rlvmr_record(p, agent, t)
        assert meta["rlvmr_tag_bonus"] == {"planning": 0.0, "explore": 1.0, "reflection": 0.0,
                                           "monitor": 0.0}
    plain = RLVMRAgent(tiny_lm, seed=0, tag_guidance=0.0, tag_temperature=0.0)
    played = play(plain, household_env, tiny_lm, seed=0, max_steps=3)
    for t, p in enumerate(played):
        meta = check_rlvmr_record(p, plain, t)
        assert not meta["tag_guided"]


def test_rlvmr_infers_without_its_rewards_by_default_and_rlvmr_guide_uses_them(tiny_lm):
    plain = make("rlvmr", lm=tiny_lm)
    assert (plain.guidance, plain.tag_guidance) == (0.0, 0.0)
    guide = make("rlvmr+guide", lm=tiny_lm)
    assert guide.name == "rlvmr+guide" and guide.guidance == guide.tag_guidance == math.inf
    assert make("rlvmr", lm=tiny_lm, guidance="Infinity").guidance == math.inf  # CLI JSON text
    with pytest.raises(ValueError, match="action_mode='free' writes the action; use guidance=0"):
        make("rlvmr+guide", lm=tiny_lm, action_mode="free")
    assert make("rlvmr+guide", lm=tiny_lm, action_mode="free", guidance=0).tag_guidance == math.inf


def test_reflection_guidance_changes_the_action_after_an_invalid_one(tiny_lm, household_env):
    agent = RLVMRAgent(tiny_lm, seed=0, tags=("reflection",), guidance=math.inf)
    obs, info = household_env.reset(0)
    admissible = info["admissible_actions"]
    agent.reset(household_env.task, obs, admissible)
    first = agent.act(obs, admissible, info)
    assert first.meta["rlvmr_reward"]["rule"] == "first step: nothing failed"
    # the environment rejected the first action: the reflection rule now pays for a change
    second = agent.act("Nothing happens.", admissible, {**info, "invalid": True})
    assert second.action != first.action
    assert second.meta["rlvmr_reward"]["total"] == 1.0
    assert agent.trajectory[0].valid is False


def test_free_decoding_records_malformed_answers_and_their_format_penalty(tiny_lm, household_env):
    agent = RLVMRAgent(tiny_lm, seed=0, constrained=False, content_tokens=16)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=3)
    for t, p in enumerate(played):
        meta = check_rlvmr_record(p, agent, t)
        if not meta["rlvmr_well_formed"]:  # random text is almost never in the format
            assert p.step.tag is None and meta["rlvmr_format_problem"]
            assert meta["rlvmr_reward"]["format"] == -0.1
    assert any(not p.step.meta["rlvmr_well_formed"] for p in played)


def test_bad_configuration_names_the_valid_values(tiny_lm):
    with pytest.raises(ValueError, match="tags must be a non-empty subset of planning, explore"):
        RLVMRAgent(tiny_lm, tags=("think",))
    with pytest.raises(ValueError, match="guidance, tag_guidance, tag_temperature and action"):
        RLVMRAgent(tiny_lm, guidance=-1)


@pytest.mark.slow
def test_rlvmr_with_smollm2_plays_a_short_coin_episode(coin_env):
    lm = smollm2()
    agent = make("rlvmr", lm=lm, seed=0, content_tokens=24)
    played = play(agent, coin_env, lm, seed=10000, max_steps=2)
    for t, p in enumerate(played):
        meta = check_rlvmr_record(p, agent, t)
        assert meta["rlvmr_well_formed"] and p.step.tag in TAGS
