"""Argument checks of :class:`~smcplan.llm.LanguageModel`, and the context-window rule.

The window rule: a transformer with ``W = max_position_embeddings`` positions cannot condition on
more than ``W`` tokens, so a row of ``p`` prompt tokens followed by ``c`` tokens to score (or at
least one token to generate) must satisfy ``p + c <= W``.  A row that does not is refused with
:class:`ContextOverflowError` *before any forward pass* (scoring 22k tokens on an 8k model used to
take minutes and return a meaningless number), unless the caller asks for a truncation policy:

* ``truncation="left"`` keeps the last ``W - c`` prompt tokens (for generation ``c`` is the token
  limit of the answer, so a truncated prompt leaves room for all of it); the oldest are dropped,
  the chat template's header first, so prefer cutting the content yourself when you can.

Generation also stops at the window: ``max_new_tokens`` is lowered to ``W - p`` for a batch whose
longest prompt has ``p`` tokens, and a sample cut there is reported as not ``finished`` (as when
it reaches ``max_new_tokens``).

Imports nothing but :mod:`smcplan.errors`; used by :mod:`smcplan.llm.backends.hf`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smcplan.errors import ArgumentTypeError, InvalidArgumentError, check_float, check_int

__all__ = [
    "TRUNCATIONS",
    "MAX_ROWS",
    "ContextOverflowError",
    "window_of",
    "check_prompts",
    "check_sampling",
    "check_truncation",
    "fit_prompt",
]

#: Accepted values of ``truncation=``.
TRUNCATIONS = (None, "left")


class ContextOverflowError(InvalidArgumentError):
    """A prompt (plus what must follow it) is longer than the model's context window."""


def window_of(model: Any) -> int | None:
    """``max_position_embeddings`` of a transformers model's config (``None`` if it has none)."""
    window = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    return int(window) if isinstance(window, int) and window > 0 else None


def check_prompts(prompts: Any, name: str = "prompts") -> list[Any]:
    """A list of prompts: each a ``str`` or a sequence of ``{"role": str, "content": str}``."""
    if isinstance(prompts, str | bytes) or not isinstance(prompts, Sequence):
        raise ArgumentTypeError(
            f"{name} must be a list of prompts (one per row), not {type(prompts).__name__}; wrap "
            "one prompt in a list"
        )
    out = list(prompts)
    for i, p in enumerate(out):
        if isinstance(p, str):
            continue
        if (
            isinstance(p, Sequence)
            and not isinstance(p, bytes)
            and all(
                isinstance(m, dict)
                and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str)
                for m in p
            )
        ):
            continue
        shown = repr(p) if len(repr(p)) < 60 else repr(p)[:57] + "..."
        raise ArgumentTypeError(
            f"{name}[{i}] must be a str or a list of {{'role': str, 'content': str}} chat "
            f"messages; got {shown}"
        )
    return out


#: Most rows (prompts × n) one sampling call may decode at once.
MAX_ROWS = 65536


#: The largest sampling temperature accepted (:func:`check_sampling`).
MAX_TEMPERATURE = 1e4


def check_sampling(
    n: Any, temperature: Any, top_p: Any, max_new_tokens: Any, seed: Any, num_prompts: int = 1
) -> tuple[int, float, float, int | None, int | None]:
    """Validated ``(n, temperature, top_p, max_new_tokens, seed)`` of a sampling call."""
    n = check_int(n, "n", minimum=1)
    if n * max(1, num_prompts) > MAX_ROWS:
        raise InvalidArgumentError(
            f"n = {n} samples for {num_prompts} prompts is {n * num_prompts:,} rows, more than "
            "one call decodes "
            f"({MAX_ROWS:,}); split the call"
        )
    # above ~1e4 the tempered distribution is uniform to float32 precision, and past ~3e38 the
    # logits / T overflow to NaN: such a temperature is a mistake, not a request
    temperature = check_float(temperature, "temperature", minimum=0.0, maximum=MAX_TEMPERATURE)
    top_p = check_float(top_p, "top_p", minimum=0.0, maximum=1.0, min_inclusive=False)
    if max_new_tokens is not None:
        max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=1)
    if seed is not None:
        seed = check_int(seed, "seed")
    return n, temperature, top_p, max_new_tokens, seed


def check_truncation(truncation: Any) -> str | None:
    if truncation not in TRUNCATIONS:
        raise InvalidArgumentError(f"truncation must be one of {TRUNCATIONS}; got {truncation!r}")
    return truncation


def fit_prompt(
    ids: list[int], need: int, window: int | None, truncation: str | None, row: int, model: str
) -> list[int]:
    """``ids`` if ``len(ids) + need <= window``; else its last ``window - need`` tokens
    (``truncation="left"``) or :class:`ContextOverflowError` naming the sizes and the fix."""
    if window is None or len(ids) + need <= window:
        return ids
    keep = window - need
    if truncation == "left" and keep >= 1:
        return ids[len(ids) - keep :]
    what = f" + {need} to score" if need > 1 else " + 1 to generate"
    if truncation == "left":
        raise ContextOverflowError(
            f"row {row}: the {need} tokens to score alone fill the context window of {model} "
            f"({window} tokens); shorten them"
        )
    raise ContextOverflowError(
        f"row {row}: the prompt has {len(ids)} tokens{what}, more than the context window of "
        f"{model} "
        f"({window} tokens); shorten the prompt, or pass truncation='left' to drop its oldest "
        "tokens"
    )
