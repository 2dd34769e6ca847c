"""Ship a trained artifact into ``models/trained/<name>/`` with its manifest.

An adapter is stored small: every floating-point tensor of ``adapter_model.safetensors`` as
fp16 (a LoRA update :math:`\\Delta W = \\tfrac{\\alpha}{r} B A` loses under 1e-3 relative precision
per weight; the shipped artifact's held-out check in ``tests/models`` measures what that
costs), and ``base_model_name_or_path`` rewritten to the registry name of the base model, so
that the adapter loads on any machine rather than only where its cache folder was.  A score
head (``score_head.json`` + ``score_head.npz``) is copied as it is.

The manifest (:mod:`smcplan.llm.artifacts`) records what the artifact is, the commands and the
data (sha256) that made it, the commit, the base model and the sha256 of its weights file,
held-out metrics with ``n`` and intervals, and every file with its size and sha256.

Imports nothing heavy itself: :func:`ship_adapter` calls
:func:`smcplan.llm.finetune.lora.copy_adapter_half`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smcplan.errors import InvalidArgumentError
from smcplan.jsonfile import write_json
from smcplan.llm.artifacts import MANIFEST, file_sha256

__all__ = [
    "HEAD_FILES",
    "POLICY_HEAD_FILES",
    "base_model_sha256",
    "git_commit",
    "ship_adapter",
    "ship_head",
    "write_manifest",
]

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
HEAD_FILES = ("score_head.json", "score_head.npz")
POLICY_HEAD_FILES = ("policy_head.json", "policy_head.npz")


def _fresh(dest: Path) -> Path:
    """``dest`` emptied of weights (an older manifest and check files are replaced too)."""
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.iterdir():
        if old.is_file():
            old.unlink()
    return dest


def _source(folder: str | Path, files: tuple[str, ...], argument: str, fix: str) -> Path:
    """``folder`` as a Path once it holds every one of ``files``; else a typed error."""
    src = Path(folder)
    missing = [f for f in files if not (src / f).is_file()]
    if missing:
        raise InvalidArgumentError(f"{argument}={str(src)!r} lacks {', '.join(missing)}; {fix}")
    return src


def ship_adapter(adapter: str | Path, dest: str | Path, base_model: str) -> list[str]:
    """Copy the PEFT adapter folder ``adapter`` into ``dest`` as fp16 safetensors with
    ``base_model_name_or_path = base_model`` (a registry name); the files written."""
    from smcplan.llm.finetune.lora import copy_adapter_half

    fix = "pass DIR/adapter of `smcplan train world-model --out DIR`"
    src = _source(adapter, ADAPTER_FILES, "adapter", fix)
    return copy_adapter_half(src, _fresh(Path(dest)), base_model)


def ship_head(head: str | Path, dest: str | Path, files: tuple[str, ...] = HEAD_FILES) -> list[str]:
    """Copy the head folder ``head`` into ``dest``; the files written.  ``files``:
    :data:`HEAD_FILES` for a score head (``smcplan train critic-head``'s ``<out>/head``),
    :data:`POLICY_HEAD_FILES` for a policy head (``smcplan train grpo-mr-head``'s)."""
    src = _source(
        head, files, "head", "pass <out>/head of `smcplan train critic-head` or `grpo-mr-head`"
    )
    out = _fresh(Path(dest))
    for name in files:
        shutil.copyfile(src / name, out / name)
    return list(files)


def git_commit(root: str | Path = ".") -> str:
    """The commit the working tree is at (``+dirty`` when it has uncommitted changes to
    tracked files), or ``"unknown"`` outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def base_model_sha256(name: str) -> str:
    """The sha256 of the weights file a registry model is converted from (its GGUF)."""
    from smcplan.llm.registry import _gguf_for_entry, registry

    models = registry()["models"]
    if name not in models:
        raise InvalidArgumentError(
            f"base_model={name!r} is not a registry name; known: {', '.join(sorted(models))}"
        )
    return file_sha256(_gguf_for_entry(name, models[name]))


def _shard_commit(path: str | Path) -> str | None:
    """The commit a ``smcplan train collect`` shard records in its header line, else None."""
    with open(path, encoding="utf-8") as handle:
        first = handle.readline()
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        return None
    return header.get("commit") if isinstance(header, dict) else None


def _relative(path: str | Path, root: str | Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


def write_manifest(
    dest: str | Path,
    *,
    name: str,
    kind: str,
    description: str,
    base_model: str,
    commands: Sequence[str],
    data: Sequence[str | Path],
    metrics: dict[str, Any],
    settings: dict[str, Any] | None = None,
    seconds: dict[str, float] | None = None,
    root: str | Path = ".",
) -> dict[str, Any]:
    """Write ``dest/manifest.json`` describing every other file of ``dest`` (bytes, sha256) and
    return it.  ``data``: the files the commands read (each recorded with its sha256 and size,
    its path relative to ``root`` where it lies below it); ``metrics``: held-out measurements,
    each with its ``n`` and interval; ``seconds``: the wall time of each command; ``root``:
    the repository: ``commit`` is the commit the artifact was shipped from (``+dirty`` with
    uncommitted changes); each data file that is a collect shard adds the commit its header
    recorded (``collected_at_commit``)."""
    folder = Path(dest)
    files = {
        p.name: {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != MANIFEST
    }
    manifest = {
        "name": name,
        "kind": kind,
        "description": description,
        "base_model": {"name": base_model, "sha256": base_model_sha256(base_model)},
        "commands": list(commands),
        "seconds": dict(seconds or {}),
        "data": [
            {
                "path": _relative(p, root),
                "bytes": Path(p).stat().st_size,
                "sha256": file_sha256(p),
                "collected_at_commit": _shard_commit(p),
            }
            for p in data
        ],
        "commit": git_commit(root),
        "created": time.strftime("%Y-%m-%d", time.gmtime()),
        "metrics": metrics,
        "settings": dict(settings or {}),
        "files": files,
        "bytes": sum(f["bytes"] for f in files.values()),
    }
    write_json(folder / MANIFEST, manifest)
    return manifest
