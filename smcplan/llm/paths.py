"""Where the LLM layer keeps generated assets (converted models) and finds its data (``models/``).

Generated assets live under ``$SMCPLAN_CACHE`` (default ``~/.cache/smcplan``); model assets that
are data, not code (registry, prompt templates, output schemas), live in the repository's
``models/`` folder, or wherever ``$SMCPLAN_MODELS_DIR`` points.

Must not import torch, transformers, outlines, ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import os
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
    """The folder holding ``registry.json`` and ``roles/`` (``$SMCPLAN_MODELS_DIR`` or repo ``models/``)."""
    override = os.environ.get("SMCPLAN_MODELS_DIR")
    path = (
        Path(override).expanduser() if override else Path(__file__).resolve().parents[2] / "models"
    )
    if not (path / "registry.json").is_file():
        raise FileNotFoundError(
            f"model assets not found in {path} (expected registry.json there); "
            "set SMCPLAN_MODELS_DIR to the smcplan 'models/' folder"
        )
    return path
