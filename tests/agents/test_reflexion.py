"""Reflexion on ReAct: a verbal reflection after each failed trial, the last 3 carried into the
next trials' context, none after a win; whole episodes with consistent records."""

from __future__ import annotations

import pytest

from smcplan.agents import make
from smcplan.agents.reflexion import ReflexionAgent
from smcplan.llm import ActionProposal
from tests.agents.conftest import check_record, play
from tests.agents.test_rlaw import smollm2


class Spy:
    """A proposal role that records the observation text it was shown, delegating to the real one.
    """

    def __init__(self, inner):
        self.inner = inner
        self.seen: list[str] = []

    def __call__(self, tasks, triplets, observations, admissible, seed=None):
        self.seen.extend(observations)
        return self.inner(tasks, triplets, observations, admissible, seed=seed)


def test_failed_trials_leave_reflections_and_the_last_three_are_carried(tiny_lm, household_env):
    spy = Spy(ActionProposal(tiny_lm, temperature=0.0, think=True))
    agent = ReflexionAgent(tiny_lm, seed=0, proposer=spy, reflection_temperature=1.0)
    trials = []
    for trial in range(5):
        played = play(agent, household_env, tiny_lm, seed=0, max_steps=2)
        assert len(agent.reflections) == trial + 1  # failed (2 steps never take the key here)
        trials.append(played)
    assert [r["trial"] for r in agent.reflections] == [0, 1, 2, 3, 4]
    texts = [r["reflection"] for r in agent.reflections]
    assert all(texts), "temperature 1 reflections of the random model are non-empty"
    for k, played in enumerate(trials):
        carried = texts[max(0, k - 3) : k]  # what trial k sees: the last 3 earlier reflections
        for p in played:
            meta = check_record(p, agent="reflexion", context="history")
            assert meta["reflexion_trial"] == k
            assert meta["reflections_in_context"] == carried
        shown = spy.seen[2 * k]  # the first proposal prompt of trial k
        for j, text in enumerate(carried):
            assert f"Reflection on trial {k - len(carried) + j + 1}: {text}" in shown
        if k >= 4:
            assert f"Reflection on trial {k - 3}:" not in shown  # dropped: only 3 are kept
    # the reflection call is counted once, as model work between steps (at the next trial's start)
    assert trials[1][0].step.meta["llm_usage_between"]["calls"] == 1
    assert trials[0][0].step.meta["llm_usage_between"]["calls"] == 0


def test_a_won_trial_writes_no_reflection(tiny_lm, household_env):
    agent = ReflexionAgent(tiny_lm, seed=0)
    obs, info = household_env.reset(0)
    agent.reset(household_env.task, obs, info["admissible_actions"])
    agent.act(obs, info["admissible_actions"], info)
    agent.end_episode(True, 1.0)
    assert agent.reflections == [] and agent.notes() == []
    agent.end_episode(False, 0.0)
    assert len(agent.reflections) == 1


def test_the_reflection_sees_the_failed_trajectory_and_its_score(tiny_lm, household_env):
    seen = []

    def reflector(task, trajectory, score, seed):
        seen.append((task, trajectory, score))
        return "  open the drawers   first  "

    agent = ReflexionAgent(tiny_lm, seed=0, reflector=reflector)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=2)
    ((task, trajectory, score),) = seen
    assert task == household_env.task and score == 0.0
    for p in played:  # every executed action, the last one included
        assert f"> {p.step.action}" in trajectory
    assert trajectory.endswith(f"> {played[-1].step.action}\n(the trial ended here, score 0.00)")
    assert agent.notes() == ["Reflection on trial 1: open the drawers first"]


def test_bad_configuration_names_the_value(tiny_lm):
    with pytest.raises(ValueError, match="got 0, 96, 768"):
        ReflexionAgent(tiny_lm, max_reflections=0)


@pytest.mark.slow
def test_reflexion_plays_textworld_express_coin_with_admissible_actions_and_consistent_records(
    tiny_lm, coin_env
):
    agent = make("reflexion", lm=tiny_lm, seed=0)
    for trial in range(2):
        before = [r["reflection"] for r in agent.reflections]
        played = play(agent, coin_env, tiny_lm, seed=10000, max_steps=3)
        for p in played:
            meta = check_record(p, agent="reflexion", context="history")
            assert meta["reflexion_trial"] == trial
            assert meta["reflections_in_context"] == before[-3:]


@pytest.mark.slow
def test_reflexion_with_smollm2_reflects_after_a_short_failed_coin_trial(coin_env):
    lm = smollm2()
    agent = make("reflexion", lm=lm, seed=0, reflection_tokens=32)
    for trial in range(2):
        played = play(agent, coin_env, lm, seed=10000, max_steps=1)
        for p in played:
            meta = check_record(p, agent="reflexion", context="history")
            assert meta["reflexion_trial"] == trial
    (first, second) = agent.reflections  # one step never collects the coin: both trials failed
    assert first["reflection"].strip() and second["trial"] == 1
    assert played[0].step.meta["reflections_in_context"] == [first["reflection"]]
