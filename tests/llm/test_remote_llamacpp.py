"""A real serving engine: llama-cpp-python's OpenAI-compatible server with the packaged SmolLM2
GGUF on a loopback port, driven through ``load_model("openai:<url>#smollm2-135m")``.

Slow (starts the server and loads SmolLM2 in-process for the comparison). Skipped only when
llama-cpp-python is not installed (``pip install 'smcplan[scale]'``; ``make test`` installs it).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from smcplan.llm.backends.llamacpp_server import llamacpp_available
from tests.llm.llamacpp_rows import (
    ACTIONS,
    OBSERVATIONS,
    check_constrained_outputs,
    check_ranking,
    play_react,
    rows,
)
from tests.tolerance import same_logits_tol

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not llamacpp_available(),
        reason="llama-cpp-python[server] is not installed (pip install 'smcplan[scale]')",
    ),
]


@pytest.fixture(scope="module")
def server():
    from smcplan.llm.backends.llamacpp_server import serve_llamacpp

    with serve_llamacpp("smollm2-135m", threads=1) as url:
        yield url


@pytest.fixture(scope="module")
def remote(server):
    from smcplan.llm import load_model

    return load_model(f"openai:{server}#smollm2-135m", timeout=300)


@pytest.fixture(scope="module")
def local():
    from smcplan.llm import load_model

    return load_model(threads=1)


def test_the_server_is_detected_as_llamacpp_and_serves_the_registry_name(remote):
    assert remote.engine == "llamacpp"
    assert remote.tokenizer.convert_ids_to_tokens(remote.bos_token_id) == "<|im_start|>"


def test_remote_logprob_ranks_admissible_actions_like_the_local_model(remote, local):
    # the prefix ends before the space, as in the roles' prompts
    prompts, conts = rows()
    conts = [" " + c for c in conts]
    before = dict(remote.scoring_paths)
    r = remote.logprob(prompts, conts, add_eos=True, assistant_prefix="Action:")
    l_ = local.logprob(prompts, conts, add_eos=True, assistant_prefix="Action:")
    # measured: 11 rows in one request, "look around" (end-of-turn beyond the top 200) in 6
    assert remote.scoring_paths.get("echo", 0) == before.get("echo", 0), remote.scoring_paths
    check_ranking(r, l_)


def test_remote_constrained_outputs_parse(remote):
    check_constrained_outputs(remote, exact_logp=False)  # not asked of llama-cpp-python


def test_remote_roles_keep_their_guarantees(remote):
    from smcplan.llm.roles import ActionProposal, Critic, Reflection, TripletExtractor

    triplets = TripletExtractor(remote, temperature=1.0)(OBSERVATIONS[:2], ["look", None], seed=0)
    assert len(triplets) == 2 and all(isinstance(t, list) for t in triplets)
    props = ActionProposal(remote, temperature=0.0, think=True)(
        ["find the coin"] * 2, [[], []], OBSERVATIONS[:2], ACTIONS[:2], seed=0
    )
    assert [p.action in acts for p, acts in zip(props, ACTIONS[:2], strict=True)] == [True, True]
    critique = Critic(remote)(
        ["find the coin"], [OBSERVATIONS[0]], ["The coin is here."], ["take coin"], seed=0
    )
    assert len(critique) == 1
    verdicts = Reflection(remote)(["find the coin"], [OBSERVATIONS[0]], ["take coin"], seed=0)
    assert len(verdicts) == 1


def test_react_runs_three_steps_on_twx_coin_through_the_server(remote):
    # every admissible action is scored by forced decoding (one request per action, a few more
    # when end-of-turn is not among the top 20 tokens): ~20 s per step on one core (docs/scale.md)
    paths = dict(remote.scoring_paths)
    t0 = time.monotonic()
    play_react(remote, steps=3)
    print(f"3 ReAct steps through the server: {time.monotonic() - t0:.1f} s", remote.scoring_paths)
    assert remote.scoring_paths.get("echo", 0) == paths.get("echo", 0)  # no slow fallback


def test_forced_scores_equal_the_servers_own_echo_scores(remote):
    # The echo path is exact for prompts that begin with BOS (ChatML's <|im_start|>) but costs a
    # vocabulary sort per prompt token. Sent right after a row's forced request, it re-evaluates
    # only end-of-turn and reads the very logits rows the forced request computed, so the two
    # must agree to float precision: this checks which entries the forced path reads, the
    # end-of-turn one above all. (Evaluated in one batch instead of token by token, the same
    # tokens get llama.cpp logits up to ~0.25 nats apart: another kernel path.)
    # Rows: end-of-turn in the top 20 (0, 1), and beyond the top 200 ("look around", 6).
    from smcplan.llm.backends.remote.llamacpp import LlamaCppRow, _echo, score_llamacpp

    prompts, conts = rows()
    stats: dict[str, int] = {}
    for i in (0, 1, 6):
        p = remote.format_prompt(prompts[i], "Action:")
        ids = remote.encode_prompt(prompts[i], "Action:")
        c = " " + conts[i]
        row = LlamaCppRow(p, ids, c, remote.encode_continuation(c), True, "<|im_end|>")
        args = (remote.http, remote.served_model)
        (forced,) = score_llamacpp(*args, [row], remote.bos_token_id, remote._decode, stats)
        echo = _echo(*args, row, remote.bos_token_id, remote._decode, i)
        # the same logits rows read twice (end-of-turn included); |logit| < 30 for SmolLM2
        tol = same_logits_tol(len(row.cont) + 1, 49152, 30.0)
        assert forced == pytest.approx(echo, abs=tol), (i, forced, echo)
    assert stats.get("echo", 0) == 0 and stats.get("retried", 0) >= 1, stats


def test_the_context_window_is_checked_and_left_truncation_works_remotely(server):
    from smcplan.llm import load_model
    from smcplan.llm.inputs import ContextOverflowError

    short = load_model(f"openai:{server}#smollm2-135m", timeout=300, window=64)
    long = ["The coin is on the table in the kitchen, next to a red apple and a knife. " * 6]
    with pytest.raises(ContextOverflowError, match="truncation='left'"):
        short.sample(long, max_new_tokens=4, seed=0)
    with pytest.raises(ContextOverflowError, match="context window"):
        short.logprob(long, [" take coin"])
    ((sample,),) = short.sample(long, max_new_tokens=4, seed=0, truncation="left")
    assert 1 <= sample.num_tokens <= 4
    (score,) = short.logprob(long, [" take coin"], add_eos=True, truncation="left")
    assert np.isfinite(score) and score < 0
    with pytest.raises(ValueError, match="window"):
        load_model(f"openai:{server}#smollm2-135m", window=1)
