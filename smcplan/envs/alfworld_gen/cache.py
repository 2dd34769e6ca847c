"""Where generated ALFWorld games live, and how a game folder is published atomically.

Root: ``$SMCPLAN_CACHE/alfworld`` if ``SMCPLAN_CACHE`` is set, else
``~/.cache/smcplan/alfworld``. A game is a folder holding ``game.tw-pddl`` and
``traj_data.json``; it is written into a temporary sibling folder and renamed into place,
so readers never see a half-written game and concurrent writers of the same game are safe
(the first rename wins; the loser's copy is discarded; both are byte-identical anyway).

Must not import anything from ``smcplan`` above ``smcplan.envs``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from smcplan.jsonfile import dumps


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The ALFWorld games folder: ``cache_dir`` if given, else the default described above."""
    if cache_dir is not None:
        return Path(cache_dir)
    base = os.environ.get("SMCPLAN_CACHE") or os.path.join("~", ".cache", "smcplan")
    return Path(os.path.expanduser(base)) / "alfworld"


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as canonical JSON (sorted keys, fixed separators: byte-reproducible)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps(data, sort_keys=True, indent=1, ensure_ascii=True))
        f.write("\n")


def publish_dir(final: Path, build: Callable[[Path], bool]) -> bool:
    """Create folder ``final`` atomically: ``build(tmp)`` fills a temporary folder.

    Returns ``build``'s verdict; when it is False nothing is published. If ``final``
    appears meanwhile (another process), the temporary copy is dropped.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        if not build(tmp):
            return False
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "game.tw-pddl").exists():
                raise
        return True
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
