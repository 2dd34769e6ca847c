"""The decoding loop's preallocated cache layers give the same logits as transformers' own
``DynamicLayer`` (bit for bit), for a left-padded batch, across the room's end, on the tiny
model and on SmolLM2; and sampling through them keeps the seeded draws of the cache-off path."""

from __future__ import annotations

import pytest
import torch

from smcplan.llm.backends.hf import TransformersLanguageModel
from smcplan.llm.decode import reserve


def _decode_logits(model, room: int | None, steps: int = 6) -> torch.Tensor:
    """Greedy-decode ``steps`` tokens from a left-padded batch of two prompts; ``room=None``
    keeps the plain ``DynamicCache``, else :func:`reserve` gives it ``room`` columns."""
    from transformers import DynamicCache

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 200, (2, 9), generator=g)
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, :3] = 0  # row 1 is left-padded
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        out = model(input_ids=ids, attention_mask=mask, position_ids=pos,
                    cache=DynamicCache(config=model.config), use_cache=True)
        cache, last = out.cache, pos[:, -1]
        if room is not None:
            reserve(cache, room)
        logits = [out.logits[:, -1]]
        for _ in range(steps):
            tok = logits[-1].argmax(-1)
            mask = torch.cat([mask, torch.ones(2, 1, dtype=torch.long)], 1)
            last = last + 1
            res = model(input_ids=tok[:, None], attention_mask=mask, position_ids=last[:, None],
                        cache=cache, use_cache=True)
            cache = res.cache
            logits.append(res.logits[:, -1])
        keys = [k for k, _v, *_ in cache]
    assert all(k.shape[-2] == 9 + steps for k in keys)
    return torch.stack(logits)


def _check_identical(model) -> None:
    plain = _decode_logits(model, None)
    assert torch.equal(plain, _decode_logits(model, 6))  # exactly the room needed
    assert torch.equal(plain, _decode_logits(model, 64))  # more room than used
    assert torch.equal(plain, _decode_logits(model, 2))  # the room runs out: it grows on


def test_preallocated_layers_give_identical_logits(tiny):
    _check_identical(tiny.model)


def test_sampling_is_unchanged_with_and_without_the_prefix_cache(tiny):
    on = TransformersLanguageModel(tiny.model, tiny.tokenizer, "on", threads=tiny.threads)
    off = TransformersLanguageModel(
        tiny.model, tiny.tokenizer, "off", threads=tiny.threads, prefix_cache=False
    )
    prompts = ["Observation: a coin.", "Observation: a much longer text about a box."]
    a = on.sample(prompts, n=3, max_new_tokens=12, seed=4)
    b = off.sample(prompts, n=3, max_new_tokens=12, seed=4)
    for ga, gb in zip(a, b, strict=True):
        for x, y in zip(ga, gb, strict=True):
            assert x.token_ids == y.token_ids and abs(x.logq - y.logq) < 1e-3


@pytest.mark.slow
def test_preallocated_layers_give_identical_logits_on_smollm2(smol):
    _check_identical(smol.model)
