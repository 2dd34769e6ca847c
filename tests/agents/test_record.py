"""The per-step record: schema keys, usage arithmetic, JSON/UTF-8 safety, and the registry."""

from __future__ import annotations

import json

import pytest

from smcplan.agents import AGENTS, make
from smcplan.agents.record import SCHEMA_KEYS, StepRecord, UsageMeter, clean_text, jsonable


def test_finish_has_every_schema_key_and_counts_tokens_as_the_sum_of_the_three_counters():
    rec = StepRecord("nesyfs", "kg")
    rec.proposed("look", "hmm", -0.1, -0.2)
    rec.rejected_proposal("look", "hmm", "reflection", "no use", score=0.2)
    rec.reflected([True, False, False, False, False], 0.2)
    meta = rec.finish(
        {"calls": 3, "prompt_tokens": 100, "generated_tokens": 20, "scored_tokens": 5}
    )
    assert set(SCHEMA_KEYS) <= set(meta)
    assert meta["llm_calls"] == 3 and meta["llm_tokens"] == 125 and meta["rejections"] == 1
    assert meta["llm_usage_between"] == {
        "calls": 0,
        "prompt_tokens": 0,
        "generated_tokens": 0,
        "scored_tokens": 0,
        "cached_tokens": 0,
    }


def test_agent_specific_keys_may_not_shadow_schema_keys():
    rec = StepRecord("x", "history")
    rec.extra["rejections"] = 7
    with pytest.raises(ValueError, match="shadow"):
        rec.finish(
            dict.fromkeys(("calls", "prompt_tokens", "generated_tokens", "scored_tokens"), 0)
        )


def test_usage_meter_counts_each_model_object_once():
    class U:
        calls, prompt_tokens, generated_tokens, scored_tokens = 2, 10, 3, 1

    class LM:
        usage = U()

    lm = LM()
    meter = UsageMeter([lm, lm])
    meter.add(lm)
    # a model object without the newer cached_tokens counter counts 0 there
    assert meter.snapshot() == {
        "calls": 2,
        "prompt_tokens": 10,
        "generated_tokens": 3,
        "scored_tokens": 1,
        "cached_tokens": 0,
    }


def test_records_are_json_and_utf8_safe():
    lone = json.loads('"a\\ud85db"')  # a lone surrogate, as a model's JSON escape can produce
    out = jsonable({"x": float("-inf"), "s": [lone], "n": 1})
    assert out == {"x": "-inf", "s": ["a\ufffdb"], "n": 1}
    json.dumps(out, ensure_ascii=False).encode("utf-8")
    assert clean_text("plain") == "plain"


def test_make_names_the_known_agents_and_builds_random_without_a_model():
    with pytest.raises(ValueError, match="unknown agent 'reakt'; known: nesyfs, random, react"):
        make("reakt")
    assert make("random", seed=3).act("o", ["a", "b"], {}).action in ("a", "b")
    assert set(AGENTS) == {
        "random", "react", "nesyfs", "reflexion", "zeroshot", "rlaw", "rlvmr", "rlvmr+guide"
    }
    assert [n for n, s in AGENTS.items() if not s.lm] == ["random"]
    assert all(s.seed and not s.simulator for s in AGENTS.values())


def test_llm_agents_need_a_model():
    with pytest.raises(ValueError, match="needs lm="):
        make("react")


def test_unknown_context_is_named(tiny_lm):
    with pytest.raises(ValueError, match="unknown context 'graph'; known: history, kg, belief"):
        make("nesyfs", lm=tiny_lm, context="graph")
