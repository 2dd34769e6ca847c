"""The llama.cpp scoring path's bookkeeping, without a server: identifying end-of-turn in
llama-cpp-python's text-keyed top-k dicts, reading server-sent events, and when a remote sample's
proposal density equals the model's.

The top-k dicts are built exactly as llama-cpp-python 0.3.36 builds them
(``Llama._create_completion``, streamed branch): the vocabulary sorted by ``(logprob, id)``
descending, ``{text(i): logprob for the first k}`` (a repeated text keeps its first position and
its last value), then ``update({text(sampled): logprob(sampled)})``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from smcplan.llm.backends.remote.client import proposal_is_model
from smcplan.llm.backends.remote.http import _events
from smcplan.llm.backends.remote.llamacpp import MAX_REQUESTS, MAX_TOP_K, _eos_logprob


def _server_dict(texts, logprobs, k, sampled):
    ranked = sorted(zip(logprobs, range(len(logprobs)), strict=True), reverse=True)
    top = {texts[i]: float(lp) for lp, i in ranked[:k]}
    top.update({texts[sampled]: float(logprobs[sampled])})
    return top


def _vocab(rng, size, n_empty, n_dup):
    """Random log-probs; ``n_empty`` tokens with text "" (control / partial-byte tokens) and
    ``n_dup`` tokens sharing the text of another token."""
    logits = rng.normal(0, 3, size)
    logprobs = logits - np.logaddexp.reduce(logits)
    texts = [f"t{i}" for i in range(size)]
    ids = rng.permutation(size)
    for i in ids[:n_empty]:
        texts[i] = ""
    for i, j in zip(ids[n_empty : n_empty + n_dup], ids[-n_dup:], strict=False):
        texts[i] = texts[j]
    return texts, logprobs


@pytest.mark.parametrize("seed", range(200))
def test_the_entry_found_is_the_most_likely_empty_text_token(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(50, 4000))
    texts, logprobs = _vocab(rng, size, int(rng.integers(1, 20)), int(rng.integers(0, 40)))
    nonempty = [i for i in range(size) if texts[i]]
    sampled = int(rng.choice(nonempty))
    asked = []

    def query(k):
        asked.append(k)
        return _server_dict(texts, logprobs, k, sampled), texts[sampled]

    value, requests = _eos_logprob(query)
    first_empty = max((lp, i) for i, lp in enumerate(logprobs) if texts[i] == "")
    rank = sum(1 for lp, i in zip(logprobs, range(size)) if (lp, i) > first_empty) + 1
    assert requests == len(asked) <= MAX_REQUESTS
    if value is None:
        # only when the first empty-text token is ranked beyond what was asked for, or the
        # collisions leave too wide a range for the request budget
        assert rank > MAX_TOP_K or requests == MAX_REQUESTS
    else:
        assert value == first_empty[0]  # a copy of one dict value: exact


def test_one_request_when_the_top_k_texts_are_distinct():
    texts = ["a", "", "b", "c"] + [f"x{i}" for i in range(100)]
    logprobs = -np.arange(len(texts), dtype=float)
    value, requests = _eos_logprob(lambda k: (_server_dict(texts, logprobs, k, 0), "a"))
    assert (value, requests) == (-1.0, 1)


def test_a_colliding_empty_text_is_resolved_to_the_first_one():
    # two empty-text tokens in the top 20: the dict keeps the *last* one's value (-7); the
    # answer is the first one's (-1), found at rank 2 by narrowing k
    texts = ["a", "", "b", "c", "d", "e", "f", ""] + [f"x{i}" for i in range(100)]
    logprobs = -np.arange(len(texts), dtype=float)
    top = _server_dict(texts, logprobs, 20, 0)
    assert top[""] == -7.0
    value, requests = _eos_logprob(lambda k: (_server_dict(texts, logprobs, k, 0), "a"))
    assert value == -1.0 and requests > 1


def test_an_empty_sampled_text_is_not_trusted():
    texts = ["", "a", "b"]
    logprobs = np.log([0.5, 0.3, 0.2])
    assert _eos_logprob(lambda k: (_server_dict(texts, logprobs, k, 0), ""))[0] is None


def test_server_sent_events_are_read_until_done():
    body = (
        'data: {"choices": [{"text": "a"}]}\r\n\r\n'
        ": ping - 2026-01-01\r\n\r\n"
        f"data: {json.dumps({'choices': [{'text': 'b'}]})}\r\n\r\n"
        "data: [DONE]\r\n\r\n"
        'data: {"late": 1}\r\n\r\n'
    )
    assert _events(body) == [{"choices": [{"text": "a"}]}, {"choices": [{"text": "b"}]}]


@pytest.mark.parametrize(
    ("constrained", "temperature", "top_p", "same"),
    [
        (False, 1.0, 1.0, True),
        (False, 0.0, 0.5, True),
        (False, 0.7, 1.0, False),
        (False, 1.0, 0.9, False),
        (True, 1.0, 1.0, False),
        (True, 0.0, 1.0, False),
    ],
)
def test_logq_is_logp_only_when_the_proposal_is_the_model(constrained, temperature, top_p, same):
    assert proposal_is_model(constrained, temperature, top_p) is same
