"""A language model behind an OpenAI-compatible serving engine (vLLM, SGLang, llama.cpp server).

``load_model("openai:<base_url>#<model>")`` (e.g. ``openai:http://127.0.0.1:8000/v1#smollm2-135m``)
returns a :class:`RemoteLanguageModel` with the same ``generate`` / ``sample`` / ``logprob`` as
the in-process :class:`~smcplan.llm.backends.hf.TransformersLanguageModel` (both satisfy the
:class:`smcplan.llm.LanguageModel` protocol), so every role and agent runs unchanged.

The client keeps the model's *tokenizer* (a few MB, no weights): prompts are rendered with the
same chat template and encoded into the same token ids as in-process, and continuations are
scored on exactly those ids where the engine takes ids (vLLM, SGLang). Per-engine requests and
what each engine can and cannot do: :mod:`smcplan.llm.backends.remote.engines`.

Differences from the in-process model, by construction:

* ``Sample.logp`` is the engine's log-probability of the sampled tokens under the raw model.
  ``Sample.logq``, the log-density of the proposal that drew them, is known only when that
  proposal is the model itself: no output type, and ``temperature=1, top_p=1`` (then q = p)
  or ``temperature=0`` (the local backend's convention: log-prob under the unmasked softmax,
  = ``logp``). Otherwise no engine returns the density of its masked, tempered proposal and
  ``logq`` is NaN, so a twisted SMC weight (p/q) fails loudly instead of silently using 1.
  With llama-cpp-python's server ``logp`` is NaN too (llama.cpp's own ``llama-server`` reports
  it exactly, in C++): the Python server sorts the whole vocabulary in Python for each
  reported token, which would cost more than the sampling itself.
* ``truncation=None | "left"`` and the context-window check work as in-process
  (:mod:`smcplan.llm.inputs`) with the window of the client's model config; a left-truncated
  prompt is sent as token ids (vLLM, SGLang) or as the text of those ids (llama.cpp).
* the engine's random generator is seeded per request (``seed``), so a run is reproducible on
  the same engine build, but the numbers differ from the local model's.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlparse

import numpy as np

from smcplan.errors import check_int
from smcplan.llm.backends.base import ClientSide, token_limit
from smcplan.llm.backends.remote.engines import (
    ENGINES,
    detect_engine,
    score_rows,
    structured_fields,
)
from smcplan.llm.backends.remote.http import HttpClient

__all__ = ["RemoteLanguageModel", "RemoteSpecError", "parse_remote", "proposal_is_model", "PREFIX"]

PREFIX = "openai:"


def proposal_is_model(constrained: bool, temperature: float, top_p: float) -> bool:
    """Whether a sample's proposal density q equals the model's p (so ``logq = logp``): an
    unconstrained draw at ``temperature=1, top_p=1``, or greedy (``temperature=0``, whose
    ``logq`` the local backend also reports under the unmasked softmax)."""
    return not constrained and (temperature == 0 or (temperature == 1 and top_p == 1))


class RemoteSpecError(ValueError):
    """A malformed ``openai:<base_url>#<model>`` string, or a model the server does not serve."""


@dataclass(frozen=True)
class RemoteSpec:
    base_url: str
    model: str


def parse_remote(spec: str) -> RemoteSpec:
    """Split ``openai:<base_url>#<model>``; the URL must be http(s) with a host."""
    if not spec.startswith(PREFIX) or "#" not in spec:
        raise RemoteSpecError(
            f"remote model {spec!r} must read 'openai:<base_url>#<model>', e.g. "
            "'openai:http://127.0.0.1:8000/v1#smollm2-135m'"
        )
    base, _, model = spec[len(PREFIX) :].rpartition("#")
    url = urlparse(base)
    if url.scheme not in ("http", "https") or not url.netloc or not model:
        raise RemoteSpecError(
            f"remote model {spec!r}: need an http(s) base URL with a host and a model name after "
            "'#', e.g. 'openai:http://127.0.0.1:8000/v1#smollm2-135m'"
        )
    return RemoteSpec(base.rstrip("/"), model)


def _load_tokenizer(name: str):
    from transformers import AutoTokenizer

    from smcplan.llm.registry import ModelNotAvailable, resolve

    try:
        resolved = resolve(name)
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
        kwargs = {"local_files_only": offline} if resolved.is_hub_id else {}
        tok = AutoTokenizer.from_pretrained(resolved.path, **kwargs)
        return tok, resolved.path
    except (OSError, ModelNotAvailable) as exc:
        raise ModelNotAvailable(
            f"the remote backend needs the tokenizer of {name!r} on this machine ({exc}); pass "
            "tokenizer=<registry name, folder or hub id>, or serve the model under its registry "
            "name (e.g. --model_alias smollm2-135m)"
        ) from exc


def _window(path: str) -> int | None:
    import json

    config = os.path.join(path, "config.json")
    if os.path.isfile(config):
        with open(config, encoding="utf-8") as handle:
            value = json.load(handle).get("max_position_embeddings")
        return int(value) if isinstance(value, int) else None
    return None


class RemoteLanguageModel(ClientSide):
    """``generate`` / ``sample`` / ``logprob`` served by a remote engine (module docstring).

    ``engine``: ``"vllm"``, ``"sglang"``, ``"llamacpp"`` (llama-cpp-python's server),
    ``"llama-server"`` (llama.cpp's C++ server) or ``"openai"`` (sampling only); ``None`` detects
    it from ``GET /models``. ``tokenizer``: where the client tokenizer comes from (default:
    ``model``, resolved like :func:`smcplan.llm.load_model`). ``timeout``, ``retries``: per request
    (:class:`~smcplan.llm.backends.remote.http.HttpClient`). ``window``: the context window in
    tokens (default: the model config's ``max_position_embeddings``; pass the server's, e.g.
    llama.cpp's ``--n_ctx``, when it is smaller). ``slots``: how many sequences the engine decodes
    at once (llama-server's ``--parallel P``; default: read from the server, 1 for other engines);
    the ``n`` samples of a prompt and the prompts of one call are then sent together
    (:mod:`smcplan.llm.backends.remote.llamaserver`, "Batching"); ``slots=1`` sends them one by
    one.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        engine: str | None = None,
        tokenizer: str | None = None,
        seed: int = 0,
        timeout: float = 120.0,
        retries: int = 3,
        api_key: str | None = None,
        window: int | None = None,
        slots: int | None = None,
    ) -> None:
        from smcplan.llm.samples import Usage

        if engine is not None and engine not in ENGINES:
            raise ValueError(f"unknown engine {engine!r}; valid: {', '.join(ENGINES)} or None")
        if slots is not None:
            slots = check_int(slots, "slots", minimum=1)
        self.http = HttpClient(base_url, timeout=timeout, retries=retries, api_key=api_key)
        detected, served = detect_engine(self.http)
        if served and model not in served:
            raise RemoteSpecError(
                f"the server at {base_url} serves {served}, not {model!r}; "
                "use one of those after '#'"
            )
        self.engine = engine or detected
        if slots is None and self.engine == "llama-server":
            from smcplan.llm.backends.remote.llamaserver import server_slots

            slots = server_slots(self.http)
        #: sequences the engine decodes at once (module docstring of backends.remote.llamaserver)
        self.slots = int(slots or 1)
        self.served_model = model
        self.name = f"{PREFIX}{base_url}#{model}"
        self.tokenizer, path = _load_tokenizer(tokenizer or model)
        if window is not None and (not isinstance(window, int) or window < 2):
            raise ValueError(f"window must be an int >= 2 (tokens); got {window!r}")
        self.model = SimpleNamespace(
            config=SimpleNamespace(max_position_embeddings=window or _window(path))
        )  # only the context window, read by smcplan.agents.context.model_window
        self.usage = Usage()
        #: llama.cpp rows by scoring path: forced / retried / echo
        #: (smcplan.llm.backends.remote.llamacpp)
        self.scoring_paths: dict[str, int] = {}
        self._rng = np.random.default_rng(seed)
        eos = self.tokenizer.eos_token_id
        if eos is None:
            raise ValueError(f"tokenizer of {model!r} has no eos_token")
        self.eos_token_id = int(eos)
        self.bos_token_id = self.tokenizer.bos_token_id
        self.has_chat_template = bool(getattr(self.tokenizer, "chat_template", None))

    def reseed(self, seed: int) -> None:
        """Restart the stream of per-call seeds (the eval harness does this per episode)."""
        self._rng = np.random.default_rng(seed)

    def _prefixes(self, assistant_prefix, size: int) -> list[str]:
        """One assistant prefix per prompt (a single string is shared by all)."""
        one = isinstance(assistant_prefix, str)
        prefixes = [assistant_prefix] * size if one else list(assistant_prefix)
        if len(prefixes) != size:
            raise ValueError(f"got {len(prefixes)} assistant prefixes for {size} prompts")
        return prefixes

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=True)

    def _fitted(self, prompt, prefix, need, window, truncation, row, fit_prompt):
        """``(text, ids)`` of a prompt that fits the window (``truncation="left"``: its last
        tokens, the text being their decoding), else ``ContextOverflowError``."""
        text, ids = self.format_prompt(prompt, prefix), self.encode_prompt(prompt, prefix)
        kept = fit_prompt(ids, need, window, truncation, row, self.name)
        if len(kept) < len(ids):
            text = self.tokenizer.decode(kept, skip_special_tokens=False)
        return text, kept

    # ------------------------------------------------------------------ sampling
    def _request(self, prompt_ids: list[int], text: str, fields: dict[str, Any], n: int, seed: int):
        if self.engine == "llama-server":
            from smcplan.llm.backends.remote.llamaserver import sample_llama_server

            return sample_llama_server(self.http, prompt_ids, fields, n, seed)
        body: dict[str, Any] = {"model": self.served_model, **fields, "n": n, "seed": seed}
        if self.engine == "sglang":
            # untested here: SGLang takes no per-request seed without deterministic inference
            params = {k: v for k, v in fields.items() if k != "logprobs"}
            params["max_new_tokens"] = params.pop("max_tokens")
            res = self.http.post(
                "/generate",
                {"input_ids": [prompt_ids] * n, "sampling_params": params, "return_logprob": True},
                root=True,
            )
            return [
                (
                    r["text"],
                    r["meta_info"]["finish_reason"].get("type") == "stop",
                    [e[0] for e in r["meta_info"]["output_token_logprobs"]],
                )
                for r in res
            ]
        body["prompt"] = prompt_ids if self.engine == "vllm" else text
        if self.engine == "llamacpp":
            # llama-cpp-python ignores n and defaults to top_k=40, min_p=0.05, repeat_penalty=1.1;
            # its per-token log-probs cost a full-vocabulary sort in Python each: not requested
            body.update(top_k=0, min_p=0.0, repeat_penalty=1.0, n=1)
            body.pop("logprobs", None)
            out = []
            for k in range(n):
                body["seed"] = (seed + k) % 2**31
                out.extend(self._choices(self.http.post("/completions", body)))
            return out
        return self._choices(self.http.post("/completions", body))

    @staticmethod
    def _choices(res: dict[str, Any]):
        out = []
        for c in sorted(res["choices"], key=lambda c: c.get("index", 0)):
            lps = (c.get("logprobs") or {}).get("token_logprobs") or []
            out.append((c["text"], c.get("finish_reason") == "stop", lps))
        return out

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
        """Draw ``n`` samples per prompt on the engine; returns ``[prompt][sample]`` like
        :meth:`smcplan.llm.LanguageModel.sample` (``logq``: module docstring)."""
        from smcplan.llm.constrained import finished_sample, output_spec, spec_regex
        from smcplan.llm.inputs import check_truncation, fit_prompt

        if isinstance(prompts, str):
            raise TypeError("prompts must be a list of prompts (one per particle), not a string")
        if n < 1:
            raise ValueError(f"n must be >= 1; got {n}")
        if temperature < 0 or not 0 < top_p <= 1:
            raise ValueError(
                f"need temperature >= 0 and 0 < top_p <= 1; got {temperature}, {top_p}"
            )
        prefixes = self._prefixes(assistant_prefix, len(prompts))
        truncation = check_truncation(truncation)
        spec = output_spec(output_type)
        bound, limit = token_limit(spec, max_new_tokens)
        regex = spec_regex(spec) if spec.term is not None else None
        q_is_p = proposal_is_model(spec.term is not None, temperature, top_p)
        window = self.model.config.max_position_embeddings
        need = 1 if truncation is None or window is None else min(limit, window - 1)
        fields = {
            **structured_fields(self.engine, spec, regex),
            "max_tokens": int(limit),
            "temperature": float(temperature),
            "top_p": float(top_p),
            "logprobs": 0,
        }
        base = self.derive_seed(seed)
        requests = []
        for i, (p, a) in enumerate(zip(prompts, prefixes, strict=True)):
            text, ids = self._fitted(p, a, need, window, truncation, i, fit_prompt)
            own = dict(fields)
            if window is not None:
                own["max_tokens"] = int(min(limit, window - len(ids)))
            requests.append((ids, text, own, (base + 7919 * i) % 2**31))
        if self.engine == "llama-server":
            from smcplan.llm.backends.remote.llamaserver import sample_many_llama_server

            answers = sample_many_llama_server(
                self.http, [(ids, f, sd) for ids, _, f, sd in requests], n, self.slots
            )
        else:
            answers = [self._request(ids, text, f, n, sd) for ids, text, f, sd in requests]
        result = []
        for (ids, _, _, _), rows in zip(requests, answers, strict=True):
            self.usage.calls += 1
            self.usage.prompt_tokens += len(ids)
            group = []
            for out_text, finished, lps, *sampled in rows:
                # the engine's own token ids where it reports them (llama-server), else the text
                # re-encoded
                toks = (sampled[0] if sampled else self.encode_continuation(out_text)) + (
                    [self.eos_token_id] if finished else []
                )
                logp = float(sum(v for v in lps if v is not None)) if lps else float("nan")
                self.usage.generated_tokens += len(toks)
                group.append(finished_sample(
                    spec, out_text, toks, finished, logp, logp if q_is_p else float("nan"), limit
                ))
            result.append(group)
        return result

    # ------------------------------------------------------------------ scoring
    def logprob(
        self,
        prompts: Sequence[Any],
        continuations: Sequence[str],
        add_eos: bool = False,
        assistant_prefix: str | Sequence[str] = "",
        truncation: str | None = None,
        **_: Any,
    ) -> np.ndarray:
        """``log p(continuations[i] | prompts[i])`` on the engine, shape ``(len(prompts),)``.

        Raises :class:`~smcplan.llm.backends.remote.http.EngineLacksFeature` where the engine cannot
        score given tokens, and ``ContextOverflowError`` for a row longer than the window unless
        ``truncation="left"`` (as in-process). Extra keywords of the local method
        (``reuse_cache``…) are accepted and ignored (the engine caches prefixes itself).
        """
        from smcplan.llm.inputs import check_truncation, fit_prompt

        if isinstance(prompts, str) or isinstance(continuations, str):
            raise TypeError(
                "prompts and continuations must be lists (one entry per row), not strings"
            )
        if len(prompts) != len(continuations):
            raise ValueError(f"got {len(prompts)} prompts but {len(continuations)} continuations")
        prefixes = self._prefixes(assistant_prefix, len(prompts))
        truncation = check_truncation(truncation)
        if not prompts:
            return np.zeros(0)
        window = self.model.config.max_position_embeddings
        memo: dict[tuple[str, str, int], tuple[str, list[int]]] = {}
        p_ids, texts, c_ids = [], [], []
        for i, (p, a, c) in enumerate(zip(prompts, prefixes, continuations, strict=True)):
            cid = self.encode_continuation(c, add_eos)
            key = (p if isinstance(p, str) else repr(list(p)), a, len(cid))
            if key not in memo:
                memo[key] = self._fitted(p, a, len(cid), window, truncation, i, fit_prompt)
            ptext, pid = memo[key]
            p_ids.append(pid)
            c_ids.append(cid)
            texts.append((ptext, c, add_eos))
        self.usage.calls += 1
        self.usage.prompt_tokens += sum(len(v[1]) for v in memo.values())
        self.usage.scored_tokens += sum(len(c) for c in c_ids)
        scores = score_rows(
            self.engine,
            self.http,
            self.served_model,
            p_ids,
            c_ids,
            texts,
            self.bos_token_id,
            self.tokenizer.convert_ids_to_tokens(self.eos_token_id),
            self._decode,
            self.scoring_paths,
            eos_id=self.eos_token_id,
            slots=self.slots,
        )
        return np.asarray(scores, dtype=np.float64)

    def __repr__(self) -> str:
        return f"RemoteLanguageModel({self.name!r}, engine={self.engine!r})"
