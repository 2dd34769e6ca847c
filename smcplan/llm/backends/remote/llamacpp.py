"""Exact continuation scoring through llama-cpp-python's OpenAI-compatible server.

``log p(c | x) = Σ_j log p(c_j | x, c_<j)`` (plus ``log p(e | x, c)`` for the end-of-turn
token ``e`` when ``add_eos``). The server (0.3.36) takes prompts as text only and reports
log-probs for echoed prompt tokens and for completion tokens. Its echo path is misaligned for
prompts without a leading BOS and sorts the whole vocabulary in Python for every echoed token
(:func:`_echo`), so a row of a few hundred prompt tokens costs tens of seconds. Per row, this
module instead:

1. checks once per distinct prompt that the server tokenizes the prompt text into the client's
   ids (``/extras/tokenize``), so both condition on the same tokens;
2. **forces** ``c`` as the *completion*: a GBNF grammar that is ``c``'s literal text, greedy
   decoding, ``logit_bias`` +30 on ``c``'s own token ids (so the greedy path takes exactly the
   client's tokenization), ``stream: true`` and ``logprobs = K``. llama-cpp-python reads each
   completion token's log-prob from the raw logits row that predicted it, so
   ``token_logprobs[j] = log p(c_j | x, c_<j)`` (the returned token texts are checked against
   ``c``'s). Streaming matters for speed: the non-streamed answer log-softmaxes the whole
   (tokens × vocabulary) logits matrix per request, the streamed one only the reported rows;
3. for ``e``, asks for one more token (the grammar adds one printable ASCII character): the
   server cannot report an end-of-generation token it would stop on, but that step's
   ``top_logprobs`` is the top ``K`` of the raw distribution after ``x, c``, keyed by token
   *text*. ``e`` detokenizes to ``""``, as do the other control tokens, so the key ``""`` may hold
   several tokens (the dict keeps the last, least likely one). The entry is used only when the
   ``K`` top tokens have ``K`` distinct texts: then ``""`` is exactly one token, the most likely
   empty-text token. Otherwise ``K`` is chosen again from the answer and the row re-sent (at
   most :data:`MAX_REQUESTS` requests): the index of ``""`` in the dict's key order is the rank
   of the first empty-text token when no earlier texts collide (``K' = index + 1``); when ``""``
   is not among the top ``K``, ``K' = 10 K`` (up to :data:`MAX_TOP_K`). Failing that, the row
   falls back to :func:`_echo`.

The one assumption: ``e`` is the most likely empty-text token after ``x, c`` (in general the
value is ``max_{t: text(t) = ""} log p(t | x, c) >= log p(e | x, c)``). It holds on every row
measured (docs/scale.md), as a ChatML model ends an answer with ``<|im_end|>``, not with
``<|endoftext|>`` or another control token.

Cost per row: ``|c| + 1`` decode steps (the prompt's KV cache is reused between rows with the
same prompt) and one vocabulary sort in Python per reported token (~0.07 s for SmolLM2's
49,152 entries), instead of one per prompt token.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from smcplan.llm.backends.remote.http import EngineLacksFeature, HttpClient, RemoteLMError
from smcplan.llm.gbnf import regex_to_gbnf

__all__ = ["LlamaCppRow", "score_llamacpp", "TOP_K", "MAX_TOP_K", "MAX_REQUESTS"]

#: top log-probs asked for per reported token (first request of a row)
TOP_K = 20
#: the largest top-k asked for when end-of-turn is not among the first ones
MAX_TOP_K = 2000
#: requests per row before the echo fallback
MAX_REQUESTS = 8
_BIAS = 30.0
_EXTRA_CHAR = "[ -~]"  # one printable ASCII character: a token with a non-empty text


@dataclass(frozen=True)
class LlamaCppRow:
    """One scored row: prompt text and client ids, continuation text and ids (without the
    end-of-turn token), whether end-of-turn is scored, and its text (for the echo fallback)."""

    ptext: str
    pids: Sequence[int]
    ctext: str
    cont: Sequence[int]
    add_eos: bool
    eos_text: str


def _check_prompt(http: HttpClient, model: str, row: LlamaCppRow, row_index: int) -> None:
    got = http.post("/extras/tokenize", {"model": model, "input": row.ptext}, root=True)
    ids = [int(t) for t in got["tokens"]]
    if ids != list(row.pids):
        k = next((i for i, (a, b) in enumerate(zip(ids, row.pids)) if a != b), None)
        k = min(len(ids), len(row.pids)) if k is None else k
        raise RemoteLMError(
            f"llama.cpp: the server tokenizes the prompt of row {row_index} differently from the "
            f"client tokenizer (first difference at token {k}: server {ids[k : k + 3]}, client "
            f"{list(row.pids[k : k + 3])}), so its scores would be conditioned on other tokens; "
            "serve a GGUF converted from the same tokenizer"
        )


def _forced(
    http: HttpClient, model: str, row: LlamaCppRow, k: int, decode: Callable
) -> tuple[float, dict[str, float] | None, str | None] | None:
    """``(Σ_j log p(c_j | x, c_<j), top-k dict and sampled text of the step after c)`` from one
    forced streamed completion; ``None`` when the server's tokens differ from ``c``'s."""
    m = len(row.cont)
    if m == 0 and not row.add_eos:
        return 0.0, None, None
    body: dict[str, Any] = {
        "model": model,
        "prompt": row.ptext,
        "max_tokens": m + int(row.add_eos),
        "temperature": 0.0,
        "top_k": 0,
        "min_p": 0.0,
        "repeat_penalty": 1.0,
        "seed": 0,
        "grammar": regex_to_gbnf(re.escape(row.ctext) + (_EXTRA_CHAR if row.add_eos else "")),
        "logprobs": k if row.add_eos else 0,
        "stream": True,
    }
    if m:
        body["logit_bias"] = {str(t): _BIAS for t in set(row.cont)}
    toks: list[str] = []
    vals: list[float | None] = []
    tops: list[dict[str, float] | None] = []
    for event in http.post_events("/completions", body):
        for choice in event.get("choices", []):
            lp = choice.get("logprobs")
            if lp:
                toks += lp.get("tokens", [])
                vals += lp.get("token_logprobs", [])
                tops += lp.get("top_logprobs", [])
    want = [decode([t]).replace("\ufffd", "") for t in row.cont]
    if len(toks) < m + int(row.add_eos) or None in vals[:m]:
        return None
    if [t.replace("\ufffd", "") for t in toks[:m]] != want:
        return None
    score = float(sum(v for v in vals[:m] if v is not None))
    if not row.add_eos:
        return score, None, None
    return score, tops[m] or {}, toks[m]


class _Unidentified(Exception):
    """A top-k answer that cannot identify the end-of-turn entry."""


def _distinct(top: dict[str, float], k: int, sampled: str) -> int:
    """A lower bound on how many distinct texts the top ``k`` tokens have. The sampled token's
    entry is written last: appended as a new key unless its text was among the top ``k``
    already, so a last key equal to its text may or may not be one of them."""
    n = len(top)
    return n - 1 if n and list(top)[-1] == sampled else n


def _eos_logprob(query: Callable[[int], tuple[dict[str, float], str]]) -> tuple[float | None, int]:
    """``(log p(e), requests)`` from top-k dicts of the step after ``c`` (module docstring, step
    3); ``query(k)`` returns one step's dict and sampled text. ``None`` when no answer within
    :data:`MAX_REQUESTS` identifies it.

    Fast case: the top ``k`` have ``k`` distinct texts and ``""`` is one of them: exactly one
    empty-text token. Else the rank ``r`` of the first empty-text token is found: with ``""``
    first inserted at index ``j`` of a top-``k`` dict whose texts collide ``C`` times at most,
    ``j + 1 <= r <= j + 1 + C``; ``r`` is the smallest ``k`` whose dict has ``""`` (bisection),
    and in that dict ``""`` holds exactly the ``r``-th token: the first empty-text one."""
    seen: dict[int, dict[str, float]] = {}

    def ask(k: int) -> tuple[dict[str, float], str]:
        top, sampled = query(k)
        if sampled == "":
            raise _Unidentified  # the sampled token's own entry overwrote the "" key
        seen[k] = top
        return top, sampled

    try:
        k = TOP_K
        while True:
            top, sampled = ask(k)
            lo_n = _distinct(top, k, sampled)
            if "" in top:
                if lo_n == k:
                    return float(top[""]), len(seen)
                j = list(top).index("")
                lo, hi = j + 1, j + 1 + (k - lo_n)
                break
            if k >= MAX_TOP_K or len(seen) >= MAX_REQUESTS:
                return None, len(seen)
            k = min(10 * k, MAX_TOP_K)
        hi = min(hi, k)
        while lo < hi and len(seen) < MAX_REQUESTS:
            mid = (lo + hi) // 2
            top, sampled = ask(mid)
            if "" in top:  # r <= mid, and the same bounds as above within the top mid
                j = list(top).index("")
                lo, hi = max(lo, j + 1), min(mid, j + 1 + mid - _distinct(top, mid, sampled))
            else:
                lo = mid + 1
        if lo < hi or (lo not in seen and len(seen) >= MAX_REQUESTS):
            return None, len(seen)
        top = seen[lo] if lo in seen else ask(lo)[0]
        if "" not in top:  # cannot happen unless the server's ranking changed between requests
            return None, len(seen)
        return float(top[""]), len(seen)
    except _Unidentified:
        return None, len(seen)


def _echo(
    http: HttpClient,
    model: str,
    row: LlamaCppRow,
    bos: int | None,
    decode: Callable,
    i: int,
) -> float:
    """Exact but costly: the echo path pairs prompt token ``k`` with logits row ``k`` after
    dropping one leading BOS, which is right only for prompts that begin with BOS; and it sorts
    the whole vocabulary in Python for every echoed token (seconds per row)."""
    full = list(row.pids) + list(row.cont)
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
        "prompt": row.ptext + row.ctext + (row.eos_text if row.add_eos else ""),
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
    want = "".join(decode([t]) for t in row.cont).replace("\ufffd", "")
    for n in range(1, end + 1):
        if want and "".join(toks[end - n : end]).replace("\ufffd", "").endswith(want):
            break
    else:
        raise RemoteLMError(
            f"llama.cpp: the echoed tokens of row {i} do not end with the continuation {want!r}"
        )
    tail = vals[end - n : end]
    if None in tail:
        raise RemoteLMError(f"llama.cpp: row {i} has no log-prob for a continuation token")
    return float(sum(tail))


def score_llamacpp(
    http: HttpClient,
    model: str,
    rows: Sequence[LlamaCppRow],
    bos: int | None,
    decode: Callable,
    stats: dict[str, int] | None = None,
) -> list[float]:
    """``log p(c | x)`` per row (module docstring). ``stats`` (optional) counts the rows by how
    they were scored: ``forced`` (one request), ``retried`` (more), ``echo`` (the fallback),
    and the completion ``requests`` sent."""
    out: list[float] = []
    checked: set[str] = set()
    for i, row in enumerate(rows):
        if row.ptext not in checked:
            _check_prompt(http, model, row, i)
            checked.add(row.ptext)
        got = _forced(http, model, row, TOP_K, decode)
        value: float | None = None
        requests = 1
        if got is not None and not row.add_eos:
            value = got[0]
        elif got is not None:
            answers = {TOP_K: got}

            def query(k: int, row=row, answers=answers) -> tuple[dict[str, float], str]:
                res = answers.pop(k, None) or _forced(http, model, row, k, decode)
                if res is None:
                    raise _Unidentified
                return res[1] or {}, res[2] or ""

            eos, requests = _eos_logprob(query)
            value = None if eos is None else got[0] + eos
        kind = "echo" if value is None else ("forced" if requests == 1 else "retried")
        if value is None:
            value = _echo(http, model, row, bos, decode, i)
        if stats is not None:
            stats[kind] = stats.get(kind, 0) + 1
            stats["requests"] = stats.get("requests", 0) + requests + (kind == "echo")
        out.append(value)
    return out
