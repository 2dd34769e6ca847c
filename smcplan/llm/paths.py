"""Where the LLM layer keeps generated assets (converted models) and finds its data (``models/``).

Generated assets live under ``$SMCPLAN_CACHE`` (default ``~/.cache/smcplan``). Model assets that
are data, not code (``registry.json``, ``roles/<role>/``: prompt templates, output schemas,
settings of every model role, the LLM layer's and the agents', and ``trained/<name>/``: the
shipped trained artifacts) live in the repository's top-level ``models/`` folder, installed as
the package ``smcplan.models`` (the wheel carries it; an editable install maps the name onto
the folder) and found with :mod:`importlib.resources`; a folder with the same layout named by
``$SMCPLAN_MODELS_DIR`` replaces them.

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
    """The folder holding ``registry.json``, ``roles/`` and ``trained/``: ``$SMCPLAN_MODELS_DIR``
    if set, else the package ``smcplan.models`` (the repository's ``models/`` folder)."""
    override = os.environ.get("SMCPLAN_MODELS_DIR")
    if override:
        path = Path(override).expanduser()
    else:
        path = Path(str(resources.files("smcplan.models")))
    if not (path / "registry.json").is_file():
        raise FileNotFoundError(
            f"model assets not found in {path} (expected registry.json there); "
            "set SMCPLAN_MODELS_DIR to a folder laid out like the repository's models/ "
            "(registry.json, roles/<role>/)"
        )
    return path
