"""Knowledge-graph belief memory: triplets, update with pruning, task retrieval, cheap copies.

NeSyFS (arXiv 2607.28942) represents the latent state as a graph of triplets, updated as
G_{t+1} = Update(G_t, o_t, a_t) and read through a task retrieval tau_t = R(G_t, eta); RLAW keeps
a similar scene graph.  This package provides

* :class:`Triplet` (normalised, hashable) and :class:`KnowledgeGraph` (provenance per fact,
  pruning by a declarative :class:`PredicateTable`, copy-on-write ``copy()``, JSON, PNG);
* :func:`extract_triplets`: rule-based extraction for ALFWorld, TextWorldExpress and ScienceWorld;
* :func:`retrieve` / :meth:`KnowledgeGraph.retrieve` and :func:`format_prompt`.

Layering: memory imports no torch, transformers, outlines or jax, and nothing from
``smcplan.llm``, ``smcplan.envs``, ``smcplan.planning`` or ``smcplan.agents`` (the LLM extractor
returns plain ``(subject, predicate, object)`` tuples, which ``update`` accepts as they are).
"""

from __future__ import annotations

from smcplan.memory.export import format_prompt, to_prompt_lines
from smcplan.memory.extract import ENV_KINDS, Extraction, detect_env_kind, extract_triplets
from smcplan.memory.graph import KnowledgeGraph, UpdateReport
from smcplan.memory.predicates import (
    DEFAULT_PREDICATES,
    LOCATION_SLOT,
    PredicateSpec,
    PredicateTable,
)
from smcplan.memory.retrieval import Retrieval, mentioned_entities, retrieve
from smcplan.memory.triplet import SOURCES, Provenance, Source, Triplet, as_triplet, normalize_text

__all__ = [
    "Retrieval",
    "Triplet",
    "KnowledgeGraph",
    "UpdateReport",
    "Provenance",
    "Source",
    "SOURCES",
    "PredicateSpec",
    "PredicateTable",
    "DEFAULT_PREDICATES",
    "LOCATION_SLOT",
    "Extraction",
    "extract_triplets",
    "detect_env_kind",
    "ENV_KINDS",
    "retrieve",
    "mentioned_entities",
    "to_prompt_lines",
    "format_prompt",
    "as_triplet",
    "normalize_text",
]
