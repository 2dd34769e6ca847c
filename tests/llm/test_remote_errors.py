"""The remote backend's failure modes, against real sockets (no server, a closed port)."""

from __future__ import annotations

import socket
import time

import pytest

from smcplan.llm import load_model
from smcplan.llm.remote import RemoteSpecError, parse_remote
from smcplan.llm.remote_http import HttpClient, ServerUnavailable


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
