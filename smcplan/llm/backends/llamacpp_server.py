"""Start a llama.cpp server on a loopback port (tests, benchmarks, demos): llama-cpp-python's
OpenAI-compatible server, or llama.cpp's own C++ ``llama-server``.

``with serve_llamacpp() as url:`` runs ``python -m llama_cpp.server`` on the packaged
SmolLM2 GGUF (or any registry name / ``.gguf`` path), bound to ``127.0.0.1`` on a free port,
with ``logits_all`` on (needed for prompt log-probs), waits until ``GET /v1/models`` answers
(bounded by ``start_timeout_s``), yields ``http://127.0.0.1:<port>/v1`` and stops the server
(SIGTERM, then SIGKILL) on exit. The model is served under its registry name, so
``load_model(f"openai:{url}#smollm2-135m")`` finds the client tokenizer by that name.

Needs ``llama-cpp-python[server]`` (``pip install 'smcplan[scale]'``). Must not import
``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from smcplan.errors import check_int
from smcplan.llm.registry import ModelNotAvailable, _gguf_for_entry, registry

__all__ = [
    "serve_llamacpp",
    "serve_llama_server",
    "llama_server_binary",
    "gguf_path",
    "llamacpp_available",
]


def llamacpp_available() -> bool:
    """True when llama-cpp-python and its server extra are importable."""
    return all(
        importlib.util.find_spec(m) is not None
        for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette")
    )


def gguf_path(name: str) -> Path:
    """The GGUF file of registry model ``name`` (or ``name`` itself when it is a .gguf path)."""
    if name.endswith(".gguf") and Path(name).is_file():
        return Path(name)
    models = registry()["models"]
    if name not in models:
        raise ModelNotAvailable(f"unknown model {name!r}; known: {', '.join(sorted(models))}")
    return _gguf_for_entry(name, models[name])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _target(model: str) -> tuple[Path, str, int]:
    """(GGUF path, the name it is served under, a free loopback port) for ``model``."""
    alias = model if not model.endswith(".gguf") else Path(model).stem
    return gguf_path(model), alias, _free_port()


@contextlib.contextmanager
def serve_llamacpp(
    model: str = "smollm2-135m",
    *,
    threads: int = 1,
    n_ctx: int = 4096,
    start_timeout_s: float = 120.0,
    log: str | os.PathLike[str] | None = None,
) -> Iterator[str]:
    """Serve ``model`` with llama-cpp-python on 127.0.0.1; yield the ``/v1`` base URL."""
    if not llamacpp_available():
        raise ModelNotAvailable(
            "llama-cpp-python's server is not installed; fix: pip install 'smcplan[scale]'"
        )
    path, alias, port = _target(model)
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(path), "--model_alias", alias,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads),
        "--logits_all", "true", "--verbose", "false",
    ]  # fmt: skip
    yield from _serve(cmd, port, start_timeout_s, log, "llama.cpp server")


def _serve(
    cmd: list[str], port: int, start_timeout_s: float, log: Any, what: str
) -> Iterator[str]:
    """Run ``cmd`` (a server on 127.0.0.1:``port``), wait until ``GET /v1/models`` answers,
    yield the ``/v1`` base URL, and stop it (SIGTERM, then SIGKILL) however the block ends."""
    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + start_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited with {proc.returncode}: {' '.join(cmd)}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{what} did not answer within {start_timeout_s:g} s"
                    ) from None
                time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log is not None:
            out.close()  # type: ignore[union-attr]


#: environment variable naming the llama-server executable (else .venv/bin, then PATH)
LLAMA_SERVER_ENV = "SMCPLAN_LLAMA_SERVER"


def llama_server_binary() -> Path | None:
    """The ``llama-server`` executable: ``$SMCPLAN_LLAMA_SERVER``, else the one beside this
    Python (``make setup-scale`` builds it into ``.venv/bin``), else ``llama-server`` on PATH;
    ``None`` when there is none."""
    env = os.environ.get(LLAMA_SERVER_ENV)
    if env:
        return Path(env) if Path(env).is_file() and os.access(env, os.X_OK) else None
    beside = Path(sys.executable).parent / "llama-server"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("llama-server")
    return Path(found) if found else None


@contextlib.contextmanager
def serve_llama_server(
    model: str = "smollm2-135m",
    *,
    threads: int = 1,
    n_ctx: int = 4096,
    start_timeout_s: float = 120.0,
    log: str | os.PathLike[str] | None = None,
    binary: str | os.PathLike[str] | None = None,
    parallel: int = 1,
) -> Iterator[str]:
    """Serve ``model`` with llama.cpp's C++ ``llama-server`` on 127.0.0.1 (the web UI off);
    yield the ``/v1`` base URL. ``load_model(f"openai:{url}#smollm2-135m")`` detects it as
    engine ``"llama-server"`` (:mod:`smcplan.llm.backends.remote.llamaserver`).

    ``parallel`` P: the server's slots, decoded together by continuous batching, each with its
    own KV stream of ``n_ctx`` tokens (``--ctx-size P * n_ctx``), so a slot's window is ``n_ctx``
    whatever P is; the ``n`` samples of one prompt share its evaluated prompt (``n_cmpl``: its
    KV state is copied to the other slots).  Not ``--kv-unified``: with one pool shared by the
    slots, a sequence's logits depend on what the other slots hold (attention runs over the
    pool's occupied cells), so concurrent requests were not reproducible (measured: 4 concurrent
    samples, 6 repetitions, 3-5 different outcomes; with separate streams 1).  The client reads P
    from ``GET /props``.  Choosing P: the most sequences the callers have in flight at once, e.g. 5
    for one NeSyFS agent (the 5 reflection votes; N = 4 particles need 4), ``workers * 5`` for
    ``--workers`` Ray workers sharing this server (docs/scale.md, "Batching")."""
    parallel = check_int(parallel, "parallel", minimum=1)
    exe = Path(binary) if binary is not None else llama_server_binary()
    if exe is None or not exe.is_file():
        raise ModelNotAvailable(
            f"no llama-server executable (looked at ${LLAMA_SERVER_ENV}, {sys.executable}'s "
            "folder and PATH); fix: make setup-scale (builds it from llama-cpp-python's "
            "vendored llama.cpp), or point $SMCPLAN_LLAMA_SERVER at one"
        )
    path, alias, port = _target(model)
    cmd = [
        str(exe), "--model", str(path), "--alias", alias,
        "--host", "127.0.0.1", "--port", str(port),
        "--ctx-size", str(n_ctx * parallel), "--threads", str(threads),
        "--threads-batch", str(threads), "--parallel", str(parallel),
        "--no-webui", "--log-disable",
    ]  # fmt: skip
    yield from _serve(cmd, port, start_timeout_s, log, "llama-server")
