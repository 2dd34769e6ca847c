"""Specification of LanguageModel.sample/generate/logprob on the tiny random-weight model."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from smcplan.llm.constrained import GenerationError, json_max_bytes, output_spec
from tests.tolerance import llama_logprob_tol


def tol(lm, texts, prompts=()):
    """Tolerance of log-prob sums over the longest of ``texts`` (token counts) scored by two
    float32 passes of other batch shapes: tests/tolerance.py's rounding model in the model's
    sizes; context = longest prompt + continuation."""
    n = max(len(t) for t in texts)
    ctx = max((len(lm.encode_prompt(p)) for p in prompts), default=0) + n + 1
    return llama_logprob_tol(lm.model, n, ctx)


def manual_logprob(lm, prompt, continuation_ids):
    """Σ_j log p(y_j | x, y_<j) from one unpadded forward pass over prompt + continuation."""
    p_ids = lm.encode_prompt(prompt)
    ids = torch.tensor([p_ids + list(continuation_ids)])
    with lm._threading(), torch.inference_mode():
        logp = torch.log_softmax(lm.model(input_ids=ids).logits.float(), -1)[0]
    m = len(continuation_ids)
    if m == 0:
        return 0.0
    positions = torch.arange(len(p_ids) - 1, len(p_ids) - 1 + m)
    return float(logp[positions, torch.tensor(continuation_ids)].sum())


PROMPTS = ["look", "look", "look", "you are in a much longer kitchen prompt with a table", "a"]
CONTS = ["go north", "take coin from table", "x", "open the fridge", "é ünïcode ✓"]


@pytest.mark.parametrize("reuse_cache", [True, False])
def test_logprob_equals_manual_per_token_sum(tiny, reuse_cache):
    got = tiny.logprob(PROMPTS, CONTS, reuse_cache=reuse_cache)
    want = [
        manual_logprob(tiny, p, tiny.encode_continuation(c))
        for p, c in zip(PROMPTS, CONTS, strict=True)
    ]
    # float32 forward passes of different batch shapes: rounding model, ~1e-4 nats per token
    t = tol(tiny, [tiny.encode_continuation(c) for c in CONTS], PROMPTS)
    np.testing.assert_allclose(got, want, rtol=0, atol=t)


def test_logprob_with_eos_adds_the_end_of_turn_token(tiny):
    got = tiny.logprob(PROMPTS, CONTS, add_eos=True)
    want = [
        manual_logprob(tiny, p, tiny.encode_continuation(c) + [tiny.eos_token_id])
        for p, c in zip(PROMPTS, CONTS, strict=True)
    ]
    t = tol(tiny, [tiny.encode_continuation(c) + [0] for c in CONTS], PROMPTS)
    np.testing.assert_allclose(got, want, rtol=0, atol=t)


def test_logprob_small_chunks_give_the_same_scores(tiny):
    whole = tiny.logprob(PROMPTS, CONTS)
    chunked = tiny.logprob(PROMPTS, CONTS, max_batch_tokens=16)
    t = tol(tiny, [tiny.encode_continuation(c) for c in CONTS], PROMPTS)
    np.testing.assert_allclose(whole, chunked, rtol=0, atol=t)


def test_logprob_of_empty_continuation_is_zero_and_chat_messages_work(tiny):
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    got = tiny.logprob([chat, "hi"], ["", "x"])
    assert got[0] == 0.0
    x = tiny.encode_continuation("x")
    assert got[1] == pytest.approx(manual_logprob(tiny, "hi", x), abs=tol(tiny, [x], ["hi"]))


def test_logprob_rejects_mismatched_or_string_inputs(tiny):
    with pytest.raises(ValueError, match="2 prompts but 1 continuations"):
        tiny.logprob(["a", "b"], ["x"])
    with pytest.raises(TypeError, match="lists"):
        tiny.logprob("a", "x")


def test_prompt_uses_the_chat_template_with_generation_prompt(tiny):
    text = tiny.format_prompt(
        [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}], "pre"
    )
    assert (
        text
        == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
        "<|im_start|>assistant\npre"
    )


def test_sample_logp_is_the_model_log_probability_of_the_generated_tokens(tiny):
    (group,) = tiny.sample(["tell me"], None, n=3, max_new_tokens=8, seed=3)
    for s in group:
        assert s.num_tokens == len(s.token_ids)
        t = tol(tiny, [s.token_ids], ["tell me"])
        assert s.logp == pytest.approx(manual_logprob(tiny, "tell me", s.token_ids), abs=t)
        # unconstrained, T = 1, top_p = 1: the proposal is the model itself; q and p are
        # float32 log-softmaxes of the same logits, summed separately (t bounds both roundings)
        assert s.logq == pytest.approx(s.logp, abs=t)


def test_constrained_logq_is_at_least_logp(tiny):
    # q_t = m_t p_t / Σ m p  with Σ m p <= 1, so log q >= log p token by token
    out = tiny.sample(["pick"] * 4, ["go north", "go south", "take coin from table"], seed=0)
    for (s,) in out:
        assert s.finished
        assert s.logq >= s.logp - 1e-9
        assert s.logq <= 1e-9


def test_same_seed_same_outputs_different_seed_differs(tiny):
    a = tiny.generate(["x", "y"], None, n=2, max_new_tokens=12, seed=7)
    b = tiny.generate(["x", "y"], None, n=2, max_new_tokens=12, seed=7)
    c = tiny.generate(["x", "y"], None, n=2, max_new_tokens=12, seed=8)
    assert a == b
    assert a != c


def test_unseeded_calls_follow_the_construction_seed():
    from smcplan.llm.testing import tiny_model

    first, second = tiny_model(seed=0), tiny_model(seed=0)
    assert [first.generate(["q"], None, max_new_tokens=6) for _ in range(2)] == [
        second.generate(["q"], None, max_new_tokens=6) for _ in range(2)
    ]


def test_tiny_top_p_is_greedy(tiny):
    greedy = tiny.generate(["x", "yy"], None, max_new_tokens=10, temperature=0)
    nucleus = tiny.generate(
        ["x", "yy"], None, max_new_tokens=10, temperature=1.0, top_p=1e-9, seed=1
    )
    assert greedy == nucleus


def test_n_samples_shape(tiny):
    out = tiny.generate(["a", "b", "c"], ["u", "v"], n=4, seed=0)
    assert len(out) == 3 and all(len(g) == 4 for g in out)
    assert all(x in ("u", "v") for g in out for x in g)


def test_n_samples_share_one_prefill_and_equal_n_copies_of_the_prompt(tiny):
    """n samples per prompt reuse the prompt's KV cache (one prefill); the draws are the same as
    for n separate copies of the prompt with the same seed, and the prompt counts once."""
    p = [{"role": "user", "content": "Is the coin in the kitchen? Answer, then say why."}]
    q = "Where is the key?"
    before = tiny.usage.prompt_tokens
    shared = tiny.sample([p, q], n=3, seed=7, max_new_tokens=10)
    prefilled = tiny.usage.prompt_tokens - before
    copies = tiny.sample([p, p, p, q, q, q], n=1, seed=7, max_new_tokens=10)
    assert prefilled == len(tiny.encode_prompt(p)) + len(tiny.encode_prompt(q))
    flat = [s for row in shared for s in row]
    assert [s.token_ids for s in flat] == [row[0].token_ids for row in copies]
    # Two float32 decodes of other batch shapes (3 rows of one prefill vs 6 padded prompts):
    # the rounding model of tests/tolerance.py over <= 10 tokens (~1e-3; measured 1.4e-6 on a
    # fresh machine, above the former 1e-6), below the >= 0.01 a wrong prompt or token moves it.
    t = tol(tiny, [s.token_ids for s in flat], [p, q])
    assert [s.logq for s in flat] == pytest.approx([row[0].logq for row in copies], abs=t)
    assert [s.logp for s in flat] == pytest.approx([row[0].logp for row in copies], abs=t)


def test_pydantic_and_schema_outputs_parse(tiny):
    from pydantic import BaseModel, Field

    class Answer(BaseModel):
        name: str = Field(max_length=10)
        ok: bool

    out = tiny.generate(["a", "bb"], Answer, seed=0)
    assert all(isinstance(x, Answer) and len(x.name) <= 10 for x in out)


BOUNDED = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "score": {"enum": [0.0, 0.5, 1.0]},
        "tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 4}},
        "reason": {"type": "string", "minLength": 1, "maxLength": 12},
    },
    "required": ["ok", "score", "tags", "reason"],
}


def test_bounded_json_never_truncates_and_stays_within_the_byte_bound(tiny):
    import jsonschema

    bound = json_max_bytes(BOUNDED)
    samples = tiny.sample(["judge"] * 6, BOUNDED, temperature=1.5, seed=11)
    for (s,) in samples:
        assert s.finished
        jsonschema.validate(s.value, BOUNDED)
        assert len(s.text.encode()) <= bound
        assert s.num_tokens <= bound + 1


def test_truncated_json_raises_generation_error(tiny):
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "minLength": 5, "maxLength": 9}},
        "required": ["a"],
    }
    with pytest.raises(GenerationError, match="truncated"):
        tiny.generate(["x"], schema, max_new_tokens=2, seed=0)


def test_output_spec_errors_name_the_bad_value():
    with pytest.raises(TypeError, match="unsupported output type 3"):
        output_spec(3)
    with pytest.raises(ValueError, match="at least one option"):
        output_spec([])


def test_json_max_bytes_of_known_shapes():
    s = {"type": "object", "properties": {"b": {"type": "boolean"}}, "required": ["b"]}
    # '{ "b" : false }' with every optional space: 2 braces + 2 spaces + '"b"' + 4 spaces/comma
    # slots + ':' ',' + 5
    assert (
        json_max_bytes(s) >= len(json.dumps({"b": False}, separators=(" , ", " : ")).encode()) + 2
    )
    assert json_max_bytes({"type": "string"}) is None
    assert json_max_bytes({"type": "number"}) is None
    assert json_max_bytes({"enum": ["Yes", "No"]}) == 5


def test_compiled_masks_are_kept_lru_bounded_and_an_evicted_one_is_rebuilt_the_same(
    tiny, monkeypatch
):
    from smcplan.llm import samples

    monkeypatch.setattr(samples, "MAX_PROCESSORS", 3)
    sets = [[f"go to room {i}", f"open box {i}", "look"] for i in range(5)]
    first = [tiny.generate(["where now?"], s, seed=11)[0] for s in sets]
    assert len(tiny._runtime.processors) == 3  # the two oldest were evicted
    assert output_spec(sets[0]).key not in tiny._runtime.processors
    # rebuilt on demand: a valid choice, the same one the same seed drew before eviction
    again = tiny.generate(["where now?"], sets[0], seed=11)[0]
    assert again == first[0] and again in sets[0]
    assert list(tiny._runtime.processors)[-1] == output_spec(sets[0]).key  # most recent last
