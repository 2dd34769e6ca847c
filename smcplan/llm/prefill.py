"""One batched prompt pass that starts from the prefix cache: what ``sample`` and ``logprob`` run.

For prompts ``x^(1..B)`` with cached prefixes of lengths ``h_i`` (:class:`PrefixCache.match`,
at most ``|x^(i)| - 1`` so that the last token is run and yields the next-token logits), the
batch is laid out in two blocks of columns:

* the **cache block**, ``C = max_i h_i`` columns: row ``i`` holds the stored keys/values of
  ``x^(i)_{<h_i}`` right-aligned (columns ``C - h_i .. C-1``), zeros and attention mask 0 before;
* the **input block**, ``W = max_i (|x^(i)| - h_i)`` columns: the rest ``x^(i)_{h_i..}``
  right-aligned, pad tokens with mask 0 before.

A row may so have masked columns in the middle (between its cached part and its rest). That is
correct for any attention that takes the 2-D mask: a masked key gets weight exactly 0. Positions
are explicit: the rest's tokens get ``position_ids = h_i, h_i + 1, ...`` (the rotary phase the
stored keys were computed with), pads the clamped neighbour value (never attended). The model is
called once, through transformers' own cache API: a ``DynamicCache`` built from the stored
tensors (``ddp_cache_data``), ``position_ids`` and ``attention_mask`` over cache + input columns
(``cache_position`` then runs from ``C``, as for any continued cache). Only the last position's
logits are computed (``logits_to_keep=1``). Afterwards every prompt's states are inserted into the
tree (the part not stored yet).

Prompts of one batch that share a prefix longer than what is cached (N particles with one
history; the |A| world-model prompts of one planner step, which differ only by the action at
the end) have that prefix run once first (``share_min``), then reuse it like any cached prefix.
The shared prefixes are the branching points of the prompts' token trie (the longest common
prefix of each pair of neighbours in sorted order), run outermost first, one batched pass per
level: ``context + "Action: move "`` (shared by "move east" and "move west") and
``context + "Action: open door to "`` then continue from the stored ``context + "Action: "``
instead of each running the whole context again, and a level whose own new part is under
``share_min`` tokens is left to the main pass.  So the common context is prefilled once
whatever the actions are; the main pass runs the rows' rests (:func:`shared_plan`).

Without a cache (``prefix_cache=None``) this is the plain left-padded prefill.

Imports torch and transformers; must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from smcplan.llm.prefix_cache import PrefixCache

__all__ = ["Prefilled", "prefill", "shared_plan", "supports_prefix_cache"]

#: Rows of one batch sharing an uncached prefix of at least this many tokens run it once first.
SHARE_MIN_TOKENS = 32


@dataclass
class Prefilled:
    """The state after the prompts: ``cache`` (a ``DynamicCache`` of ``mask.shape[1]`` columns),
    ``mask`` the attention mask over them, ``lengths[i] = |x^(i)|`` (the position of the next
    token), ``last_logits[i]`` the logits after the prompt, ``input_ids`` the input block
    (left-padded rests), ``cached[i] = h_i`` the tokens of row ``i`` taken from the prefix cache,
    ``run`` the prompt tokens the model actually ran (shared prefixes included); the prompts'
    total length minus ``run`` is what the cache saved."""

    cache: Any
    mask: torch.Tensor
    lengths: torch.Tensor
    last_logits: torch.Tensor
    input_ids: torch.Tensor
    cached: list[int]
    run: int


def supports_prefix_cache(model) -> bool:
    """Whether every layer of ``model``'s ``DynamicCache`` keeps all positions (no sliding window,
    no quantised cache): only then are stored prefix states valid in any later context."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    try:
        layers = DynamicCache(config=model.config).layers
    except (TypeError, ValueError, AttributeError):
        return False
    return bool(layers) and all(type(layer) is DynamicLayer for layer in layers)


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _branch_points(rows: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """The branching points of the rows' token trie: the longest common prefix of each pair of
    neighbours in sorted order (every inner node with two children is one of them), each at
    most ``|row| - 1`` tokens (the last token of a prompt always runs), shortest first."""
    ordered = sorted(list(r) for r in rows)
    out: dict[tuple[int, ...], None] = {}
    for a, b in zip(ordered, ordered[1:], strict=False):
        n = min(_lcp(a, b), len(a) - 1, len(b) - 1)
        if n > 0:
            out[tuple(a[:n])] = None
    return sorted(out, key=len)


def _outermost(prefixes: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The prefixes (shortest first) of which no other one is a proper prefix."""
    roots: list[tuple[int, ...]] = []
    for p in prefixes:
        if not any(len(q) < len(p) and p[: len(q)] == q for q in roots):
            roots.append(p)
    return roots


def shared_plan(
    rows: Sequence[Sequence[int]],
    cached: Callable[[Sequence[int]], int] = lambda p: 0,
    share_min: int = SHARE_MIN_TOKENS,
) -> list[list[list[int]]]:
    """The passes that run the rows' shared prefixes before the rows themselves: a list of
    levels, each a list of prefixes run as one batch.  ``cached(p)`` is how many leading tokens
    of ``p`` are already stored (the prefix cache's match).  A branching point is run when at
    least ``share_min`` of its tokens are neither cached nor in a shorter branching point run
    before it; the outermost ones first, so that the inner ones continue from them."""
    points = _branch_points(rows)
    known = {p: cached(p) for p in points}
    levels: list[list[list[int]]] = []
    while True:
        todo = [p for p in points if len(p) - known[p] >= share_min]
        level = _outermost(todo)
        if not level:
            return levels
        levels.append([list(p) for p in level])
        for p in points:  # what this level stores, each later point reuses
            for q in level:
                if len(q) <= len(p) and p[: len(q)] == q:
                    known[p] = max(known[p], len(q))


def prefill(
    model,
    rows: Sequence[Sequence[int]],
    pad_id: int,
    prefix_cache: PrefixCache | None = None,
    share_min: int = SHARE_MIN_TOKENS,
) -> Prefilled:
    """Run the prompts ``rows`` (token ids, each non-empty) as one batch (module docstring)."""
    for i, r in enumerate(rows):
        if not r:
            raise ValueError(
                f"prompt {i} tokenizes to no tokens; a prompt needs at least one token"
            )
    run = 0
    if prefix_cache is not None and len(rows) > 1 and share_min > 0:
        levels = shared_plan(rows, lambda p: prefix_cache.match(p, len(p))[0], share_min)
        for level in levels:  # outermost first: each level continues from the one before
            run += _forward(model, level, pad_id, prefix_cache).run
    out = _forward(model, rows, pad_id, prefix_cache)
    out.run += run
    if prefix_cache is not None:
        stats = prefix_cache.stats
        stats.lookups += len(rows)
        stats.hits += sum(1 for h in out.cached if h > 0)
        stats.prefilled_tokens += out.run
        stats.cached_tokens += sum(len(r) for r in rows) - out.run
    return out


def _forward(
    model, rows: Sequence[Sequence[int]], pad_id: int, prefix_cache: PrefixCache | None
) -> Prefilled:
    from transformers import DynamicCache

    device = model.device
    paths: list[list] = []
    hits: list[int] = []
    for r in rows:
        h, path = prefix_cache.match(r, len(r) - 1) if prefix_cache is not None else (0, [])
        hits.append(h)
        paths.append(path)
    B = len(rows)
    C = max(hits)
    rests = [len(r) - h for r, h in zip(rows, hits, strict=True)]
    W = max(rests)
    ids = torch.full((B, W), pad_id, dtype=torch.long)
    mask = torch.zeros((B, C + W), dtype=torch.long)
    for i, (r, h) in enumerate(zip(rows, hits, strict=True)):
        ids[i, W - rests[i] :] = torch.tensor(list(r[h:]), dtype=torch.long)
        mask[i, C - h : C] = 1
        mask[i, C + W - rests[i] :] = 1
    hits_t = torch.tensor(hits, dtype=torch.long)
    positions = hits_t[:, None] + (mask[:, C:].cumsum(-1) - 1).clamp(min=0)
    ids, mask, positions = ids.to(device), mask.to(device), positions.to(device)
    if C > 0:
        node = paths[hits.index(C)][0][0]
        layers = [
            (
                k.new_zeros((B, k.shape[0], C, k.shape[2])),
                v.new_zeros((B, v.shape[0], C, v.shape[2])),
            )
            for k, v in node.kv
        ]
        for i, path in enumerate(paths):
            PrefixCache.write(path, layers, i, C)
        cache = DynamicCache(ddp_cache_data=layers, config=model.config)
    else:
        cache = DynamicCache(config=model.config)
    res = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=positions,
        cache=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    cache = res.cache
    if prefix_cache is not None:
        _store(prefix_cache, cache, rows, hits, C, W)
    lengths = torch.tensor([len(r) for r in rows], dtype=torch.long, device=device)
    return Prefilled(cache, mask, lengths, res.logits[:, -1, :], ids, hits, sum(rests))


def _store(
    prefix_cache: PrefixCache,
    cache,
    rows: Sequence[Sequence[int]],
    hits: Sequence[int],
    C: int,
    W: int,
    prompt_lengths: Sequence[int] | None = None,
) -> None:
    """Insert each row's states. With prompt length ``n`` and ``h`` cached tokens, position
    ``j`` of row ``i`` sits in column ``C - h + j`` (cached part, ``j < h``) or ``C + W - n + j``
    (the part run in the input block, and after it the tokens decoded one by one)."""
    layers = [(k, v) for k, v, *_ in cache]
    lengths = prompt_lengths if prompt_lengths is not None else [len(r) for r in rows]
    for i, (r, h, n) in enumerate(zip(rows, hits, lengths, strict=True)):

        def states(a: int, b: int, i: int = i, h: int = h, n: int = n):
            cols = [C - h + j if j < h else C + W - n + j for j in range(a, b)]
            idx = torch.tensor(cols, dtype=torch.long, device=layers[0][0].device)
            return [(k[i].index_select(1, idx), v[i].index_select(1, idx)) for k, v in layers]

        prefix_cache.insert(r, states)


def remember_decoded(
    prefix_cache: PrefixCache,
    pre: Prefilled,
    cache,
    slots: Sequence[int],
    prompts: Sequence[Sequence[int]],
    decoded: Sequence[Sequence[int]],
) -> None:
    """After decoding from ``pre``: store row ``r``'s prompt ``prompts[slots[r]]`` followed by
    ``decoded[r]`` (tokens whose states ``cache`` holds, in the columns after the prefill's), so
    that a later prompt continuing a sampled answer (a thought, then the action after it) reuses
    them."""
    W = pre.input_ids.shape[1]
    C = pre.mask.shape[1] - W
    _store(
        prefix_cache,
        cache,
        [list(prompts[s]) + list(d) for s, d in zip(slots, decoded, strict=True)],
        [pre.cached[s] for s in slots],
        C,
        W,
        [len(prompts[s]) for s in slots],
    )
