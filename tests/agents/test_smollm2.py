"""The real model: one short episode of ReAct and of NeSyFS with SmolLM2-135M on TextWorldExpress.

Slow (loads SmolLM2 and a JVM). Sized for 2 shared CPU cores: 2 steps each, one model thread,
NeSyFS with N = 2 particles and H = 1 so that a step that falls to slow thinking stays short.
"""

from __future__ import annotations

import pytest

from smcplan.agents import make
from tests.agents.conftest import check_record, play


@pytest.fixture(scope="module")
def smollm2():
    from smcplan.llm import load_model

    return load_model(threads=1)


@pytest.mark.slow
def test_react_with_smollm2_plays_a_short_coin_episode(smollm2, coin_env):
    agent = make("react", lm=smollm2, seed=0)
    played = play(agent, coin_env, smollm2, seed=10000, max_steps=2)
    for p in played:
        check_record(p, agent="react", context="history")
        assert p.step.thought  # a real sentence from the model, not empty


@pytest.mark.slow
def test_nesyfs_with_smollm2_plays_a_short_coin_episode(smollm2, coin_env):
    agent = make("nesyfs", lm=smollm2, seed=0, num_particles=2, horizon=1)
    played = play(agent, coin_env, smollm2, seed=10000, max_steps=2)
    for p in played:
        meta = check_record(p, agent="nesyfs", context="kg")
        assert all(len(v) == 5 for v in meta["reflection_votes"])
        assert meta["rejections"] <= 3 and meta["kg_extractor"] == "rule"
        assert ("kitchen" in " ".join(meta["kg_retrieved"])) or p.step.meta["kg_size"] > 0
