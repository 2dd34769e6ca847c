"""The storage under the knowledge-graph belief: facts with provenance and their indexes.

:class:`FactStore` holds the triplets with their (step, source, insertion number), indexed by
subject, object, exclusive slot, entity reference count and base name, all copy-on-write
(:mod:`smcplan.memory._pmap`): ``copy()`` is O(1) in the number of facts, so N planner particles
can each hold their own graph. It answers queries and checks its invariants; the update rule
that changes it (NeSyFS's Update) is :class:`smcplan.memory.graph.KnowledgeGraph`, its subclass.
Retrieval and export (:mod:`~smcplan.memory.retrieval`, :mod:`~smcplan.memory.export`) read a
store; the graph calls them, they never import the graph.

This module must not import torch, transformers, outlines or jax, nor anything from
``smcplan.llm``, ``smcplan.envs``, ``smcplan.planning`` or ``smcplan.agents``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, Self

from smcplan.memory._pmap import CowIndex, CowMap
from smcplan.memory.predicates import DEFAULT_PREDICATES, LOCATION_SLOT, PredicateTable
from smcplan.memory.triplet import (
    Provenance,
    Source,
    Triplet,
    as_triplet,
    check_source,
    normalize_text,
)

__all__ = ["FactStore", "base_name"]

_NUMBERED = re.compile(r"^(.*\D) \d+$")


def base_name(entity: str) -> str | None:
    """``"apple 1"`` -> ``"apple"``: the name without ALFWorld's instance number, else ``None``."""
    m = _NUMBERED.match(entity)
    return m.group(1) if m else None


class FactStore:
    """Triplets with provenance (step, source) and the indexes every graph operation uses.

    Invariants, kept by every public method:

    * each subject holds at most one fact per exclusive slot (an object is in one place; a door is
      open or closed);
    * the partner of a symmetric/inverse fact is present iff the fact is;
    * indexes by subject, object and slot agree with the facts.

    Iteration yields triplets in insertion order; ``len`` counts facts; two stores are equal when
    they hold the same triplets with the same (step, source) -- the predicate table and insertion
    order are not compared.
    """

    __slots__ = ("_facts", "_by_subject", "_by_object", "_slots", "_refs", "_by_base", "_table",
                 "_step", "_seq")

    def __init__(self, *, step: int = 0, predicates: PredicateTable | None = None) -> None:
        if predicates is not None and not isinstance(predicates, PredicateTable):
            raise TypeError(f"predicates must be a PredicateTable, got {type(predicates).__name__}")
        self._table = predicates if predicates is not None else DEFAULT_PREDICATES
        self._facts: CowMap[Triplet, Provenance] = CowMap()
        self._by_subject: CowIndex[str, Triplet] = CowIndex()
        self._by_object: CowIndex[str, Triplet] = CowIndex()
        self._slots: CowMap[tuple[str, ...], Triplet] = CowMap()
        # Entities (subjects, and objects of walkable facts) with their number of such facts,
        # and numbered entities by base name ("apple" -> {"apple 1", "apple 2"}): for retrieval.
        self._refs: CowMap[str, int] = CowMap()
        self._by_base: CowIndex[str, str] = CowIndex()
        self._step = int(step)
        self._seq = 0

    # ------------------------------------------------------------------ container protocol
    @property
    def predicates(self) -> PredicateTable:
        return self._table

    @property
    def step(self) -> int:
        """The latest step at which anything was asserted (the graph's clock)."""
        return self._step

    def __len__(self) -> int:
        return len(self._facts)

    def __iter__(self) -> Iterator[Triplet]:
        return iter(t for t, _ in self.facts())

    def __contains__(self, item: object) -> bool:
        try:
            t = self._table.canonical(as_triplet(item))
        except (TypeError, ValueError):
            return False
        return t in self._facts

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FactStore):
            return NotImplemented
        if len(self) != len(other):
            return False
        for t, p in self._facts.items():
            q = other._facts.get(t)
            if q is None or (q.step, q.source) != (p.step, p.source):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} facts, step={self._step})"

    def facts(self) -> list[tuple[Triplet, Provenance]]:
        """All ``(triplet, provenance)`` pairs in insertion order."""
        return sorted(self._facts.items(), key=lambda tp: tp[1].seq)

    def provenance(self, triplet: Any) -> Provenance:
        t = self._table.canonical(as_triplet(triplet))
        try:
            return self._facts[t]
        except KeyError:
            raise KeyError(f"{t} is not in the graph") from None

    # ------------------------------------------------------------------ queries
    def query(
        self,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        *,
        source: Source | None = None,
    ) -> list[Triplet]:
        """Facts matching every given field (text normalised, predicate aliases resolved).

        Uses the subject or object index when one is given, else scans; insertion order.
        """
        s = normalize_text(subject) if subject is not None else None
        p = normalize_text(predicate) if predicate is not None else None
        o = normalize_text(object) if object is not None else None
        if p is not None:
            probe = self._table.canonical(Triplet("x", p, "y"))
            if probe.subject == "y":  # inverse alias, e.g. "contains": swap the query
                s, o = o, s
            p = probe.predicate
        if source is not None:
            check_source(source)
        if s is not None:
            pool: Iterable[Triplet] = list(self._by_subject.get(s))
        elif o is not None:
            pool = list(self._by_object.get(o))
        else:
            pool = iter(self)
        out = []
        for t in pool:
            if (s is None or t.subject == s) and (p is None or t.predicate == p) and (
                o is None or t.object == o
            ):
                if source is None or self._facts[t].source == source:
                    out.append(t)
        return out

    def location_of(self, entity: str) -> str | None:
        """Where ``entity`` is (the object of its ``in``/``on``/``at`` fact), or ``None``."""
        t = self._slots.get((normalize_text(entity), "slot", LOCATION_SLOT))
        return t.object if t is not None else None

    def contents(self, container: str) -> list[str]:
        """What is in/on/at ``container`` according to the graph, in insertion order."""
        return [
            t.subject
            for t in self._by_object.get(normalize_text(container))
            if self._table.in_slot(t.predicate, LOCATION_SLOT)
        ]

    def entities(self) -> list[str]:
        """Every subject and object name, sorted."""
        return sorted(set(self._by_subject) | set(self._by_object))

    def neighbors(self, entity: str) -> list[str]:
        """Entities one fact away from ``entity`` (either direction), sorted."""
        e = normalize_text(entity)
        out = {t.object for t in self._by_subject.get(e)}
        out |= {t.subject for t in self._by_object.get(e)}
        out.discard(e)
        return sorted(out)

    def validate(self) -> None:
        """Check every invariant from scratch (O(n)); raise ``ValueError`` naming the first broken
        one."""
        table = self._table
        by_subject: dict[str, set[Triplet]] = {}
        by_object: dict[str, set[Triplet]] = {}
        slots: dict[tuple[str, ...], Triplet] = {}
        seqs: set[int] = set()
        for t, prov in self._facts.items():
            by_subject.setdefault(t.subject, set()).add(t)
            by_object.setdefault(t.object, set()).add(t)
            key = table.slot_key(t)
            if key is not None:
                if key in slots:
                    raise ValueError(f"{t} and {slots[key]} share the exclusive slot {key}")
                slots[key] = t
            partner = table.partner(t)
            if partner is not None:
                other = self._facts.get(partner)
                if other is None:
                    raise ValueError(f"{t} is held but its partner {partner} is not")
                if (other.step, other.source) != (prov.step, prov.source):
                    raise ValueError(f"{t} and its partner {partner} differ in provenance")
            if prov.seq in seqs or prov.seq > self._seq:
                raise ValueError(f"{t} has a duplicate or future insertion number {prov.seq}")
            seqs.add(prov.seq)
        for name, index, truth in (("subject", self._by_subject, by_subject),
                                   ("object", self._by_object, by_object)):
            if {k: set(v) for k, v in index.items()} != truth:
                raise ValueError(f"the {name} index disagrees with the facts")
        if dict(self._slots.items()) != slots:
            raise ValueError("the slot index disagrees with the facts")
        refs: dict[str, int] = {}
        for t in self._facts:
            refs[t.subject] = refs.get(t.subject, 0) + 1
            if table.walkable(t.predicate):
                refs[t.object] = refs.get(t.object, 0) + 1
        if dict(self._refs.items()) != refs:
            raise ValueError("the entity reference counts disagree with the facts")
        bases: dict[str, set[str]] = {}
        for e in refs:
            b = base_name(e)
            if b is not None:
                bases.setdefault(b, set()).add(e)
        if {k: set(v) for k, v in self._by_base.items()} != bases:
            raise ValueError("the base-name index disagrees with the entities")

    # ------------------------------------------------------------------ raw index maintenance
    def _ref(self, entity: str, delta: int) -> None:
        n = self._refs.get(entity, 0) + delta
        if n:
            self._refs[entity] = n
        else:
            self._refs.pop(entity)
        if n == 0 or (n == 1 and delta == 1):
            base = base_name(entity)
            if base is not None:
                (self._by_base.add if n else self._by_base.discard)(base, entity)

    def _insert(self, t: Triplet, prov: Provenance) -> None:
        self._facts[t] = prov
        self._by_subject.add(t.subject, t)
        self._by_object.add(t.object, t)
        self._ref(t.subject, 1)
        if self._table.walkable(t.predicate):
            self._ref(t.object, 1)
        key = self._table.slot_key(t)
        if key is not None:
            self._slots[key] = t

    def _delete(self, t: Triplet) -> None:
        self._facts.pop(t)
        self._by_subject.discard(t.subject, t)
        self._by_object.discard(t.object, t)
        self._ref(t.subject, -1)
        if self._table.walkable(t.predicate):
            self._ref(t.object, -1)
        key = self._table.slot_key(t)
        if key is not None and self._slots.get(key) == t:
            self._slots.pop(key)

    def _delete_with_partner(self, t: Triplet, removed: list[Triplet]) -> None:
        for x in (t, self._table.partner(t)):
            if x is not None and x in self._facts:
                self._delete(x)
                removed.append(x)

    # ------------------------------------------------------------------ copies
    def copy(self) -> Self:
        """An independent graph sharing storage until either side writes (O(1) in size)."""
        new = type(self).__new__(type(self))
        new._facts = self._facts.copy()
        new._by_subject = self._by_subject.copy()
        new._by_object = self._by_object.copy()
        new._slots = self._slots.copy()
        new._refs = self._refs.copy()
        new._by_base = self._by_base.copy()
        new._table = self._table
        new._step = self._step
        new._seq = self._seq
        return new

    __copy__ = copy

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self.copy()  # facts are immutable: a copy-on-write copy is a deep copy
