"""Zero-shot (RLAW's Base-LLM baseline): one plan from the first observation, executed open loop,
each command mapped onto the admissible set of its step, mismatches recorded."""

from __future__ import annotations

import json

import numpy as np
import pytest

from smcplan.agents import make
from smcplan.agents.record import SCHEMA_KEYS
from smcplan.agents.zeroshot import ZeroShotAgent, match_admissible, normalize_action
from tests.agents.conftest import play
from tests.agents.test_rlaw import smollm2


def check_zeroshot_record(p, t: int) -> dict:
    """The record schema, and the zero-shot fields consistent with the action taken."""
    meta = p.step.meta
    assert p.step.action in p.admissible
    assert not [k for k in SCHEMA_KEYS if k not in meta]
    assert meta["agent"] == "zeroshot" and meta["executed"] == "proposal"
    assert meta["llm_usage"] == p.measured
    assert meta["llm_tokens"] == sum(  # cached_tokens is a part of prompt_tokens
        p.measured[k] for k in ("prompt_tokens", "generated_tokens", "scored_tokens")
    )
    (prop,) = meta["proposals"]
    assert prop["action"] == p.step.action and prop["source"] == "plan"
    assert meta["plan_index"] == t and meta["mapping"] == prop["mapping"]
    planned = meta["planned_action"]
    if meta["mapping"] in ("exact", "normalized"):
        assert match_admissible(planned, p.admissible) == (p.step.action, meta["mapping"])
    elif meta["mapping"] == "logprob":  # a mismatch: the model scored the admissible set
        assert meta["plan_mismatch"] and match_admissible(planned, p.admissible)[0] is None
        assert meta["llm_calls"] == (2 if t == 0 else 1)
    else:
        assert meta["mapping"] == "beyond_plan" and planned is None and not meta["plan_mismatch"]
    json.dumps(meta, ensure_ascii=False)
    return meta


def test_the_plan_is_made_once_from_the_first_observation(tiny_lm, household_env):
    agent = ZeroShotAgent(tiny_lm, seed=0, plan_temperature=1.0, plan_tokens=64)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=4)
    first = check_zeroshot_record(played[0], 0)
    plan = first["zeroshot_plan"]
    assert isinstance(plan, list) and len(plan) <= agent.max_actions
    assert plan == agent.plan
    for t, p in enumerate(played[1:], start=1):
        meta = check_zeroshot_record(p, t)
        assert "zeroshot_plan" not in meta  # no replanning: open loop
        assert meta["planned_action"] == (plan[t] if t < len(plan) else None)


def test_exact_normalised_mismatched_and_exhausted_plan_steps_are_mapped_and_recorded(
    tiny_lm, household_env
):
    # household (seed 0): the admissible set stays the same until the key is taken
    plan = ["look", "  Open   Drawer 1.", "search the fridge"]
    agent = ZeroShotAgent(tiny_lm, seed=0, plan=plan)
    played = play(agent, household_env, tiny_lm, seed=0, max_steps=4)
    mappings = [p.step.meta["mapping"] for p in played]
    assert mappings[:3] == ["exact", "normalized", "logprob"]
    assert played[0].step.action == "look" and played[1].step.action == "open drawer 1"
    assert played[0].step.meta["llm_calls"] == 0  # an exact command needs no model
    assert [p.step.meta["plan_mismatch"] for p in played[:3]] == [False, False, True]
    if len(played) > 3:
        assert mappings[3] == "beyond_plan"
    for t, p in enumerate(played):
        check_zeroshot_record(p, t)


def test_a_mismatch_is_mapped_to_the_models_most_likely_admissible_command(tiny_lm, household_env):
    agent = ZeroShotAgent(tiny_lm, seed=0, plan=["fetch the key"])
    obs, info = household_env.reset(0)
    admissible = info["admissible_actions"]
    agent.reset(household_env.task, obs, admissible)
    step = agent.act(obs, admissible, info)
    scores = agent.score_at(0, admissible)
    assert step.action == admissible[int(scores.argmax())]
    assert step.meta["proposals"][0]["logp"] == pytest.approx(
        float(scores.max() - np.logaddexp.reduce(scores))
    )


def test_normalize_action_folds_case_space_and_end_punctuation():
    assert normalize_action('  "Take  Coin!" ') == "take coin"
    assert match_admissible(None, ["look"]) == (None, "mismatch")


def test_bad_configuration_names_the_value(tiny_lm):
    with pytest.raises(ValueError, match="need max_actions >= 1 and plan_tokens >= 1; got 0, 8"):
        ZeroShotAgent(tiny_lm, max_actions=0, plan_tokens=8)
    with pytest.raises(ValueError, match="agent 'zeroshot' needs lm="):
        ZeroShotAgent()


def test_zeroshot_plays_toy_household_with_admissible_actions(tiny_lm, household_env):
    agent = make("zeroshot", lm=tiny_lm, seed=2)
    played = play(agent, household_env, tiny_lm, seed=1, max_steps=4)
    for t, p in enumerate(played):
        check_zeroshot_record(p, t)


@pytest.mark.slow
def test_zeroshot_plays_textworld_express_coin_with_admissible_actions(tiny_lm, coin_env):
    agent = make("zeroshot", lm=tiny_lm, seed=0, plan_temperature=1.0)
    played = play(agent, coin_env, tiny_lm, seed=10000, max_steps=4)
    assert len(played) == 4 or played[-1].done
    for t, p in enumerate(played):
        check_zeroshot_record(p, t)


@pytest.mark.slow
def test_zeroshot_with_smollm2_plays_a_short_coin_episode(coin_env):
    lm = smollm2()
    agent = make("zeroshot", lm=lm, seed=0, plan_tokens=48)
    played = play(agent, coin_env, lm, seed=10000, max_steps=2)
    plan = played[0].step.meta["zeroshot_plan"]
    assert plan and all(b.strip() for b in plan)  # the real model writes commands
    for t, p in enumerate(played):
        check_zeroshot_record(p, t)
