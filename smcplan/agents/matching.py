"""Free-text actions mapped onto the admissible set: exact, then after case and space folding.

The zero-shot plan's commands and RLAW's JSON actor write actions as free text; both map them
with :func:`match_admissible` and fall back to log-probability scoring when it finds nothing.
Pure string code.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["match_admissible", "normalize_action"]


def normalize_action(text: str) -> str:
    """Case-folded, whitespace-collapsed ``text`` without surrounding quotes or end punctuation."""
    return " ".join(text.casefold().split()).strip(" \"'`.!;:,")


def match_admissible(candidate: str | None, admissible: Sequence[str]) -> tuple[str | None, str]:
    """``(action, how)``: ``candidate`` itself if admissible (``"exact"``), else the admissible
    action equal to it after :func:`normalize_action` (``"normalized"``), else ``(None,
    "mismatch")``."""
    if candidate is None:
        return None, "mismatch"
    if candidate in admissible:
        return candidate, "exact"
    key = normalize_action(candidate)
    for a in admissible:
        if normalize_action(a) == key:
            return a, "normalized"
    return None, "mismatch"
