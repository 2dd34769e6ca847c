"""A sharded copy-on-write mapping: O(1) copies, writes that copy one small shard at most.

Why: every particle of the planner holds its own copy of the knowledge graph and changes a few
facts per step.  A deep copy costs O(n) per particle; here ``copy()`` shares all shards and both
sides give up write ownership, so the first write to a shard copies only that shard (about
``n / SHARDS`` entries) -- the path-copying idea of persistent hash tries (Bagwell 2001, "Ideal
Hash Trees") cut to a fixed depth of two, which suffices for graphs of up to ~10^5 entries.

Iteration order follows the shards and is therefore not meaningful; callers that expose order
sort explicitly.  This module imports nothing outside the standard library.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

SHARDS = 32  # a power of two; 32 pointers copy in well under a microsecond
_MASK = SHARDS - 1
_MISSING = object()


class CowMap(Generic[K, V]):
    """Dict-like map whose ``copy()`` is O(SHARDS) and whose writes copy at most one shard."""

    __slots__ = ("_shards", "_owned", "_len")

    def __init__(self) -> None:
        self._shards: list[dict[K, V]] = [{} for _ in range(SHARDS)]
        self._owned: list[bool] = [True] * SHARDS
        self._len = 0

    def copy(self) -> CowMap[K, V]:
        new = CowMap.__new__(CowMap)
        new._shards = list(self._shards)
        new._owned = [False] * SHARDS
        new._len = self._len
        # Both sides now share every shard: neither may write in place any more.
        self._owned = [False] * SHARDS
        return new

    def _writable(self, key: K) -> dict[K, V]:
        i = hash(key) & _MASK
        if not self._owned[i]:
            self._shards[i] = dict(self._shards[i])
            self._owned[i] = True
        return self._shards[i]

    def get(self, key: K, default: V | None = None) -> V | None:
        return self._shards[hash(key) & _MASK].get(key, default)

    def __getitem__(self, key: K) -> V:
        return self._shards[hash(key) & _MASK][key]

    def __contains__(self, key: object) -> bool:
        return key in self._shards[hash(key) & _MASK]

    def __setitem__(self, key: K, value: V) -> None:
        shard = self._writable(key)
        if key not in shard:
            self._len += 1
        shard[key] = value

    def pop(self, key: K, default: object = _MISSING) -> V:
        if key not in self:
            if default is _MISSING:
                raise KeyError(key)
            return default  # type: ignore[return-value]
        self._len -= 1
        return self._writable(key).pop(key)

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[K]:
        for shard in self._shards:
            yield from shard

    def items(self) -> Iterator[tuple[K, V]]:
        for shard in self._shards:
            yield from shard.items()

    def values(self) -> Iterator[V]:
        for shard in self._shards:
            yield from shard.values()
