"""The knowledge-graph belief: a set of triplets with provenance, pruned on update, cheap to copy.

NeSyFS (arXiv 2607.28942) keeps the belief over the latent state as a graph G_t of triplets and
updates it as G_{t+1} = Update(G_t, o_t, a_t): the triplets extracted from the new observation are
added and those they make outdated are removed.  :meth:`KnowledgeGraph.update` implements Update
with the rules of a :class:`~smcplan.memory.predicates.PredicateTable` and one precedence order:

    key(fact) = (step, rank(source)),   rank: predicted = 0 < inferred = 1 < observed = 2

A new fact replaces a conflicting old one iff key(new) >= key(old): the newer fact wins, and at
equal steps an observed fact beats a predicted one (so a world-model prediction can never
overwrite what was seen at the same step, while a rollout may move the state forward).

Storage is copy-on-write (:mod:`smcplan.memory._pmap`): ``copy()`` is O(1) in the number of facts,
so N planner particles can each hold their own graph.  :meth:`to_networkx` gives the networkx
view (a ``MultiDiGraph``) for drawing and graph algorithms.

This module must not import torch, transformers, outlines or jax, nor anything from
``smcplan.llm``, ``smcplan.envs``, ``smcplan.planning`` or ``smcplan.agents``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from smcplan.memory._pmap import CowIndex, CowMap
from smcplan.memory.extract._common import Extraction
from smcplan.memory.predicates import DEFAULT_PREDICATES, LOCATION_SLOT, PredicateTable
from smcplan.memory.triplet import (
    SOURCE_RANK,
    Provenance,
    Source,
    Triplet,
    as_triplet,
    check_source,
    normalize_text,
)

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["KnowledgeGraph", "UpdateReport"]

_NUMBERED = re.compile(r"^(.*\D) \d+$")


def base_name(entity: str) -> str | None:
    """``"apple 1"`` -> ``"apple"``: the name without ALFWorld's instance number, else ``None``."""
    m = _NUMBERED.match(entity)
    return m.group(1) if m else None


class UpdateReport(NamedTuple):
    """What one :meth:`KnowledgeGraph.update` changed.

    ``added``: new facts (partners of symmetric/inverse facts included); ``removed``: facts pruned
    as outdated; ``rejected``: asserted facts dropped because a conflicting fact outranks them;
    ``invalid``: items that are not triplets (only with ``strict=False``), as given.
    """

    added: tuple[Triplet, ...]
    removed: tuple[Triplet, ...]
    rejected: tuple[Triplet, ...]
    invalid: tuple[Any, ...] = ()


class KnowledgeGraph:
    """A belief over the world state as triplets with provenance (step, source).

    Invariants, kept by every public method:

    * each subject holds at most one fact per exclusive slot (an object is in one place; a door is
      open or closed);
    * the partner of a symmetric/inverse fact is present iff the fact is;
    * indexes by subject, object and slot agree with the facts.

    Iteration yields triplets in insertion order; ``len`` counts facts; two graphs are equal when
    they hold the same triplets with the same (step, source) -- the predicate table and insertion
    order are not compared.
    """

    __slots__ = ("_facts", "_by_subject", "_by_object", "_slots", "_refs", "_by_base", "_table",
                 "_step", "_seq")

    def __init__(
        self,
        triplets: Iterable[Any] = (),
        *,
        step: int = 0,
        source: Source = "observed",
        predicates: PredicateTable | None = None,
    ) -> None:
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
        triplets = list(triplets)
        if triplets:
            self.update(triplets, step=step, source=source)

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
        if not isinstance(other, KnowledgeGraph):
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
        return f"KnowledgeGraph({len(self)} facts, step={self._step})"

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
        """Check every invariant from scratch (O(n)); raise ``ValueError`` naming the first broken one."""
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

    # ------------------------------------------------------------------ update
    def update(
        self,
        triplets: Iterable[Any] | Extraction,
        *,
        step: int | None = None,
        source: Source = "observed",
        closed: Iterable[str] = (),
        strict: bool = True,
    ) -> UpdateReport:
        """G <- Update(G, triplets): add the facts, prune what they make outdated.

        ``triplets``: :class:`Triplet` s, plain ``(subject, predicate, object)`` tuples (as the
        LLM extractor returns) or mappings, or an :class:`~smcplan.memory.extract.Extraction`
        (whose ``closed`` set is then used too).  ``step``: the time of the evidence (default:
        the graph's clock); ``source``: observed | predicted | inferred.

        ``closed``: containers (or rooms) whose *whole* contents the evidence lists, e.g. "On the
        countertop 1, you see a apple 1." closes countertop 1; a fact "x in/on/at c" for a closed
        c that is not re-asserted is removed (if it does not outrank the new evidence).
        ``strict=False`` skips items that are not triplets (empty fields, wrong shapes: what a
        language model may emit) and lists them in the report instead of raising.

        Then, in order, for each fact f (and its symmetric/inverse partner, atomically):
        if f is already held, its step becomes the later one and its source the stronger one;
        else if a fact g in the same exclusive slot has key(g) > key(f), f is rejected; else g (with
        its partner) is removed and f added.  Events and plain relations have no slot and are
        only appended.
        """
        closed_set: set[str] = {normalize_text(c) for c in closed}
        if isinstance(triplets, Extraction):
            closed_set |= triplets.closed
            triplets = triplets.triplets
        source = check_source(source)  # type: ignore[assignment]
        step = self._step if step is None else int(step)
        new_key = (step, SOURCE_RANK[source])
        table = self._table
        invalid: list[Any] = []
        if strict:
            batch = [table.canonical(as_triplet(x)) for x in triplets]
        else:
            batch = []
            for x in triplets:
                try:
                    batch.append(table.canonical(as_triplet(x)))
                except (TypeError, ValueError):
                    invalid.append(x)
        added: list[Triplet] = []
        removed: list[Triplet] = []
        rejected: list[Triplet] = []

        if closed_set:
            asserted = set(batch)
            for c in sorted(closed_set):
                for t in list(self._by_object.get(c)):
                    if (
                        t in self._facts
                        and t not in asserted
                        and table.in_slot(t.predicate, LOCATION_SLOT)
                        and self._facts[t].key <= new_key
                    ):
                        self._delete_with_partner(t, removed)

        for t in batch:
            pair = [t]
            partner = table.partner(t)
            if partner is not None and partner != t:
                pair.append(partner)
            blocked = False
            for x in pair:
                if x in self._facts:
                    continue
                key = table.slot_key(x)
                occupant = self._slots.get(key) if key is not None else None
                if occupant is not None and self._facts[occupant].key > new_key:
                    blocked = True
                    break
            if blocked:
                rejected.append(t)
                continue
            for x in pair:
                old = self._facts.get(x)
                if old is not None:
                    best = source if SOURCE_RANK[source] > SOURCE_RANK[old.source] else old.source
                    self._facts[x] = Provenance(max(step, old.step), best, old.seq)  # type: ignore[arg-type]
                    continue
                key = table.slot_key(x)
                occupant = self._slots.get(key) if key is not None else None
                if occupant is not None:
                    self._delete_with_partner(occupant, removed)
                self._seq += 1
                self._insert(x, Provenance(step, source, self._seq))
                added.append(x)
        self._step = max(self._step, step)
        # A fact both added and removed within one update (replaced by a later one) is neither.
        gone = set(removed) & set(added)
        return UpdateReport(
            tuple(x for x in added if x not in gone),
            tuple(x for x in removed if x not in gone),
            tuple(rejected),
            tuple(invalid),
        )

    def add(self, triplet: Any, *, step: int | None = None, source: Source = "observed") -> UpdateReport:
        """Assert one fact with the same pruning as :meth:`update`."""
        return self.update([triplet], step=step, source=source)

    def remove(self, triplet: Any) -> bool:
        """Delete one fact (and its symmetric/inverse partner); ``False`` if it was absent."""
        t = self._table.canonical(as_triplet(triplet))
        if t not in self._facts:
            return False
        self._delete_with_partner(t, [])
        return True

    def observe(
        self,
        observation: str,
        action: str | None = None,
        *,
        env_kind: str,
        step: int | None = None,
        source: Source = "observed",
    ) -> UpdateReport:
        """Rule-based extraction of ``observation`` then :meth:`update`; the agent's location
        from the graph resolves relative phrases ("The door is now open.")."""
        from smcplan.memory.extract import extract_triplets  # the dispatcher and its parsers

        here = self.location_of("agent")
        extraction = extract_triplets(observation, action, env_kind=env_kind, location=here)
        return self.update(extraction, step=step, source=source)

    # ------------------------------------------------------------------ copies
    def copy(self) -> KnowledgeGraph:
        """An independent graph sharing storage until either side writes (O(1) in size)."""
        new = KnowledgeGraph.__new__(KnowledgeGraph)
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

    def __deepcopy__(self, memo: dict[int, Any]) -> KnowledgeGraph:
        return self.copy()  # facts are immutable: a copy-on-write copy is a deep copy

    # ------------------------------------------------------------------ retrieval and export
    def retrieve(
        self,
        task: str,
        k: int = 2,
        *,
        last_observation: str | None = None,
        limit: int = 50,
        always: Iterable[str] = ("agent", "inventory"),
        fill: bool = False,
    ) -> list[Triplet]:
        """tau = R(G, task, k); see :func:`smcplan.memory.retrieval.retrieve`."""
        from smcplan.memory.retrieval import retrieve

        return retrieve(self, task, k, last_observation=last_observation, limit=limit,
                        always=always, fill=fill)

    def to_prompt_lines(self, triplets: Iterable[Any] | None = None) -> list[str]:
        """``["(subject, predicate, object)", ...]`` for ``triplets`` (default: all facts)."""
        from smcplan.memory.export import to_prompt_lines

        return to_prompt_lines(self if triplets is None else triplets)

    def to_json(self) -> dict[str, Any]:
        from smcplan.memory.export import to_json

        return to_json(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | str) -> KnowledgeGraph:
        from smcplan.memory.export import from_json

        return from_json(data)

    def save(self, path: str | Path) -> Path:
        from smcplan.memory.export import save_json

        return save_json(self, path)

    @classmethod
    def load(cls, path: str | Path) -> KnowledgeGraph:
        from smcplan.memory.export import load_json

        return load_json(path)

    def to_networkx(self) -> nx.MultiDiGraph:
        from smcplan.memory.export import to_networkx

        return to_networkx(self)

    def save_png(self, path: str | Path, triplets: Iterable[Any] | None = None, *,
                 title: str | None = None) -> Path:
        from smcplan.memory.export import save_png

        return save_png(self, path, triplets, title=title)
