"""Summed log-probabilities of continuations, reusing each prompt's KV cache.

For a prompt ``x`` and continuation ``y = (y_1..y_m)`` the score is

    log p(y | x) = sum_j log p(y_j | x, y_<j).

Scoring K continuations of one prompt naively runs K padded forward passes over ``x + y_k``,
each recomputing the prompt: cost ~ K (|x| + |y|). Here each distinct prompt is run once; its
key/value cache is then copied to the K continuation rows and only the continuation tokens are
run: cost ~ |x| + K |y|. With SmolLM2-135M, a 316-token prompt and 16 actions this is 6x faster
and gives the same scores (up to float rounding from padding).

Distinct prompts are batched with left padding (explicit ``position_ids`` from the attention
mask); continuations are right-padded (causal attention means trailing pads never influence the
real tokens). Work is chunked so that a chunk's cache and logits stay under ``max_batch_tokens``.

The prompt pass itself is :func:`smcplan.llm.prefill.prefill`: with a cross-call
:class:`~smcplan.llm.prefix_cache.PrefixCache` it reuses the stored states of each prompt's
longest cached prefix and runs only the rest.

Imports torch and transformers; must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from smcplan.llm.prefill import prefill
from smcplan.llm.prefix_cache import PrefixCache

__all__ = ["score_cached", "score_naive"]


def _left_pad(
    rows: Sequence[Sequence[int]], pad_id: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(r, dtype=torch.long)
            mask[i, width - len(r) :] = 1
    return ids.to(device), mask.to(device)


def _positions(mask: torch.Tensor) -> torch.Tensor:
    return (mask.cumsum(-1) - 1).clamp(min=0)


def _forward(model, ids, mask, positions, cache=None):
    from transformers import DynamicCache

    if cache is None:
        cache = DynamicCache(config=model.config)
    return model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        cache=cache,
        use_cache=True,
    )


@torch.inference_mode()
def score_cached(
    model,
    prompts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    pad_id: int,
    max_batch_tokens: int = 8192,
    prefix_cache: PrefixCache | None = None,
) -> tuple[np.ndarray, int]:
    """``log p(continuations[i] | prompts[i])`` for every i, one prompt pass per distinct prompt
    (starting from ``prefix_cache`` when given); also returns the prompt tokens reused from it."""
    if len(prompts) != len(continuations):
        raise ValueError(f"got {len(prompts)} prompts but {len(continuations)} continuations")
    out = np.zeros(len(prompts), dtype=np.float64)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, p in enumerate(prompts):
        if not p:
            raise ValueError(
                f"prompt {i} tokenizes to no tokens; a prompt needs at least one token"
            )
        groups.setdefault(tuple(p), []).append(i)
    unique = list(groups)
    reused = 0
    # chunk distinct prompts so that chunk_size * longest_prompt <= max_batch_tokens
    start = 0
    while start < len(unique):
        stop = start + 1
        while (
            stop < len(unique)
            and (stop + 1 - start) * max(len(u) for u in unique[start : stop + 1])
            <= max_batch_tokens
        ):
            stop += 1
        chunk = unique[start:stop]
        start = stop
        pre = prefill(model, [list(u) for u in chunk], pad_id, prefix_cache)
        reused += sum(len(u) for u in chunk) - pre.run
        first_logp = torch.log_softmax(pre.last_logits.float(), dim=-1)
        rows = [(u, i) for u, key in enumerate(chunk) for i in groups[key] if continuations[i]]
        for u, i in rows:
            out[i] = float(first_logp[u, continuations[i][0]])
        rows = [(u, i) for u, i in rows if len(continuations[i]) > 1]
        if model.config._attn_implementation in _PACKED_ATTENTION:
            _score_packed(model, pre, rows, continuations, pad_id, out, max_batch_tokens)
        else:
            _score_rows(model, pre, rows, continuations, pad_id, out, max_batch_tokens)
    return out, reused


def _score_rows(model, pre, rows, continuations, pad_id, out, max_batch_tokens) -> None:
    """Add ``log p(c_2.. | prompt, c_1)`` to ``out[i]`` for ``(u, i)`` in ``rows``: the prompt's
    cache copied to one batch row per continuation (any attention implementation)."""
    from transformers import DynamicCache

    device = model.device
    mask, lengths = pre.mask, pre.lengths
    layers = [(k, v) for k, v, *_ in pre.cache]
    r0 = 0
    while r0 < len(rows):
        width = mask.shape[1]
        r1 = r0 + 1
        while (
            r1 < len(rows)
            and (r1 + 1 - r0)
            * (width + max(len(continuations[i]) for _, i in rows[r0 : r1 + 1]))
            <= max_batch_tokens
        ):
            r1 += 1
        part = rows[r0:r1]
        r0 = r1
        sel = torch.tensor([u for u, _ in part], device=device)
        conts = [continuations[i] for _, i in part]
        clen = max(len(c) for c in conts)
        cids = torch.full((len(part), clen), pad_id, dtype=torch.long)
        for j, c in enumerate(conts):
            cids[j, : len(c)] = torch.tensor(c, dtype=torch.long)
        cids = cids.to(device)
        cache = DynamicCache(
            ddp_cache_data=[
                (k.index_select(0, sel), v.index_select(0, sel)) for k, v in layers
            ],
            config=model.config,
        )
        cmask = torch.cat([mask.index_select(0, sel), torch.ones_like(cids)], dim=1)
        cpos = (
            lengths.index_select(0, sel)[:, None] + torch.arange(clen, device=device)[None, :]
        )
        logits = _forward(model, cids, cmask, cpos, cache).logits.float()
        logp = torch.log_softmax(logits[:, :-1, :], dim=-1)
        for j, (_, i) in enumerate(part):
            c = continuations[i]
            targets = cids[j, 1 : len(c)]
            out[i] += float(logp[j, : len(c) - 1].gather(-1, targets[:, None]).sum())


#: attention implementations that take a custom 4-D mask (boolean for SDPA, additive for eager)
_PACKED_ATTENTION = ("sdpa", "eager")
_MAX_PACKED = 512  # continuation tokens per prompt row and pass


def _score_packed(model, pre, rows, continuations, pad_id, out, max_batch_tokens) -> None:
    """Like :func:`_score_rows`, but all continuations of a prompt share its one cache row.

    The continuations of prompt ``u`` (all but their last token, whose logits are not needed)
    are packed one after another into a single input row; a 4-D attention mask lets each token
    see the prompt and the earlier tokens of its own continuation only, and its position id is
    the one it has after the prompt (``|x_u| + j``). The result is the same function as one row
    per continuation, without copying the prompt's cache per continuation or padding them.
    The packed columns are dropped again with ``cache.crop`` before the next pass.
    """
    device = model.device
    mask, lengths = pre.mask.bool(), pre.lengths
    B, T = mask.shape
    todo: list[list[int]] = [[] for _ in range(B)]
    for u, i in rows:
        todo[u].append(i)
    cap = max(8, min(_MAX_PACKED, max_batch_tokens // max(B, 1)))
    while any(todo):
        parts: list[list[tuple[int, int]]] = [[] for _ in range(B)]  # (row i, offset)
        for u in range(B):
            used = 0
            while todo[u] and (not parts[u] or used + len(continuations[todo[u][0]]) - 1 <= cap):
                i = todo[u].pop(0)
                parts[u].append((i, used))
                used += len(continuations[i]) - 1
        L = max(max((o + len(continuations[i]) - 1 for i, o in p), default=1) for p in parts)
        ids = torch.full((B, L), pad_id, dtype=torch.long)
        pos = torch.zeros((B, L), dtype=torch.long)
        allowed = torch.zeros((B, L, T + L), dtype=torch.bool)
        allowed[:, :, T:] = torch.eye(L, dtype=torch.bool)  # pads see themselves (no empty row)
        for u, p in enumerate(parts):
            for i, o in p:
                c = continuations[i]
                m = len(c) - 1
                ids[u, o : o + m] = torch.tensor(c[:-1], dtype=torch.long)
                pos[u, o : o + m] = int(lengths[u]) + torch.arange(m)
                allowed[u, o : o + m, :T] = mask[u].cpu()
                allowed[u, o : o + m, T + o : T + o + m] = torch.ones(m, m, dtype=torch.bool).tril()
        allowed = allowed.to(device)[:, None]
        if model.config._attn_implementation == "eager":
            dtype = model.dtype
            attn = torch.zeros(allowed.shape, dtype=dtype, device=device)
            attn = attn.masked_fill(~allowed, torch.finfo(dtype).min)
        else:
            attn = allowed
        logits = _forward(model, ids.to(device), attn, pos.to(device), pre.cache).logits
        pre.cache.crop(-L)
        where_u, where_q, targets, owner = [], [], [], []
        for u, p in enumerate(parts):
            for i, o in p:
                c = continuations[i]
                where_u += [u] * (len(c) - 1)
                where_q += list(range(o, o + len(c) - 1))
                targets += list(c[1:])
                owner += [i] * (len(c) - 1)
        picked = logits[torch.tensor(where_u, device=device), torch.tensor(where_q, device=device)]
        logp = torch.log_softmax(picked.float(), dim=-1)
        got = logp.gather(-1, torch.tensor(targets, device=device)[:, None]).squeeze(1).double()
        np.add.at(out, np.asarray(owner), got.cpu().numpy())


@torch.inference_mode()
def score_naive(
    model,
    prompts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    pad_id: int,
) -> np.ndarray:
    """Reference: one left-padded forward pass over ``prompt + continuation`` per row, no reuse."""
    if len(prompts) != len(continuations):
        raise ValueError(f"got {len(prompts)} prompts but {len(continuations)} continuations")
    rows = [list(p) + list(c) for p, c in zip(prompts, continuations, strict=True)]
    ids, mask = _left_pad(rows, pad_id, model.device)
    logits = model(input_ids=ids, attention_mask=mask, position_ids=_positions(mask)).logits.float()
    logp = torch.log_softmax(logits, dim=-1)
    width = ids.shape[1]
    out = np.zeros(len(rows), dtype=np.float64)
    for i, c in enumerate(continuations):
        m = len(c)
        if m == 0:
            continue
        # tokens at positions width-m .. width-1 are predicted by logits at width-m-1 .. width-2
        targets = ids[i, width - m :]
        out[i] = float(logp[i, width - m - 1 : width - 1].gather(-1, targets[:, None]).sum())
    return out
