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
* **llama.cpp** (llama-cpp-python's server, started with ``--logits_all true``): its
  ``/v1/completions`` takes text only, so ``x + c`` is sent as text with ``echo=true``,
  ``logprobs=0``, ``max_tokens=1``. *Known defect (llama-cpp-python 0.3.36,
  ``Llama._create_completion``):* the echo path pairs prompt token ``k`` with row ``k`` of the
  logits after stripping one leading BOS token. Row ``k`` belongs to the token *before* ``k``
  only when the prompt began with BOS; otherwise every prompt log-prob is read one row late
  (the model's probability of the token at its own position: −11.0 instead of −1.17 for
  " is" after "The coin"). Tokens equal to BOS inside the prompt are also dropped from the
  lists. Workaround here: the prompt's first token must be BOS (ChatML prompts of SmolLM2 start
  with ``<|im_start|>``, its BOS); the tail of the lists is then exact and is matched to
  ``c``'s tokens. A prompt that does not start with BOS raises :class:`EngineLacksFeature`.
  Output types: a GBNF ``grammar`` translated from the same regex outlines uses
  (:mod:`smcplan.llm.gbnf`).
* any other OpenAI-compatible server: sampling only; scoring raises
  :class:`EngineLacksFeature`.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from smcplan.llm.remote_http import EngineLacksFeature, HttpClient, RemoteLMError

__all__ = ["ENGINES", "detect_engine", "score_rows", "structured_fields", "SCORING"]

ENGINES = ("vllm", "sglang", "llamacpp", "openai")
SCORING = {
    "vllm": "echo + logprobs on token ids (/v1/completions)",
    "sglang": "return_logprob + logprob_start_len (/generate)",
    "llamacpp": "echo + logprobs with logits_all (prompt must start with BOS)",
}
_BATCH_ROWS = 32


def detect_engine(http: HttpClient) -> tuple[str, list[str]]:
    """``(engine, served model ids)`` from ``GET /models`` (``owned_by``) and a probe for
    llama-cpp-python's ``/extras/tokenize``."""
    listing = http.get("/models")
    data = listing.get("data", []) if isinstance(listing, dict) else []
    ids = [str(m.get("id")) for m in data]
    owners = {str(m.get("owned_by", "")).lower() for m in data}
    if "vllm" in owners:
        return "vllm", ids
    if "sglang" in owners:
        return "sglang", ids
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


def _echo_llamacpp(http, model, text, full, plen, bos, decode, i) -> float:
    """Exact but costly: llama-cpp-python sorts the whole vocabulary in Python for every echoed
    token (seconds per row for a few hundred prompt tokens on a CPU)."""
    if bos is None or not full or full[0] != bos:
        raise EngineLacksFeature(
            "llama.cpp (llama-cpp-python server): echo log-probs are exact only for prompts "
            "that start with the BOS token (llama-cpp-python pairs each prompt token with "
            "the logits row of the next position otherwise); this prompt starts with token "
            f"{full[:1]} and BOS is {bos}. Use vLLM or SGLang, or a chat template that "
            "begins with BOS"
        )
    body = {
        "model": model,
        "prompt": text,
        "max_tokens": 1,
        "temperature": 0.0,
        "echo": True,
        "logprobs": 0,
    }
    choice = http.post("/completions", body)["choices"][0]
    vals, toks = choice["logprobs"]["token_logprobs"], choice["logprobs"]["tokens"]
    # the lists end with the continuation, then the one generated token unless generation
    # stopped at end-of-generation (finish_reason "stop"). The server tokenizes prompt +
    # continuation as one text, so the first continuation token may also cover the prompt's
    # last characters (e.g. "Action: " + "take" -> " take"): take the shortest tail whose text
    # ends with the continuation's text.
    end = len(vals) - (0 if choice.get("finish_reason") == "stop" else 1)
    want = "".join(decode([t]) for t in full[plen:]).replace("\ufffd", "")
    for k in range(1, end + 1):
        if "".join(toks[end - k : end]).replace("\ufffd", "").endswith(want) and want:
            break
    else:
        raise RemoteLMError(
            f"llama.cpp: the echoed tokens of row {i} do not end with the continuation {want!r}"
        )
    tail_vals = vals[end - k : end]
    if None in tail_vals:
        raise RemoteLMError(f"llama.cpp: row {i} has no log-prob for a continuation token")
    return float(sum(tail_vals))


def _forced_llamacpp(http, model, ptext, ctext, cont, add_eos, decode) -> float | None:
    """Cheap path: force the continuation as the *completion* (a GBNF literal, greedy, its own
    token ids boosted by ``logit_bias``); llama-cpp-python reports raw log-probs of completion
    tokens correctly. ``log p(EOS | x, c)`` is the top-1 entry of one more forced step, which
    llama-cpp-python keys by the token's text: ``""`` for end-of-turn. ``None`` when that does
    not identify it (EOS not the most likely next token) or the tokens differ: the caller then
    falls back to :func:`_echo_llamacpp`."""
    from smcplan.llm.gbnf import regex_to_gbnf

    m = len(cont)
    if m == 0 and not add_eos:
        return 0.0
    body = {
        "model": model,
        "prompt": ptext,
        "max_tokens": m + int(add_eos),
        "temperature": 0.0,
        "top_k": 0,
        "min_p": 0.0,
        "repeat_penalty": 1.0,
        "seed": 0,
        "grammar": regex_to_gbnf(re.escape(ctext) + ("." if add_eos else "")),
        "logprobs": 1,
        "logit_bias": {str(t): 30.0 for t in set(cont)},
    }
    lp = http.post("/completions", body)["choices"][0].get("logprobs") or {}
    toks, vals, tops = (
        lp.get("tokens", []),
        lp.get("token_logprobs", []),
        lp.get("top_logprobs", []),
    )
    want = [decode([t]).replace("\ufffd", "") for t in cont]
    if [t.replace("\ufffd", "") for t in toks[:m]] != want or None in vals[:m]:
        return None
    score = float(sum(vals[:m]))
    if add_eos:
        top = tops[m] if len(tops) > m and tops[m] else {}
        if "" not in top:
            return None
        score += float(top[""])
    return score


def _score_llamacpp(http, model, rows, bos, decode) -> list[float]:
    out: list[float] = []
    for i, r in enumerate(rows):
        got = _forced_llamacpp(http, model, r["ptext"], r["ctext"], r["cont"], r["add_eos"], decode)
        if got is None:
            got = _echo_llamacpp(http, model, r["text"], r["full"], r["plen"], bos, decode, i)
        out.append(got)
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
) -> list[float]:
    """``log p(cont | prompt)`` per row through ``engine`` (module docstring); ``texts`` holds
    per row (prompt text, continuation text, whether ``cont_ids`` ends with the end-of-turn
    token, whose text is ``eos_text``)."""
    full = [p + c for p, c in zip(prompt_ids, cont_ids, strict=True)]
    plen = [len(p) for p in prompt_ids]
    if engine == "vllm":
        return _score_vllm(http, model, full, plen)
    if engine == "sglang":
        return _score_sglang(http, full, plen)
    if engine == "llamacpp":
        rows = [
            {
                "ptext": pt,
                "ctext": ct,
                "cont": c[:-1] if add_eos else c,
                "add_eos": add_eos,
                "text": pt + ct + (eos_text if add_eos else ""),
                "full": f,
                "plen": n,
            }
            for (pt, ct, add_eos), c, f, n in zip(texts, cont_ids, full, plen, strict=True)
        ]
        return _score_llamacpp(http, model, rows, bos, decode)
    raise EngineLacksFeature(
        f"the engine at {http.base_url} ({engine!r}: not recognised as vLLM, SGLang or "
        "llama-cpp-python) cannot score a fixed continuation: that needs prompt log-probs "
        "(vLLM echo+logprobs or prompt_logprobs, SGLang return_logprob with "
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
    if engine == "llamacpp":
        from smcplan.llm.gbnf import regex_to_gbnf

        return {"grammar": regex_to_gbnf(regex or "")}
    raise EngineLacksFeature(
        f"constrained output ({key[:60]}...) needs an engine with structured outputs (vLLM "
        "structured_outputs, SGLang regex/json_schema, llama.cpp grammar); "
        f"{engine!r} has none known"
    )
