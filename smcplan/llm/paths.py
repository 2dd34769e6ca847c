"""Where the LLM layer keeps generated assets (converted models) and finds its data (``assets/``).

Generated assets live under ``$SMCPLAN_CACHE`` (default ``~/.cache/smcplan``). Model assets that
are data, not code (``registry.json`` and ``roles/<role>/``: prompt templates, output schemas,
settings of every model role, the LLM layer's and the agents'), are package data of ``smcplan``
(``smcplan/assets``), found with :mod:`importlib.resources`, so an installed wheel has them; a
folder with the same layout named by ``$SMCPLAN_MODELS_DIR`` replaces them.

Must not import torch, transformers, outlines, ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

__all__ = ["cache_dir", "models_dir"]


def cache_dir(*parts: str) -> Path:
    """``$SMCPLAN_CACHE/<parts...>`` (default ``~/.cache/smcplan``), created if missing."""
    root = os.environ.get("SMCPLAN_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "smcplan"
    path = base.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def models_dir() -> Path:
    """The folder holding ``registry.json`` and ``roles/``: ``$SMCPLAN_MODELS_DIR`` if set, else
    the package data folder ``smcplan/assets``."""
    override = os.environ.get("SMCPLAN_MODELS_DIR")
    if override:
        path = Path(override).expanduser()
    else:
        path = Path(str(resources.files("smcplan").joinpath("assets")))
    if not (path / "registry.json").is_file():
        raise FileNotFoundError(
            f"model assets not found in {path} (expected registry.json there); "
            "set SMCPLAN_MODELS_DIR to a folder laid out like smcplan/assets "
            "(registry.json, roles/<role>/)"
        )
    return path
