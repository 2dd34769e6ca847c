"""The cross-call prefix KV cache: cached and uncached calls agree, the LRU bound holds, the
counters add up.

Tolerance of log-probabilities: 1e-3 nats on sums over <= 40 tokens. The cached and uncached
passes compute the same function; they differ only in the order of fp32 reductions (a prefix's
keys/values come from a batch of another width and padding, and attention sums over more masked
columns). Each such reordering moves a logit by a few ulp of its magnitude (|logit| < 30 ->
~1e-5), so a sum over 40 tokens stays far inside 1e-3; the measured maximum is ~1e-5 (tiny) and
below 1e-4 (SmolLM2). Sampling with the same seed then draws the same tokens (a flip would need
a uniform draw to land within ~1e-5 of a CDF boundary; the seeds used here do not).
"""

from __future__ import annotations

import pytest
import torch
from outlines.types import Regex

from smcplan.llm.backends.hf import TransformersLanguageModel
from smcplan.llm.prefix_cache import PrefixCache

TOL = 1e-3
SYSTEM = "You are an agent playing a text game. Choose the next action."
TASK = "Task: find the coin and take it."
OBS = [
    "You are in the kitchen. There is a table. The door to the north is open.",
    "You are in the garden. It is empty. There is a box.",
    "You are in the bedroom. You see a drawer that is closed.",
]


def _prompt(obs: str, history: str = "") -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{TASK}\n{history}Observation: {obs}"},
    ]


def _pair(lm, **cache_options) -> tuple[TransformersLanguageModel, TransformersLanguageModel]:
    """The same weights twice: cache on (``cache_options``) and off."""
    on = TransformersLanguageModel(
        lm.model, lm.tokenizer, "on", threads=lm.threads, **cache_options
    )
    off = TransformersLanguageModel(
        lm.model, lm.tokenizer, "off", threads=lm.threads, prefix_cache=False
    )
    return on, off


class _PrefillCounter:
    """Counts the prompt tokens the model really runs: the unmasked input columns of every
    prompt pass (the calls made with ``logits_to_keep=1``)."""

    def __init__(self, model) -> None:
        self.tokens = 0
        self._handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        if kwargs.get("logits_to_keep") == 1:
            width = kwargs["input_ids"].shape[1]
            self.tokens += int(kwargs["attention_mask"][:, -width:].sum())

    def close(self) -> None:
        self._handle.remove()


# ---------------------------------------------------------------------- the tree alone
def _states(n: int, offset: float = 0.0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Two layers of distinguishable states for n positions: value = position + offset."""
    pos = torch.arange(n, dtype=torch.float32)[None, :, None] + offset
    return [(pos.expand(2, n, 4).clone(), -pos.expand(2, n, 4).clone()) for _ in range(2)]


def _insert(cache: PrefixCache, ids: list[int], offset: float = 0.0) -> int:
    full = _states(len(ids), offset)
    return cache.insert(ids, lambda a, b: [(k[:, a:b], v[:, a:b]) for k, v in full])


def test_tree_matches_longest_prefix_splits_runs_and_reassembles_states():
    cache = PrefixCache(1 << 20)
    assert _insert(cache, [1, 2, 3, 4, 5]) == 5
    assert _insert(cache, [1, 2, 3, 9], offset=100.0) == 1  # splits the run after 3 tokens
    assert _insert(cache, [1, 2, 3, 4, 5]) == 0
    assert len(cache) == 6
    h, path = cache.match([1, 2, 3, 4, 7])
    assert h == 4 and [len(n.tokens) for n, _ in path] == [3, 2]
    out = [(torch.zeros(1, 2, 6, 4), torch.zeros(1, 2, 6, 4)) for _ in range(2)]
    PrefixCache.write(path, out, 0, 6)
    # right-aligned: columns 2..5 hold positions 0..3 of the first prompt
    assert out[1][0][0, 0, 2:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert out[1][1][0, 1, 2:, 0].tolist() == [0.0, -1.0, -2.0, -3.0]
    assert out[0][0][0, :, :2].abs().sum() == 0
    h, path = cache.match([1, 2, 3, 9, 9])
    assert h == 4 and path[-1][0].kv[0][0][0, 0, 0].item() == 103.0
    assert cache.match([1, 2, 3, 4, 5], limit=4)[0] == 4
    assert cache.match([2, 1])[0] == 0


def test_lru_evicts_least_recently_used_leaves_and_keeps_paths_complete():
    per_token = sum(k.nbytes + v.nbytes for k, v in _states(1))
    cache = PrefixCache(10 * per_token)
    _insert(cache, [1, 2, 3, 4])
    _insert(cache, [1, 2, 5, 6])  # shares [1, 2]: 6 tokens stored
    _insert(cache, [7, 8])
    assert len(cache) == 8
    cache.match([1, 2, 3, 4])  # [1, 2] and [3, 4] become the most recently used
    _insert(cache, [9, 10, 11])  # 11 tokens > 10: the LRU leaf [5, 6] goes
    assert len(cache) == 9 and cache.stats.evicted_tokens == 2
    # 16 tokens: [7, 8] goes, then [3, 4]; its parent [1, 2] is then a leaf older than [9..11]
    _insert(cache, [12, 13, 14, 15, 16, 17, 18])
    assert len(cache) == 10 and cache.nbytes == 10 * per_token
    assert cache.stats.evicted_tokens == 2 + 2 + 2 + 2
    assert cache.match([9, 10, 11])[0] == 3 and cache.match([12, 13, 14])[0] == 3
    assert cache.match([1, 2, 3, 4])[0] == 0 and cache.match([7, 8])[0] == 0
    assert _insert(cache, list(range(100, 120))) == 0  # one prompt over the bound is not kept
    assert len(cache) == 10


def test_bound_must_be_a_non_negative_integer():
    with pytest.raises(ValueError, match="prefix_cache_bytes"):
        PrefixCache(-1)
    with pytest.raises(ValueError, match="prefix_cache_bytes"):
        PrefixCache(1.5)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- the tiny model
def test_load_model_switches_and_sizes_the_cache(tiny):
    from smcplan.llm.testing import tiny_model

    assert tiny.prefix_cache is not None
    off = tiny_model(prefix_cache=False)
    assert off.prefix_cache is None
    small = tiny_model(prefix_cache_bytes=12345)
    assert small.prefix_cache.max_bytes == 12345
    with pytest.raises(ValueError, match="prefix_cache_bytes"):
        tiny_model(prefix_cache_bytes=-5)
    off.logprob([_prompt(OBS[0])], ["go north"])
    assert off.usage.cached_tokens == 0


def test_logprob_agrees_for_shared_prefixes_nested_prompts_and_mixed_batches(tiny):
    on, off = _pair(tiny)
    acts = ["go north", "take coin", "open the drawer"]
    calls = [
        # cold: three prompts sharing system + task (left padding: different lengths)
        ([_prompt(o) for o in OBS], ["", "", ""]),
        # warm: the same prompts extended by an answer prefix (a prompt is a prefix of another)
        ([_prompt(o) for o in OBS], ["Thought: I look around.\nAction: "] * 3),
        # a batch mixing hits (known prompts, a longer history) and a miss (new system prompt)
        (
            [
                _prompt(OBS[0], "> look\nYou see a box.\n"),
                _prompt(OBS[1]),
                [{"role": "user", "content": "Something else entirely: what is 2 + 2?"}],
            ],
            ["", "Thought: ", ""],
        ),
    ]
    for prompts, prefixes in calls:
        rows_p = [p for p in prompts for _ in acts]
        rows_a = [a for a in prefixes for _ in acts]
        rows_c = acts * len(prompts)
        got = on.logprob(rows_p, rows_c, add_eos=True, assistant_prefix=rows_a)
        want = off.logprob(rows_p, rows_c, add_eos=True, assistant_prefix=rows_a)
        assert got == pytest.approx(want, abs=TOL)
    assert on.usage.cached_tokens > 0 and on.prefix_cache.stats.hits > 0
    assert on.usage.prompt_tokens == off.usage.prompt_tokens


def test_sample_same_seed_same_tokens_free_text_and_constrained(tiny):
    on, off = _pair(tiny)
    schema = {
        "type": "object",
        "properties": {"thought": {"type": "string"}, "answer": {"enum": ["Yes", "No"]}},
        "required": ["thought", "answer"],
    }
    prompts = [_prompt(o) for o in OBS] + [_prompt(OBS[0])]  # a duplicate prompt too
    for output_type, kw in (
        (None, dict(max_new_tokens=12)),
        (["go north", "take coin", "open the drawer"], {}),
        (Regex(r"[a-z ]{1,20}"), dict(max_new_tokens=12)),
        (schema, dict(max_new_tokens=40)),
    ):
        for call in range(2):  # cold, then every prompt cached
            a = on.sample(prompts, output_type, n=2, seed=11 + call, **kw)
            b = off.sample(prompts, output_type, n=2, seed=11 + call, **kw)
            for ra, rb in zip(a, b, strict=True):
                assert [s.token_ids for s in ra] == [s.token_ids for s in rb]
                assert [s.logq for s in ra] == pytest.approx([s.logq for s in rb], abs=TOL)
                assert [s.logp for s in ra] == pytest.approx([s.logp for s in rb], abs=TOL)
    assert on.usage.cached_tokens > 0


def test_counters_add_up_reused_plus_prefilled_equals_prompt_tokens(tiny):
    on, _ = _pair(tiny)
    counter = _PrefillCounter(on.model)
    try:
        on.logprob([_prompt(o) for o in OBS], ["look"] * 3)  # one-token continuations
        on.sample([_prompt(o, "> look\nYou see a box.\n") for o in OBS], n=2, max_new_tokens=1)
        on.logprob([_prompt(OBS[2]), _prompt(OBS[1])], ["x", "y"], assistant_prefix="Thought: ")
    finally:
        counter.close()
    usage, stats = on.usage, on.prefix_cache.stats
    assert usage.cached_tokens > 0
    assert usage.cached_tokens + counter.tokens == usage.prompt_tokens
    assert stats.cached_tokens + stats.prefilled_tokens == usage.prompt_tokens
    assert stats.prefilled_tokens == counter.tokens


def test_particles_sharing_an_uncached_prefix_run_it_once(tiny):
    on, off = _pair(tiny)
    history = "".join(f"> go {d}\nYou are in a room with a table and a door.\n" for d in "nsew")
    prompts = [_prompt(o, history) for o in OBS]
    counter = _PrefillCounter(on.model)
    try:
        got = on.logprob(prompts, ["look"] * 3)
    finally:
        counter.close()
    assert got == pytest.approx(off.logprob(prompts, ["look"] * 3), abs=TOL)
    lengths = [len(on.encode_prompt(p)) for p in prompts]
    assert counter.tokens < sum(lengths) - 2 * 40  # the ~100-token shared part ran once
    assert on.usage.cached_tokens == sum(lengths) - counter.tokens


def test_results_stay_correct_under_a_small_bound_and_after_eviction(tiny):
    probe = tiny.encode_prompt(_prompt(OBS[0]))
    cfg = tiny.model.config
    per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * 16 * 4  # head_dim 16, fp32
    bound = int(1.5 * len(probe)) * per_token  # room for about one and a half prompts
    on, off = _pair(tiny, prefix_cache_bytes=bound)
    acts = ["go north", "take coin"]
    for obs in OBS + OBS[::-1]:
        p = [_prompt(obs)] * 2
        assert on.logprob(p, acts, add_eos=True) == pytest.approx(
            off.logprob(p, acts, add_eos=True), abs=TOL
        )
        a = on.sample([_prompt(obs)], n=2, seed=3, max_new_tokens=8)
        b = off.sample([_prompt(obs)], n=2, seed=3, max_new_tokens=8)
        assert [s.token_ids for s in a[0]] == [s.token_ids for s in b[0]]
        assert on.prefix_cache.nbytes <= bound
    assert on.prefix_cache.stats.evicted_tokens > 0
    assert on.usage.cached_tokens > 0  # the shared system + task prefix survives


# ---------------------------------------------------------------------- SmolLM2
@pytest.mark.slow
def test_smollm2_cached_and_uncached_agree(smol):
    on, off = _pair(smol)
    acts = ["go north", "take coin", "open drawer"]
    for prefix in ("", "Thought: The coin may be in the drawer.\nAction: "):
        rows_p = [_prompt(o) for o in OBS[:2] for _ in acts]
        got = on.logprob(rows_p, acts * 2, add_eos=True, assistant_prefix=prefix)
        want = off.logprob(rows_p, acts * 2, add_eos=True, assistant_prefix=prefix)
        assert got == pytest.approx(want, abs=TOL)
    a = on.sample([_prompt(OBS[0]), _prompt(OBS[2])], n=2, seed=5, max_new_tokens=10)
    b = off.sample([_prompt(OBS[0]), _prompt(OBS[2])], n=2, seed=5, max_new_tokens=10)
    assert [[s.token_ids for s in r] for r in a] == [[s.token_ids for s in r] for r in b]
    assert on.usage.cached_tokens > 0


@pytest.mark.parametrize("attention", ["sdpa", "eager", "rows"])
def test_packed_continuations_equal_one_row_per_continuation_and_the_naive_pass(
    attention, monkeypatch
):
    """Scoring packs all continuations of a prompt into one row under a 4-D mask (SDPA's boolean
    or eager's additive form); ``rows`` is the fallback (one cache copy per continuation). All
    equal the naive pass over prompt + continuation, also with a chunk bound that splits the
    packed continuations into several passes (``cache.crop`` between them)."""
    from smcplan.llm import scoring
    from smcplan.llm.testing import tiny_model

    lm = tiny_model()
    if attention == "rows":
        monkeypatch.setattr(scoring, "_PACKED_ATTENTION", ())
    else:
        lm.model.set_attn_implementation(attention)
        assert lm.model.config._attn_implementation == attention
    acts = ["go north", "take coin from the table", "x", "open the drawer and look inside", ""]
    rows_p = [_prompt(o) for o in OBS for _ in acts]
    want = lm.logprob(rows_p, acts * 3, add_eos=True, reuse_cache=False)
    for bound in (8192, 8):  # 8: one prompt per chunk, <= 8 packed tokens per pass
        got = lm.logprob(rows_p, acts * 3, add_eos=True, max_batch_tokens=bound)
        assert got == pytest.approx(want, abs=TOL)


def test_sampled_answers_are_kept_and_a_prompt_continuing_one_reuses_them(tiny):
    """The states of a sampled thought are stored with its prompt: scoring an action after
    prompt + "Thought: <that thought>" then runs only the few tokens after the thought, and
    gives the same log-probabilities as without the cache."""
    on, off = _pair(tiny)
    prompt = _prompt(OBS[0])
    (thought,), = on.sample([prompt], Regex(r"[a-z ]{1,30}"), seed=2, assistant_prefix="Thought: ")
    assert thought.token_ids
    prefix = f"Thought: {thought.text}\nAction: "
    counter = _PrefillCounter(on.model)
    try:
        got = on.logprob([prompt] * 2, ["go north", "take coin"], assistant_prefix=prefix)
    finally:
        counter.close()
    want = off.logprob([prompt] * 2, ["go north", "take coin"], assistant_prefix=prefix)
    assert got == pytest.approx(want, abs=TOL)
    full = len(on.encode_prompt(prompt, prefix))
    assert counter.tokens <= full - len(on.encode_prompt(prompt, "Thought: ")) - 1
