"""BM25 product search, standing in for WebShop's Pyserini (Lucene) index.

The original indexes one document per product,

    contents = lower(Title + " " + Description + " " + BulletPoints[0] + " " + option text),

with option text ``"<name>: <v1>, <v2>, and <name2>: ..."``, and answers a query with the top
``SEARCH_RETURN_N = 50`` documents under Lucene's BM25 (Pyserini defaults ``k1 = 0.9``,
``b = 0.4``):

    score(d, q) = sum_{t in q} idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 (1 - b + b |d| /
    avgdl)),
    idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5)).

Tokens: lower-cased alphanumeric runs, Lucene's English stop words removed, Lucene's minimal
English (plural) stemmer applied.  Only documents sharing a term with the query are returned;
ties keep catalog order (as Lucene's doc-id order).  This is a re-implementation, so rankings
are close to, not identical with, the original index's.

Pure standard library; must not import other smcplan layers.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

__all__ = ["BM25Index", "tokenize", "minimal_stem", "SEARCH_RETURN_N"]

SEARCH_RETURN_N = 50

#: Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``.
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
_WORD = re.compile(r"[a-z0-9]+")


def minimal_stem(word: str) -> str:
    """Lucene's ``EnglishMinimalStemmer``: plural endings only (ies -> y, s -> '').

    ``-us``/``-ss`` stay; ``-ies`` -> ``-y`` unless preceded by a/e; ``-es`` after i/a/o/e stays;
    any other final ``s`` is dropped.
    """
    n = len(word)
    if n < 3 or word[-1] != "s" or word[-2] in "us":
        return word
    if word[-2] == "e":
        if n > 3 and word[-3] == "i" and word[-4] not in "ae":
            return word[:-3] + "y"
        if word[-3] in "iaoe":
            return word
    return word[:-1]


def tokenize(text: str) -> list[str]:
    return [minimal_stem(t) for t in _WORD.findall(text.lower()) if t not in STOP_WORDS]


class BM25Index:
    """An inverted index over ``documents`` with Lucene's BM25 scoring (module docstring)."""

    def __init__(self, documents: Sequence[str], k1: float = 0.9, b: float = 0.4) -> None:
        self.k1, self.b = k1, b
        self.n_docs = len(documents)
        self.lengths: list[int] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        for doc_id, text in enumerate(documents):
            counts = Counter(tokenize(text))
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings.setdefault(term, []).append((doc_id, tf))
        self.avgdl = (sum(self.lengths) / self.n_docs) if self.n_docs else 0.0

    def idf(self, term: str) -> float:
        n = len(self.postings.get(term, ()))
        return math.log(1.0 + (self.n_docs - n + 0.5) / (n + 0.5))

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[int]:
        """Document ids of the best ``k`` matches, best first (ties: lower id first)."""
        scores: dict[int, float] = {}
        for term in tokenize(query):  # repeated query terms count repeatedly, as in Lucene
            postings = self.postings.get(term)
            if not postings:
                continue
            idf = self.idf(term)
            for doc_id, tf in postings:
                norm = self.k1 * (1.0 - self.b + self.b * self.lengths[doc_id] / self.avgdl)
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (self.k1 + 1) / (tf + norm)
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return [doc_id for doc_id, _ in ranked[:k]]
