"""The contract every language-model backend satisfies: :class:`LanguageModel`.

The roles (:mod:`smcplan.llm.roles`), the agents and the planner are written against this
protocol alone, so they run unchanged on each transport of :mod:`smcplan.llm.backends`:

* :class:`~smcplan.llm.backends.hf.TransformersLanguageModel`: transformers, in this process;
* :class:`~smcplan.llm.backends.llamacpp.LlamaCppLanguageModel`: llama.cpp, in this process;
* :class:`~smcplan.llm.backends.remote.client.RemoteLanguageModel`: an OpenAI-compatible
  serving engine (vLLM, SGLang, llama.cpp servers).

:func:`smcplan.llm.load_model` returns one of them. The protocol is ``runtime_checkable``:
``isinstance(lm, LanguageModel)`` checks that the members below exist (not their signatures;
``tests/llm/test_protocol.py`` checks those for every backend).

Notation: a prompt ``x`` is a string (one user message) or a list of ``{"role", "content"}``
messages, rendered by :meth:`LanguageModel.format_prompt`; ``y = (y_1, ..., y_m)`` are the tokens
of an answer (:meth:`LanguageModel.encode_continuation`), and ``p(y | x) = Π_t p(y_t | x, y_<t)``
is the model at temperature 1. Batched methods take one prompt per row and return rows in the
order given.

Imports nothing at run time (no torch): checking an object against the protocol loads no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

    from smcplan.llm.samples import Sample, Usage

__all__ = ["LanguageModel", "Prompt"]

#: A prompt: one user message as a string, or a list of ``{"role", "content"}`` chat messages.
Prompt = str | Sequence[dict[str, str]]


@runtime_checkable
class LanguageModel(Protocol):
    """A language model the roles, agents and planner can use: sampling, scoring, token ids.

    Members (each backend has more; these are the ones code above :mod:`smcplan.llm` may rely
    on):

    * ``name``: the name it was loaded under (a registry name, a path, ``openai:<url>#<model>``,
      ``llamacpp:<name>``);
    * ``tokenizer``: the model's Hugging Face tokenizer (on the client for remote engines), the
      source of every token id below;
    * ``usage``: the cumulative :class:`~smcplan.llm.samples.Usage` counters (calls, prompt /
      cached / generated / scored tokens), which the eval harness reads as differences.

    Seeds: a method that draws takes ``seed``; an int gives a reproducible call, ``None`` draws
    the seed from the object's own stream (:meth:`derive_seed`), so a run is reproducible from
    the construction seed and the sequence of calls. No global random state is used.
    """

    name: str
    tokenizer: Any
    usage: Usage

    def format_prompt(self, prompt: Prompt, assistant_prefix: str = "") -> str:
        """The text the model sees for ``prompt``: the chat template with the generation prompt
        (or ``"User: ...\\n\\nAssistant:"`` without one), then ``assistant_prefix`` (a partial
        answer the model continues)."""
        ...

    def encode_prompt(self, prompt: Prompt, assistant_prefix: str = "") -> list[int]:
        """The token ids of :meth:`format_prompt` (the conditioning context ``x``)."""
        ...

    def encode_continuation(self, text: str, add_eos: bool = False) -> list[int]:
        """The token ids ``y`` of an answer ``text`` (no special tokens), followed by the
        end-of-turn token when ``add_eos``; :meth:`logprob` scores exactly these ids."""
        ...

    def derive_seed(self, seed: int | None) -> int:
        """``seed`` itself, or (``None``) the next seed of this object's own seeded stream."""
        ...

    def sample(
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
    ) -> list[list[Sample]]:
        """Draw ``n`` answers per prompt; returns ``[prompt][sample]`` (``len(prompts)`` lists
        of ``n`` :class:`~smcplan.llm.samples.Sample`).

        Token ``t`` is drawn from the proposal ``q(y_t | x, y_<t) ∝ [m_t(y_t) p(y_t | x,
        y_<t)]^(1/T)`` restricted to the top-``top_p`` nucleus, ``m_t`` the 0/1 mask of
        ``output_type`` (a regex, JSON schema, choice list, ``int``..., or ``None`` for free
        text; :mod:`smcplan.llm.constrained`); ``temperature=0`` is greedy. Each sample carries
        its parsed ``value``, its ``text`` and ``token_ids``, ``logp = Σ_t log p(y_t | ·)``
        under the raw model and ``logq = Σ_t log q(y_t | ·)``, the proposal's log-density (NaN
        where a backend cannot know it: see the backend), the two terms of a sequential Monte
        Carlo weight p/q. ``max_new_tokens=None``: the output type's token bound, or 64 tokens for
        unbounded types. ``assistant_prefix``: one string for all prompts or one per prompt.
        ``truncation``: ``None`` raises
        :class:`~smcplan.llm.inputs.ContextOverflowError` for a prompt that does not fit the
        context window, ``"left"`` drops its oldest tokens (:mod:`smcplan.llm.inputs`).
        """
        ...

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
        """The parsed values of :meth:`sample` with the same arguments: one per prompt
        (``n == 1``) or a list of ``n`` per prompt (``n > 1``)."""
        ...

    def logprob(
        self,
        prompts: Sequence[Prompt],
        continuations: Sequence[str],
        add_eos: bool = False,
        assistant_prefix: str | Sequence[str] = "",
        *,
        truncation: str | None = None,
    ) -> np.ndarray:
        """``log p(y_i | x_i) = Σ_t log p(y_{i,t} | x_i, y_{i,<t})`` per row ``i``, summed over
        the tokens ``y_i = encode_continuation(continuations[i], add_eos)`` of the continuation
        given ``x_i = encode_prompt(prompts[i], assistant_prefix[i])``, under the raw model at
        temperature 1; a float array of shape ``(len(prompts),)``.

        ``add_eos=True`` also scores the end-of-turn token, which makes the scores of a finite
        answer set comparable (a normalisable distribution over complete answers).
        ``prompts`` and ``continuations`` have equal lengths (lists, not strings);
        ``truncation`` as in :meth:`sample`.
        """
        ...
