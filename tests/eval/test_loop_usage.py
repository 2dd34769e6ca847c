"""The harness counts every model an agent calls: a separate critic (RLAW's trained one) or a
learned world model is a second model object, and its calls and tokens are in the step records
and the episode summary, not only the agent's own model's."""

from __future__ import annotations

import pytest

from smcplan.agents import make
from smcplan.envs import make as make_env
from smcplan.eval.episodes import EpisodeSpec
from smcplan.eval.loop import EpisodeLog, agent_models, run_episode, usage
from smcplan.eval.records import JsonlWriter, read_jsonl
from smcplan.llm.testing import tiny_model

pytestmark = pytest.mark.slow  # a TextWorldExpress JVM


def test_a_separate_critics_calls_are_counted_in_the_steps_and_the_episode(tmp_path):
    actor, critic = tiny_model(0), tiny_model(1)
    agent = make("rlaw", lm=actor, critic_lm=critic, seed=0)
    assert agent_models(agent, actor) == [actor, critic] and agent_models(agent, None) == []
    env = make_env("twx:coin", split="dev")
    spec, log = EpisodeSpec("twx:coin", 10000), EpisodeLog()
    path = tmp_path / "steps.jsonl"
    before = (usage(actor), usage(critic))
    writer = JsonlWriter(path)
    try:
        run_episode(spec, env, agent, max_steps=2, trials=1, writer=writer,
                    episode_id=spec.id, log=log, lm=actor)  # fmt: skip
        writer.commit()
    finally:
        writer.close()
        env.close()
    steps = list(read_jsonl(path))
    critic_calls = usage(critic)["calls"] - before[1]["calls"]
    actor_calls = usage(actor)["calls"] - before[0]["calls"]
    assert critic_calls >= len(steps) == 2  # the critic judged every step
    for r in steps:  # measured around act over both models; the agent's meter counts the same
        assert r["llm_calls"] == r["meta"]["llm_calls"]
        assert r["llm_tokens"] == r["meta"]["llm_tokens"]
    assert sum(r["llm_calls"] for r in steps) == actor_calls + critic_calls
    episode = log.usage_since(before[0], actor)
    assert episode["calls"] == actor_calls + critic_calls
