"""The |A| imagined replies of one planner step: one prefill of their shared context, then the
rests and every reply as one batch (smcplan/llm/prefill.py, ``shared_plan``).

The world model's |A| prompts are one context followed by "Action: <a>"; actions such as "move
east" / "move west" or "open door to east" / "open door to north" share a few tokens more.
Before, every such group ran the whole context again (three groups: the context three times).
Here the shared context runs once, and the rows' rests (the action and the chat template's
end) run in one batched pass.

Tolerance: the shared and unshared paths run the same network on the same tokens; they differ
only in the order of fp32 reductions (another batch width, padding, keys and values from
another pass), which tests/tolerance.py's ``llama_logprob_tol`` bounds in the model's sizes.
"""

from __future__ import annotations

import pytest

from smcplan.llm import ObservationModel
from smcplan.llm.backends.hf import TransformersLanguageModel
from smcplan.llm.prefill import SHARE_MIN_TOKENS, shared_plan
from tests.tolerance import llama_logprob_tol

ROOM = "You are in a room with a table and a door to the {}.\n"
CONTEXT = "Task: find the coin.\n" + "".join(
    f"> move {d}\n" + ROOM.format(d) for d in ("north", "south", "east", "west") * 3
)
ACTIONS = [
    "move east",
    "move west",
    "open door to east",
    "open door to north",
    "open door to south",
    "take coin",
    "look around",
    "inventory",
]


class _PrefillCounter:
    """The prompt tokens the model really runs (unmasked input columns of every prompt pass,
    the calls with ``logits_to_keep=1``) and the number of such passes."""

    def __init__(self, model) -> None:
        self.tokens = self.passes = 0
        self._handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        if kwargs.get("logits_to_keep") == 1:
            width = kwargs["input_ids"].shape[1]
            self.tokens += int(kwargs["attention_mask"][:, -width:].sum())
            self.passes += 1

    def close(self) -> None:
        self._handle.remove()


def _lcp(a, b) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _fresh(lm, prefix_cache: bool) -> TransformersLanguageModel:
    return TransformersLanguageModel(
        lm.model, lm.tokenizer, "copy", threads=lm.threads, prefix_cache=prefix_cache
    )


# ---------------------------------------------------------------------- the plan alone
def test_shared_plan_runs_the_common_context_once_and_not_per_action_group():
    ctx = list(range(100, 140))  # 40 tokens
    rows = [ctx + [1, 2, 9], ctx + [1, 2, 8], ctx + [3, 4, 5, 9], ctx + [3, 4, 5, 8], ctx + [7]]
    assert shared_plan(rows, share_min=8) == [[ctx]]
    # without a row that branches at the context itself: still the context, once
    assert shared_plan(rows[:4], share_min=8) == [[ctx]]
    # already cached (an earlier planner step): nothing to run first
    assert shared_plan(rows, cached=lambda p: len(p), share_min=8) == []
    # a group sharing >= share_min tokens beyond the context: a second level continues from it
    long = list(range(200, 220))
    deep = [ctx + long + [1], ctx + long + [2], ctx + [5]]
    assert shared_plan(deep, share_min=8) == [[ctx], [ctx + long]]
    # two unrelated histories: each run once, in one level
    other = list(range(300, 340))
    assert shared_plan([ctx + [1], ctx + [2], other + [1], other + [2]], share_min=8) == [
        [ctx, other]
    ]
    assert shared_plan([ctx + [1]], share_min=8) == []
    assert shared_plan([ctx[:5] + [1], ctx[:5] + [2]], share_min=8) == []  # too short to split


# ---------------------------------------------------------------------- on the model
def test_world_model_prompts_prefill_their_context_once(tiny):
    lm = _fresh(tiny, prefix_cache=True)
    om = ObservationModel(lm, temperature=0.0, max_new_tokens=6)
    rows = [lm.encode_prompt(p) for p in om._prompts([CONTEXT] * len(ACTIONS), ACTIONS)]
    common = min(_lcp(rows[0], r) for r in rows)
    assert common >= SHARE_MIN_TOKENS and len({tuple(r[common:]) for r in rows}) == len(rows)
    counter = _PrefillCounter(lm.model)
    try:
        om([CONTEXT] * len(ACTIONS), ACTIONS, seed=0)
    finally:
        counter.close()
    assert counter.passes == 2  # the shared context, then the rests of all |A| rows
    assert counter.tokens == common + sum(len(r) - common for r in rows)
    assert lm.usage.prompt_tokens - lm.usage.cached_tokens == counter.tokens


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_shared_prefill_gives_the_unshared_replies_and_log_probabilities(tiny, temperature):
    """Greedy and sampled (same seed) replies are token-identical to the unshared path (the
    prefix cache off: each prompt prefilled in full, left-padded) and to each prompt alone;
    ``logp`` and ``logq`` agree within the rounding bound."""
    contexts = [CONTEXT] * len(ACTIONS)
    shared = ObservationModel(_fresh(tiny, True), temperature=temperature, max_new_tokens=12)
    unshared = ObservationModel(_fresh(tiny, False), temperature=temperature, max_new_tokens=12)
    got = shared(contexts, ACTIONS, seed=3)
    want = unshared(contexts, ACTIONS, seed=3)
    assert [s.token_ids for s in got] == [s.token_ids for s in want]
    assert [s.text for s in got] == [s.text for s in want]
    width = max(len(shared.lm.encode_prompt(p)) for p in shared._prompts(contexts, ACTIONS))
    for g, w in zip(got, want, strict=True):
        tol = llama_logprob_tol(tiny.model, max(g.num_tokens, 1), width + g.num_tokens + 1)
        assert g.logp == pytest.approx(w.logp, abs=tol)
        assert g.logq == pytest.approx(w.logq, abs=tol)
    if temperature == 0.0:  # greedy: also each prompt on its own (batch of one, no padding)
        for a, g in zip(ACTIONS, got, strict=True):
            (one,) = unshared([CONTEXT], [a], seed=3)
            assert one.token_ids == g.token_ids
            tol = llama_logprob_tol(tiny.model, max(g.num_tokens, 1), width + g.num_tokens + 1)
            assert one.logp == pytest.approx(g.logp, abs=tol)


@pytest.mark.slow
def test_smollm2_world_model_prompts_shared_equal_unshared(smol):
    contexts = [CONTEXT] * len(ACTIONS)
    on = ObservationModel(_fresh(smol, True), temperature=0.0, max_new_tokens=10)
    off = ObservationModel(_fresh(smol, False), temperature=0.0, max_new_tokens=10)
    counter = _PrefillCounter(smol.model)
    try:
        got = on(contexts, ACTIONS, seed=0)
    finally:
        counter.close()
    want = off(contexts, ACTIONS, seed=0)
    assert [s.token_ids for s in got] == [s.token_ids for s in want]
    rows = [on.lm.encode_prompt(p) for p in on._prompts(contexts, ACTIONS)]
    common = min(_lcp(rows[0], r) for r in rows)
    assert counter.tokens == common + sum(len(r) - common for r in rows)
    width = max(len(r) for r in rows)
    for g, w in zip(got, want, strict=True):
        tol = llama_logprob_tol(smol.model, max(g.num_tokens, 1), width + g.num_tokens + 1)
        assert g.logp == pytest.approx(w.logp, abs=tol)
