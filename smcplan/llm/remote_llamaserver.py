"""Exact scoring and sampling through llama.cpp's own C++ server, ``llama-server``.

Unlike llama-cpp-python's server (:mod:`smcplan.llm.remote_llamacpp`), ``llama-server``'s native
``POST /completion`` takes the prompt as **token ids**, constrains output with GBNF grammars
that may name **token ids** (``<[id]>``), and reports per generated token, with
``n_probs >= 1`` and ``post_sampling_probs: false``, the log-probability under the *raw* model:
a softmax over the whole vocabulary computed in C++ (``get_token_probabilities``), whatever the
grammar and the samplers did. Both remove what made llama-cpp-python's server slow and inexact
(text-only prompts, a Python sort of the vocabulary per reported token).

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

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smcplan.llm.remote_http import HttpClient, RemoteLMError

__all__ = ["score_llama_server", "sample_llama_server", "token_grammar", "MAX_BANS"]

#: the most end-of-generation tokens banned (``logit_bias``) while looking for end-of-turn
MAX_BANS = 16


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
) -> list[float]:
    """``log p(cont | prompt)`` per row (module docstring); ``cont_ids`` end with ``eos_token_id``
    when ``add_eos``. ``stats`` (optional) counts ``requests`` and ``rows``."""
    out = []
    for i, (p, c) in enumerate(zip(prompt_ids, cont_ids, strict=True)):
        body = list(c[:-1]) if add_eos else list(c)
        if add_eos and (not c or int(c[-1]) != eos_token_id):
            raise ValueError(f"row {i}: add_eos=True but the continuation does not end with eos")
        out.append(_score_row(http, list(p), body, add_eos, eos_token_id, i))
        if stats is not None:
            stats["rows"] = stats.get("rows", 0) + 1
    return out


def sample_llama_server(
    http: HttpClient,
    prompt: list[int],
    fields: dict[str, Any],
    n: int,
    seed: int,
) -> list[tuple[str, bool, list[float]]]:
    """``n`` samples ``(text, finished, per-token raw log-probs)`` of ``prompt`` (module
    docstring); ``fields``: ``max_tokens``, ``temperature``, ``top_p`` and an optional
    ``grammar``."""
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
    out = []
    for k in range(n):
        body["seed"] = (seed + k) % 2**31
        res = http.post("/completion", body, root=True)
        finished = res.get("stop_type") == "eos" or (
            res.get("stop_type") == "word" and not res.get("truncated", False)
        )
        lps = [float(e["logprob"]) for e in _entries(res)]
        out.append((str(res.get("content", "")), bool(finished), lps))
    return out
