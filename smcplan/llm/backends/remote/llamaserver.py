"""Exact scoring and sampling through llama.cpp's own C++ server, ``llama-server``.

Unlike llama-cpp-python's server (:mod:`smcplan.llm.backends.remote.llamacpp`), ``llama-server``'s
native ``POST /completion`` takes the prompt as **token ids**, constrains output with GBNF grammars
that may name **token ids** (``<[id]>``), and reports per generated token, with ``n_probs >= 1``
and ``post_sampling_probs: false``, the log-probability under the *raw* model: a softmax over the
whole vocabulary computed in C++ (``get_token_probabilities``), whatever the grammar and the
samplers did. Both remove what made llama-cpp-python's server slow and inexact (text-only prompts,
a Python sort of the vocabulary per reported token).

**Scoring** ``log p(c | x) = Σ_j log p(c_j | x, c_<j)`` (plus ``log p(e | x, c)`` for the
end-of-turn token ``e`` when ``add_eos``), one request per row:

* ``prompt`` = the client's ids of ``x``; ``grammar`` = ``root ::= <[c_1]> ... <[c_m]>``, so
  the only path the sampler may take is the client's own tokens of ``c``; ``n_predict`` =
  ``m + [add_eos]``; greedy; ``n_probs: 1``. Entry ``j`` of ``completion_probabilities`` is
  ``log p(c_j | x, c_<j)`` (its ``id`` is checked against ``c_j``);
* for ``e``: once the grammar is complete, llama.cpp's grammar allows only end-of-generation
  tokens, so step ``m + 1`` samples the most likely of them and reports its raw log-prob; when
  that is ``e`` the value is exact. When another end-of-generation token ``g`` wins (SmolLM2's
  ``<|endoftext|>`` after a continuation the model would go on with, where ``p(e)`` can be
  under the top 4,096 of 49,152), the row is asked again with ``logit_bias`` ``[[g, false]]``
  for every such ``g`` seen: the bias acts on the sampler only, the reported log-probs stay the
  raw model's (checked against a full-vocabulary ``n_probs`` answer), so the next answer samples
  ``e`` or another end-of-generation token, and after at most :data:`MAX_BANS` of them the row
  fails with a typed error, never a guess.

``cache_prompt: true`` lets the server's slot reuse the prompt's KV state between rows that share
it, so a row costs its ``m + 1`` decode steps. llama.cpp's logits depend on the batch a
position was evaluated in (Q8 activations per batch; docs/scale.md), so a row's score can move
with what the slot held before, and differs from the in-process ``llamacpp:`` backend's (which
evaluates in canonical chunks and is bit-reproducible) by up to 0.47 nats per action measured.

**Sampling**: ``prompt`` = ids, the output type's grammar (:mod:`smcplan.llm.gbnf`), the
samplers ``temperature`` then ``top_p`` (as transformers orders them; no top-k, min-p or
repetition penalty), ``seed`` per sample, ``n_probs: 1``: the sampled tokens' raw log-probs sum
to ``Sample.logp`` (exact; llama-cpp-python's server could not afford it).

**Batching** (a server started with ``--parallel P`` slots; :func:`server_slots` reads P from
``GET /props``). Decoding a small model on a CPU is bound by reading the weights, so P
sequences decoded together cost little more than one:

* the ``n`` samples of one prompt are **one request** with ``n_cmpl = m`` (m = min(n, P) per
  request): the server evaluates the prompt once in one slot, copies its KV state to m - 1
  other slots and decodes the m sequences in one batch.  The server seeds child ``j`` of a
  request with ``seed + j``, which is the seed the one-by-one loop gives sample ``j``, so a
  sample's seed does not depend on P;
* the prompts of one call (the N particles, the rows of a batch) are sent **concurrently**, as
  many at a time as free slots allow (:func:`concurrency`); each keeps its own seed, so which
  request runs first changes nothing but the batch it is decoded in;
* scoring rows that share a prompt stay one after another (the slot that holds the prompt's KV
  state serves the next row, so only the continuation is evaluated); rows with different
  prompts are scored concurrently.

What batching can change: llama.cpp's CPU kernels round differently for a batch of several
sequences than for one, so a log-prob can move in its last digits and, rarely, a sampled token
with it (``bench/agent_step.py --engine llama-server`` compares P = 1 with batched on the same
seeds).  With P = 1 every request is sent one by one, as before.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from smcplan.llm.backends.remote.http import HttpClient, RemoteLMError, RemoteRequestError

__all__ = [
    "score_llama_server",
    "sample_llama_server",
    "sample_many_llama_server",
    "server_slots",
    "concurrency",
    "in_parallel",
    "token_grammar",
    "MAX_BANS",
]

T = TypeVar("T")
R = TypeVar("R")

#: the most end-of-generation tokens banned (``logit_bias``) while looking for end-of-turn
MAX_BANS = 16


def server_slots(http: HttpClient) -> int:
    """The server's slot count P (``total_slots`` of ``GET /props``; 1 when it does not say)."""
    try:
        props = http.get("/props", root=True)
    except RemoteRequestError:
        return 1
    value = props.get("total_slots") if isinstance(props, dict) else None
    return int(value) if isinstance(value, int) and value >= 1 else 1


def concurrency(slots: int, per_request: int = 1) -> int:
    """How many requests to have in flight at once: ``slots // per_request`` (at least 1), each
    request holding ``per_request`` slots (its ``n_cmpl``)."""
    return max(1, int(slots) // max(1, int(per_request)))


def in_parallel(fn: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """``[fn(x) for x in items]``, with up to ``workers`` calls in flight (results in order; the
    first exception is raised after the calls in flight have ended)."""
    if workers <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(fn, items))


def token_grammar(ids: Sequence[int]) -> str:
    """A GBNF grammar whose only sentence is the token sequence ``ids`` (``<[id]>`` literals)."""
    body = " ".join(f"<[{int(t)}]>" for t in ids)
    return f"root ::= {body}" if body else 'root ::= ""'


def _entries(res: dict[str, Any]) -> list[dict[str, Any]]:
    probs = res.get("completion_probabilities")
    if not isinstance(probs, list):
        raise RemoteLMError(
            "llama-server: the answer has no completion_probabilities; is this llama.cpp's "
            f"server with n_probs support? (keys: {sorted(res)[:12]})"
        )
    return probs


def _forced(
    http: HttpClient, prompt: list[int], cont: list[int], add_eos: bool, banned: Sequence[int]
):
    body = {
        "prompt": prompt,
        "n_predict": len(cont) + int(add_eos),
        "grammar": token_grammar(cont),
        "temperature": 0.0,
        "samplers": ["temperature"],
        "n_probs": 1,
        "post_sampling_probs": False,
        "cache_prompt": True,
        "stream": False,
    }
    if banned:
        body["logit_bias"] = [[int(t), False] for t in banned]
    return _entries(http.post("/completion", body, root=True))


def _score_row(
    http: HttpClient, prompt: list[int], cont: list[int], add_eos: bool, eos: int, row: int
) -> float:
    m = len(cont)
    if m == 0 and not add_eos:
        return 0.0
    banned: list[int] = []
    while True:
        entries = _entries_checked(_forced(http, prompt, cont, add_eos, banned), cont, add_eos, row)
        score = float(sum(float(e["logprob"]) for e in entries[:m]))
        if not add_eos:
            return score
        last = entries[m]
        if int(last["id"]) == eos:
            return score + float(last["logprob"])
        if int(last["id"]) in banned or len(banned) >= MAX_BANS:
            raise RemoteLMError(
                f"llama-server: row {row}: end-of-turn token {eos} was not sampled after the "
                f"continuation with {len(banned)} other end-of-generation token(s) banned "
                f"({banned}; then {last['id']}), so its log-prob cannot be read"
            )
        banned.append(int(last["id"]))


def _entries_checked(entries, cont: list[int], add_eos: bool, row: int):
    m = len(cont)
    got = [int(e["id"]) for e in entries[:m]]
    if got != list(cont) or len(entries) < m + int(add_eos):
        raise RemoteLMError(
            f"llama-server: row {row}: the forced tokens came back as {got} (+{len(entries) - m} "
            f"more), not the continuation's {list(cont)}; does this server build support "
            "token-id grammars (<[id]>)?"
        )
    return entries


def score_llama_server(
    http: HttpClient,
    prompt_ids: Sequence[list[int]],
    cont_ids: Sequence[list[int]],
    add_eos: bool,
    eos_token_id: int,
    stats: dict[str, int] | None = None,
    slots: int = 1,
) -> list[float]:
    """``log p(cont | prompt)`` per row (module docstring); ``cont_ids`` end with ``eos_token_id``
    when ``add_eos``. ``stats`` (optional) counts ``rows``. ``slots``: the server's P; rows that
    share a prompt are scored one after another, groups of different prompts concurrently."""
    bodies = []
    for i, c in enumerate(cont_ids):
        if add_eos and (not c or int(c[-1]) != eos_token_id):
            raise ValueError(f"row {i}: add_eos=True but the continuation does not end with eos")
        bodies.append(list(c[:-1]) if add_eos else list(c))
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, p in enumerate(prompt_ids):
        groups.setdefault(tuple(p), []).append(i)

    def score_group(rows: list[int]) -> list[tuple[int, float]]:
        return [
            (i, _score_row(http, list(prompt_ids[i]), bodies[i], add_eos, eos_token_id, i))
            for i in rows
        ]

    out = [0.0] * len(bodies)
    for done in in_parallel(score_group, list(groups.values()), concurrency(slots)):
        for i, value in done:
            out[i] = value
    if stats is not None:
        stats["rows"] = stats.get("rows", 0) + len(bodies)
    return out


def _sample_result(res: dict[str, Any]) -> tuple[str, bool, list[float], list[int]]:
    """``(text, finished, per-token raw log-probs, sampled token ids)`` of one completion (the
    ids of the generated tokens, end-of-generation excluded, as the server sampled them: a
    re-encoding of the text may tokenize it otherwise)."""
    finished = res.get("stop_type") == "eos" or (
        res.get("stop_type") == "word" and not res.get("truncated", False)
    )
    entries = _entries(res)
    lps = [float(e["logprob"]) for e in entries]
    ids = [int(e["id"]) for e in entries]
    if finished and res.get("stop_type") == "eos" and ids:
        ids = ids[:-1]  # the end-of-generation token itself (its log-prob stays in lps)
    return str(res.get("content", "")), bool(finished), lps, ids


def sample_llama_server(
    http: HttpClient,
    prompt: list[int],
    fields: dict[str, Any],
    n: int,
    seed: int,
    slots: int = 1,
) -> list[tuple[str, bool, list[float], list[int]]]:
    """``n`` samples ``(text, finished, per-token raw log-probs, token ids)`` of ``prompt`` (module
    docstring); ``fields``: ``max_tokens``, ``temperature``, ``top_p`` and an optional
    ``grammar``.  Sample ``k`` is drawn with seed ``(seed + k) mod 2^31``; with ``slots`` P > 1
    up to P of them are one ``n_cmpl`` request (decoded as one batch)."""
    temperature = float(fields["temperature"])
    body: dict[str, Any] = {
        "prompt": prompt,
        "n_predict": int(fields["max_tokens"]),
        "temperature": temperature,
        "top_p": float(fields["top_p"]),
        "samplers": ["temperature"] if temperature == 0 else ["temperature", "top_p"],
        "n_probs": 1,
        "post_sampling_probs": False,
        "cache_prompt": True,
        "stream": False,
    }
    if fields.get("grammar"):
        body["grammar"] = fields["grammar"]
    out: list[tuple[str, bool, list[float], list[int]]] = []
    k = 0
    while k < n:
        first = (seed + k) % 2**31
        # one request draws seeds first, first + 1, ...: never across the 2^31 wrap
        m = max(1, min(int(slots), n - k, 2**31 - first))
        request = dict(body, seed=first)
        if m > 1:
            request["n_cmpl"] = m
        res = http.post("/completion", request, root=True)
        results = res if isinstance(res, list) else [res]
        if len(results) != m:
            raise RemoteLMError(
                f"llama-server: asked for {m} completions (n_cmpl) and got {len(results)}; "
                "this server build predates n_cmpl: start it with --parallel 1"
            )
        results = sorted(results, key=lambda r: int(r.get("index", 0)))
        for j, r in enumerate(results):
            used = (r.get("generation_settings") or {}).get("seed")
            if used is not None and int(used) != first + j:
                raise RemoteLMError(
                    f"llama-server: completion {j} of a request seeded {first} was drawn with "
                    f"seed {used}, not {first + j}; the samples would not be reproducible"
                )
        out.extend(_sample_result(r) for r in results)
        k += m
    return out


def sample_many_llama_server(
    http: HttpClient,
    requests: Sequence[tuple[list[int], dict[str, Any], int]],
    n: int,
    slots: int = 1,
) -> list[list[tuple[str, bool, list[float], list[int]]]]:
    """:func:`sample_llama_server` for each ``(prompt ids, fields, seed)`` of ``requests``,
    ``n`` samples each, sent concurrently so that up to ``slots`` sequences decode together."""
    per_request = max(1, min(int(slots), n))

    def one(req: tuple[list[int], dict[str, Any], int]):
        prompt, fields, seed = req
        return sample_llama_server(http, prompt, fields, n, seed, slots)

    return in_parallel(one, list(requests), concurrency(slots, per_request))
