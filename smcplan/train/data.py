"""Dataset files of the trainers: trajectory shards and SFT example files (JSONL), read strictly.

A **shard** (written by :mod:`smcplan.train.collect`) is one JSON object per line:

* line 1, ``{"kind": "header", "schema": SHARD_SCHEMA, ...}``: the git commit, env, split,
  seeds, source and agent configuration it was collected with;
* ``{"kind": "transition", "episode", "seed", "t", "task", "observation", "action",
  "next_observation", "reward", "done", "won", "truncated", "score", "facts"}``: one real step,
  ``reward`` the change of the normalised score (:class:`smcplan.envs.base.BaseTextEnv`),
  ``truncated`` whether the step ended the episode by the step limit only (what a learned world
  model must not learn as an ending), ``facts`` the retrieved knowledge-graph facts
  ``[[s, p, o], ...]`` before the action;
* ``{"kind": "branch", ...}``, the same fields as a transition: a counterfactual step, another
  admissible action taken from the same state on a clone of the environment (``collect(...,
  branches=K)``), so that a world model also sees the outcomes of the actions the policy did
  not take (failed moves, closed doors, no-ops); the episode goes on from the real step;
* ``{"kind": "episode", "episode", "seed", "won", "score", "steps"}``: the episode finished;
  transitions and branches of an episode without this line are an interrupted episode (dropped
  on resume).

**Schema versions.** ``smcplan.train.shard/2`` (written now) added ``truncated`` to
transitions and branches.  Shards of ``smcplan.train.shard/1`` still load: their records lack
the field, and :func:`read_shard` fills it in as ``done and not won and t + 1 >= max_steps``
(the header's collect step limit; ``False`` when the header has none) — the only way a /1
episode could end without winning or losing.  Records of either version may sit in one file
(a /1 shard continued by ``collect --resume`` keeps its header; a record without the field
is read the same way whatever the header says).

An **example file** holds ``{"prompt", "completion"}`` objects (the SFT input).

Training data must not be silently damaged: unlike the run reader of :mod:`smcplan.eval.records`
(which skips a torn line of a log), any bad line raises :class:`DatasetLineError` naming
``file:line``, what is wrong and the fix.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smcplan.errors import SmcplanError, check_int
from smcplan.jsonfile import jsonl_line, write_json

__all__ = [
    "subsample_and_save",
    "write_sft_manifest",
    "SHARD_SCHEMA",
    "SHARD_SCHEMAS",
    "DatasetLineError",
    "Shard",
    "iter_objects",
    "read_shard",
    "read_examples",
    "TRANSITION_FIELDS",
]

SHARD_SCHEMA = "smcplan.train.shard/2"
#: every shard schema :func:`read_shard` reads (older ones upgraded on read)
SHARD_SCHEMAS = ("smcplan.train.shard/1", SHARD_SCHEMA)

#: required fields of a transition line and their JSON types
TRANSITION_FIELDS: dict[str, tuple[type, ...]] = {
    "episode": (str,),
    "seed": (int,),
    "t": (int,),
    "task": (str,),
    "observation": (str,),
    "action": (str,),
    "next_observation": (str,),
    "reward": (int, float),
    "done": (bool,),
    "won": (bool,),
    "facts": (list,),
}
EPISODE_FIELDS: dict[str, tuple[type, ...]] = {
    "episode": (str,),
    "seed": (int,),
    "won": (bool,),
    "steps": (int,),
}
EXAMPLE_FIELDS: dict[str, tuple[type, ...]] = {"prompt": (str, list), "completion": (str, list)}


class DatasetLineError(SmcplanError, ValueError):
    """A line of a dataset file is not what the trainer reads; the message is
    ``file:line: problem; fix: ...``."""

    def __init__(self, path: str | os.PathLike[str], line: int, problem: str, fix: str) -> None:
        super().__init__(f"{os.fspath(path)}:{line}: {problem}; fix: {fix}")
        self.path, self.line = os.fspath(path), line


@dataclass
class Shard:
    """A read shard: its ``header``, the ``transitions`` and counterfactual ``branches`` of
    finished episodes, the ``episodes`` (end lines by id) and the ``partial`` transitions of an
    unfinished episode."""

    header: dict[str, Any]
    transitions: list[dict[str, Any]] = field(default_factory=list)
    branches: list[dict[str, Any]] = field(default_factory=list)
    episodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    partial: list[dict[str, Any]] = field(default_factory=list)
    #: the number of a torn last line that was dropped (``read_shard(..., torn_tail=True)``)
    torn_line: int | None = None


def _lines(handle: Any) -> Iterator[tuple[int, str, bool]]:
    """``(number, line, is_last)`` of a text file, one line of lookahead."""
    numbered = enumerate(handle, start=1)
    current = next(numbered, None)
    while current is not None:
        following = next(numbered, None)
        yield current[0], current[1], following is None
        current = following


def iter_objects(
    path: str | os.PathLike[str], torn_tail: list[int] | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line; a line that is not a JSON object
    raises :class:`DatasetLineError`, except, when a list ``torn_tail`` is given, a last line
    that is not valid JSON (torn by a killed writer): its number is appended to the list and
    the line skipped."""
    p = Path(path)
    if not p.is_file():
        raise DatasetLineError(
            p, 0, "no such file", "pass a file written by `smcplan train collect`"
        )
    with open(p, encoding="utf-8") as handle:
        for number, raw, last in _lines(handle):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                if last and torn_tail is not None:
                    torn_tail.append(number)
                    continue
                fix = (
                    "a torn last line (an interrupted collect): rerun the same `smcplan train "
                    "collect` with --resume (it drops the line and replays its episode), or "
                    "delete the line"
                    if last
                    else "repair or delete the line"
                )
                raise DatasetLineError(
                    p, number, f"not valid JSON ({exc.msg} at column {exc.colno})", fix
                ) from None
            if not isinstance(obj, dict):
                raise DatasetLineError(
                    p,
                    number,
                    f"expected a JSON object, got {type(obj).__name__}",
                    "each line must be one {...} record",
                )
            yield number, obj


def _check(
    path: Path, number: int, obj: dict[str, Any], fields: dict[str, tuple[type, ...]], what: str
) -> None:
    for name, types in fields.items():
        if name not in obj:
            raise DatasetLineError(
                path,
                number,
                f"{what} lacks the field {name!r}",
                f"every {what} line needs {', '.join(fields)}",
            )
        value = obj[name]
        bad_bool = isinstance(value, bool) and bool not in types
        if bad_bool or not isinstance(value, types):
            names = " or ".join(t.__name__ for t in types)
            raise DatasetLineError(
                path,
                number,
                f"{what} field {name!r} must be {names}; got {value!r:.60}",
                f"write {name!r} as {names}",
            )


def _truncated(path: Path, number: int, obj: dict[str, Any], header: dict[str, Any]) -> None:
    """Check ``truncated`` (a bool) or, on a record written before it existed, fill it in
    (module docstring, "Schema versions")."""
    if "truncated" in obj:
        if not isinstance(obj["truncated"], bool):
            raise DatasetLineError(
                path, number, f"field 'truncated' must be bool; got {obj['truncated']!r:.60}",
                "write 'truncated' as bool",
            )  # fmt: skip
        return
    limit = header.get("max_steps")
    cut = isinstance(limit, int) and obj["t"] + 1 >= limit
    obj["truncated"] = bool(obj["done"] and not obj["won"] and cut)


def read_shard(path: str | os.PathLike[str], torn_tail: bool = False) -> Shard:
    """Read and check a trajectory shard (format above).  ``torn_tail``: a last line that is not
    valid JSON (a collect killed mid-write) is dropped and its number kept in
    ``Shard.torn_line`` (``collect --resume`` does this) instead of raising."""
    p = Path(path)
    shard: Shard | None = None
    open_: dict[str, list[dict[str, Any]]] = {}
    open_branches: dict[str, list[dict[str, Any]]] = {}
    torn: list[int] | None = [] if torn_tail else None
    for number, obj in iter_objects(p, torn):
        kind = obj.get("kind")
        if shard is None:
            if kind != "header" or obj.get("schema") not in SHARD_SCHEMAS:
                raise DatasetLineError(
                    p,
                    number,
                    f"the first record must be the shard header (schema "
                    f"{' or '.join(map(repr, SHARD_SCHEMAS))}); got kind={kind!r}, "
                    f"schema={obj.get('schema')!r}",
                    "collect the shard with `smcplan train collect`",
                )
            shard = Shard(header=obj)
            continue
        if kind in ("transition", "branch"):
            _check(p, number, obj, TRANSITION_FIELDS, kind)
            _truncated(p, number, obj, shard.header)
            into = open_ if kind == "transition" else open_branches
            into.setdefault(obj["episode"], []).append(obj)
        elif kind == "episode":
            _check(p, number, obj, EPISODE_FIELDS, "episode")
            shard.episodes[obj["episode"]] = obj
            shard.transitions += open_.pop(obj["episode"], [])
            shard.branches += open_branches.pop(obj["episode"], [])
        else:
            raise DatasetLineError(
                p,
                number,
                f"unknown record kind {kind!r}",
                "kind must be 'transition', 'branch' or 'episode' after the header",
            )
    if shard is None:
        raise DatasetLineError(
            p,
            1,
            "the file has no complete header line (empty, or torn while it was written)",
            "delete the file and run `smcplan train collect` again without --resume",
        )
    shard.partial = [t for rows in open_.values() for t in rows]
    shard.torn_line = torn[0] if torn else None
    return shard


def read_examples(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read an SFT example file: ``{"prompt", "completion"}`` per line, both non-empty."""
    p = Path(path)
    rows = []
    for number, obj in iter_objects(p):
        _check(p, number, obj, EXAMPLE_FIELDS, "example")
        if not obj["completion"]:
            raise DatasetLineError(
                p, number, "the completion is empty", "drop the line or give the expected answer"
            )
        rows.append({"prompt": obj["prompt"], "completion": obj["completion"]})
    if not rows:
        raise DatasetLineError(p, 1, "no examples in the file", "build examples first")
    return rows


def subsample_and_save(
    examples: list[dict[str, Any]],
    max_examples: int | None,
    seed: int,
    out: str | os.PathLike[str],
) -> tuple[list[dict[str, Any]], Path]:
    """At most ``max_examples`` of ``examples`` (a uniform sample without replacement, seeded by
    ``seed``; all of them when ``None`` or fewer), written one JSON object a line to
    ``out/examples.jsonl`` (``out`` is created); returns the kept examples and ``out``."""
    if max_examples is not None and len(examples) > max_examples:
        examples = random.Random(seed).sample(
            examples, check_int(max_examples, "max_examples", minimum=1)
        )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "examples.jsonl", "w", encoding="utf-8") as handle:
        for ex in examples:
            handle.write(jsonl_line(ex))
    return examples, out


def write_sft_manifest(
    out: Path,
    trainer: str,
    model: str | None,
    result: Any,
    examples: list[dict[str, Any]],
    headers: list[dict[str, Any]],
    **extra: Any,
) -> dict[str, Any]:
    """``out/train.json`` of an SFT trainer (``result``: an
    :class:`~smcplan.llm.finetune.SFTResult`): the trainer, model, weights, example count,
    ``extra`` fields, steps, seconds, losses, resume point, settings and the shards' headers;
    returns the manifest."""
    manifest = {
        "trainer": trainer,
        "model": model or "smollm2-135m",
        "weights": str(result.weights),
        "examples": len(examples),
        **extra,
        "steps": result.steps,
        "seconds": result.seconds,
        "losses": result.losses,
        "resumed_from": result.resumed_from,
        "settings": result.settings,
        "shards": headers,
    }
    write_json(Path(out) / "train.json", manifest)
    return manifest
