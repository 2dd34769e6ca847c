"""Task-relevant retrieval tau_t = R(G_t, eta, k): the facts every model role gets as context.

NeSyFS (arXiv 2607.28942) conditions every module on the triplets of the belief graph that are
relevant to the task eta rather than on the whole graph.  Here relevance is graph distance:

1. seeds: the graph's entities named in the task, then (second rank) those named in the last
   observation and the ``always`` entities, by default the agent and its inventory.  An entity is
   named when its full name occurs as a whole-word n-gram of the text or, for numbered names such
   as "apple 1", its base name does ("apple", "apples") without a number after it;
2. breadth-first search from the seeds over entity-entity facts, up to ``k`` hops; attribute
   values (open, 10 degrees) and events are leaves, never walked through;
3. a fact is in the k-hop neighbourhood when one of its ends is within ``k`` hops; facts are
   ordered by (hops from a task seed, hops from any other seed, newest step first, strongest
   source first, insertion order) and cut at ``limit``.  With ``fill`` the remaining room is
   filled with the newest other facts.

This module must not import torch, transformers, outlines or jax, nor anything from
``smcplan.llm``, ``smcplan.envs``, ``smcplan.planning`` or ``smcplan.agents``.
"""

from __future__ import annotations

import heapq
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from smcplan.errors import InvalidArgumentError, Settings
from smcplan.memory.store import FactStore
from smcplan.memory.triplet import SOURCE_RANK, Triplet, normalize_text

__all__ = ["retrieve", "mentioned_entities", "Retrieval", "DEFAULT_RETRIEVAL"]


@dataclass(frozen=True)
class Retrieval(Settings):
    r"""How a reader of the graph retrieves: :math:`\tau = R(G, \eta)` with ``hops`` graph hops
    from the task's entities and at most ``limit`` facts (:func:`retrieve`,
    :meth:`smcplan.memory.KnowledgeGraph.retrieve`).  The agents' KG context and the planner's
    particles share these defaults (2 hops, 24 facts); checked once, at construction."""

    owner: ClassVar[str] = "retrieval option"
    error: ClassVar[type[Exception]] = InvalidArgumentError

    hops: int = 2
    limit: int = 24

    def __post_init__(self) -> None:
        for name, v, low in (("hops", self.hops, 0), ("limit", self.limit, 1)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InvalidArgumentError(
                    f"Retrieval.{name} must be an integer >= {low}; got {v!r}"
                )


#: The default :class:`Retrieval` (2 hops, 24 facts).
DEFAULT_RETRIEVAL = Retrieval()

_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")
_MAX_NGRAM = 6
_INF = 1 << 30


def _ngrams(text: str) -> dict[str, bool]:
    """Word n-grams of ``text`` (n <= 6) -> whether every occurrence is followed by a number."""
    words = _WORD.findall(text.lower())
    out: dict[str, bool] = {}
    for n in range(1, _MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            gram = " ".join(words[i : i + n])
            numbered = i + n < len(words) and words[i + n].isdigit()
            out[gram] = out.get(gram, True) and numbered
    return out


def mentioned_entities(kg: FactStore, text: str) -> list[str]:
    """Entities of ``kg`` named in ``text``, sorted.

    An entity is named by its full name ("apple 1"), or by its base name ("apple", "apples") when
    that is not followed by a number in the text ("apple 2" names apple 2 only).  Entities are
    subjects and objects of walkable facts, not attribute values; the cost is O(len(text)) index
    lookups, independent of the graph's size.
    """
    refs, by_base = kg._refs, kg._by_base
    out: set[str] = set()
    for gram, numbered in _ngrams(text).items():
        if gram in refs:
            out.add(gram)
        if numbered:
            continue
        out.update(by_base.get(gram))
        if gram.endswith("s"):
            out.update(by_base.get(gram[:-1]))
    return sorted(out)


def _bfs(kg: FactStore, seeds: Iterable[str], k: int) -> dict[str, int]:
    walkable = kg.predicates.walkable
    dist: dict[str, int] = {}
    queue: deque[str] = deque()
    for s in seeds:
        if s not in dist:
            dist[s] = 0
            queue.append(s)
    while queue:
        node = queue.popleft()
        d = dist[node]
        if d >= k:
            continue
        for t in kg._by_subject.get(node):
            if t.object not in dist and walkable(t.predicate):
                dist[t.object] = d + 1
                queue.append(t.object)
        for t in kg._by_object.get(node):
            if t.subject not in dist and walkable(t.predicate):
                dist[t.subject] = d + 1
                queue.append(t.subject)
    return dist


def retrieve(
    kg: FactStore,
    task: str,
    k: int = 2,
    *,
    last_observation: str | None = None,
    limit: int = 50,
    always: Iterable[str] = ("agent", "inventory"),
    fill: bool = False,
) -> list[Triplet]:
    """tau = R(G, task, k): the k-hop neighbourhood of the task's entities, ordered, at most
    ``limit``.

    See the module docstring for the ordering.  ``k`` is the number of hops (``k = 0``: only facts
    that touch a named entity).
    """
    if k < 0:
        raise ValueError(f"k (hops) must be >= 0, got {k}")
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    task_seeds = mentioned_entities(kg, task)
    other_seeds = mentioned_entities(kg, last_observation) if last_observation else []
    other_seeds += [e for e in (normalize_text(a) for a in always) if e in kg._refs]
    d_task = _bfs(kg, task_seeds, k)
    d_other = _bfs(kg, other_seeds, k)

    facts = kg._facts
    task_hops, other_hops = d_task.get, d_other.get
    keyed: dict[Triplet, tuple[int, int, int, int, int]] = {}
    for node in set(d_task) | set(d_other):
        for bucket in (kg._by_subject.get(node), kg._by_object.get(node)):
            for t in bucket:
                if t in keyed:
                    continue
                p = facts[t]
                a, b = task_hops(t.subject, _INF), task_hops(t.object, _INF)
                c, d = other_hops(t.subject, _INF), other_hops(t.object, _INF)
                keyed[t] = (
                    a if a < b else b,
                    c if c < d else d,
                    -p.step,
                    -SOURCE_RANK[p.source],
                    p.seq,
                )
    out = heapq.nsmallest(limit, keyed, key=keyed.__getitem__)
    if fill and len(out) < limit:
        rest = sorted(
            ((t, p) for t, p in facts.items() if t not in keyed),
            key=lambda tp: (-tp[1].step, -SOURCE_RANK[tp[1].source], tp[1].seq),
        )
        out += [t for t, _ in rest[: limit - len(out)]]
    return out
