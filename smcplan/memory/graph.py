"""The knowledge-graph belief: a set of triplets with provenance, pruned on update, cheap to copy.

NeSyFS (arXiv 2607.28942) keeps the belief over the latent state as a graph G_t of triplets and
updates it as G_{t+1} = Update(G_t, o_t, a_t): the triplets extracted from the new observation are
added and those they make outdated are removed.  :meth:`KnowledgeGraph.update` implements Update
with the rules of a :class:`~smcplan.memory.predicates.PredicateTable` and one precedence order:

    key(fact) = (step, rank(source)),   rank: predicted = 0 < inferred = 1 < observed = 2

A new fact replaces a conflicting old one iff key(new) >= key(old): the newer fact wins, and at
equal steps an observed fact beats a predicted one (so a world-model prediction can never
overwrite what was seen at the same step, while a rollout may move the state forward).

The facts and their copy-on-write indexes live in :class:`~smcplan.memory.store.FactStore`, the
base class (``copy()`` is O(1) in the number of facts, so N planner particles can each hold
their own graph).  Retrieval and export are methods here that call
:mod:`~smcplan.memory.retrieval` and :mod:`~smcplan.memory.export`, which read a store and never
import this module.  :meth:`to_networkx` gives the networkx view (a ``MultiDiGraph``) for
drawing and graph algorithms.

This module must not import torch, transformers, outlines or jax, nor anything from
``smcplan.llm``, ``smcplan.envs``, ``smcplan.planning`` or ``smcplan.agents``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from smcplan.memory.extract._common import Extraction
from smcplan.memory.predicates import LOCATION_SLOT, PredicateTable
from smcplan.memory.store import FactStore
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


class KnowledgeGraph(FactStore):
    """A belief over the world state as triplets with provenance (step, source).

    The store's invariants (see :class:`~smcplan.memory.store.FactStore`) hold after every
    public method; :meth:`update` is NeSyFS's Update with the precedence order above.
    """

    __slots__ = ()

    def __init__(
        self,
        triplets: Iterable[Any] = (),
        *,
        step: int = 0,
        source: Source = "observed",
        predicates: PredicateTable | None = None,
    ) -> None:
        super().__init__(step=step, predicates=predicates)
        triplets = list(triplets)
        if triplets:
            self.update(triplets, step=step, source=source)

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

    def add(
        self, triplet: Any, *, step: int | None = None, source: Source = "observed"
    ) -> UpdateReport:
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

        return from_json(data, cls)

    def save(self, path: str | Path) -> Path:
        from smcplan.memory.export import save_json

        return save_json(self, path)

    @classmethod
    def load(cls, path: str | Path) -> KnowledgeGraph:
        from smcplan.memory.export import load_json

        return load_json(path, cls)

    def to_networkx(self) -> nx.MultiDiGraph:
        from smcplan.memory.export import to_networkx

        return to_networkx(self)

    def save_png(self, path: str | Path, triplets: Iterable[Any] | None = None, *,
                 title: str | None = None) -> Path:
        from smcplan.memory.export import save_png

        return save_png(self, path, triplets, title=title)
