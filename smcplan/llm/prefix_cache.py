"""A prefix cache of key/value states across model calls: a radix tree of token ids, LRU by bytes.

A causal transformer's key/value state at position ``j`` is a function of the tokens ``x_0..x_j``
(and of the position ``j`` itself, through the rotary embedding) only. So once a prompt ``x`` has
been run, the states of its first ``h`` positions serve every later prompt ``x'`` with
``x'_{<h} = x_{<h}``: the model then runs only ``x'_{h..}`` on top of them. This is the idea of
SGLang's RadixAttention (Zheng et al. 2024, "SGLang: Efficient Execution of Structured Language
Model Programs") and of genlm-backend's ``TokenTrie`` of ``past_key_values``; here it sits
inside the transformers backend of :mod:`smcplan.llm` and stores plain per-layer tensors that
:mod:`smcplan.llm.prefill` turns into a ``transformers.DynamicCache``.

Structure: a radix tree whose edges are runs of token ids. Each node holds, for every layer, the
keys and values of its run, tensors of shape ``[kv_heads, run_length, head_dim]`` (no batch
axis: a row's states do not depend on the other rows of the batch that computed them, since
padding is masked out). The states of a prefix are the concatenation of the runs along its
path. Inserting a prompt that leaves a run in the middle splits that node in two.

Memory: ``nbytes`` counts the stored tensors. After every insertion the least recently used
*leaves* are evicted until ``nbytes <= max_bytes`` (a node is used when a lookup or an insertion
passes through it; an inner node is never evicted before its children, so every stored path
stays complete). One prompt larger than ``max_bytes`` is not kept at all.

Imports torch only; must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

__all__ = ["PrefixCache", "CacheStats", "DEFAULT_PREFIX_CACHE_BYTES"]

#: Default bound: 1 GiB. On a 24 GiB machine this leaves room for the model, the batch's own
#: caches and several worker processes; it holds ~23,000 tokens of SmolLM2-135M in fp32
#: (30 layers x 2 x 3 KV heads x 64 dims x 4 bytes = 46 kB per token), i.e. the prompts of
#: dozens of agent steps.
DEFAULT_PREFIX_CACHE_BYTES = 1 << 30

Layers = list[tuple[torch.Tensor, torch.Tensor]]


@dataclass
class CacheStats:
    """Counters since construction.

    ``lookups``: prompts looked up; ``hits``: those that reused at least one token;
    ``cached_tokens``: prompt tokens served from the cache; ``prefilled_tokens``: prompt tokens
    the model ran (their sum is the prompt tokens looked up); ``inserted_tokens`` /
    ``evicted_tokens``: tokens stored / dropped.
    """

    lookups: int = 0
    hits: int = 0
    cached_tokens: int = 0
    prefilled_tokens: int = 0
    inserted_tokens: int = 0
    evicted_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


class _Node:
    __slots__ = ("tokens", "kv", "children", "parent", "last_used", "nbytes")

    def __init__(self, tokens: tuple[int, ...], kv: Layers, parent: _Node | None) -> None:
        self.tokens = tokens
        self.kv = kv
        self.children: dict[int, _Node] = {}
        self.parent = parent
        self.last_used = 0
        self.nbytes = sum(k.nbytes + v.nbytes for k, v in kv)


class PrefixCache:
    """The radix tree of key/value states (module docstring), bounded by ``max_bytes``."""

    def __init__(self, max_bytes: int = DEFAULT_PREFIX_CACHE_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(
                f"prefix_cache_bytes must be a non-negative integer number of bytes; got "
                f"{max_bytes!r} (e.g. 1 << 30 for 1 GiB)"
            )
        self.max_bytes = max_bytes
        self.stats = CacheStats()
        self._clock = itertools.count(1)
        self.clear()

    def clear(self) -> None:
        """Drop every stored state (the counters in ``stats`` keep counting)."""
        self._root = _Node((), [], None)
        self.nbytes = 0
        self.num_tokens = 0

    # ------------------------------------------------------------------ lookup
    def _walk(self, ids: Sequence[int], limit: int) -> list[tuple[_Node, int]]:
        """The path of ``ids[:limit]`` in the tree: ``(node, tokens used of its run)`` pairs."""
        path: list[tuple[_Node, int]] = []
        node, pos = self._root, 0
        while pos < limit:
            child = node.children.get(ids[pos])
            if child is None:
                break
            run = child.tokens
            n = min(len(run), limit - pos)
            used = 0
            while used < n and run[used] == ids[pos + used]:
                used += 1
            path.append((child, used))
            pos += used
            if used < len(run):
                break
            node = child
        return path

    def match(
        self, ids: Sequence[int], limit: int | None = None
    ) -> tuple[int, list[tuple[_Node, int]]]:
        """Length ``h`` of the longest stored prefix of ``ids[:limit]`` and its path (marked
        used)."""
        limit = len(ids) if limit is None else min(limit, len(ids))
        path = self._walk(ids, limit)
        tick = next(self._clock)
        for node, _ in path:
            node.last_used = tick
        return sum(used for _, used in path), path

    @staticmethod
    def write(path: list[tuple[_Node, int]], out: Layers, row: int, end: int) -> None:
        """Copy the states of ``path`` into ``out[layer][0 or 1][row, :, end - h : end]``."""
        h = sum(used for _, used in path)
        pos = end - h
        for node, used in path:
            for (k, v), (ok, ov) in zip(node.kv, out, strict=True):
                ok[row, :, pos : pos + used] = k[:, :used]
                ov[row, :, pos : pos + used] = v[:, :used]
            pos += used

    # ------------------------------------------------------------------ insertion
    def insert(self, ids: Sequence[int], states: Callable[[int, int], Layers]) -> int:
        """Store ``ids``; ``states(a, b)`` gives the per-layer ``[heads, b - a, dim]`` keys and
        values of positions ``a..b-1`` (called once, for the part not yet stored). Returns the
        number of tokens added (0 when already stored or when the prompt alone exceeds the bound).
        """
        ids = tuple(int(t) for t in ids)
        h, path = self.match(ids)
        if h == len(ids):
            return 0
        kv = states(h, len(ids))
        if sum(k.nbytes + v.nbytes for k, v in kv) + self._path_bytes(path) > self.max_bytes:
            return 0
        parent = self._root
        if path:
            node, used = path[-1]
            parent = self._split(node, used) if used < len(node.tokens) else node
        leaf = _Node(ids[h:], kv, parent)
        leaf.last_used = next(self._clock)
        parent.children[ids[h]] = leaf
        self.nbytes += leaf.nbytes
        self.num_tokens += len(leaf.tokens)
        self.stats.inserted_tokens += len(leaf.tokens)
        self._evict()
        return len(leaf.tokens)

    @staticmethod
    def _path_bytes(path: list[tuple[_Node, int]]) -> int:
        return sum(node.nbytes * used // max(1, len(node.tokens)) for node, used in path)

    def _split(self, node: _Node, at: int) -> _Node:
        """Cut ``node``'s run after ``at`` tokens; returns the new upper node (the head)."""
        head = _Node(
            node.tokens[:at],
            [(k[:, :at].clone(), v[:, :at].clone()) for k, v in node.kv],
            node.parent,
        )
        head.last_used = node.last_used
        assert node.parent is not None
        node.parent.children[head.tokens[0]] = head
        before = node.nbytes
        node.tokens = node.tokens[at:]
        node.kv = [(k[:, at:].clone(), v[:, at:].clone()) for k, v in node.kv]
        node.nbytes = sum(k.nbytes + v.nbytes for k, v in node.kv)
        node.parent = head
        head.children[node.tokens[0]] = node
        self.nbytes += head.nbytes + node.nbytes - before
        return head

    def _evict(self) -> None:
        """Drop least recently used leaves until ``nbytes <= max_bytes``."""
        if self.nbytes <= self.max_bytes:
            return
        leaves = sorted(self._leaves(), key=lambda n: n.last_used)
        while self.nbytes > self.max_bytes and leaves:
            leaf = leaves.pop(0)
            parent = leaf.parent
            assert parent is not None
            del parent.children[leaf.tokens[0]]
            self.nbytes -= leaf.nbytes
            self.num_tokens -= len(leaf.tokens)
            self.stats.evicted_tokens += len(leaf.tokens)
            if parent is not self._root and not parent.children:
                # an inner node became a leaf: it competes by its own last use
                i = 0
                while i < len(leaves) and leaves[i].last_used <= parent.last_used:
                    i += 1
                leaves.insert(i, parent)

    def _leaves(self) -> list[_Node]:
        out, stack = [], list(self._root.children.values())
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            else:
                out.append(node)
        return out

    def __len__(self) -> int:
        """Number of stored tokens (states of distinct prefixes)."""
        return self.num_tokens

    def __repr__(self) -> str:
        return (
            f"PrefixCache({self.num_tokens} tokens, {self.nbytes / 2**20:.1f} MiB of "
            f"{self.max_bytes / 2**20:.0f} MiB)"
        )
