"""Assemble the viewer: one self-contained HTML file (no network, no external libraries).

The page template, style sheet and script are package data in ``assets/``; the data
(:func:`~smcplan.eval.viewer.data.viewer_data`) is embedded as JSON in a
``<script type="application/json">`` element and drawn by the script with ``textContent`` and
SVG elements only (logged text is never parsed as HTML). Pure standard library.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smcplan.eval.viewer.data import RunLike, viewer_data
from smcplan.jsonfile import dumps

__all__ = ["render_html", "write_viewer", "ASSETS", "MAX_BYTES"]

ASSETS = Path(__file__).with_name("assets")
#: The viewer's size target: 5 MB (a 50-step, 20-episode run must fit; docs/eval.md).
MAX_BYTES = 5_000_000
SCALES = (1.0, 0.5, 0.25, 0.125)
_START = "window.smcplanStart();"  # after both scripts: viewer.js draws, genealogy.js draws plans


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def _embed(data: Any) -> str:
    """JSON safe inside ``<script>``: every ``<`` (only ever inside JSON strings) is written
    ``\\u003c``, so no ``</script>``, ``<!--`` or ``<script`` can end or alter the element."""
    blob = dumps(data, ensure_ascii=False, separators=(",", ":"))
    return blob.replace("<", "\\u003c")


def render_html(data: dict[str, Any]) -> str:
    """The page for already-built viewer ``data``."""
    page = _asset("viewer.html")
    for key, text in (
        ("/*__CSS__*/", _asset("viewer.css")),
        ("/*__JS__*/", "\n".join([_asset("viewer.js"), _asset("genealogy.js"), _START])),
        ("__DATA__", _embed(data)),
    ):
        head, sep, tail = page.partition(key)
        if not sep:
            raise RuntimeError(f"viewer template {ASSETS / 'viewer.html'} lacks {key}")
        page = head + text + tail
    return page


def write_viewer(
    runs: Sequence[RunLike],
    path: str | Path,
    *,
    max_episodes: int = 200,
    max_bytes: int = MAX_BYTES,
) -> Path:
    """Write the viewer HTML for ``runs`` (at most ``max_episodes`` episodes each) to ``path``
    and return the path.

    The file stays within ``max_bytes`` where it can: if the page at full text bounds is larger,
    the bounds are scaled by 1/2, 1/4, 1/8 (never below :data:`~smcplan.eval.viewer.data.MIN_CHARS`
    characters; the page says so); planner traces, votes and graph diffs are never dropped.
    """
    path = Path(path)
    for scale in SCALES:
        page = render_html(viewer_data(runs, max_episodes=max_episodes, scale=scale))
        if len(page.encode("utf-8")) <= max_bytes:
            break
    path.write_text(page, encoding="utf-8")
    return path
