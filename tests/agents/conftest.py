"""Fixtures for the agent tests: the tiny random-weight model, environments, an episode runner
that measures LLM usage around ``act`` like the evaluation harness, and the record checks."""

from __future__ import annotations

import gc
import json
import os
from dataclasses import dataclass
from typing import Any

import pytest

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from smcplan.agents.record import SCHEMA_KEYS, USAGE_KEYS  # noqa: E402


@pytest.fixture(scope="session")
def tiny_lm():
    from smcplan.llm.testing import tiny_model

    return tiny_model()


@pytest.fixture(scope="session", autouse=True)
def no_java_process_left_behind():
    yield
    try:
        from smcplan.envs._jvm import live_pids
    except ImportError:  # pragma: no cover - envs without the JVM helper
        return
    gc.collect()
    assert not live_pids(), f"JVMs still running after the agent tests: {sorted(live_pids())}"


@pytest.fixture
def coin_env():
    from smcplan.envs import make

    env = make("twx:coin", split="dev", max_steps=50)
    yield env
    env.close()


@pytest.fixture(scope="session")
def household_env():
    """One toy:household env for the session (building it compiles the POMDP, ~2 s); every
    test resets it with a seed, which fixes the whole episode."""
    from smcplan.envs import make

    env = make("toy:household")
    yield env
    env.close()


@dataclass
class Played:
    """One played step: what the agent saw, what it returned, the usage measured around act."""

    observation: str
    admissible: list[str]
    step: Any
    measured: dict[str, int]
    done: bool


def usage_of(lm) -> dict[str, int]:
    return {k: int(getattr(lm.usage, k)) for k in USAGE_KEYS}


def play(agent, env, lm, *, seed: int = 0, max_steps: int = 4) -> list[Played]:
    """Run one episode like the harness (reset, act/step until done or ``max_steps``)."""
    obs, info = env.reset(seed)
    actions = list(info["admissible_actions"])
    agent.reset(env.task, obs, actions)
    out = []
    for _ in range(max_steps):
        before = usage_of(lm)
        step = agent.act(obs, actions, info)
        after = usage_of(lm)
        measured = {k: after[k] - before[k] for k in USAGE_KEYS}
        obs2, _reward, done, info = env.step(step.action)
        out.append(Played(obs, actions, step, measured, bool(done)))
        if done:
            break
        obs, actions = obs2, list(info["admissible_actions"])
    agent.end_episode(bool(info.get("won")), float(info.get("score", 0.0)))
    return out


def check_record(p: Played, *, agent: str, context: str) -> dict[str, Any]:
    """The per-step record schema of ``smcplan.agents.record`` and its internal consistency."""
    step, meta = p.step, p.step.meta
    assert step.action in p.admissible
    assert isinstance(step.thought, str)
    missing = [k for k in SCHEMA_KEYS if k not in meta]
    assert not missing, f"meta lacks {missing}"
    assert meta["agent"] == agent and meta["context"] == context
    # usage: equal to what a harness measures around act; tokens = prompt + generated + scored
    # (cached_tokens is the part of prompt_tokens the prefix cache served)
    assert meta["llm_usage"] == p.measured
    assert meta["llm_calls"] == p.measured["calls"] > 0
    assert meta["llm_tokens"] == sum(
        p.measured[k] for k in ("prompt_tokens", "generated_tokens", "scored_tokens")
    )
    assert 0 <= p.measured["cached_tokens"] <= p.measured["prompt_tokens"]
    # proposals, rejections, votes
    props, rejected = meta["proposals"], meta["rejected_proposals"]
    assert props, "every LLM step records at least one proposal"
    assert all(x["action"] in p.admissible for x in props)
    assert meta["rejections"] == len(rejected)
    for r, q in zip(rejected, props, strict=False):  # rejections are the first proposals, in order
        assert r["action"] == q["action"]
    assert len(meta["reflection_votes"]) == len(meta["reflection_yes_fraction"])
    for votes, frac in zip(meta["reflection_votes"], meta["reflection_yes_fraction"], strict=True):
        assert frac == pytest.approx(sum(votes) / len(votes))
    # slow thinking and how the action was chosen
    assert meta["slow_thinking"] == (meta["plan"] is not None)
    assert meta["executed"] in ("proposal", "planner", "fallback", "critic")
    if meta["executed"] == "planner":
        assert meta["slow_thinking"] and meta["plan"]["action"] == step.action
    elif meta["executed"] == "critic":  # RLAW fallback="critic": an action nobody proposed
        assert step.action in meta["critic_ranked"]
        assert step.action not in {x["action"] for x in props}
    elif meta["executed"] == "proposal":
        assert step.action == props[-1]["action"] and len(rejected) == len(props) - 1
    # the record survives the harness's JSON lines (UTF-8)
    json.dumps(meta, ensure_ascii=False).encode("utf-8")
    return meta
