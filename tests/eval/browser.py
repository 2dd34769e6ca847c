"""Headless Chromium for the viewer's tests: the DOM after the page's scripts ran, and screenshots.
An uncaught script error on the page fails the call.

Debian's ``chromium`` package (``.ci/run`` installs it when missing); nothing is downloaded at
test time. :func:`chromium` returns ``None`` when no browser is installed (the tests then skip).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def chromium() -> str | None:
    """Path of an installed Chromium, or ``None``."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _run(page: Path, fragment: str, *args: str, timeout: float = 120.0) -> str:
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("no chromium on PATH")
    with tempfile.TemporaryDirectory(prefix="smcplan-chromium-") as profile:
        cmd = [
            exe, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
            "--disable-extensions", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
            "--enable-logging=stderr", "--v=0",  # the page's console, to catch script errors
            *args, page.resolve().as_uri() + (f"#{fragment}" if fragment else ""),
        ]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)
    errors = [line for line in out.stderr.splitlines() if "Uncaught" in line]
    if errors:
        raise AssertionError(f"the page's scripts failed in chromium: {errors}")
    return out.stdout


def dump_dom(page: Path, fragment: str = "") -> str:
    """The serialised DOM of ``page`` after its scripts ran (``--dump-dom``)."""
    return _run(page, fragment, "--virtual-time-budget=5000", "--dump-dom")


def screenshot(page: Path, png: Path, fragment: str = "", size: tuple[int, int] = (1280, 900)):
    """Save a ``size`` screenshot of ``page`` to ``png``."""
    _run(
        page, fragment, "--hide-scrollbars", "--virtual-time-budget=5000",
        f"--window-size={size[0]},{size[1]}", f"--screenshot={png.resolve()}",
    )  # fmt: skip
    return png


class Elements(HTMLParser):
    """Every start tag of a document as ``(tag, {attr: value})``, in document order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.items: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.items.append((tag, {k: v or "" for k, v in attrs}))

    def having(self, attr: str, value: str | None = None) -> list[dict[str, str]]:
        return [a for _, a in self.items if attr in a and (value is None or a[attr] == value)]
