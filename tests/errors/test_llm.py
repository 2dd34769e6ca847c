"""Garbage into the language model (tiny random-weight model): valid output or a typed error."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcplan.errors import ArgumentTypeError, InvalidArgumentError

from ._garbage import NAN, bad_scalar, call

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

FIXTURE_OK = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def tiny():
    from smcplan.llm.testing import tiny_model

    return tiny_model(seed=0)


bad_prompts = st.one_of(
    st.sampled_from(["hi", None, [3], [[{"role": "user"}]], [b"x"], [["hi"]], 7]),
    bad_scalar,
)
good_prompts = st.one_of(
    st.lists(st.text(max_size=20), min_size=0, max_size=2),
    st.just([[{"role": "user", "content": "hi"}]]),
)


@FIXTURE_OK
@given(
    data=st.data(),
    which=st.sampled_from(
        ["nothing", "prompts", "output_type", "n", "temperature", "max_new_tokens"]
    ),
)
def test_generate(tiny, data, which):
    from outlines.types import Choice, Regex

    good = {
        "prompts": good_prompts,
        "output_type": st.sampled_from(
            [None, ["a", "b"], Choice(["yes", "no"]), Regex("[0-9]{1,3}")]
        ),
        "n": st.integers(1, 2),
        "temperature": st.sampled_from([0.0, 0.7, 1.0]),
        "max_new_tokens": st.sampled_from([None, 8]),
    }
    bad = {
        "prompts": bad_prompts,
        "output_type": st.one_of(
            st.sampled_from([[], Choice([]), Regex("("), 3, {"nonsense": True}]), bad_scalar
        ),
        "n": bad_scalar.filter(lambda x: not (type(x) is int and 1 <= x <= 10**6)),
        "temperature": bad_scalar.filter(
            lambda x: not (type(x) in (int, float) and 0 <= x < 1e300)
        ),
        "max_new_tokens": bad_scalar.filter(lambda x: not (type(x) is int and x >= 1)),
    }
    args = {k: data.draw(bad[k] if k == which else good[k], label=k) for k in good}
    prompts = args.pop("prompts")
    ok, res = call(tiny.sample, prompts, args.pop("output_type"), seed=0, **args)
    if which != "nothing":
        # with no prompts there is nothing to decode: [] is a valid answer too
        assert not ok or (prompts == [] and res == []), f"garbage {which} accepted"
        return
    assert ok and len(res) == len(prompts)
    for row in res:
        for sample in row:
            assert not math.isnan(sample.logq) and not math.isnan(sample.logp)


@FIXTURE_OK
@given(
    p=st.one_of(good_prompts, bad_prompts),
    c=st.one_of(st.lists(st.text(max_size=10), max_size=2), bad_scalar, st.just([None])),
)
def test_logprob(tiny, p, c):
    ok, res = call(tiny.logprob, p, c)
    if ok:
        assert res.shape == (len(p),) and not np.isnan(res).any()


def test_named_bad_arguments(tiny):
    from outlines.types import Choice

    with pytest.raises(InvalidArgumentError, match=r"Choice\(\[\]\) has no options"):
        tiny.generate(["pick"], Choice([]))
    with pytest.raises(InvalidArgumentError, match="temperature must be a finite number; got nan"):
        tiny.generate(["pick"], ["a"], temperature=NAN)
    with pytest.raises(InvalidArgumentError, match="max_new_tokens must be >= 1; got -1"):
        tiny.generate(["pick"], max_new_tokens=-1)
    with pytest.raises(ArgumentTypeError, match=r"n must be an integer; got 1\.5"):
        tiny.generate(["pick"], n=1.5)
    with pytest.raises(InvalidArgumentError, match="truncation must be one of"):
        tiny.generate(["pick"], truncation="middle")


def test_a_prompt_past_the_window_is_refused_unless_truncation_is_asked_for(tiny):
    from smcplan.llm.inputs import ContextOverflowError, window_of

    window = window_of(tiny.model)
    long_prompt = "a " * (window + 50)
    with pytest.raises(
        ContextOverflowError,
        match=rf"tokens \+ 1 to generate, more than the context window .*\({window} tokens\); "
        r".*truncation='left'",
    ):
        tiny.generate([long_prompt], ["x"])
    with pytest.raises(ContextOverflowError, match=r"\+ 2 to score"):
        tiny.logprob([long_prompt], ["b c"])
    assert tiny.generate([long_prompt], ["x", "y"], truncation="left")[0] in ("x", "y")
    score = tiny.logprob([long_prompt], ["b"], truncation="left")
    assert np.isfinite(score).all()


@pytest.mark.slow
def test_a_9k_token_prompt_on_smollm2_is_refused_before_any_forward_pass():
    from smcplan.llm import load_model
    from smcplan.llm.inputs import ContextOverflowError

    smol = load_model()
    forwards: list[int] = []
    hook = smol.model.register_forward_pre_hook(lambda *_: forwards.append(1))
    prompt = " ".join(["apple"] * 9000)
    try:
        assert len(smol.encode_prompt(prompt)) > 9000
        with pytest.raises(ContextOverflowError, match=r"context window of .* \(8192 tokens\)"):
            smol.logprob([prompt], ["yes"])
        with pytest.raises(ContextOverflowError, match="8192 tokens"):
            smol.generate([prompt], ["yes", "no"])
    finally:
        hook.remove()
    assert forwards == []
