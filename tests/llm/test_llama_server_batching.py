"""Batched decoding on llama.cpp's ``llama-server`` with P slots (``--parallel P``): the n samples
of a prompt as one ``n_cmpl`` request, the prompts of a call and the scored rows concurrently
(:mod:`smcplan.llm.backends.remote.llamaserver`, "Batching").

Slow (starts a 5-slot server on the packaged SmolLM2 GGUF). Skipped with the fix in the reason
when the executable is absent (``make setup-scale`` builds it).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from smcplan.errors import InvalidArgumentError
from smcplan.llm.backends.llamacpp_server import llama_server_binary, serve_llama_server
from smcplan.llm.backends.remote.llamaserver import concurrency, in_parallel
from tests.llm.llamacpp_rows import OBSERVATIONS, rows

#: |batched - one-by-one| of a summed action log-prob on the same server, nats: the same
#: weights and token ids; only the slot, and so the batches the prompt was evaluated in, differ
#: (llama.cpp rounds per batch shape). The bound is that of the server's own scores against
#: in-process llama.cpp (SAME_ENGINE_TOL, whose note gives the measurement); SLOW: the same
#: marks (slow; skipped without the executable).
from tests.llm.test_remote_llama_server import SAME_ENGINE_TOL  # noqa: E402
from tests.llm.test_remote_llama_server import pytestmark as SLOW  # noqa: E402

P = 5


# ---------------------------------------------------------------- the pure parts (no server)
@pytest.mark.parametrize(
    ("slots", "per_request", "expected"),
    [(1, 1, 1), (5, 1, 5), (5, 5, 1), (10, 5, 2), (4, 5, 1), (7, 2, 3)],
)
def test_requests_in_flight_fill_the_slots(slots, per_request, expected):
    assert concurrency(slots, per_request) == expected


def test_in_parallel_keeps_the_order_and_runs_calls_together():
    both_in = threading.Barrier(2, timeout=10)

    def meet(x: int) -> int:
        both_in.wait()  # returns only when two calls are in flight at once
        return x * x

    assert in_parallel(meet, [3, 1, 2, 4], workers=2) == [9, 1, 4, 16]


def test_in_parallel_raises_the_first_error():
    def fail_on_two(x: int) -> int:
        if x == 2:
            raise KeyError("two")
        return x

    with pytest.raises(KeyError, match="two"):
        in_parallel(fail_on_two, [1, 2, 3], workers=3)


def test_a_bad_slot_count_is_refused_before_any_request():
    from smcplan.llm.backends.remote.client import RemoteLanguageModel

    with pytest.raises(InvalidArgumentError, match="parallel must be >= 1; got 0"):
        with serve_llama_server(parallel=0):
            pass
    with pytest.raises(InvalidArgumentError, match="slots must be >= 1; got 0"):
        RemoteLanguageModel("http://127.0.0.1:9/v1", "smollm2-135m", slots=0)


# ---------------------------------------------------------------- a 5-slot server
@pytest.fixture(scope="module")
def server():
    if llama_server_binary() is None:
        pytest.skip("no llama-server executable (make setup-scale builds it into .venv/bin)")
    with serve_llama_server("smollm2-135m", threads=1, parallel=P) as url:
        yield url


@pytest.fixture(scope="module")
def batched(server):
    from smcplan.llm import load_model

    return load_model(f"openai:{server}#smollm2-135m", timeout=300)


@pytest.fixture(scope="module")
def one_by_one(server):
    from smcplan.llm import load_model

    return load_model(f"openai:{server}#smollm2-135m", timeout=300, slots=1)


@pytest.mark.usefixtures("server")
class TestOnAFiveSlotServer:
    pytestmark = SLOW

    def test_the_client_reads_the_slot_count_from_the_server(self, batched, one_by_one):
        assert batched.slots == P and one_by_one.slots == 1

    def test_more_samples_than_slots_come_back_all_with_their_own_seeds(self, server):
        # n = 7 on 5 slots: a request of 5 (n_cmpl) and one of 2; sample_llama_server checks
        # that the server drew completion j of a request seeded s with seed s + j
        from smcplan.llm.backends.remote.http import HttpClient
        from smcplan.llm.backends.remote.llamaserver import sample_llama_server

        http = HttpClient(server, timeout=300)
        ids = http.post("/tokenize", {"content": "Name a room:"}, root=True)["tokens"]
        fields = {"max_tokens": 6, "temperature": 1.0, "top_p": 1.0}
        got = sample_llama_server(http, ids, fields, 7, seed=11, slots=P)
        assert len(got) == 7
        assert all(len(lps) >= len(ids) >= 1 for _, _, lps, ids in got)
        assert len({text for text, *_ in got}) > 1  # 7 seeds, not one sample copied

    def test_batched_samples_are_reproducible_and_score_as_their_own_tokens(self, batched):
        # llama.cpp's logits depend on how the prompt was split into batches, i.e. on what the
        # slot held before (docs/scale.md, "Determinism"): a first call puts the prompt in a
        # slot; from then on the same seeds give the same samples
        prompt = [[{"role": "user", "content": "Name one room of a house."}]]
        settings = dict(n=P, temperature=1.0, top_p=1.0, max_new_tokens=8, seed=3)
        batched.sample(prompt, **settings)
        a, b = batched.sample(prompt, **settings), batched.sample(prompt, **settings)
        assert [s.text for s in a[0]] == [s.text for s in b[0]]
        from smcplan.llm.backends.remote.llamaserver import score_llama_server

        ids = batched.encode_prompt(prompt[0])
        eos = batched.eos_token_id
        for s in a[0]:  # q = p at T = 1, top_p = 1, and logp is the raw model's
            assert np.isfinite(s.logp) and s.logq == s.logp
            # the sampled token ids themselves (a re-encoding of the text may differ)
            (score,) = score_llama_server(batched.http, [ids], [list(s.token_ids)], s.finished, eos)
            assert score == pytest.approx(s.logp, abs=SAME_ENGINE_TOL), (s.text, score, s.logp)

    def test_one_batch_of_n_samples_equals_n_samples_one_by_one(self, batched, one_by_one):
        # each slot has its own KV stream, and the children of an n_cmpl request start from a
        # copy of the parent's evaluated prompt: the same logits as one request at a time, so
        # the same seeds give the same samples (measured on this build; docs/scale.md)
        prompt = [[{"role": "user", "content": "Name a kitchen object."}]]
        settings = dict(n=P, temperature=1.0, top_p=1.0, max_new_tokens=8, seed=21)
        one_by_one.sample(prompt, **settings)
        slow = one_by_one.sample(prompt, **settings)
        fast = batched.sample(prompt, **settings)
        assert [s.text for s in fast[0]] == [s.text for s in slow[0]]

    def test_particles_prompts_sample_concurrently_with_their_own_seeds(self, batched):
        # N = 4 identical prompts (four particles): each row gets its own seed, so they differ
        prompt = [{"role": "user", "content": "Say something about a coin."}]
        batched.sample([prompt] * 4, temperature=1.0, max_new_tokens=10, seed=5)  # cache it
        out = batched.sample([prompt] * 4, temperature=1.0, max_new_tokens=10, seed=5)
        assert [len(row) for row in out] == [1, 1, 1, 1]
        again = batched.sample([prompt] * 4, temperature=1.0, max_new_tokens=10, seed=5)
        assert [r[0].text for r in out] == [r[0].text for r in again]
        assert len({r[0].text for r in out}) > 1

    def test_concurrent_scores_equal_one_by_one_scores(self, batched, one_by_one):
        prompts, conts = rows()
        conts = [" " + c for c in conts]
        for add_eos in (True, False):
            fast = batched.logprob(prompts, conts, add_eos=add_eos, assistant_prefix="Action:")
            slow = one_by_one.logprob(prompts, conts, add_eos=add_eos, assistant_prefix="Action:")
            print(f"add_eos={add_eos}: max |batched - one by one| = {np.max(np.abs(fast - slow))}")
            assert np.max(np.abs(fast - slow)) < SAME_ENGINE_TOL

    def test_the_reflection_votes_are_one_batch_of_five(self, batched):
        from smcplan.llm.roles import Reflection

        (verdict,) = Reflection(batched, n=P)(
            ["find the coin"], [OBSERVATIONS[0]], ["take coin"], seed=0
        )
        assert len(verdict.votes) == P
