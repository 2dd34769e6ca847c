"""The remote backend's failure modes, against real sockets (no server, a closed port)."""

from __future__ import annotations

import socket
import time

import pytest

from smcplan.llm import load_model
from smcplan.llm.backends.remote.client import RemoteSpecError, parse_remote
from smcplan.llm.backends.remote.http import HttpClient, ServerUnavailable


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: connecting is refused


@pytest.mark.parametrize(
    "spec",
    [
        "http://127.0.0.1:8000/v1#m",
        "openai:http://127.0.0.1:8000/v1",
        "openai:ftp://h/v1#m",
        "openai:http:///v1#m",
        "openai:http://127.0.0.1:8000/v1#",
    ],
)
def test_malformed_remote_spec_is_a_value_error_showing_the_spelling(spec):
    with pytest.raises(RemoteSpecError, match=r"openai:<base_url>#<model>|http\(s\) base URL"):
        parse_remote(spec)


def test_remote_spec_splits_at_the_last_hash():
    spec = parse_remote("openai:http://127.0.0.1:8000/v1/#org/model-8B")
    assert (spec.base_url, spec.model) == ("http://127.0.0.1:8000/v1", "org/model-8B")


def test_server_down_raises_server_unavailable_after_bounded_backoff():
    port = _closed_port()
    client = HttpClient(f"http://127.0.0.1:{port}/v1", timeout=2, retries=2, backoff=0.05)
    t0 = time.monotonic()
    with pytest.raises(ServerUnavailable, match="3 attempt") as info:
        client.get("/models")
    elapsed = time.monotonic() - t0
    assert 0.05 + 0.1 <= elapsed < 5  # slept backoff * (1 + 2) between the 3 attempts
    assert isinstance(info.value, ConnectionError)


def test_load_model_of_a_dead_server_is_a_typed_connection_error():
    port = _closed_port()
    with pytest.raises(ServerUnavailable, match="is the server running"):
        load_model(f"openai:http://127.0.0.1:{port}/v1#smollm2-135m", retries=0)


def test_local_only_options_are_refused_for_remote_models():
    with pytest.raises(ValueError, match="quantization"):
        load_model("openai:http://127.0.0.1:1/v1#m", quantization="nf4")
    with pytest.raises(TypeError, match="remote models"):
        load_model("smollm2-135m", engine="vllm")


def test_a_missing_llama_server_executable_names_the_fix(tmp_path, monkeypatch):
    from smcplan.llm.backends.llamacpp_server import (
        LLAMA_SERVER_ENV,
        llama_server_binary,
        serve_llama_server,
    )
    from smcplan.llm.registry import ModelNotAvailable

    with pytest.raises(ModelNotAvailable, match="make setup-scale"):
        with serve_llama_server(binary=tmp_path / "no-such-llama-server"):
            pass
    monkeypatch.setenv(LLAMA_SERVER_ENV, str(tmp_path / "no-such-llama-server"))
    assert llama_server_binary() is None  # a named but absent executable is not looked past


def test_token_grammar_spells_token_ids():
    from smcplan.llm.backends.remote.llamaserver import token_grammar

    assert token_grammar([12, 7]) == "root ::= <[12]> <[7]>"
    assert token_grammar([]) == 'root ::= ""'
