"""Triplets, their text normalisation and their provenance: the atoms of the belief memory.

NeSyFS (arXiv 2607.28942) writes the latent state as triplets (entity, relation, entity),
(entity, attribute, value) and (entity, past-tense verb, entity).  A :class:`Triplet` is one of
those with its text normalised, so that ``("The Apple 1", "in", "a Fridge 1.")`` and
``("apple 1", "in", "fridge 1")`` are the same fact.

This module must not import torch, transformers, outlines or jax, nor anything from
``smcplan.llm``, ``smcplan.envs``, ``smcplan.planning`` or ``smcplan.agents``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

__all__ = [
    "Triplet",
    "TripletLike",
    "Source",
    "SOURCES",
    "SOURCE_RANK",
    "Provenance",
    "normalize_text",
    "as_triplet",
    "check_source",
]

#: Where a fact came from: seen in an observation, predicted by a world model, or inferred by a
#: rule.
Source: TypeAlias = Literal["observed", "predicted", "inferred"]
#: The values of :data:`Source`, in order.
SOURCES: tuple[str, ...] = get_args(Source)
# Strength of evidence, used to break ties between conflicting facts asserted at the same step:
# an observation beats a rule-based inference, which beats a world-model prediction.
SOURCE_RANK: dict[str, int] = {"predicted": 0, "inferred": 1, "observed": 2}

_ARTICLES = ("a ", "an ", "the ", "some ")
_BARE_ARTICLES = frozenset(a.strip() for a in _ARTICLES)
_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = " \t\n\r.,;:!?\"'`"


def normalize_text(text: str) -> str:
    """Lower-case, trim, collapse white space, drop edge punctuation and leading articles.

    ``"  The Apple 1. "`` -> ``"apple 1"``; ``"A substance called air"`` keeps everything after
    the article (``"substance called air"``): only *leading* articles (a, an, the, some) go, and a
    bare article normalises to the empty string.
    """
    if not isinstance(text, str):
        raise TypeError(f"triplet fields must be str, got {type(text).__name__}: {text!r}")
    if (  # fast path: already normal (the common case for extractor output)
        text
        and text == text.lower()
        and text[0] not in _EDGE_PUNCT
        and text[-1] not in _EDGE_PUNCT
        and "  " not in text
        and "\t" not in text
        and "\n" not in text
        and "\r" not in text
        and not text.startswith(_ARTICLES)
        and text not in _BARE_ARTICLES
    ):
        return text
    out = _SPACE.sub(" ", text.lower()).strip(_EDGE_PUNCT)
    stripped = True
    while stripped:
        stripped = False
        for article in _ARTICLES:
            if out.startswith(article) and len(out) > len(article):
                out = out[len(article):].lstrip(_EDGE_PUNCT)
                stripped = True
    return "" if out in _BARE_ARTICLES else out


@dataclass(frozen=True, slots=True)
class Triplet:
    """One fact ``(subject, predicate, object)`` with normalised text; frozen and hashable.

    Construction normalises each field with :func:`normalize_text`; a field that is empty after
    normalisation is an error.  A triplet unpacks like a tuple: ``s, p, o = t``; its hash is that
    of the tuple ``(s, p, o)``, computed once.
    """

    subject: str
    predicate: str
    object: str
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        s = normalize_text(self.subject)
        p = normalize_text(self.predicate)
        o = normalize_text(self.object)
        for name, raw, value in (("subject", self.subject, s), ("predicate", self.predicate, p),
                                 ("object", self.object, o)):
            if not value:
                raise ValueError(f"Triplet {name} is empty after normalisation: {raw!r}")
        set_ = object.__setattr__
        set_(self, "subject", s)
        set_(self, "predicate", p)
        set_(self, "object", o)
        set_(self, "_hash", hash((s, p, o)))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Triplet:
            return NotImplemented
        return (
            self._hash == other._hash  # type: ignore[attr-defined]
            and self.subject == other.subject  # type: ignore[attr-defined]
            and self.predicate == other.predicate  # type: ignore[attr-defined]
            and self.object == other.object  # type: ignore[attr-defined]
        )

    def __reduce__(self) -> tuple[Any, tuple[str, str, str]]:
        # Rebuild through __init__: the cached hash depends on the process's hash seed.
        return (Triplet, (self.subject, self.predicate, self.object))

    def __iter__(self) -> Iterator[str]:
        return iter((self.subject, self.predicate, self.object))

    def as_tuple(self) -> tuple[str, str, str]:
        return (self.subject, self.predicate, self.object)

    def __str__(self) -> str:
        """The prompt form ``(subject, predicate, object)``."""
        return f"({self.subject}, {self.predicate}, {self.object})"


TripletLike: TypeAlias = "Triplet | Sequence[str] | Mapping[str, str]"


def as_triplet(item: Any) -> Triplet:
    """Coerce a :class:`Triplet`, a 3-sequence of strings or a mapping with keys
    subject/predicate/object.

    This is how plain ``(subject, predicate, object)`` tuples from the LLM extractor enter memory.
    """
    if isinstance(item, Triplet):
        return item
    if isinstance(item, Mapping):
        try:
            return Triplet(item["subject"], item["predicate"], item["object"])
        except KeyError as err:
            raise ValueError(
                f"triplet mapping needs keys 'subject', 'predicate', 'object'; got {sorted(item)}"
            ) from err
    if isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 3:
        return Triplet(item[0], item[1], item[2])
    raise TypeError(
        "expected a Triplet, a (subject, predicate, object) sequence of 3 strings or a mapping "
        f"with those keys; got {item!r}"
    )


def check_source(source: str) -> str:
    if source not in SOURCE_RANK:
        raise ValueError(f"unknown source {source!r}; known: {', '.join(SOURCES)}")
    return source


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where a fact came from: the step it was last asserted at, how, and its insertion order.

    ``seq`` is a per-lineage insertion counter (it orders iteration); it is not part of equality
    between graphs.
    """

    step: int
    source: Source
    seq: int

    @property
    def key(self) -> tuple[int, int]:
        """Precedence ``(step, rank(source))``: newer wins; at equal steps the stronger source wins.
        """
        return (self.step, SOURCE_RANK[self.source])
