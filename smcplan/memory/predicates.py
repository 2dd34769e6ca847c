"""The declarative predicate table: which facts replace which when the graph is updated.

NeSyFS (arXiv 2607.28942) updates the graph as G_{t+1} = Update(G_t, o_t, a_t): new triplets are
added and *outdated* ones removed.  What is outdated is decided here, per predicate, as data:

* ``functional``: a subject has at most one object for the predicate; a new (s, p, o) replaces
  (s, p, o').  ``slot`` generalises this to *mutually exclusive predicates*: all predicates with
  the same slot share one place per subject, so "apple in fridge 1" replaces "apple on
  countertop 1" (slot ``location``: in, on, at).
* ``exclusive_values``: groups of values of a non-functional predicate that exclude each other,
  so (drawer 1, is, open) replaces (drawer 1, is, closed) but (egg 1, is, hot) and
  (egg 1, is, clean) coexist.
* ``symmetric`` / ``inverse``: (a, connects to, b) also holds as (b, connects to, a); (kitchen,
  north, pantry) also holds as (pantry, south, kitchen).  The partner is stored and removed with
  its fact.
* ``event``: past-tense verbs, (agent, opened, drawer 1); events are only ever appended.
* ``attribute``: the object is a value (open, 10 degrees celsius), not an entity; retrieval does
  not walk through values (nor through events).
* ``aliases`` and ``inverse_aliases``: other spellings, e.g. "is in" -> in and
  (fridge 1, contains, egg 1) -> (egg 1, in, fridge 1).

Users extend the table with :meth:`PredicateTable.extend`.  This module must not import torch,
transformers, outlines or jax, nor anything from ``smcplan.llm``/``envs``/``planning``/``agents``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from smcplan.memory.triplet import Triplet, normalize_text

__all__ = ["PredicateSpec", "PredicateTable", "DEFAULT_PREDICATES", "LOCATION_SLOT"]

LOCATION_SLOT = "location"
"""The slot of the where-is-it predicates; closure (``update(..., closed=...)``) acts on it."""

# Past-tense verbs that, absent from the table, still make a predicate an event.
_IRREGULAR_PAST = frozenset(
    "ate took put read saw went made got gave held left found brought threw wore drank cut "
    "broke set hung lit ran dug".split()
)


@dataclass(frozen=True)
class PredicateSpec:
    """How one predicate behaves under update; all text is normalised on construction."""

    name: str
    functional: bool = False
    slot: str | None = None
    exclusive_values: tuple[tuple[str, ...], ...] = ()
    symmetric: bool = False
    inverse: str | None = None
    event: bool = False
    attribute: bool = False
    aliases: tuple[str, ...] = ()
    inverse_aliases: tuple[str, ...] = ()
    _value_group: dict[str, int] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "name", normalize_text(self.name))
        if not self.name:
            raise ValueError("PredicateSpec name is empty after normalisation")
        set_(self, "slot", normalize_text(self.slot) if self.slot else None)
        if self.functional and self.slot is None:
            set_(self, "slot", self.name)
        set_(self, "functional", self.slot is not None)
        groups = tuple(tuple(normalize_text(v) for v in g) for g in self.exclusive_values)
        set_(self, "exclusive_values", groups)
        set_(self, "aliases", tuple(normalize_text(a) for a in self.aliases))
        set_(self, "inverse_aliases", tuple(normalize_text(a) for a in self.inverse_aliases))
        if self.symmetric:
            if self.inverse not in (None, self.name):
                raise ValueError(
                    f"predicate {self.name!r} is symmetric, so its inverse must be itself, "
                    f"not {self.inverse!r}"
                )
            set_(self, "inverse", self.name)
        elif self.inverse is not None:
            set_(self, "inverse", normalize_text(self.inverse))
            if self.inverse == self.name:
                set_(self, "symmetric", True)
        if self.event and (self.slot or groups or self.inverse):
            raise ValueError(
                f"event predicate {self.name!r} cannot be functional, exclusive or have an inverse"
            )
        if self.slot and groups:
            raise ValueError(
                f"predicate {self.name!r}: exclusive_values only apply to non-functional predicates"
            )
        index: dict[str, int] = {}
        for i, group in enumerate(groups):
            for value in group:
                if value in index:
                    raise ValueError(
                        f"predicate {self.name!r}: value {value!r} is in two exclusive groups"
                    )
                index[value] = i
        set_(self, "_value_group", index)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.slot is not None:
            out["slot"] = self.slot
        for key in ("symmetric", "event", "attribute"):
            if getattr(self, key):
                out[key] = True
        if self.inverse is not None and not self.symmetric:
            out["inverse"] = self.inverse
        for key in ("exclusive_values", "aliases", "inverse_aliases"):
            if getattr(self, key):
                out[key] = [list(g) if isinstance(g, tuple) else g for g in getattr(self, key)]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PredicateSpec:
        known = {"name", "functional", "slot", "exclusive_values", "symmetric", "inverse",
                 "event", "attribute", "aliases", "inverse_aliases"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(
                f"unknown PredicateSpec keys {sorted(unknown)}; known: {sorted(known)}"
            )
        kwargs = dict(data)
        for key in ("aliases", "inverse_aliases"):
            if key in kwargs:
                kwargs[key] = tuple(kwargs[key])
        if "exclusive_values" in kwargs:
            kwargs["exclusive_values"] = tuple(tuple(g) for g in kwargs["exclusive_values"])
        return cls(**kwargs)


class PredicateTable(Mapping[str, PredicateSpec]):
    """An immutable, validated set of :class:`PredicateSpec` with alias resolution.

    Unknown predicates are plain relations (many objects per subject, never pruned), except that a
    predicate whose first word is a past tense (ends in "ed", or is an irregular past such as
    "took", "put", "ate") is treated as an event.
    """

    def __init__(self, specs: Iterable[PredicateSpec] = ()) -> None:
        by_name: dict[str, PredicateSpec] = {}
        for spec in specs:
            by_name[spec.name] = spec  # later specs override earlier ones (extension)
        alias: dict[str, tuple[str, bool]] = {}
        for spec in by_name.values():
            for a, inverted in [(a, False) for a in spec.aliases] + [
                (a, True) for a in spec.inverse_aliases
            ]:
                if a in by_name:
                    raise ValueError(f"alias {a!r} of {spec.name!r} is itself a predicate name")
                if a in alias and alias[a] != (spec.name, inverted):
                    raise ValueError(
                        f"alias {a!r} claimed by both {alias[a][0]!r} and {spec.name!r}"
                    )
                alias[a] = (spec.name, inverted)
        for spec in by_name.values():
            if spec.inverse is not None and not spec.symmetric:
                other = by_name.get(spec.inverse)
                if other is None or other.inverse != spec.name:
                    raise ValueError(
                        f"predicate {spec.name!r} has inverse {spec.inverse!r}, which must be in "
                        f"the table with inverse {spec.name!r}"
                    )
                if (spec.slot is None) != (other.slot is None):
                    raise ValueError(
                        f"inverse predicates {spec.name!r} and {other.name!r} must both be "
                        "functional or both not"
                    )
        self._specs = by_name
        self._alias = alias
        self._default_cache: dict[str, PredicateSpec] = {}
        self._walkable: dict[str, bool] = {}

    # Mapping protocol -------------------------------------------------------------------------
    def __getitem__(self, name: str) -> PredicateSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PredicateTable) and self._specs == other._specs

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PredicateTable({len(self._specs)} predicates)"

    # Semantics --------------------------------------------------------------------------------
    def spec(self, predicate: str) -> PredicateSpec:
        """The spec of a canonical predicate name; unknown names get the default behaviour."""
        spec = self._specs.get(predicate)
        if spec is not None:
            return spec
        spec = self._default_cache.get(predicate)
        if spec is None:
            first = predicate.split(" ", 1)[0]
            is_event = first not in ("is", "was", "has") and (
                first.endswith("ed") or first in _IRREGULAR_PAST
            )
            spec = PredicateSpec(predicate, event=is_event)
            self._default_cache[predicate] = spec
        return spec

    def canonical(self, triplet: Triplet) -> Triplet:
        """Resolve aliases: ``(fridge 1, contains, egg 1)`` -> ``(egg 1, in, fridge 1)``."""
        hit = self._alias.get(triplet.predicate)
        if hit is None:
            return triplet
        name, inverted = hit
        if inverted:
            return Triplet(triplet.object, name, triplet.subject)
        return Triplet(triplet.subject, name, triplet.object)

    def slot_key(self, triplet: Triplet) -> tuple[str, ...] | None:
        """The exclusive place a fact occupies for its subject, or ``None`` if it excludes nothing.

        Two facts with the same key cannot both hold: the newer (by precedence) replaces the older.
        """
        spec = self.spec(triplet.predicate)
        if spec.slot is not None:
            return (triplet.subject, "slot", spec.slot)
        group = spec._value_group.get(triplet.object)
        if group is not None:
            return (triplet.subject, triplet.predicate, str(group))
        return None

    def partner(self, triplet: Triplet) -> Triplet | None:
        """The inverse fact stored alongside ``triplet`` (symmetric or inverse predicates)."""
        inverse = self.spec(triplet.predicate).inverse
        if inverse is None or triplet.subject == triplet.object and inverse == triplet.predicate:
            return None
        return Triplet(triplet.object, inverse, triplet.subject)

    def is_event(self, predicate: str) -> bool:
        return self.spec(predicate).event

    def walkable(self, predicate: str) -> bool:
        """Whether the object of ``predicate`` is an entity that retrieval may walk to (not an
        attribute value, not the object of an event)."""
        w = self._walkable.get(predicate)
        if w is None:
            spec = self.spec(predicate)
            w = self._walkable[predicate] = not (spec.attribute or spec.event)
        return w

    def in_slot(self, predicate: str, slot: str) -> bool:
        return self.spec(predicate).slot == slot

    # Construction -----------------------------------------------------------------------------
    def extend(self, *specs: PredicateSpec) -> PredicateTable:
        """A new table with ``specs`` added (a spec with an existing name replaces it)."""
        return PredicateTable([*self._specs.values(), *specs])

    def to_json(self) -> list[dict[str, Any]]:
        return [spec.to_json() for spec in self._specs.values()]

    @classmethod
    def from_json(cls, data: Iterable[Mapping[str, Any]]) -> PredicateTable:
        return cls(PredicateSpec.from_json(d) for d in data)


_DIRECTIONS = (("north", "south"), ("east", "west"), ("up", "down"))


def _default_specs() -> list[PredicateSpec]:
    specs = [
        # Where a thing is: one place at a time (objects, furniture, the agent).
        PredicateSpec("in", slot=LOCATION_SLOT,
                      aliases=("is in", "inside", "located in", "is inside", "contained in",
                               "held in", "is located in"),
                      inverse_aliases=("contains", "holds inside")),
        PredicateSpec("on", slot=LOCATION_SLOT,
                      aliases=("is on", "on top of", "placed on", "sits on", "lies on")),
        PredicateSpec("at", slot=LOCATION_SLOT,
                      aliases=("is at", "located at")),
        # States: values in one group exclude each other; other values of "is" coexist.
        PredicateSpec(
            "is",
            attribute=True,
            exclusive_values=(
                ("open", "closed"),
                ("on", "off"),
                ("locked", "unlocked"),
                ("clean", "dirty"),
                ("solid", "liquid", "gas"),
                ("alive", "dead"),
                ("empty", "full"),
            ),
            aliases=("state", "has state", "is now", "status"),
        ),
        PredicateSpec("reads", functional=True, attribute=True, aliases=("reading", "shows")),
        PredicateSpec("temperature", functional=True, attribute=True,
                      aliases=("has temperature",)),
        PredicateSpec("is a", functional=True, attribute=True, aliases=("type", "is type", "kind")),
        # Topology.
        PredicateSpec("connects to", symmetric=True,
                      aliases=("connected to", "is connected to", "adjacent to", "leads to")),
    ]
    for a, b in _DIRECTIONS:
        specs += [
            PredicateSpec(a, functional=True, inverse=b),
            PredicateSpec(b, functional=True, inverse=a),
            PredicateSpec(f"{a} door", functional=True, attribute=True),
            PredicateSpec(f"{b} door", functional=True, attribute=True),
        ]
    events = (
        "picked up", "took", "put", "moved", "dropped", "opened", "closed", "heated", "cooled",
        "cleaned", "sliced", "diced", "chopped", "roasted", "fried", "grilled", "cooked",
        "prepared", "ate", "turned on", "turned off", "activated", "deactivated", "visited",
        "focused on", "read", "examined", "used", "poured", "mixed", "unlocked", "locked",
    )
    specs += [PredicateSpec(verb, event=True) for verb in events]
    # Recipes (TextWorldExpress cookingworld): many ingredients and directions per recipe.
    specs += [PredicateSpec("needs"), PredicateSpec("direction", attribute=True)]
    return specs


DEFAULT_PREDICATES = PredicateTable(_default_specs())
"""The table used when none is given; ``DEFAULT_PREDICATES.extend(...)`` to customise."""
