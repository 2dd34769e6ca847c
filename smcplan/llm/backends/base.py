"""The client side every backend shares: prompt rendering, token ids, per-call seeds, ``generate``.

:class:`ClientSide` holds the part of :class:`smcplan.llm.LanguageModel` that depends only on the
tokenizer and the object's own seeded stream, so the transformers, llama.cpp and remote backends
render a prompt into the same text and token ids, derive seeds the same way, and define
``generate`` once in terms of their own ``sample``. A subclass sets, in its ``__init__``:

* ``tokenizer`` (a Hugging Face tokenizer) and ``has_chat_template`` (whether it has one);
* ``eos_token_id`` (int): the end-of-turn token :meth:`ClientSide.encode_continuation` appends;
* ``_rng``: a seeded ``numpy.random.Generator`` (the stream of :meth:`ClientSide.derive_seed`);

and implements ``sample`` with the signature of :meth:`smcplan.llm.LanguageModel.sample`.

Imports no torch (the remote backends use it without one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smcplan.llm.constrained import OutputSpec
    from smcplan.llm.protocol import Prompt

__all__ = ["ClientSide", "DEFAULT_TEXT_TOKENS", "token_limit"]

#: ``max_new_tokens`` of ``sample`` for an unbounded output type (free text) when none is given.
DEFAULT_TEXT_TOKENS = 64


def token_limit(spec: OutputSpec, max_new_tokens: int | None) -> tuple[int | None, int]:
    """``(bound, limit)`` of a ``sample`` call: ``bound`` is the output type's token bound
    (``max_bytes + 1``: a token is at least one byte, plus end-of-turn; ``None`` if unbounded),
    ``limit`` the tokens to generate at most: ``max_new_tokens``, else ``bound``, else
    :data:`DEFAULT_TEXT_TOKENS` (so a valid bounded answer is never cut)."""
    bound = spec.max_bytes + 1 if spec.max_bytes is not None else None
    limit = max_new_tokens if max_new_tokens is not None else (bound or DEFAULT_TEXT_TOKENS)
    return bound, limit


class ClientSide:
    """Prompt rendering, token ids, seeds and ``generate``, shared by every backend."""

    tokenizer: Any
    has_chat_template: bool
    eos_token_id: int

    def format_prompt(self, prompt: Prompt, assistant_prefix: str = "") -> str:
        """Render ``prompt`` as the model sees it (chat template + generation prompt + prefix)."""
        messages = (
            [{"role": "user", "content": prompt}] if isinstance(prompt, str) else list(prompt)
        )
        for m in messages:
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise TypeError(
                    f"a chat message must be a dict with 'role' and 'content'; got {m!r}"
                )
        if self.has_chat_template:
            text = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        else:
            text = (
                "".join(f"{m['role'].capitalize()}: {m['content']}\n\n" for m in messages)
                + "Assistant:"
            )
            if assistant_prefix:
                text += " "
        return text + assistant_prefix

    def encode_prompt(self, prompt: Prompt, assistant_prefix: str = "") -> list[int]:
        """The token ids of :meth:`format_prompt`."""
        text = self.format_prompt(prompt, assistant_prefix)
        # a chat template writes its own special tokens; plain text gets the tokenizer's (e.g. BOS)
        return list(
            self.tokenizer(text, add_special_tokens=not self.has_chat_template)["input_ids"]
        )

    def encode_continuation(self, text: str, add_eos: bool = False) -> list[int]:
        """The token ids of ``text`` (no special tokens), then end-of-turn if ``add_eos``."""
        ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return ids + [self.eos_token_id] if add_eos else ids

    def derive_seed(self, seed: int | None) -> int:
        """``seed`` itself, or (``None``) the next seed of this object's own seeded stream."""
        return int(self._rng.integers(2**62)) if seed is None else int(seed)

    def generate(
        self,
        prompts: Sequence[Prompt],
        output_type: Any = None,
        n: int = 1,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int | None = None,
        seed: int | None = None,
        assistant_prefix: str | Sequence[str] = "",
        truncation: str | None = None,
    ) -> list[Any]:
        """Parsed outputs, one per prompt (``n == 1``) or a list of ``n`` per prompt (``n > 1``).

        Same arguments as :meth:`sample`, which also returns the log-densities.
        """
        out = self.sample(
            prompts,
            output_type,
            n,
            temperature,
            top_p,
            max_new_tokens,
            seed,
            assistant_prefix,
            truncation,
        )
        if n == 1:
            return [s[0].value for s in out]
        return [[x.value for x in s] for s in out]
