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

FIXTURE_OK = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def tiny():
    from smcplan.llm.testing import tiny_model

    return tiny_model(seed=0)


def output_types():
    from outlines.types import Choice, Regex

    return st.sampled_from([None, str, ["a", "b"], [], Choice([]), Choice(["yes", "no"]), Regex("[0-9]{1,3}"),
                            Regex("("), 3, {"type": "object"}, {"nonsense": True}])


prompts = st.one_of(
    st.lists(st.text(max_size=20), min_size=0, max_size=2),
    st.sampled_from([["hi"], "hi", None, [3], [[{"role": "user"}]], [[{"role": "user", "content": "hi"}]], [b"x"]]),
)


@FIXTURE_OK
@given(p=prompts, out=output_types(), n=st.one_of(st.integers(1, 2), bad_scalar),
       temperature=st.one_of(st.sampled_from([0.0, 0.7, 1.0]), bad_scalar),
       max_new_tokens=st.one_of(st.none(), st.integers(1, 4), bad_scalar))
def test_generate(tiny, p, out, n, temperature, max_new_tokens):
    ok, res = call(tiny.sample, p, out, n=n, temperature=temperature, max_new_tokens=max_new_tokens, seed=0)
    if ok:
        for row in res:
            for sample in row:
                assert not math.isnan(sample.logq) and not math.isnan(sample.logp)


@FIXTURE_OK
@given(p=prompts, c=st.one_of(st.lists(st.text(max_size=10), max_size=2), bad_scalar, st.just([None])))
def test_logprob(tiny, p, c):
    ok, res = call(tiny.logprob, p, c)
    if ok:
        assert not np.isnan(np.asarray(res)).any()


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
    with pytest.raises(ContextOverflowError, match=rf"tokens \+ 1 to generate, more than the context window .*\({window} tokens\); .*truncation='left'"):
        tiny.generate([long_prompt], ["x"])
    with pytest.raises(ContextOverflowError, match=r"\+ 2 to score"):
        tiny.logprob([long_prompt], ["b c"])
    assert tiny.generate([long_prompt], ["x", "y"], truncation="left")[0] in ("x", "y")
    score = tiny.logprob([long_prompt], ["b"], truncation="left")
    assert np.isfinite(score).all()
