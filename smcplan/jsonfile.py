"""The one JSON writer of smcplan: no file it writes holds ``NaN`` or ``Infinity``.

``json.dumps(float("nan"))`` writes the bare token ``NaN``, which is not JSON (strict readers,
``jq`` and browsers' ``JSON.parse`` refuse the file).  Every JSON and JSONL file smcplan writes
(run records, metrics, shards, example files, manifests, scores, caches) goes through
:func:`dumps`: a float that is not finite is written as ``null`` and, when the document is an
object, the object gets one more field, :data:`NOTE_KEY`, naming each such field and what it
was, e.g. ``"non_finite": {"note": "...", "fields": {"event_ci[0]": "nan"}}``.  The encoder
then runs with ``allow_nan=False``, so a non-finite value that slipped past is an error, not a
file with ``NaN`` in it.

Standard library only; every layer may import it.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["NOTE_KEY", "finite", "dumps", "jsonl_line", "write_json"]

#: the field that explains the nulls written for non-finite floats
NOTE_KEY = "non_finite"
_NOTE = (
    "these fields were not finite numbers (NaN or infinity), which JSON cannot hold; written "
    "as null"
)


def finite(value: Any, where: str = "") -> tuple[Any, dict[str, str]]:
    """``value`` with every non-finite float (in dicts, lists and tuples) replaced by ``None``,
    and ``{path: "nan" | "inf" | "-inf"}`` of the replaced ones (``a.b[0]``)."""
    found: dict[str, str] = {}

    def walk(v: Any, path: str) -> Any:
        if isinstance(v, float):
            if math.isfinite(v):
                return v
            found[path or "(value)"] = repr(v)
            return None
        if isinstance(v, dict):
            return {k: walk(x, f"{path}.{k}" if path else str(k)) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x, f"{path}[{i}]") for i, x in enumerate(v)]
        return v

    return walk(value, where), found


def dumps(obj: Any, *, explain: bool = True, **kwargs: Any) -> str:
    """``json.dumps(obj, allow_nan=False, **kwargs)`` after :func:`finite`; with ``explain`` an
    object gets :data:`NOTE_KEY` naming the fields written as ``null``."""
    clean, found = finite(obj)
    if found and explain and isinstance(clean, dict):
        clean = {**clean, NOTE_KEY: {"note": _NOTE, "fields": found}}
    kwargs.pop("allow_nan", None)
    return json.dumps(clean, allow_nan=False, **kwargs)


def jsonl_line(obj: Any, **kwargs: Any) -> str:
    """One JSONL line (with its newline) of ``obj``, written as :func:`dumps` does."""
    return dumps(obj, **kwargs) + "\n"


def write_json(
    path: str | os.PathLike[str], obj: Any, *, indent: int | None = 2, **kwargs: Any
) -> Path:
    """Write ``obj`` to ``path`` as :func:`dumps` does, atomically (a temporary file in the same
    folder, then ``os.replace``): a reader sees the old file or the whole new one.  Creates the
    folder; returns the path."""
    path = Path(path)
    text = dumps(obj, indent=indent, **kwargs) + "\n"  # encode first: a refusal writes nothing
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would outlive the rename
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
