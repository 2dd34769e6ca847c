"""Sharded copy-on-write maps: O(1) copies, writes that copy one small shard (or bucket) at most.

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

    def __reduce__(self) -> tuple:
        # Shards are chosen by hash(), which differs between processes: rebuild on unpickling.
        return (_cowmap_from_items, (list(self.items()),))


def _cowmap_from_items(items: list) -> CowMap:
    out: CowMap = CowMap()
    for k, v in items:
        out[k] = v
    return out


_EMPTY: dict = {}


class CowIndex(Generic[K, V]):
    """A copy-on-write multimap ``key -> ordered set of items`` (a dict used as an ordered set).

    Buckets live in a :class:`CowMap`; a bucket may be changed in place only by the graph that
    copied it (``_owned``), so after ``copy()`` the first write to a bucket copies that bucket
    alone.  ``get`` returns the bucket itself: callers must not mutate it.
    """

    __slots__ = ("_map", "_owned")

    def __init__(self) -> None:
        self._map: CowMap[K, dict[V, None]] = CowMap()
        self._owned: set[K] = set()

    def copy(self) -> CowIndex[K, V]:
        new = CowIndex.__new__(CowIndex)
        new._map = self._map.copy()
        new._owned = set()
        self._owned = set()
        return new

    def get(self, key: K) -> dict[V, None]:
        return self._map.get(key, _EMPTY)  # type: ignore[return-value]

    def _own(self, key: K, bucket: dict[V, None]) -> dict[V, None]:
        if key not in self._owned:
            bucket = dict(bucket)
            self._map[key] = bucket
            self._owned.add(key)
        return bucket

    def add(self, key: K, item: V) -> bool:
        """Add ``item`` under ``key``; ``True`` if ``key`` was new."""
        bucket = self._map.get(key)
        if bucket is None:
            self._map[key] = {item: None}
            self._owned.add(key)
            return True
        if item not in bucket:
            self._own(key, bucket)[item] = None
        return False

    def discard(self, key: K, item: V) -> bool:
        """Remove ``item`` from ``key``; ``True`` if ``key`` is now gone."""
        bucket = self._map.get(key)
        if bucket is None or item not in bucket:
            return False
        if len(bucket) == 1:
            self._map.pop(key)
            self._owned.discard(key)
            return True
        del self._own(key, bucket)[item]
        return False

    def __contains__(self, key: object) -> bool:
        return key in self._map

    def __iter__(self) -> Iterator[K]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)

    def items(self) -> Iterator[tuple[K, dict[V, None]]]:
        return self._map.items()

    def __reduce__(self) -> tuple:
        return (_cowindex_from_items, ([(k, list(b)) for k, b in self._map.items()],))


def _cowindex_from_items(items: list) -> CowIndex:
    out: CowIndex = CowIndex()
    for k, bucket in items:
        for v in bucket:
            out.add(k, v)
    return out
