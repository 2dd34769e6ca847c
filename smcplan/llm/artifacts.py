"""The trained artifacts smcplan ships: ``models/trained/<name>/``, each with a ``manifest.json``.

An artifact is a folder of weights (a PEFT adapter in fp16 safetensors, or a score head) plus
its manifest: what it is, the exact commands and data (with sha256) that made it, the commit,
the base model and its sha256, held-out metrics with their ``n`` and intervals, and the size of
every file.  Agents and :func:`smcplan.plan` take an artifact by name wherever they take a
folder (``world_model_path="twx-coin-world-model"``, ``critic_path="twx-coin-critic-head"``);
:func:`resolve_artifact` turns either into the folder.

Must not import torch, transformers or outlines.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from smcplan.errors import InvalidArgumentError, SmcplanError, UnknownNameError
from smcplan.llm.paths import models_dir

__all__ = [
    "MANIFEST",
    "ArtifactError",
    "artifact_dir",
    "artifact_names",
    "file_sha256",
    "load_manifest",
    "resolve_artifact",
    "trained_dir",
]

#: the file that describes an artifact, beside its weights
MANIFEST = "manifest.json"

#: the fields every manifest carries (checked by :func:`load_manifest`)
REQUIRED_FIELDS = (
    "name",
    "kind",
    "description",
    "base_model",
    "commands",
    "data",
    "commit",
    "metrics",
    "files",
)


class ArtifactError(SmcplanError, ValueError):
    """A shipped artifact is missing, unknown, or its manifest does not describe its files."""


def trained_dir() -> Path:
    """``models/trained`` of :func:`~smcplan.llm.paths.models_dir`: one folder per artifact."""
    return models_dir() / "trained"


def artifact_names() -> list[str]:
    """The names of the shipped artifacts (folders of ``models/trained`` with a manifest)."""
    root = trained_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / MANIFEST).is_file())


def artifact_dir(name: str) -> Path:
    """The folder of the shipped artifact ``name``; an unknown name lists the known ones."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(
            f"artifact name must be a non-empty string such as 'twx-coin-world-model'; got {name!r}"
        )
    known = artifact_names()
    if name not in known:
        raise UnknownNameError(
            f"unknown artifact {name!r}; known: {', '.join(known) or 'none'} "
            f"(in {trained_dir()}); pass one of them or a folder"
        )
    return trained_dir() / name


def resolve_artifact(name_or_path: str | os.PathLike[str], argument: str = "path") -> Path:
    """A folder for ``name_or_path``: an existing folder as it is, else the shipped artifact of
    that name.  ``argument`` names the caller's parameter in the error."""
    if not isinstance(name_or_path, str | os.PathLike) or not str(name_or_path).strip():
        raise InvalidArgumentError(
            f"{argument} must be a folder or a shipped artifact's name; got {name_or_path!r}"
        )
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    text = str(name_or_path)
    if os.sep not in text and text in artifact_names():
        return trained_dir() / text
    known = ", ".join(artifact_names()) or "none"
    raise ArtifactError(
        f"{argument}={text!r} is neither a folder nor a shipped artifact; known artifacts: "
        f"{known}; or pass the folder written by `smcplan train ... --out DIR`"
    )


def load_manifest(name_or_path: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of an artifact (by name or folder), checked: every required field is there
    and every file it lists exists with the size it states."""
    folder = resolve_artifact(name_or_path, "artifact")
    path = folder / MANIFEST
    if not path.is_file():
        raise ArtifactError(f"{folder} holds no {MANIFEST}; it is not a shipped artifact")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{path}: not valid JSON ({exc}); restore it from git") from None
    missing = [f for f in REQUIRED_FIELDS if f not in manifest]
    if missing:
        raise ArtifactError(f"{path}: missing field(s) {', '.join(missing)}")
    for file, info in manifest["files"].items():
        target = folder / file
        if not target.is_file():
            raise ArtifactError(
                f"{path} lists {file!r}, which is not in {folder}; restore it from git or "
                "rebuild the artifact with `make models`"
            )
        if target.stat().st_size != info["bytes"]:
            raise ArtifactError(
                f"{target}: {target.stat().st_size} bytes, the manifest says {info['bytes']}; "
                "the file is damaged or from another build"
            )
    return manifest


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's bytes (hex), read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
