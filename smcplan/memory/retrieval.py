"""Task-relevant retrieval tau_t = R(G_t, eta, k): the facts every model role gets as context.

NeSyFS (arXiv 2607.28942) conditions every module on the triplets of the belief graph that are
relevant to the task eta rather than on the whole graph.  Here relevance is graph distance:

1. seeds: the graph's entities named in the task (origin 0), then in the last observation and the
   ``always`` entities, by default the agent and its inventory (origin 1).  An entity is named when
   its full name or, for numbered names such as "apple 1", its base name ("apple") occurs as a
   whole-word n-gram of the text;
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

import re
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from smcplan.memory.triplet import SOURCE_RANK, Triplet, normalize_text

if TYPE_CHECKING:
    from smcplan.memory.graph import KnowledgeGraph

__all__ = ["retrieve", "mentioned_entities"]

_WORD = re.compile(r"[a-z0-9][a-z0-9'\-]*")
_NUMBERED = re.compile(r"^(.*\D) \d+$")
_MAX_NGRAM = 6
_INF = 1 << 30


def _ngrams(text: str) -> set[str]:
    words = _WORD.findall(text.lower())
    out: set[str] = set()
    for n in range(1, _MAX_NGRAM + 1):
        for i in range(len(words) - n + 1):
            out.add(" ".join(words[i:i + n]))
    return out


def mentioned_entities(kg: KnowledgeGraph, text: str) -> list[str]:
    """Entities of ``kg`` named in ``text`` (full name, or base name of "name N"), sorted."""
    grams = _ngrams(text)
    if not grams:
        return []
    out = []
    for entity in _entity_nodes(kg):
        if entity in grams:
            out.append(entity)
            continue
        m = _NUMBERED.match(entity)
        if m and (m.group(1) in grams or m.group(1) + "s" in grams):
            out.append(entity)
    return sorted(out)


def _entity_nodes(kg: KnowledgeGraph) -> set[str]:
    """Subjects, and objects of non-attribute, non-event facts (values are not entities)."""
    nodes = set(kg._by_subject)
    table = kg.predicates
    for obj, bucket in kg._by_object.items():
        if obj in nodes:
            continue
        for t in bucket:
            spec = table.spec(t.predicate)
            if not (spec.attribute or spec.event):
                nodes.add(obj)
                break
    return nodes


def _walkable(kg: KnowledgeGraph, t: Triplet) -> bool:
    spec = kg.predicates.spec(t.predicate)
    return not (spec.attribute or spec.event)


def _bfs(kg: KnowledgeGraph, seeds: Iterable[str], k: int) -> dict[str, int]:
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
        for t in kg._by_subject.get(node, ()):
            if _walkable(kg, t) and t.object not in dist:
                dist[t.object] = d + 1
                queue.append(t.object)
        for t in kg._by_object.get(node, ()):
            if _walkable(kg, t) and t.subject not in dist:
                dist[t.subject] = d + 1
                queue.append(t.subject)
    return dist


def _touching(kg: KnowledgeGraph, nodes: Iterable[str]) -> set[Triplet]:
    out: set[Triplet] = set()
    for n in nodes:
        out.update(kg._by_subject.get(n, ()))
        out.update(kg._by_object.get(n, ()))
    return out


def retrieve(
    kg: KnowledgeGraph,
    task: str,
    k: int = 2,
    *,
    last_observation: str | None = None,
    limit: int = 50,
    always: Iterable[str] = ("agent", "inventory"),
    fill: bool = False,
) -> list[Triplet]:
    """tau = R(G, task, k): the k-hop neighbourhood of the task's entities, ordered, at most ``limit``.

    See the module docstring for the ordering.  ``k`` is the number of hops (``k = 0``: only facts
    that touch a named entity).
    """
    if k < 0:
        raise ValueError(f"k (hops) must be >= 0, got {k}")
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    task_seeds = mentioned_entities(kg, task)
    other_seeds = mentioned_entities(kg, last_observation) if last_observation else []
    nodes = _entity_nodes(kg)
    other_seeds += [e for e in (normalize_text(a) for a in always) if e in nodes]
    d_task = _bfs(kg, task_seeds, k)
    d_other = _bfs(kg, other_seeds, k)

    def hops(dist: dict[str, int], t: Triplet) -> int:
        return min(dist.get(t.subject, _INF), dist.get(t.object, _INF))

    facts = kg._facts
    candidates = _touching(kg, set(d_task) | set(d_other))
    ranked = sorted(
        candidates,
        key=lambda t: (
            hops(d_task, t),
            hops(d_other, t),
            -facts[t].step,
            -SOURCE_RANK[facts[t].source],
            facts[t].seq,
        ),
    )
    out = ranked[:limit]
    if fill and len(out) < limit:
        rest = sorted(
            (t for t in facts if t not in candidates),
            key=lambda t: (-facts[t].step, -SOURCE_RANK[facts[t].source], facts[t].seq),
        )
        out += rest[: limit - len(out)]
    return out
