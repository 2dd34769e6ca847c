"""The transformers backend, in this process: batched constrained sampling and KV-cached scoring.

:class:`TransformersLanguageModel`, the transformers backend of the
:class:`smcplan.llm.LanguageModel` protocol, wraps a transformers causal LM and its tokenizer and
offers two operations:

* :meth:`TransformersLanguageModel.sample` / :meth:`~TransformersLanguageModel.generate`: draw
  ``n`` outputs per prompt, all prompts in one batch, each constrained by an output type
  (outlines token masks, see :mod:`smcplan.llm.constrained`). Token ``t`` is drawn from

      q(y_t | x, y_<t) ∝ [m_t(y_t) · p(y_t | x, y_<t)]^(1/T)  restricted to the top-p nucleus,

  where ``m_t`` is the grammar's 0/1 mask. Each sample reports ``logq = Σ_t log q(y_t | ·)`` (the
  proposal log-density a sequential Monte Carlo weight divides by) and ``logp = Σ_t log p(y_t | ·)``
  under the unconstrained model at temperature 1 (the target it multiplies by), cf. Lew et al.
  2023, "Sequential Monte Carlo steering of LLMs using probabilistic programs".
* :meth:`TransformersLanguageModel.logprob`: ``log p(y | x)`` of given continuations, reusing
  each distinct prompt's KV cache (:mod:`smcplan.llm.scoring`).

Both start from the cross-call prefix cache (:mod:`smcplan.llm.prefix_cache`, on by default):
a prompt whose first tokens were run by an earlier call reuses their key/value states and runs
only the rest (:mod:`smcplan.llm.prefill`); ``usage.cached_tokens`` counts the reused tokens.

Prompts are a string (one user message) or a list of ``{"role", "content"}`` messages; they are
rendered with the tokenizer's chat template (with the generation prompt) whenever it has one, the
same way for sampling and scoring; ``assistant_prefix`` text is appended after it (a partial
answer the model continues).

Randomness: each call uses its own ``torch.Generator`` seeded by ``seed``; with ``seed=None`` the
seed is drawn from the object's own ``numpy`` generator (seeded at construction), so a run is
reproducible from the construction seed and the sequence of calls. The global torch RNG is never
touched.

This module is the only one (with its siblings in ``smcplan.llm``) that imports torch,
transformers and outlines; it must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from smcplan.errors import ArgumentTypeError, InvalidArgumentError, check_int
from smcplan.llm.backends.base import ClientSide, token_limit
from smcplan.llm.constrained import (  # noqa: F401 (GenerationError: re-exported)
    GenerationError,
    OutputSpec,
    finished_sample,
    output_spec,
    spec_regex,
)
from smcplan.llm.decode import decode
from smcplan.llm.inputs import (
    check_prompts,
    check_sampling,
    check_truncation,
    fit_prompt,
    window_of,
)
from smcplan.llm.prefill import prefill, remember_decoded, supports_prefix_cache
from smcplan.llm.prefix_cache import DEFAULT_PREFIX_CACHE_BYTES, PrefixCache
from smcplan.llm.protocol import Prompt
from smcplan.llm.samples import Sample, Usage, _Runtime
from smcplan.llm.scoring import score_cached, score_naive
from smcplan.llm.stops import StopAt, StopRule, check_stop_at, cut
from smcplan.llm.vocab import outlines_vocabulary, token_bytes

__all__ = ["TransformersLanguageModel", "Sample", "Prompt", "Usage"]


class TransformersLanguageModel(ClientSide):
    """A causal LM with batched constrained sampling and KV-cached scoring.

    Build it with :func:`smcplan.llm.load_model` (or :func:`smcplan.llm.testing.tiny_model`).
    ``name`` is the registry name or path it was loaded from. Prompt rendering, token ids,
    seeds and ``generate`` are those of every backend
    (:class:`~smcplan.llm.backends.base.ClientSide`).
    """

    def __init__(
        self,
        model,
        tokenizer,
        name: str = "model",
        seed: int = 0,
        threads: int | None = None,
        prefix_cache: bool = True,
        prefix_cache_bytes: int = DEFAULT_PREFIX_CACHE_BYTES,
    ) -> None:
        model.eval()
        cache = PrefixCache(prefix_cache_bytes)  # validates the bound even when off
        #: the cross-call prefix cache (:mod:`smcplan.llm.prefix_cache`), ``None`` when off or
        #: when the model's cache layers drop positions (sliding-window attention)
        self.prefix_cache = cache if prefix_cache and supports_prefix_cache(model) else None
        self.threads = threads
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.usage = Usage()
        self._rng = np.random.default_rng(seed)
        self._runtime = _Runtime()
        eos = tokenizer.eos_token_id
        if eos is None:
            raise ValueError(
                f"tokenizer of {name!r} has no eos_token; constrained generation needs one"
            )
        self.eos_token_id: int = int(eos)
        self.pad_token_id: int = int(
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
        )
        stop = {self.eos_token_id}
        gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        if gen_eos is not None:
            stop.update([gen_eos] if isinstance(gen_eos, int) else gen_eos)
        self.stop_token_ids: frozenset[int] = frozenset(int(s) for s in stop)
        self.has_chat_template = bool(getattr(tokenizer, "chat_template", None))

    # ------------------------------------------------------------------ placement
    @property
    def device(self) -> torch.device:
        return self.model.device

    # ------------------------------------------------------------------ constraints
    def _processor(self, spec: OutputSpec):
        """The (cached) outlines_core token-mask processor for ``spec``, reset for a new batch."""
        if spec.term is None:
            return None
        rt = self._runtime

        def build() -> Any:
            from outlines.backends.outlines_core import OutlinesCoreLogitsProcessor
            from outlines_core import Index

            if rt.vocabulary is None:
                # one vocabulary per model (building it walks the whole vocabulary once)
                rt.vocabulary = outlines_vocabulary(self.tokenizer, self.eos_token_id)
            try:
                index = Index(spec_regex(spec), rt.vocabulary)
            except Exception as exc:  # outlines_core reports bad patterns with its own types
                raise InvalidArgumentError(
                    f"output_type {spec.key[:80]!r} cannot be compiled to a token mask: {exc}"
                ) from exc
            return OutlinesCoreLogitsProcessor(index, "torch")

        proc = rt.processor(spec.key, build)
        proc.reset()
        return proc

    # ------------------------------------------------------------------ sampling
    @contextlib.contextmanager
    def _threading(self) -> Iterator[None]:
        """Run with ``self.threads`` intra-op CPU threads (restored afterwards); ``None`` =
        unchanged (tiny models: per-op thread synchronisation dominates; docs/llm.md)."""
        if self.threads is None:
            yield
            return
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)

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
        stop_at: str | StopAt | None = None,
    ) -> list[list[Sample]]:
        """Draw ``n`` samples for each prompt in one batch; returns ``[prompt][sample]``.

        ``temperature=0`` is greedy decoding (``logq`` is then the log-probability under the
        masked softmax at T = 1). ``max_new_tokens=None`` uses the output type's token bound
        (never truncates a valid answer) or 64 for unbounded types. Raises
        :class:`GenerationError` when a bounded (JSON/choice) answer was truncated, and
        :class:`~smcplan.llm.inputs.ContextOverflowError` (before any forward pass) when a
        prompt does not fit the model's context window, unless ``truncation="left"``
        (:mod:`smcplan.llm.inputs`). ``stop_at`` (this backend only; free text only):
        ``"line"``, ``"sentence"`` or a :class:`~smcplan.llm.stops.StopAt` also ends a reply
        at its first line or sentence (:mod:`smcplan.llm.stops`: the text is cut there, the
        token that confirmed the end stays in ``token_ids``, ``logp`` and ``logq``).
        """
        with self._threading(), torch.inference_mode():
            return self._sample(
                prompts, output_type, n, temperature, top_p, max_new_tokens, seed,
                assistant_prefix, truncation, stop_at,
            )

    def _stop_rule(self, stop: StopAt | None, vocab_size: int) -> StopRule | None:
        """The (cached) :class:`StopRule` of ``stop`` on this model's vocabulary."""
        if stop is None:
            return None
        rules = self.__dict__.setdefault("_stop_rules", {})
        key = (stop, vocab_size, str(self.device))
        if key not in rules:
            if "_token_bytes" not in self.__dict__:
                self._token_bytes = token_bytes(self.tokenizer)
            rules[key] = StopRule(self._token_bytes, vocab_size, stop).to(self.device)
        return rules[key]

    def _sample(  # the parameters of sample(), in order
        self, prompts, output_type, n, temperature, top_p, max_new_tokens, seed,
        assistant_prefix, truncation, stop_at=None,
    ) -> list[list[Sample]]:
        prompts = check_prompts(prompts)
        n, temperature, top_p, max_new_tokens, seed = check_sampling(
            n, temperature, top_p, max_new_tokens, seed, len(prompts)
        )
        truncation = check_truncation(truncation)
        spec = output_spec(output_type)  # a bad output type is refused even without prompts
        stop_at = check_stop_at(stop_at)
        if stop_at is not None and spec.term is not None:
            raise InvalidArgumentError(
                f"stop_at={stop_at!r} ends free text only; output_type {spec.key[:80]!r} has its "
                "own end (pass stop_at=None)"
            )
        if not prompts:
            return []
        bound, limit = token_limit(spec, max_new_tokens)
        prefixes = _prefixes(assistant_prefix, len(prompts))
        window = window_of(self.model)
        # room after the prompt: one token (else refused), or the whole answer when truncating
        need = 1 if truncation is None or window is None else min(limit, window - 1)
        encoded = [
            fit_prompt(self.encode_prompt(p, a), need, window, truncation, i, self.name)
            for i, (p, a) in enumerate(zip(prompts, prefixes, strict=True))
        ]
        if window is not None:  # generation stops at the window (module doc of llm.inputs)
            limit = min(limit, window - max(len(r) for r in encoded))
        # Each distinct prompt is prefilled once (from the prefix cache where it can); its KV
        # cache is then copied to its rows: one per occurrence in ``prompts``, times n samples.
        slot: dict[tuple[int, ...], int] = {}
        for r in encoded:
            slot.setdefault(tuple(r), len(slot))
        unique = [list(r) for r in slot]
        device = self.device
        pre = prefill(self.model, unique, self.pad_token_id, self.prefix_cache)
        self.usage.cached_tokens += sum(len(r) for r in unique) - pre.run
        proc = self._processor(spec)
        gen = torch.Generator(device=device).manual_seed(self.derive_seed(seed))
        stop = torch.tensor(sorted(self.stop_token_ids), device=device)
        rows = torch.tensor([slot[tuple(r)] for r in encoded for _ in range(n)], device=device)
        cache, next_logits = pre.cache, pre.last_logits.index_select(0, rows)
        cache.batch_select_indices(rows)
        ids, mask = pre.input_ids.index_select(0, rows), pre.mask.index_select(0, rows)
        R = len(encoded) * n
        dec = decode(
            self.model, cache, next_logits, ids, mask, pre.lengths.index_select(0, rows) - 1,
            proc, limit=limit, temperature=temperature, top_p=top_p, generator=gen,
            stop_ids=stop, eos_id=self.eos_token_id,
            stop_rule=self._stop_rule(stop_at, int(next_logits.shape[-1])),
        )
        count, done, logq, logp = dec.count, dec.done, dec.logq, dec.logp
        if self.prefix_cache is not None:  # keep the states of the sampled answers too
            toks = dec.tokens[:, : dec.fed].tolist()
            kept = [t[: min(int(c), dec.fed)] for t, c in zip(toks, count.tolist(), strict=True)]
            remember_decoded(self.prefix_cache, pre, dec.cache, rows.tolist(), unique, kept)
        self.usage.calls += 1
        self.usage.prompt_tokens += int(sum(len(r) for r in unique))  # each distinct one once
        self.usage.generated_tokens += int(count.sum())
        gen_ids = dec.tokens.cpu()
        samples: list[Sample] = []
        for i in range(R):
            all_toks = gen_ids[i, : int(count[i])].tolist()
            finished = bool(done[i])
            # the last draw of a finished row is its stop token, unless a text rule ended it
            stopped = finished and bool(all_toks) and all_toks[-1] in self.stop_token_ids
            toks = all_toks[:-1] if stopped else all_toks
            text = cut(self.tokenizer.decode(toks, skip_special_tokens=True), stop_at)
            samples.append(
                finished_sample(
                    spec, text, all_toks, finished, float(logp[i]), float(logq[i]), limit,
                    num_tokens=int(count[i]), bound=bound,
                )
            )  # fmt: skip
        return [samples[k * n : (k + 1) * n] for k in range(len(prompts))]

    # ------------------------------------------------------------------ scoring
    def logprob(
        self,
        prompts: Sequence[Prompt],
        continuations: Sequence[str],
        add_eos: bool = False,
        assistant_prefix: str | Sequence[str] = "",
        reuse_cache: bool = True,
        max_batch_tokens: int = 8192,
        truncation: str | None = None,
    ) -> np.ndarray:
        """``log p(continuations[i] | prompts[i])`` summed over tokens, shape ``(len(prompts),)``.

        ``add_eos=True`` also scores the end-of-turn token after the continuation, which makes the
        scores of a finite answer set comparable (otherwise "take coin" would collect the mass of
        "take coin from table" too). Prompts that are equal (after formatting) share one prompt
        pass (``reuse_cache=False`` runs the naive padded pass per row, for reference/benchmarks).
        A row longer than the context window raises
        :class:`~smcplan.llm.inputs.ContextOverflowError` before any forward pass, unless
        ``truncation="left"`` (:mod:`smcplan.llm.inputs`).
        """
        if isinstance(prompts, str) or isinstance(continuations, str):
            raise ArgumentTypeError(
                "prompts and continuations must be lists (one entry per row), not strings"
            )
        prompts = check_prompts(prompts)
        if not isinstance(continuations, Sequence) or not all(
            isinstance(c, str) for c in continuations
        ):
            raise ArgumentTypeError("continuations must be a list of str (one per row)")
        max_batch_tokens = check_int(max_batch_tokens, "max_batch_tokens", minimum=1)
        truncation = check_truncation(truncation)
        if len(prompts) != len(continuations):
            raise InvalidArgumentError(
                f"got {len(prompts)} prompts but {len(continuations)} continuations"
            )
        prefixes = _prefixes(assistant_prefix, len(prompts))
        if not prompts:
            return np.zeros(0)
        cache: dict[tuple[str, str], list[int]] = {}
        p_ids = []
        for p, a in zip(prompts, prefixes, strict=True):
            key = (p, a) if isinstance(p, str) else (repr(list(p)), a)
            if key not in cache:
                cache[key] = self.encode_prompt(p, a)
            p_ids.append(cache[key])
        c_ids = [self.encode_continuation(c, add_eos) for c in continuations]
        window = window_of(self.model)
        p_ids = [
            fit_prompt(p, len(c), window, truncation, i, self.name)
            for i, (p, c) in enumerate(zip(p_ids, c_ids, strict=True))
        ]
        self.usage.calls += 1
        self.usage.prompt_tokens += sum(len(v) for v in cache.values())
        self.usage.scored_tokens += sum(len(c) for c in c_ids)
        with self._threading(), torch.inference_mode():
            if not reuse_cache:
                return score_naive(self.model, p_ids, c_ids, self.pad_token_id)
            scores, cached = score_cached(
                self.model, p_ids, c_ids, self.pad_token_id, max_batch_tokens, self.prefix_cache
            )
            self.usage.cached_tokens += cached
            return scores

    def __repr__(self) -> str:
        return (
            f"TransformersLanguageModel({self.name!r}, device={self.device}, "
            f"dtype={self.model.dtype})"
        )


def _prefixes(assistant_prefix: str | Sequence[str], count: int) -> list[str]:
    """One assistant prefix per prompt (a single string is shared by all)."""
    out = [assistant_prefix] * count if isinstance(assistant_prefix, str) else [*assistant_prefix]
    if len(out) != count:
        raise InvalidArgumentError(f"got {len(out)} assistant prefixes for {count} prompts")
    return out
