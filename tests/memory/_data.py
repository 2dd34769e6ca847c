"""Load the observation strings captured by ``data/capture_observations.py`` (see its docstring)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

DATA = Path(__file__).parent / "data"


@cache
def records(name: str) -> list[dict]:
    """``name``: ``twx``, ``scienceworld`` or ``alfworld``."""
    return json.loads((DATA / f"{name}_observations.json").read_text())


def step(name: str, record: int, index: int, action: str | None) -> str:
    """The observation after step ``index`` of episode ``record``, checking the action taken."""
    s = records(name)[record]["steps"][index]
    assert s["action"] == action, f"data drift: step {index} action is {s['action']!r}"
    return s["observation"]
