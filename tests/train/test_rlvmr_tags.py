"""RLVMR cold start: tags from a trajectory's structure, replayed prompts, a gold coin episode."""

from __future__ import annotations

import pytest

from smcplan.agents.rlvmr_rewards import TaggedStep, parse_response, trajectory_rewards
from smcplan.errors import InvalidArgumentError
from smcplan.train.rlvmr import annotate, cold_start_examples

TASK = "Your task is to find the coin. Once you find the coin, take it."


def test_rules_and_their_rewards():
    actions = ["open door to east", "jump", "move east", "move west", "move east", "take coin"]
    obs = ["The door is open.", "Unknown action.", "Hallway.", "Kitchen.", "Hallway.", "Taken."]
    scores = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    tags = [g for g, _ in annotate(TASK, actions, obs, scores)]
    assert tags == ["planning", "explore", "reflection", "explore", "monitor", "monitor"]
    steps = [
        TaggedStep(g, a, True, not o.startswith("Unknown"))
        for g, a, o in zip(tags, actions, obs, strict=True)
    ]
    rewards = trajectory_rewards(steps, success=True)
    assert all(r.total >= 0 for r in rewards)
    assert [r.meta for r in rewards] == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0]
    assert "find the coin" in annotate(TASK, actions, obs, scores)[0][1]
    with pytest.raises(InvalidArgumentError, match="one observation and score per action"):
        annotate(TASK, actions, obs[:2], scores)


def test_examples_replay_the_agent_prompt(shard):
    from smcplan.llm.testing import tiny_model
    from smcplan.train.data import read_shard

    examples = cold_start_examples(read_shard(shard).transitions, tiny_model())
    assert [(e["episode"], e["t"]) for e in examples] == [
        ("twx:coin/10000", 0),
        ("twx:coin/10000", 1),
        ("twx:coin/10001", 0),
        ("twx:coin/10001", 1),
    ]
    first, second = examples[0], examples[1]
    assert first["tag"] == "planning" and second["tag"] == "monitor"
    assert all(parse_response(e["completion"]).well_formed for e in examples)
    user = second["prompt"][-1]["content"]
    assert "Admissible actions:" in user and "Your current plan: Goal: find the coin" in user
    assert "move west" in user  # the history of the agent's context shows the first step


@pytest.mark.slow  # starts a real JVM
def test_a_gold_coin_episode_is_tagged_and_well_formed(tmp_path):
    from smcplan.llm.testing import tiny_model
    from smcplan.train.collect import collect
    from smcplan.train.data import read_shard

    out = tmp_path / "gold.jsonl"
    collect("twx:coin", [10002], out, source="gold", split="dev", max_steps=25, progress=False)
    rows = read_shard(out).transitions
    examples = cold_start_examples(rows, tiny_model())
    assert len(examples) == len(rows) and rows[-1]["won"]
    parsed = [parse_response(e["completion"]) for e in examples]
    assert all(p.well_formed for p in parsed)
    assert [p.action for p in parsed] == [r["action"] for r in rows]
    assert parsed[0].tag == "planning" and parsed[-1].tag == "monitor"
    steps = [TaggedStep(p.tag, p.action) for p in parsed]
    assert all(r.total >= 0 for r in trajectory_rewards(steps, success=True))
