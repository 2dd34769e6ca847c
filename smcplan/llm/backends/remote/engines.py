"""What each serving engine is asked: exact continuation scoring and constrained sampling.

Scoring ``log p(c | x) = Σ_j log p(c_j | x, c_<j)`` needs the engine to return the log-probs of
*given* tokens; sampling needs its own structured-output feature. Per engine:

* **vLLM** (``/v1/completions``): the prompt is sent as token ids ``x + c`` with ``echo=true``,
  ``logprobs=0``, ``max_tokens=1``; ``choices[i].logprobs.token_logprobs[k]`` is
  ``log p(t_k | t_<k)``, so the score is the sum over positions ``|x| .. |x|+|c|-1``. Same
  token ids as the local backend, so the same numbers up to kernels. Output types:
  ``structured_outputs`` ``{"choice"|"regex"|"json": ...}`` (vLLM >= 0.10.2).
* **SGLang** (native ``/generate``): ``input_ids = x + c``, ``return_logprob=true``,
  ``logprob_start_len = |x| - 1``, ``max_new_tokens=0``; ``meta_info.input_token_logprobs``
  holds ``(logprob, token_id, ·)`` per input position; the last ``|c|`` entries are checked
  against ``c``'s ids. The radix cache keeps the shared prompt. Output types: ``regex`` /
  ``json_schema`` sampling parameters.
* **llama.cpp** (llama-cpp-python's server, started with ``--logits_all true``): text prompts
  only, and its echo log-probs are misaligned without a leading BOS and slow. Each continuation
  is forced as the *completion* of the prompt (GBNF literal, greedy, streamed, ``logprobs``),
  end-of-turn read from the next step's top log-probs: :mod:`smcplan.llm.backends.remote.llamacpp`.
  Output types: a GBNF ``grammar`` translated from the same regex outlines uses
  (:mod:`smcplan.llm.gbnf`).
* **llama-server** (llama.cpp's own C++ server, native ``/completion``): prompts as token ids,
  each continuation forced by a GBNF grammar of its token ids (``<[id]>``), the raw log-prob of
  every forced token reported in C++ (``n_probs``, ``post_sampling_probs: false``):
  :mod:`smcplan.llm.backends.remote.llamaserver`. Output types: the same GBNF ``grammar``.
  Detected by ``owned_by: "llamacpp"`` in ``GET /models``.
* any other OpenAI-compatible server: sampling only; scoring raises
  :class:`EngineLacksFeature`.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from smcplan.llm.backends.remote.http import EngineLacksFeature, HttpClient, RemoteLMError

__all__ = ["ENGINES", "detect_engine", "score_rows", "structured_fields", "SCORING"]

ENGINES = ("vllm", "sglang", "llamacpp", "llama-server", "openai")
SCORING = {
    "vllm": "echo + logprobs on token ids (/v1/completions)",
    "sglang": "return_logprob + logprob_start_len (/generate)",
    "llamacpp": "forced completion + streamed logprobs with logits_all (/v1/completions)",
    "llama-server": "token-id prompt + token-id grammar + n_probs raw log-probs (/completion)",
}
_BATCH_ROWS = 32


def detect_engine(http: HttpClient) -> tuple[str, list[str]]:
    """``(engine, served model ids)`` from ``GET /models`` (``owned_by``: vLLM, SGLang, and
    ``"llamacpp"`` for llama.cpp's C++ ``llama-server``) and a probe for llama-cpp-python's
    ``/extras/tokenize``."""
    listing = http.get("/models")
    data = listing.get("data", []) if isinstance(listing, dict) else []
    ids = [str(m.get("id")) for m in data]
    owners = {str(m.get("owned_by", "")).lower() for m in data}
    if "vllm" in owners:
        return "vllm", ids
    if "sglang" in owners:
        return "sglang", ids
    if "llamacpp" in owners:
        return "llama-server", ids
    try:
        http.request("POST", "/extras/tokenize", {"input": "a"}, root=True, retries=0)
        return "llamacpp", ids
    except RemoteLMError:
        return "openai", ids


def _check_tail(engine: str, got: Sequence[int], want: Sequence[int], row: int) -> None:
    if list(got) != list(want):
        raise RemoteLMError(
            f"{engine}: scored tokens {list(got)} of row {row} differ from the continuation's "
            f"tokens {list(want)}; the server tokenizes differently from the client tokenizer"
        )


def _score_vllm(http, model, full: list[list[int]], plen: list[int]) -> list[float]:
    out: list[float] = []
    for start in range(0, len(full), _BATCH_ROWS):
        rows = full[start : start + _BATCH_ROWS]
        body = {
            "model": model,
            "prompt": rows,
            "max_tokens": 1,
            "temperature": 0.0,
            "echo": True,
            "logprobs": 0,
        }
        choices = sorted(http.post("/completions", body)["choices"], key=lambda c: c["index"])
        for k, choice in enumerate(choices):
            i = start + k
            lps = choice["logprobs"]["token_logprobs"]
            out.append(float(sum(lps[plen[i] : len(full[i])])))
    return out


def _score_sglang(http, full: list[list[int]], plen: list[int]) -> list[float]:
    out: list[float] = []
    for start in range(0, len(full), _BATCH_ROWS):
        rows = full[start : start + _BATCH_ROWS]
        body = {
            "input_ids": rows,
            "sampling_params": {"max_new_tokens": 0, "temperature": 0.0},
            "return_logprob": True,
            "logprob_start_len": [max(0, plen[start + k] - 1) for k in range(len(rows))],
        }
        res = http.post("/generate", body, root=True)
        res = res if isinstance(res, list) else [res]
        for k, item in enumerate(res):
            i = start + k
            m = len(full[i]) - plen[i]
            entries = [e for e in item["meta_info"]["input_token_logprobs"] if e[0] is not None]
            tail = entries[len(entries) - m :]
            _check_tail("sglang", [int(e[1]) for e in tail], full[i][plen[i] :], i)
            out.append(float(sum(e[0] for e in tail)))
    return out


def score_rows(
    engine: str,
    http: HttpClient,
    model: str,
    prompt_ids: list[list[int]],
    cont_ids: list[list[int]],
    texts: list[tuple[str, str, bool]],
    bos: int | None,
    eos_text: str,
    decode,
    stats: dict[str, int] | None = None,
    eos_id: int | None = None,
    slots: int = 1,
) -> list[float]:
    """``log p(cont | prompt)`` per row through ``engine`` (module docstring); ``texts`` holds
    per row (prompt text, continuation text, whether ``cont_ids`` ends with the end-of-turn
    token, whose text is ``eos_text`` and id ``eos_id``); ``stats`` counts llama.cpp rows by
    scoring path; ``slots``: sequences the engine decodes at once (llama-server's P)."""
    full = [p + c for p, c in zip(prompt_ids, cont_ids, strict=True)]
    plen = [len(p) for p in prompt_ids]
    if engine == "vllm":
        return _score_vllm(http, model, full, plen)
    if engine == "sglang":
        return _score_sglang(http, full, plen)
    if engine == "llama-server":
        from smcplan.llm.backends.remote.llamaserver import score_llama_server

        add_eos = bool(texts and texts[0][2])
        if add_eos and eos_id is None:
            raise ValueError("llama-server scoring with add_eos needs eos_id")
        return score_llama_server(
            http, prompt_ids, cont_ids, add_eos, int(eos_id or 0), stats, slots
        )
    if engine == "llamacpp":
        from smcplan.llm.backends.remote.llamacpp import LlamaCppRow, score_llamacpp

        rows = [
            LlamaCppRow(pt, p, ct, c[:-1] if add_eos else c, add_eos, eos_text)
            for (pt, ct, add_eos), p, c in zip(texts, prompt_ids, cont_ids, strict=True)
        ]
        return score_llamacpp(http, model, rows, bos, decode, stats)
    raise EngineLacksFeature(
        f"the engine at {http.base_url} ({engine!r}: not recognised as vLLM, SGLang, "
        "llama.cpp's llama-server or llama-cpp-python) cannot score a fixed continuation: that "
        "needs prompt log-probs (vLLM echo+logprobs or prompt_logprobs, SGLang return_logprob with "
        "logprob_start_len, llama-cpp-python echo with logits_all); pass engine=... if it is one"
    )


def structured_fields(engine: str, spec: Any, regex: str | None) -> dict[str, Any]:
    """Request fields that make ``engine`` enforce the output type ``spec`` (``{}`` = free text)."""
    if spec.term is None:
        return {}
    key: str = spec.key
    if engine == "vllm":
        if key.startswith("choice:"):
            return {"structured_outputs": {"choice": json.loads(key[len("choice:") :])}}
        if key.startswith("json:"):
            return {"structured_outputs": {"json": json.loads(key[len("json:") :])}}
        return {"structured_outputs": {"regex": regex}}
    if engine == "sglang":
        if key.startswith("json:"):
            return {"json_schema": key[len("json:") :]}
        if key.startswith("choice:"):
            items = json.loads(key[len("choice:") :])
            return {"regex": "(" + "|".join(re.escape(c) for c in items) + ")"}
        return {"regex": regex}
    if engine in ("llamacpp", "llama-server"):
        from smcplan.llm.gbnf import regex_to_gbnf

        return {"grammar": regex_to_gbnf(regex or "")}
    raise EngineLacksFeature(
        f"constrained output ({key[:60]}...) needs an engine with structured outputs (vLLM "
        "structured_outputs, SGLang regex/json_schema, llama.cpp grammar); "
        f"{engine!r} has none known"
    )
