"""ReAct on the shared parts: whole episodes with the tiny model, admissible actions only, records
consistent; the history it shows the model is the newest part that fits the budget."""

from __future__ import annotations

import pytest

from smcplan.agents import make
from tests.agents.conftest import check_record, play


@pytest.mark.slow
def test_react_plays_textworld_express_coin_with_admissible_actions_and_consistent_records(
    tiny_lm, coin_env
):
    agent = make("react", lm=tiny_lm, seed=0)
    played = play(agent, coin_env, tiny_lm, seed=10000, max_steps=4)
    assert len(played) == 4 or played[-1].done
    for p in played:
        meta = check_record(p, agent="react", context="history")
        assert len(meta["proposals"]) == 1 and meta["rejections"] == 0
        assert meta["executed"] == "proposal" and not meta["slow_thinking"]
        assert p.step.thought  # ReAct thinks before acting
        assert meta["proposals"][0]["thought"].strip() == p.step.thought


def test_react_plays_toy_household_with_admissible_actions_and_consistent_records(
    tiny_lm, household_env
):
    agent = make("react", lm=tiny_lm, seed=1)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=4)
    for p in played:
        check_record(p, agent="react", context="history")


class _Spy:
    """A proposal role that records what it was shown and delegates to the real one."""

    def __init__(self, inner):
        self.inner = inner
        self.seen: list[str] = []

    def __call__(self, tasks, triplets, observations, admissible, seed=None):
        self.seen.extend(observations)
        return self.inner(tasks, triplets, observations, admissible, seed=seed)


def test_react_shows_the_newest_history_cut_to_its_token_budget(tiny_lm, household_env):
    from smcplan.llm import ActionProposal

    spy = _Spy(ActionProposal(tiny_lm, temperature=0.0, think=False))
    budget = 60
    agent = make("react", lm=tiny_lm, seed=0, proposer=spy, history_tokens=budget)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=6)
    last_shown = spy.seen[-1]
    history = last_shown.split("What happened so far:\n", 1)[1].split("\nCurrent observation:")[0]
    assert agent.counter(history) <= budget
    # the newest executed action is in the shown history, the oldest ones were cut
    assert f"> {played[-2].step.action}" in history
    assert "earlier steps not shown" in history
