"""Free-form actions (``action_mode="free"``): written commands reach the real environments, a
rejected one is recorded and counted (HR, invalid/step), and the episode goes on."""

from __future__ import annotations

import re

import pytest

from smcplan.agents import make
from smcplan.envs.grammar import ALFWORLD_VERBS, TWX_VERBS
from smcplan.eval.metrics import aggregate, episode_stats
from smcplan.eval.report import load_run, variant
from smcplan.eval.runner import EvalConfig, run_eval
from smcplan.llm.roles.free_action import action_regex
from tests.agents.conftest import play


def harness_run(tmp_path, env, seed, agent, agent_config, lm, max_steps, env_config=None):
    cfg = EvalConfig(
        envs=[env], agent=agent, out=str(tmp_path / "run"), seeds=[seed], max_steps=max_steps,
        agent_config=agent_config, env_config=env_config or {},
    )
    (summary,) = run_eval(cfg, load_lm=lambda *_: lm, progress=False)
    return summary, load_run(tmp_path / "run")


def steps_of(run, summary):
    return run.steps(summary["episode"])


# ------------------------------------------------------------------ the grammar


def test_action_regex_allows_a_known_verb_with_free_arguments_only():
    rx = re.compile(action_regex(["go to", "take", "look"], suffix='"}'))
    for ok in ('take unicorn"}', 'go to countertop 1"}', 'look"}', "take bob's hat-2\"}"):
        assert rx.fullmatch(ok), ok
    for bad in ('eat apple"}', 'Take apple"}', 'take apple', 'take "x"}', 'take <a>"}'):
        assert not rx.fullmatch(bad), bad
    free = re.compile(action_regex(None, "</action>"))
    assert free.fullmatch("search[red shoes]</action>") and not free.fullmatch("a<b</action>")
    with pytest.raises(ValueError, match="bad command verb 'Go To'"):
        action_regex(["Go To"])
    with pytest.raises(ValueError, match="non-empty list of command verbs"):
        action_regex([])


def test_agents_reject_an_unknown_action_mode(tiny_lm):
    with pytest.raises(ValueError, match="action_mode must be one of admissible, free; got 'json'"):
        make("react", lm=tiny_lm, action_mode="json")
    with pytest.raises(ValueError, match="action_mode='free' needs decoding='json'"):
        make("rlaw", lm=tiny_lm, action_mode="free", decoding="scored")


# ------------------------------------------------------------------ a made-up object, real envs


@pytest.mark.slow  # one TWX JVM and the harness (~20 s)
def test_twx_made_up_object_is_rejected_and_the_episode_goes_on_to_win(tmp_path, tiny_lm):
    from smcplan.envs import make as make_env

    with make_env("twx:coin") as env:
        _obs, info = env.reset(10000)
        gold = env.gold_actions()
        assert info["action_verbs"] == list(TWX_VERBS["coin"])
        bad = env.step("take unicorn")  # the environment itself: rejected, not over
        assert bad.info["invalid"] and not bad.done and "unicorn" not in " ".join(
            bad.info["admissible_actions"]
        )
    plan = ["take unicorn", *gold]  # the zero-shot agent executes a fixed plan as written
    summary, run = harness_run(
        tmp_path, "twx:coin", 10000, "zeroshot", {"action_mode": "free", "plan": plan}, tiny_lm,
        max_steps=len(plan) + 2,
    )
    steps = steps_of(run, summary)
    assert [s["action"] for s in steps] == plan
    assert steps[0]["invalid"] and not steps[0]["admissible"]
    assert steps[0]["meta"]["admissible"] is False and steps[0]["meta"]["action_mode"] == "free"
    assert not any(s["invalid"] for s in steps[1:])
    assert summary["won"] and summary["stats"]["invalid_steps"] == 1
    m = run.metrics["twx:coin"]
    assert m.hallucination_rate.value == 1.0  # 1 of 1 episodes had a rejected action
    assert m.invalid_rate.value == pytest.approx(1 / len(plan))
    assert variant(run.config) == "free"  # the report labels the row "zeroshot {free}"


@pytest.mark.slow  # generates (or reads the cached) ALFWorld game and plays it (~30 s)
def test_alfworld_made_up_object_is_rejected_and_the_episode_goes_on_to_win(tmp_path, tiny_lm):
    from smcplan.envs import make as make_env

    env = make_env("alfworld:pick_and_place", seed=0)
    try:
        _obs, info = env.reset(0)
        gold = env.gold_actions()
        assert info["action_verbs"] == list(ALFWORLD_VERBS)
    finally:
        env.close()
    plan = ["take unicorn 1 from countertop 1", *gold]
    summary, run = harness_run(
        tmp_path, "alfworld:pick_and_place", 0, "zeroshot",
        {"action_mode": "free", "plan": plan}, tiny_lm, max_steps=len(plan) + 2,
    )
    steps = steps_of(run, summary)
    assert steps[0]["action"] == plan[0] and steps[0]["invalid"]
    assert "Nothing happens" in steps[0]["feedback"]
    assert not any(s["invalid"] for s in steps[1:])
    assert summary["won"]
    m = run.metrics["alfworld:pick_and_place"]
    assert m.hallucination_rate.value == 1.0
    assert m.invalid_rate.value == pytest.approx(1 / len(plan))


# ------------------------------------------------------------------ the model writes the actions


def written_steps(played, verbs):
    for p in played:
        action = p.step.action
        assert action.strip() and action.split(" ", 1)[0] in {v.split(" ")[0] for v in verbs}
        assert p.step.meta["action_mode"] == "free"
        assert p.step.meta["admissible"] == (action in p.admissible)
    return [p.step.action for p in played]


@pytest.mark.slow  # tiny model, one TWX JVM
@pytest.mark.parametrize("agent", ["react", "nesyfs", "rlaw", "rlvmr", "reflexion", "zeroshot"])
def test_every_llm_agent_writes_grammatical_actions_on_twx(agent, tiny_lm, coin_env):
    extra = {"num_particles": 2, "horizon": 1, "max_rejections": 1} if agent == "nesyfs" else {}
    if agent == "rlaw":
        extra = {"max_regenerations": 0}
    a = make(agent, lm=tiny_lm, seed=0, action_mode="free", **extra)
    played = play(a, coin_env, tiny_lm, seed=10000, max_steps=3)
    actions = written_steps(played if agent != "nesyfs" else
                            [p for p in played if p.step.meta.get("executed") != "planner"],
                            TWX_VERBS["coin"])
    if agent != "nesyfs":
        assert len(actions) == len(played)


@pytest.mark.slow
def test_random_model_in_free_mode_hallucinates_and_the_harness_counts_it(tmp_path, tiny_lm):
    """The random-weight model writes arguments of random words: the environment rejects them,
    the agent carries on (no AgentError), every step is recorded, HR = 1 and invalid/step > 0."""
    summary, run = harness_run(
        tmp_path, "twx:coin", 10000, "react", {"action_mode": "free"}, tiny_lm, max_steps=4
    )
    steps = steps_of(run, summary)
    assert summary["status"] == "ok" and len(steps) == 4
    invalid = [s for s in steps if s["invalid"]]
    assert invalid and all(not s["admissible"] for s in invalid)
    stats = episode_stats(steps, env="twx:coin", won=summary["won"], score=summary["score"])
    m = aggregate([stats], num_resamples=50)
    assert m.hallucination_rate.value == 1.0
    assert m.invalid_rate.value == pytest.approx(len(invalid) / 4)


def test_admissible_mode_still_refuses_an_inadmissible_choice(tiny_lm, household_env):
    agent = make("zeroshot", lm=tiny_lm, plan=["fly away"], action_mode="admissible")
    obs, info = household_env.reset(0)
    agent.reset(household_env.task, obs, info["admissible_actions"])
    step = agent.act(obs, info["admissible_actions"], info)  # mapped onto the admissible set
    assert step.action in info["admissible_actions"]
    free = make("zeroshot", lm=tiny_lm, plan=["fly away"], action_mode="free")
    free.reset(household_env.task, obs, info["admissible_actions"])
    assert free.act(obs, info["admissible_actions"], info).action == "fly away"
