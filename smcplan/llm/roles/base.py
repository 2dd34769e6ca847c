"""Shared plumbing of the model roles: asset loading and batch-shape checks.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smcplan.llm.templates import RoleAssets, load_role

if TYPE_CHECKING:
    from smcplan.llm.protocol import LanguageModel

__all__ = ["Role", "check_lengths"]


def check_lengths(role: str, **columns: Sequence[Any] | None) -> int:
    """The common batch size of the given per-particle columns (``None`` columns are skipped)."""
    sizes = {k: len(v) for k, v in columns.items() if v is not None}
    for k, v in columns.items():
        if isinstance(v, str):
            raise TypeError(f"{role}: {k} must be a list (one entry per particle), not a string")
    if len(set(sizes.values())) > 1:
        raise ValueError(f"{role}: batch columns differ in length: {sizes}")
    return next(iter(sizes.values()), 0)


class Role:
    """A model role: a language model plus the assets of ``models/roles/<asset_name>``.

    ``assets`` replaces the files (e.g. a prompt variant); ``roles_dir`` reads them from another
    folder; ``settings`` overrides entries of the role's ``role.json`` (e.g. a smaller token budget
    ``{"max_new_tokens": 32}``); unknown keys are an error naming the known ones.
    """

    asset_name: str = ""

    def __init__(
        self,
        lm: LanguageModel,
        assets: RoleAssets | None = None,
        roles_dir: str | Path | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        if not hasattr(lm, "sample") or not hasattr(lm, "logprob"):
            raise TypeError(
                f"{type(self).__name__} needs a smcplan.llm.LanguageModel (from load_model or "
                f"testing.tiny_model); got {type(lm).__name__}"
            )
        self.lm = lm
        self.assets = assets if assets is not None else load_role(self.asset_name, roles_dir)
        if settings:
            unknown = sorted(set(settings) - set(self.assets.settings))
            if unknown:
                known = ", ".join(sorted(self.assets.settings)) or "none"
                raise ValueError(
                    f"{type(self).__name__}: unknown settings {unknown}; known: {known}"
                )
            self.assets = dataclasses.replace(
                self.assets, settings={**self.assets.settings, **settings}
            )


def _strip_strings(schema: Any) -> Any:
    if isinstance(schema, dict):
        if schema.get("type") == "string" and "maxLength" not in schema:
            return {"const": ""}
        return {k: _strip_strings(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_strip_strings(v) for v in schema]
    return schema


def token_budget(schema: dict[str, Any], free_tokens: int) -> int:
    """``max_new_tokens`` for a JSON answer whose unbounded strings share ``free_tokens`` tokens.

    Everything but the unbounded strings is at most ``json_max_bytes`` bytes, hence at most that
    many tokens (a token is >= 1 byte); so the answer's fixed part always fits and only the
    free-text strings can be cut by the budget.
    """
    from smcplan.llm.constrained import json_max_bytes

    fixed = json_max_bytes(_strip_strings(schema))
    if fixed is None:
        raise ValueError("token_budget needs a schema whose non-string parts are bounded")
    return fixed + free_tokens + 1


def close_string(partial: str) -> str:
    """``partial`` (JSON cut inside a string) without a dangling escape, ready for ``'"'``."""
    trailing = len(partial) - len(partial.rstrip("\\"))
    return partial[:-1] if trailing % 2 == 1 else partial
