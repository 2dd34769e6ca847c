"""Rule-based triplet extraction for the benchmark observation formats: fast and deterministic.

NeSyFS (arXiv 2607.28942) extracts triplets with a language model; this rule-based extractor reads
the fixed sentence templates of ALFWorld, TextWorldExpress and ScienceWorld exactly, so the LLM
extractor can be scored against it and can fall back to it.  One entry point::

    extract_triplets(observation, action=None, env_kind="alfworld") -> Extraction

``env_kind`` is ``"alfworld"``, ``"textworld_express"`` (alias ``"twx"``), ``"scienceworld"``
(alias ``"sciworld"``), an environment name such as ``"twx:coin"`` (the part before ":" is used),
or ``"auto"`` (chosen from the text).  This package must not import torch, transformers, outlines
or jax, nor anything from ``smcplan.llm``, ``smcplan.envs``, ``smcplan.planning`` or
``smcplan.agents``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from smcplan.memory.extract import alfworld, scienceworld, textworld_express
from smcplan.memory.extract._common import Extraction, split_list

__all__ = ["extract_triplets", "Extraction", "ENV_KINDS", "detect_env_kind", "split_list"]

Extractor = Callable[[str, "str | None", "str | None"], Extraction]

#: The rule-based extractor of each environment kind (``detect_env_kind`` picks one).
ENV_KINDS: dict[str, Extractor] = {
    "alfworld": alfworld.extract,
    "textworld_express": textworld_express.extract,
    "scienceworld": scienceworld.extract,
}
_ALIASES = {
    "twx": "textworld_express",
    "textworldexpress": "textworld_express",
    "textworld-express": "textworld_express",
    "sciworld": "scienceworld",
    "science_world": "scienceworld",
    "alfred": "alfworld",
}

_SIGNATURES = (
    ("scienceworld", re.compile(
        r"This (?:room|outside location) is called|In your inventory, you see:|You move to the|"
        r"is now (?:open|closed|activated|deactivated)|You focus on")),
    ("alfworld", re.compile(
        r"Looking quickly around you|You arrive at|you see a [a-z]+ \d|You are carrying:|"
        r"You are not carrying anything|You pick up the|using the|You are facing the")),
    ("textworld_express", re.compile(
        r"You are in the|Inventory:|You take the|You put the|revealing the|contains|"
        r"It's empty inside|The map reads|Ingredients:")),
)


def detect_env_kind(observation: str) -> str | None:
    """The benchmark whose sentence templates ``observation`` uses, or ``None`` if none match."""
    for kind, pattern in _SIGNATURES:
        if pattern.search(observation):
            return kind
    return None


def _resolve(env_kind: str) -> str:
    kind = env_kind.strip().lower().split(":", 1)[0]
    kind = _ALIASES.get(kind, kind)
    if kind not in ENV_KINDS and kind != "auto":
        known = ", ".join([*ENV_KINDS, *_ALIASES, "auto"])
        raise ValueError(f"unknown env_kind {env_kind!r}; known: {known}")
    return kind


def extract_triplets(
    observation: str,
    action: str | None = None,
    *,
    env_kind: str = "auto",
    location: str | None = None,
) -> Extraction:
    """Triplets (and closed containers) of one observation, by the rules of ``env_kind``.

    ``action`` is the action that produced the observation and ``location`` the agent's current
    room; both are optional and only resolve relative phrases ("The door is now open.").  The
    result iterates over :class:`~smcplan.memory.Triplet` s and feeds
    :meth:`~smcplan.memory.KnowledgeGraph.update` directly.
    """
    if not isinstance(observation, str):
        raise TypeError(f"observation must be str, got {type(observation).__name__}")
    kind = _resolve(env_kind)
    if kind == "auto":
        kind = detect_env_kind(observation)
        if kind is None:
            return Extraction()
    return ENV_KINDS[kind](observation, action, location)
