"""JSON over HTTP to a serving engine: timeouts, bounded retries with backoff, typed errors.

A request is retried when the server cannot be reached (connection refused or reset, timeout)
or answers 429 / 502 / 503 / 504, at most ``retries`` times, sleeping
``backoff * 2**k`` seconds (capped at ``max_backoff``) before retry ``k + 1``. Other HTTP
errors are not retried: they mean the request itself is wrong.

``post_events`` reads a server-sent-events answer (``stream: true``): the ``data:`` lines up to
``[DONE]``, each decoded as JSON.

Standard library only (``urllib``), so the remote backend needs neither torch nor an HTTP
package on the client. Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RemoteLMError",
    "ServerUnavailable",
    "RemoteRequestError",
    "EngineLacksFeature",
    "HttpClient",
]

_RETRY_STATUS = frozenset({429, 502, 503, 504})


class RemoteLMError(RuntimeError):
    """Base class of the remote backend's failures (the eval harness records an error episode)."""


class ServerUnavailable(RemoteLMError, ConnectionError):
    """The engine could not be reached (or kept failing) after all retries."""


class RemoteRequestError(RemoteLMError):
    """The engine rejected a request (HTTP 4xx/5xx that retrying cannot fix)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EngineLacksFeature(RemoteLMError, NotImplementedError):
    """The serving engine cannot do what was asked (e.g. score a fixed continuation)."""


@dataclass
class HttpClient:
    """POST/GET JSON to ``base_url`` (e.g. ``http://127.0.0.1:8000/v1``).

    ``timeout``: seconds per attempt; ``retries``: extra attempts after the first;
    ``backoff``/``max_backoff``: the retry sleeps (module docstring); ``api_key``: sent as a
    bearer token when set.
    """

    base_url: str
    timeout: float = 120.0
    retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 8.0
    api_key: str | None = None

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds; got {self.timeout}")
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0; got {self.retries}")

    def url(self, path: str, root: bool = False) -> str:
        """``base_url + path``; ``root=True`` drops a trailing ``/v1`` first (native endpoints)."""
        base = self.base_url
        if root and base.endswith("/v1"):
            base = base[: -len("/v1")]
        return base + path

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        root: bool = False,
        retries: int | None = None,
        events: bool = False,
    ) -> Any:
        """Send one request (retried as the module docstring says); return the decoded JSON
        (``events=True``: the list of server-sent events' JSON payloads)."""
        url = self.url(path, root)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        attempts = 1 + (self.retries if retries is None else retries)
        last: str = ""
        for k in range(attempts):
            if k > 0:
                time.sleep(min(self.max_backoff, self.backoff * 2 ** (k - 1)))
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    text = resp.read().decode()
                return _events(text) if events else json.loads(text or "null")
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode(errors="replace")[:500]
                if exc.code in _RETRY_STATUS:
                    last = f"HTTP {exc.code}: {detail}"
                    continue
                raise RemoteRequestError(
                    f"{method} {url} failed with HTTP {exc.code}: {detail}", exc.code
                ) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
                reason = getattr(exc, "reason", exc)
                last = f"{type(reason).__name__}: {reason}"
                continue
        raise ServerUnavailable(
            f"cannot reach the serving engine at {url} after {attempts} attempt(s) "
            f"(timeout {self.timeout:g} s each): {last}; is the server running? "
            "(start it, or check the base URL of 'openai:<base_url>#<model>')"
        )

    def post(self, path: str, body: Any, root: bool = False) -> Any:
        return self.request("POST", path, body, root)

    def post_events(self, path: str, body: Any, root: bool = False) -> list[Any]:
        """POST ``body`` (which should ask for ``stream: true``) and return its events' JSON."""
        return self.request("POST", path, body, root, events=True)

    def get(self, path: str, root: bool = False, retries: int | None = None) -> Any:
        return self.request("GET", path, None, root, retries)


def _events(text: str) -> list[Any]:
    """The JSON payloads of a server-sent-events body (``data: ...`` lines, until ``[DONE]``)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue  # blank separators, ": ping" comments, "event:" lines
        payload = line[len("data:") :].strip()
        if payload == "[DONE]":
            break
        out.append(json.loads(payload))
    return out
