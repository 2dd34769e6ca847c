"""Prompt templates and output schemas of the model roles, read from ``models/roles/<role>/``.

The roles of the LLM layer (:data:`ROLES`) and of the agents (``belief``, ``reflexion``,
``rlvmr``, ``zeroshot``) share the folder (:func:`smcplan.llm.paths.models_dir`).

A role folder holds ``system.txt``, ``user.jinja`` and optionally ``assistant.jinja`` (the start
of the answer the model continues), ``schema.json`` (the answer's JSON schema) and ``role.json``
(settings). Templates are rendered with Jinja2 in strict mode: a missing variable is an error that
names it.

Must not import torch, transformers, outlines, ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from smcplan.llm.paths import models_dir

__all__ = ["RoleAssets", "load_role", "ROLES"]

ROLES = ("triplets", "proposal", "observation", "progress", "reflection", "critic", "rlaw_actor")


@dataclass(frozen=True)
class RoleAssets:
    """The parsed files of one role folder."""

    name: str
    system: str
    user: jinja2.Template
    assistant: jinja2.Template | None = None
    schema: dict[str, Any] | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def messages(self, **variables: Any) -> list[dict[str, str]]:
        """The chat messages (system + user) for one input."""
        try:
            user = self.user.render(**variables)
        except jinja2.UndefinedError as exc:
            raise KeyError(
                f"role {self.name!r}: template variable missing ({exc.message})"
            ) from exc
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": user.strip()},
        ]

    def prefix(self, **variables: Any) -> str:
        """The assistant-answer prefix for one input ('' when the role has none)."""
        if self.assistant is None:
            return ""
        try:
            return self.assistant.render(**variables)
        except jinja2.UndefinedError as exc:
            raise KeyError(
                f"role {self.name!r}: assistant template variable missing ({exc.message})"
            ) from exc


@functools.cache
def _load(folder: str, name: str) -> RoleAssets:
    path = Path(folder) / name
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(path)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )

    def optional_json(file: str) -> Any:
        p = path / file
        return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None

    return RoleAssets(
        name=name,
        system=(path / "system.txt").read_text(encoding="utf-8").strip(),
        user=env.get_template("user.jinja"),
        assistant=env.get_template("assistant.jinja")
        if (path / "assistant.jinja").is_file()
        else None,
        schema=optional_json("schema.json"),
        settings=optional_json("role.json") or {},
    )


def load_role(name: str, root: str | Path | None = None) -> RoleAssets:
    """Load role ``name`` from ``root`` (default: ``models_dir() / "roles"``, the packaged
    ``models/roles`` unless ``$SMCPLAN_MODELS_DIR`` is set)."""
    base = Path(root) if root is not None else models_dir() / "roles"
    if not (base / name / "user.jinja").is_file():
        known = (
            sorted(p.name for p in base.iterdir() if (p / "user.jinja").is_file())
            if base.is_dir()
            else []
        )
        raise ValueError(f"unknown role {name!r} in {base}; known: {', '.join(known)}")
    return _load(str(base), name)
