r"""Free-form actions: the model writes the command, constrained only by the benchmark's grammar.

In the seed papers the agent writes its action as text and the environment parses it, so a
model can name an object that is not there (RLAW's hallucination rate counts such episodes).
:func:`generate_actions` samples that text after the role's answer prefix, under the regular
language

.. math:: L(V) = (v_1 \mid \dots \mid v_m)\,(\texttt{" "}\,[a\text{-}z0\text{-}9'\ \text{-}]+)^{?}
          \cdot \mathit{suffix}

where :math:`V = \{v_1, \dots, v_m\}` are the benchmark's command verbs (``go to``, ``take``,
``open``, ...; :mod:`smcplan.envs.grammar`): the verb is one the parser knows, its arguments
are free lower-case words. Without a grammar (``verbs=None``) any one-line text is allowed
(:data:`FREE_TEXT`: no quotes, backslashes or angle brackets, so the text can sit inside a JSON
string or an RLVMR ``<action>`` tag unescaped). Nothing ties the arguments to the current
state: the admissible list is at most shown in the prompt, never enforced.

The returned ``logq`` is the log-probability of the text under the constrained sampler (the
proposal) and ``logp`` its log-probability under the unconstrained model; a text cut by
``max_new_tokens`` is kept as cut (``finished`` False).

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smcplan.llm.protocol import LanguageModel

__all__ = ["FreeAction", "FREE_TEXT", "ARGUMENT", "action_regex", "generate_actions"]

#: One line of text that is safe inside a JSON string and an XML-like tag.
FREE_TEXT = r'[^"\\<>\x00-\x1F\x7F]+'
#: The arguments after a verb: lower-case words, digits, apostrophes and hyphens.
ARGUMENT = r"[a-z0-9' -]+"
_VERB = re.compile(r"[a-z][a-z0-9 -]*[a-z0-9]|[a-z]")
_META = re.compile(r"([\\.^$|?*+()\[\]{}])")


@dataclass
class FreeAction:
    """A written action: its ``text`` (suffix removed, stripped), ``logq`` under the constrained
    sampler, ``logp`` under the model, and whether it ``finished`` inside the token budget."""

    text: str
    logq: float
    logp: float
    finished: bool


def action_regex(verbs: Sequence[str] | None, suffix: str = "") -> str:
    """The regular expression of :math:`L(V)` (module docstring), ``suffix`` appended literally.

    Raises ``ValueError`` naming the verb when one is not lower-case words (``"go to"``).
    """
    tail = _META.sub(r"\\\1", suffix)
    if verbs is None:
        return FREE_TEXT + tail
    verbs = list(dict.fromkeys(verbs))
    if not verbs:
        raise ValueError("verbs must be None (no grammar) or a non-empty list of command verbs")
    for v in verbs:
        if not isinstance(v, str) or not _VERB.fullmatch(v):
            raise ValueError(
                f"bad command verb {v!r}: use lower-case words such as 'take' or 'go to'"
            )
    # longest first, so that "look at" is tried before "look" (same language either way)
    alternatives = "|".join(sorted(verbs, key=lambda v: (-len(v), v)))
    return f"({alternatives})( {ARGUMENT})?" + tail


def generate_actions(
    lm: LanguageModel,
    prompts: Sequence[list[dict[str, str]]],
    prefixes: Sequence[str],
    verbs: Sequence[str] | None,
    *,
    suffix: str = "",
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 24,
    seed: int | None = None,
) -> list[FreeAction]:
    """One written action per prompt, sampled after its answer prefix in one batched call."""
    from outlines.types import Regex

    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1; got {max_new_tokens}")
    if len(prompts) != len(prefixes):
        raise ValueError(f"got {len(prompts)} prompts but {len(prefixes)} prefixes")
    if not prompts:
        return []
    samples = lm.sample(
        list(prompts),
        Regex(action_regex(verbs, suffix)),
        temperature=temperature,
        top_p=top_p,
        max_new_tokens=max_new_tokens + len(suffix),
        seed=seed,
        assistant_prefix=list(prefixes),
    )
    out = []
    for (s,) in samples:
        text = (
            s.text[: -len(suffix)] if suffix and s.finished and s.text.endswith(suffix) else s.text
        )
        if not s.finished and suffix:
            text = text.split(suffix[0], 1)[0]  # a cut answer: what precedes the suffix
        out.append(FreeAction(text.strip(), float(s.logq), float(s.logp), bool(s.finished)))
    return out
