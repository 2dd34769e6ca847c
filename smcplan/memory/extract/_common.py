"""Shared pieces of the rule-based extractors: the result type, a builder and list splitting.

Must not import torch, transformers, outlines or jax, nor ``smcplan.llm``/``envs``/``planning``/
``agents``; the extractors are pure text processing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from smcplan.memory.triplet import Triplet, as_triplet, normalize_text

__all__ = ["Extraction", "Builder", "split_list", "clean_name"]


@dataclass(frozen=True)
class Extraction:
    """Triplets read off one observation, plus the containers whose whole contents it lists.

    Iterates over its triplets, so ``set(extract_triplets(...))`` and ``kg.update(extraction)``
    both work; :meth:`KnowledgeGraph.update` also uses ``closed`` to drop facts that the
    observation shows to be outdated (a thing no longer on the counter).
    """

    triplets: tuple[Triplet, ...] = ()
    closed: frozenset[str] = field(default_factory=frozenset)

    def __iter__(self) -> Iterator[Triplet]:
        return iter(self.triplets)

    def __len__(self) -> int:
        return len(self.triplets)

    def __contains__(self, item: object) -> bool:
        try:
            return as_triplet(item) in self.triplets
        except (TypeError, ValueError):
            return False

    def as_tuples(self) -> list[tuple[str, str, str]]:
        return [t.as_tuple() for t in self.triplets]


class Builder:
    """Collects triplets in order without duplicates, and closed containers."""

    def __init__(self) -> None:
        self._triplets: dict[Triplet, None] = {}
        self._closed: set[str] = set()

    def add(self, subject: str, predicate: str, obj: str) -> None:
        s, o = clean_name(subject), clean_name(obj)
        if s and o:
            self._triplets[Triplet(s, predicate, o)] = None

    def close(self, container: str) -> None:
        name = clean_name(container)
        if name:
            self._closed.add(name)

    def build(self) -> Extraction:
        return Extraction(tuple(self._triplets), frozenset(self._closed))


_CALLED = re.compile(r"^(?:a |an |the )?substance called ")


def clean_name(text: str) -> str:
    """Normalised entity name; ScienceWorld's "a substance called air" becomes "air"."""
    return normalize_text(_CALLED.sub("", normalize_text(text)))


def split_list(text: str, *, bare_and: bool = False) -> list[str]:
    """Split "a apple 1, a knife 1, and a egg 2" at top-level commas and newlines.

    Commas inside parentheses are kept (ScienceWorld nests "(containing a, b)").  With
    ``bare_and`` a comma-less " and " also separates ("shower, bedroom and canteen"); it is off by
    default because names may contain "and".  "nothing" and the empty string give ``[]``.
    """
    text = text.strip().rstrip(".").strip()
    if not text or normalize_text(text) == "nothing":
        return []
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(depth - 1, 0)
        elif ch in ",\n" and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    out = []
    for item in items:
        item = item.strip().strip("\t").strip()
        if item.startswith("and "):
            item = item[4:]
        if bare_and and " and " in item and "(" not in item:
            # "x, y and z": the last two share one comma-less chunk.
            out.extend(part.strip() for part in item.split(" and ") if part.strip())
        elif item:
            out.append(item)
    return [x for x in out if normalize_text(x) and normalize_text(x) != "nothing"]
