"""On-disk layout of an evaluation run, and crash-safe JSON/JSONL writing.

A run directory holds::

    config.json                      the run's configuration (checked again on resume)
    episodes/<id>.steps.jsonl        one JSON line per executed step (see STEP_FIELDS)
    episodes/<id>.json               one summary per finished episode (see EPISODE_FIELDS)
    metrics.json                     aggregate metrics per benchmark, rewritten after the sweep

While an episode runs its steps go to ``<id>.steps.jsonl.partial`` (flushed line by line, so it
can be followed with ``tail -f``); when it ends the file is renamed to ``<id>.steps.jsonl`` and
then the summary is written atomically (temporary file + ``os.replace``). The summary is the
completion marker: an episode is finished iff its summary exists, so a kill loses at most the
episode in flight, whose partial file is discarded on resume.

Also :class:`Run`, a run directory read back (config, summaries, step files, metrics), the one
type the report, plots and viewer share. Pure standard library plus numpy (for encoding arrays),
:mod:`smcplan.errors` and :mod:`smcplan.eval.metrics` (for ``RunMetrics``); must not import envs,
agents or llm.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smcplan import jsonfile
from smcplan.errors import SmcplanError
from smcplan.eval.metrics import EpisodeStats, RunMetrics

__all__ = [
    "STEP_SCHEMA",
    "EPISODE_SCHEMA",
    "CONFIG_SCHEMA",
    "STEP_FIELDS",
    "EPISODE_FIELDS",
    "RunPaths",
    "to_jsonable",
    "dumps",
    "atomic_write_json",
    "read_json",
    "read_jsonl",
    "read_summary",
    "RunFileError",
    "DamagedLinesWarning",
    "JsonlWriter",
    "Run",
    "slug",
]

STEP_SCHEMA = "smcplan.step/1"
EPISODE_SCHEMA = "smcplan.episode/1"
CONFIG_SCHEMA = "smcplan.run/1"

#: Fields of one step line, in order (``meta`` is the agent's ``Step.meta``, JSON-encoded).
STEP_FIELDS = (
    "schema",  # "smcplan.step/1"
    "episode",  # episode id
    "trial",  # 0-based trial (Reflexion-style retries of the same task; 0 without retries)
    "t",  # 0-based step index within the trial
    "observation",  # the observation the agent acted on
    "n_admissible",  # number of admissible actions offered to the agent
    "action",
    "thought",
    "tag",
    "meta",
    "feedback",  # the observation the environment returned for the action
    "reward",
    "score",  # info["score"] after the step, in [0, 1]
    "done",
    "won",
    "invalid",  # info["invalid"]: the environment rejected the action
    "admissible",  # the action was one of the admissible actions offered
    "llm_calls",  # measured from lm.usage around agent.act; else from meta (0 if none)
    "llm_tokens",  # prompt + generated + scored tokens (same sources)
    "llm_usage",  # the lm.usage delta of this step, or null without a language model
    "agent_s",  # wall time of agent.act
    "env_s",  # wall time of env.step
)

#: Fields of one episode summary.
EPISODE_FIELDS = (
    "schema",  # "smcplan.episode/1"
    "episode",
    "index",  # position in the sweep
    "env",
    "task",  # task/variant label from the split (may be null)
    "seed",  # the seed passed to env.reset
    "env_kwargs",
    "goal",  # env.task: the task description
    "agent",
    "model",
    "agent_seed",
    "status",  # "ok" | "error"
    "error",  # null, or {source: env|agent, type, message, traceback}
    "won",
    "score",
    "steps",
    "return",  # sum of rewards over the final trial
    "truncated",  # the final trial hit max_steps without done
    "trials",  # [{trial, won, score, steps, return, truncated}]
    "stats",  # smcplan.eval.metrics.EpisodeStats as a dict
    "llm_usage",  # lm.usage delta over the whole episode (incl. reset/end_episode), or null
    "wall_s",
    "started_at",
    "finished_at",
)

_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


def slug(text: str) -> str:
    """A file-name-safe form of ``text``: ``"twx:coin"`` -> ``"twx_coin"``."""
    return _SLUG.sub("_", str(text)).strip("_") or "_"


class RunPaths:
    """Paths inside one run directory."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.episodes = self.root / "episodes"
        self.config = self.root / "config.json"
        self.metrics = self.root / "metrics.json"

    def summary(self, episode: str) -> Path:
        return self.episodes / f"{episode}.json"

    def steps(self, episode: str) -> Path:
        return self.episodes / f"{episode}.steps.jsonl"

    def partial_steps(self, episode: str) -> Path:
        return self.episodes / f"{episode}.steps.jsonl.partial"

    def summaries(self) -> list[Path]:
        """Finished episodes' summaries, sorted by name (temporary files excluded)."""
        if not self.episodes.is_dir():
            return []
        return sorted(p for p in self.episodes.glob("*.json") if not p.name.startswith("."))


def to_jsonable(value: Any) -> Any:
    """Convert numpy/jax arrays and scalars, tuples, sets, dataclasses and paths to JSON types;
    strings are made UTF-8-encodable (lone surrogates become U+FFFD).

    Anything else unknown becomes its ``repr`` so that a step is never lost to an odd meta value.
    """
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:  # lone surrogates (e.g. from a model's JSON): replace them
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else str(value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy / jax arrays and scalars
        try:
            return to_jsonable(value.tolist())
        except Exception:  # noqa: BLE001 - fall through to repr
            pass
    if hasattr(value, "to_dict") and callable(value.to_dict):
        return to_jsonable(value.to_dict())
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return to_jsonable(asdict(value))
    return repr(value)


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` after :func:`to_jsonable`, UTF-8 kept readable, through the shared writer
    (:func:`smcplan.jsonfile.dumps`: never a ``NaN`` token)."""
    return jsonfile.dumps(to_jsonable(obj), ensure_ascii=False, **kwargs)


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as JSON so that readers see the old file or the complete new one, never half.

    Writes a temporary file in the same directory, flushes and fsyncs it, then ``os.replace``-s it
    over ``path`` (atomic on POSIX and Windows).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(dumps(obj, indent=1))
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunFileError(SmcplanError, ValueError):
    """A run file (config or episode summary) that cannot be read; the message names the file."""


class DamagedLinesWarning(UserWarning):
    """Some lines of a JSONL file were skipped because they are not JSON objects."""


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON document in ``path``; a damaged file raises :class:`RunFileError` naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunFileError(
            f"{path}: damaged JSON ({exc}); delete the file (an episode summary: its episode "
            "re-runs on resume)"
        ) from exc


def read_summary(path: str | os.PathLike[str]) -> dict[str, Any]:
    """An episode summary (``episodes/<id>.json``); one that is damaged or not a summary raises
    :class:`RunFileError` naming the file and the fix (delete it: the episode re-runs)."""
    summary = read_json(path)
    problem = None
    if not isinstance(summary, dict):
        problem = f"a JSON {type(summary).__name__}, not an object"
    elif not isinstance(summary.get("episode"), str) or not isinstance(summary.get("stats"), dict):
        problem = "no 'episode' id or no 'stats' object"
    else:
        try:
            EpisodeStats.from_dict(summary["stats"])
        except (KeyError, TypeError) as exc:
            problem = f"its stats lack {exc}"
    if problem:
        raise RunFileError(
            f"{path}: not an episode summary ({problem}); delete it and re-run the sweep to redo "
            "its episode"
        )
    return summary


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSONL file, one per line.

    A damaged line (torn by a killed writer, garbage, binary bytes, or JSON that is not an
    object) is skipped; after the file, one :class:`DamagedLinesWarning` names ``file:line`` of
    each skipped line (the first ten) and their count.
    """
    skipped: list[int] = []
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8").strip()
                if not line:
                    continue
                record = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError):
                skipped.append(lineno)
                continue
            if not isinstance(record, dict):
                skipped.append(lineno)
                continue
            yield record
    if skipped:
        where = ", ".join(f"{path}:{n}" for n in skipped[:10]) + (
            ", ..." if len(skipped) > 10 else ""
        )
        warnings.warn(
            f"skipped {len(skipped)} damaged line{'s' if len(skipped) > 1 else ''} (not a JSON "
            f"object): {where}",
            DamagedLinesWarning,
            stacklevel=2,
        )


class JsonlWriter:
    """Append JSON lines to ``<path>.partial``, flushed per line; ``commit()`` renames to ``path``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.partial, "w", encoding="utf-8")  # noqa: SIM115 - closed in commit/close

    def write(self, record: Any) -> None:
        self._f.write(dumps(record))
        self._f.write("\n")
        self._f.flush()

    def commit(self) -> None:
        """Flush, fsync, close and atomically rename the partial file to its final name."""
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        os.replace(self.partial, self.path)

    def close(self) -> None:
        """Close without committing (the partial file stays; resume discards it)."""
        if not self._f.closed:
            self._f.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@dataclass
class Run:
    """One run directory: its configuration, finished episode summaries and a display label."""

    path: Path
    config: dict[str, Any]
    summaries: list[dict[str, Any]]
    label: str = ""
    metrics: dict[str, RunMetrics] = field(default_factory=dict)  # per benchmark
    overall: RunMetrics | None = None

    @property
    def agent(self) -> str:
        return str(self.config.get("identity", {}).get("agent", "?"))

    @property
    def model(self) -> str | None:
        return self.config.get("identity", {}).get("model")

    @property
    def envs(self) -> list[str]:
        seen: dict[str, None] = {}
        for s in self.summaries:
            seen.setdefault(s["env"], None)
        return list(seen)

    def steps(self, episode: str) -> list[dict[str, Any]]:
        """The step records of one episode (empty if its step file is missing)."""
        path = RunPaths(self.path).steps(episode)
        return list(read_jsonl(path)) if path.exists() else []

    def iter_steps(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """(summary, step) for every step of every finished episode."""
        for s in self.summaries:
            for step in self.steps(s["episode"]):
                yield s, step
