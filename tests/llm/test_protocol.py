"""Every backend satisfies the :class:`smcplan.llm.LanguageModel` protocol.

Two checks per backend: a real instance passes ``isinstance(lm, LanguageModel)`` (every member of
the protocol exists on it), and each protocol method's parameters are accepted by the backend's
method under the same name, in the same position (or by keyword where the protocol makes it
keyword-only), with the same default; a parameter the backend adds must have a default. The
checker itself is tested on broken stand-ins (a missing method, a renamed, moved or re-defaulted
parameter, a ``**kwargs`` catch-all), so the check cannot pass by checking nothing.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from smcplan.llm import LanguageModel, RemoteLanguageModel, TransformersLanguageModel
from smcplan.llm.backends.llamacpp import LlamaCppLanguageModel
from smcplan.llm.backends.llamacpp_server import llamacpp_available

BACKENDS = [TransformersLanguageModel, RemoteLanguageModel, LlamaCppLanguageModel]
METHODS = sorted(
    name for name, v in vars(LanguageModel).items() if inspect.isfunction(v) and name[0] != "_"
)
ATTRIBUTES = sorted(LanguageModel.__annotations__)
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VAR = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def mismatches(cls: type) -> list[str]:
    """How ``cls``'s methods fail to accept the protocol's parameters (empty: they all do)."""
    problems = []
    for name in METHODS:
        impl = getattr(cls, name, None)
        if not callable(impl):
            problems.append(f"{cls.__name__}.{name}: missing")
            continue
        want = list(inspect.signature(getattr(LanguageModel, name)).parameters.values())[1:]
        have_all = list(inspect.signature(impl).parameters.values())[1:]  # without self
        have = {p.name: p for p in have_all}
        positions = [p.name for p in have_all if p.kind in _POSITIONAL]
        for i, p in enumerate(want):
            q = have.get(p.name)
            where = f"{cls.__name__}.{name}({p.name})"
            if q is None or q.kind in _VAR:
                problems.append(f"{where}: no such parameter")
                continue
            if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD:
                if q.kind is not p.kind or positions.index(q.name) != i:
                    problems.append(f"{where}: not positional number {i} (or not by keyword)")
            elif q.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, p.kind):
                problems.append(f"{where}: cannot be passed by keyword")
            if q.default != p.default:
                problems.append(f"{where}: default {q.default!r}, protocol {p.default!r}")
        names = {p.name for p in want}
        for q in have_all:
            if q.name not in names and q.kind not in _VAR and q.default is q.empty:
                problems.append(f"{cls.__name__}.{name}({q.name}): required, not in protocol")
    return problems


def test_the_protocol_states_the_shared_contract():
    assert METHODS == [
        "derive_seed",
        "encode_continuation",
        "encode_prompt",
        "format_prompt",
        "generate",
        "logprob",
        "sample",
    ]
    assert ATTRIBUTES == ["name", "tokenizer", "usage"]
    for name in METHODS:
        assert getattr(LanguageModel, name).__doc__.strip(), name


@pytest.mark.parametrize("cls", BACKENDS, ids=lambda c: c.__name__)
def test_every_backend_accepts_the_protocols_parameters(cls):
    assert mismatches(cls) == []


# --------------------------------------------------------------------------- the checker


class _Complete:
    """A stand-in with the protocol's exact signatures (the checker accepts it)."""

    name, tokenizer, usage = "stand-in", None, None

    def format_prompt(self, prompt, assistant_prefix=""):
        return ""

    def encode_prompt(self, prompt, assistant_prefix=""):
        return []

    def encode_continuation(self, text, add_eos=False):
        return []

    def derive_seed(self, seed):
        return 0

    def sample(self, prompts, output_type=None, n=1, temperature=1.0, top_p=1.0,
               max_new_tokens=None, seed=None, assistant_prefix="", truncation=None):  # fmt: skip
        return []

    def generate(self, prompts, output_type=None, n=1, temperature=1.0, top_p=1.0,
                 max_new_tokens=None, seed=None, assistant_prefix="", truncation=None):  # fmt: skip
        return []

    def logprob(self, prompts, continuations, add_eos=False, assistant_prefix="", truncation=None,
                extra=0):  # fmt: skip
        return np.zeros(0)


class _NoLogprob(_Complete):
    logprob = None  # type: ignore[assignment]


class _RenamedParameter(_Complete):
    def encode_continuation(self, text, eos=False):
        return []


class _MovedParameter(_Complete):
    def sample(self, prompts, n=1, output_type=None, temperature=1.0, top_p=1.0,
               max_new_tokens=None, seed=None, assistant_prefix="", truncation=None):  # fmt: skip
        return []


class _OtherDefault(_Complete):
    def logprob(self, prompts, continuations, add_eos=True, assistant_prefix="", truncation=None):
        return np.zeros(0)


class _CatchAll(_Complete):
    def generate(self, prompts, output_type=None, n=1, **kwargs):
        return []


class _ExtraRequired(_Complete):
    def derive_seed(self, seed, stream):
        return 0


def test_the_checker_accepts_a_complete_stand_in_and_isinstance_agrees():
    assert mismatches(_Complete) == []
    assert isinstance(_Complete(), LanguageModel)


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (_NoLogprob, "_NoLogprob.logprob: missing"),
        (_RenamedParameter, "_RenamedParameter.encode_continuation(add_eos): no such parameter"),
        (_MovedParameter, "_MovedParameter.sample(output_type): not positional number 1"),
        (_OtherDefault, "_OtherDefault.logprob(add_eos): default True, protocol False"),
        (_CatchAll, "_CatchAll.generate(temperature): no such parameter"),
        (_ExtraRequired, "_ExtraRequired.derive_seed(stream): required, not in protocol"),
    ],
    ids=lambda v: v.__name__ if isinstance(v, type) else "",
)
def test_the_checker_finds_each_kind_of_mismatch(cls, expected):
    found = mismatches(cls)
    assert any(p.startswith(expected) for p in found), found


def test_isinstance_fails_without_a_member():
    assert not isinstance(_NoLogprob(), LanguageModel)

    class NoUsage:
        name, tokenizer = "x", None

    for method in METHODS:
        setattr(NoUsage, method, getattr(_Complete, method))
    assert not isinstance(NoUsage(), LanguageModel)


# --------------------------------------------------------------------------- real instances


def test_the_tiny_test_model_is_a_language_model(tiny):
    from smcplan.llm import load_model
    from smcplan.llm.testing import tiny_model_path

    assert type(tiny) is TransformersLanguageModel
    assert isinstance(tiny, LanguageModel)
    loaded = load_model(tiny_model_path(), threads=1)
    assert type(loaded) is TransformersLanguageModel and isinstance(loaded, LanguageModel)


def test_a_remote_model_is_a_language_model(monkeypatch, tiny):
    """Built against no server: the engine listing is stubbed, the tokenizer is the tiny one;
    the client renders prompts into the same text and token ids as the in-process model."""
    import smcplan.llm.backends.remote.client as client
    from smcplan.llm.testing import tiny_model_path

    monkeypatch.setattr(client, "detect_engine", lambda http: ("vllm", ["tiny"]))
    lm = RemoteLanguageModel("http://127.0.0.1:9/v1", "tiny", tokenizer=str(tiny_model_path()))
    assert isinstance(lm, LanguageModel)
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    for prompt in ("hi", chat):
        assert lm.format_prompt(prompt, "Action:") == tiny.format_prompt(prompt, "Action:")
        assert lm.encode_prompt(prompt, "Action:") == tiny.encode_prompt(prompt, "Action:")
    assert lm.encode_continuation("go", add_eos=True) == tiny.encode_continuation("go", True)
    assert lm.derive_seed(7) == 7 and isinstance(lm.derive_seed(None), int)


@pytest.mark.skipif(
    not llamacpp_available(),
    reason="llama-cpp-python is not installed (pip install 'smcplan[scale]')",
)
def test_a_llamacpp_model_is_a_language_model():
    from smcplan.llm import load_model

    lm = load_model("llamacpp:", seed=0)
    assert type(lm) is LlamaCppLanguageModel and isinstance(lm, LanguageModel)
