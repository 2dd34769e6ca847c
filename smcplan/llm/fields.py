r"""Free-text fields under a constraint: an assistant prefix plus a regular expression.

The agents decode free text (a reflection, a plan's commands, a thought and an action, a
meta-reasoning tag's content) by writing the opening of the answer as an assistant prefix, e.g.
``{"reflection": "``, and constraining the rest to a regular expression of *unbounded*
escape-free strings closed by the answer's ending, e.g. ``JSON_TEXT + r'"\}'``. Length is
bounded by the token budget, not by a ``maxLength``: outlines compiles one automaton state per
bounded character, slow against SmolLM2's 49k-token vocabulary (19 s measured for 24-character
strings), and escape-free text is its own JSON form, so an answer cut by the budget is trivial to
complete (:func:`field_text`).

Imports outlines only when :func:`regex` is called.
"""

from __future__ import annotations

from typing import Any

__all__ = ["JSON_TEXT", "TAG_TEXT", "field_text", "regex"]

#: The text of a JSON string without escapes or control characters (so it is its own JSON form).
JSON_TEXT = r'[^"\\\x00-\x1F\x7F]+'

#: The content of an XML-like tag: no angle brackets and no control characters.
TAG_TEXT = r"[^<>\x00-\x1F\x7F]+"


def regex(pattern: str) -> Any:
    """The output type (``outlines.types.Regex``) that constrains a ``LanguageModel.sample`` /
    ``generate`` answer to ``pattern``."""
    from outlines.types import Regex

    return Regex(pattern)


def field_text(text: str, finished: bool, end: str) -> str:
    """The fields of a constrained answer without its literal ``end`` (e.g. ``'"}'``); an answer
    cut by the token budget (``finished`` false) has no ending and is returned whole."""
    return text[: -len(end)] if finished else text
