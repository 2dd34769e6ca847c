"""Resolve a model name or path to a local transformers folder, using ``models/registry.json``.

Three kinds of argument:

* a registry name (``"smollm2-135m"``, ``"gemma3-270m"``; ``None`` = the registry's default):
  the GGUF file shipped inside an installed Python package is located with
  ``importlib.util.find_spec`` (the package is never imported) and converted once into
  ``$SMCPLAN_CACHE/models/<name>`` (see :mod:`smcplan.llm.convert`);
* a local folder (a transformers checkpoint) or a ``.gguf`` file: used as is / converted once;
* anything else is taken as a Hugging Face hub id and handed to transformers, which finds it in
  the local hub cache or downloads it (impossible offline: :class:`ModelNotAvailable` says so).

Must not import torch, transformers, outlines, ``smcplan.memory`` or ``smcplan.envs``
(transformers is imported lazily inside the conversion only).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smcplan.errors import SmcplanError
from smcplan.llm.convert import assemble_chunks, convert_gguf
from smcplan.llm.paths import cache_dir, models_dir

__all__ = ["ModelNotAvailable", "ResolvedModel", "registry", "resolve", "known_models"]


class ModelNotAvailable(SmcplanError, ImportError):
    """The requested model's weights are not on this machine; the message says how to get them."""


@dataclass(frozen=True)
class ResolvedModel:
    """Where to load a model from: ``path`` is a local folder or a hub id (``is_hub_id``)."""

    name: str
    path: str
    is_hub_id: bool = False
    entry: dict[str, Any] = field(default_factory=dict)


def registry() -> dict[str, Any]:
    """The parsed ``registry.json`` of :func:`~smcplan.llm.paths.models_dir`."""
    with open(models_dir() / "registry.json", encoding="utf-8") as handle:
        return json.load(handle)


def known_models() -> list[str]:
    """Registry names accepted by :func:`smcplan.llm.load_model`."""
    return sorted(registry()["models"])


def _package_dir(package: str, pip: str, name: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotAvailable(
            f"model {name!r} needs the Python package {package!r}, which is not installed; "
            f"fix: {pip}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _gguf_for_entry(name: str, entry: dict[str, Any]) -> Path:
    source = entry["source"]
    if source == "gguf_package":
        path = _package_dir(entry["package"], entry["pip"], name) / entry["gguf_file"]
        if not path.is_file():
            raise ModelNotAvailable(f"model {name!r}: {path} is missing; reinstall: {entry['pip']}")
        return path
    if source == "gguf_chunks":
        chunks = [_package_dir(pkg, entry["pip"], name) / rel for pkg, rel in entry["chunks"]]
        missing = [str(c) for c in chunks if not c.is_file()]
        if missing:
            raise ModelNotAvailable(
                f"model {name!r}: chunks missing {missing}; reinstall: {entry['pip']}"
            )
        target = cache_dir("gguf", name) / entry["gguf_file"]
        return assemble_chunks(chunks, target, entry.get("sha256"))
    raise ValueError(
        f"registry entry {name!r} has unknown source {source!r}; known: gguf_package, gguf_chunks"
    )


def _offline() -> bool:
    return any(
        os.environ.get(v, "") not in ("", "0") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def resolve(name_or_path: str | os.PathLike[str] | None = None) -> ResolvedModel:
    """Map ``name_or_path`` to a loadable folder, converting packaged GGUF weights on first use."""
    table = registry()
    models: dict[str, dict[str, Any]] = table["models"]
    name = table["default"] if name_or_path is None else os.fspath(name_or_path)
    if name in models:
        entry = models[name]
        gguf = _gguf_for_entry(name, entry)
        folder = convert_gguf(gguf, cache_dir("models") / name)
        return ResolvedModel(name=name, path=str(folder), entry=entry)
    path = Path(name).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        stat = path.stat()
        key = hashlib.sha1(
            f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()
        ).hexdigest()[:12]
        folder = convert_gguf(path, cache_dir("models") / f"{path.stem}-{key}")
        return ResolvedModel(name=path.stem, path=str(folder))
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelNotAvailable(
                f"{path} is a folder but holds no config.json (not a transformers checkpoint)"
            )
        return ResolvedModel(name=path.name, path=str(path))
    if name.startswith((".", "/", "~")) or name.endswith(".gguf"):
        raise ModelNotAvailable(
            f"model path {name!r} does not exist; known names: {', '.join(sorted(models))}"
        )
    return ResolvedModel(name=name, path=name, is_hub_id=True)


def hub_error(name: str, error: Exception) -> ModelNotAvailable:
    """The error to raise when transformers could not load hub id ``name``."""
    known = ", ".join(known_models())
    if _offline():
        why = (
            "the hub is offline here (HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE set) and it is not in "
            "the local hub cache"
        )
    else:
        why = f"transformers could not fetch it ({type(error).__name__}: {error})"
    return ModelNotAvailable(
        f"cannot load model {name!r}: {why}; use a registry name ({known}), a local folder or a "
        ".gguf file"
    )
