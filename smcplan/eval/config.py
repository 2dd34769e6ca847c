"""A sweep's configuration and its run directory's bookkeeping: identity check, resume, metrics.

A run directory (layout in :mod:`smcplan.eval.records`) holds ``config.json``, one summary per
finished episode and ``metrics.json``. Resuming reads the summaries back and runs only the
episodes without one; a configuration whose :data:`IDENTITY_FIELDS` differ from the recorded ones
is refused (:class:`RunConfigMismatch`), because it would change what an episode means.

Imports only the standard library and the other ``smcplan.eval`` record/metric modules.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from smcplan.errors import SmcplanError
from smcplan.eval.episodes import EpisodeSpec
from smcplan.eval.metrics import EpisodeStats, aggregate, group_metrics
from smcplan.eval.records import CONFIG_SCHEMA, RunPaths, atomic_write_json, read_json, read_summary

__all__ = [
    "IDENTITY_FIELDS",
    "EvalConfig",
    "RunConfigMismatch",
    "check_config",
    "load_summaries",
    "pending",
    "write_config",
    "write_run_metrics",
]

#: Config fields that must match when a run directory is resumed (they change what an episode
#: means); the sweep fields (env, split, seeds, episodes) may change between invocations.
IDENTITY_FIELDS = (
    "agent",
    "model",
    "quantization",
    "seed",
    "max_steps",
    "trials",
    "agent_config",
)


class RunConfigMismatch(SmcplanError, ValueError):
    """A run directory is being resumed with a configuration that changes its episodes' meaning."""


@dataclass
class EvalConfig:
    """One ``smcplan eval`` invocation.

    ``envs``: env names (``twx:coin``) or prefixes (``twx`` = every ``twx:*`` game of the split).
    ``seeds`` overrides ``split``. ``episodes``: at most this many per env. ``model``: name for
    ``smcplan.llm.load_model`` (``None`` = the packaged SmolLM2), loaded only for agents whose
    registry entry declares ``lm``. ``agent_config``/``env_config``: extra keyword arguments.
    """

    envs: list[str]
    agent: str
    out: str
    split: str | None = "dev"
    seeds: list[int] | None = None
    episodes: int | None = None
    model: str | None = None
    quantization: str | None = None
    seed: int = 0
    max_steps: int = 50
    trials: int = 1
    agent_config: dict[str, Any] = field(default_factory=dict)
    env_config: dict[str, Any] = field(default_factory=dict)
    retry_errors: bool = False
    fail_fast: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.envs, str):
            self.envs = [e for e in self.envs.split(",") if e]
        if self.max_steps <= 0:
            raise ValueError(f"max_steps must be positive, got {self.max_steps}")
        if self.trials <= 0:
            raise ValueError(f"trials must be positive, got {self.trials}")

    def identity(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in IDENTITY_FIELDS}


def now() -> str:
    """The UTC time, to the second, in ISO 8601."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _canon(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def check_config(paths: RunPaths, config: EvalConfig) -> None:
    """Raise :class:`RunConfigMismatch` if ``paths`` was written with another identity."""
    if not paths.config.exists():
        return
    old = read_json(paths.config).get("identity", {})
    new = config.identity()
    diffs = [
        f"{k}: {old.get(k)!r} -> {new[k]!r}"
        for k in IDENTITY_FIELDS
        if k in old and _canon(old[k]) != _canon(new[k])
    ]
    if diffs:
        raise RunConfigMismatch(
            f"run directory {paths.root} was made with another configuration ({'; '.join(diffs)});"
            " use another --out, or the same settings to resume"
        )


def write_config(paths: RunPaths, config: EvalConfig, specs: Sequence[EpisodeSpec]) -> None:
    """Write ``config.json``: identity, full config, episode ids and the software versions."""
    import smcplan
    from smcplan.planning.config import world_model_of

    world = world_model_of(config.agent_config)
    atomic_write_json(
        paths.config,
        {
            "schema": CONFIG_SCHEMA,
            "identity": config.identity(),
            "config": asdict(config),
            # slow thinking that steps clones of the real environment: an oracle world model
            "oracle_world_model": bool(world is not None and world.oracle),
            "episodes": [s.id for s in specs],
            "smcplan_version": getattr(smcplan, "__version__", None),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "written_at": now(),
        },
    )


def load_summaries(out: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every finished episode summary of a run directory, sorted by sweep index."""
    paths = RunPaths(out)
    summaries = [read_summary(p) for p in paths.summaries()]
    return sorted(summaries, key=lambda s: (s.get("index", 0), s.get("episode", "")))


def pending(
    paths: RunPaths, specs: Sequence[EpisodeSpec], retry_errors: bool
) -> list[tuple[int, EpisodeSpec]]:
    """``(sweep index, spec)`` of the episodes without a summary (or with an error summary,
    when ``retry_errors``), in sweep order."""
    finished: dict[str, dict[str, Any]] = {}
    for p in paths.summaries():
        summary = read_summary(p)
        finished[summary["episode"]] = summary
    todo = []
    for index, spec in enumerate(specs):
        done = finished.get(spec.id)
        if done is not None and done.get("status") == "error" and retry_errors:
            done = None
        if done is None:
            todo.append((index, spec))
    return todo


def write_run_metrics(out: str | os.PathLike[str], *, seed: int = 0) -> dict[str, Any]:
    """Recompute ``metrics.json`` (per benchmark and over all episodes) from the summaries."""
    paths = RunPaths(out)
    stats = [EpisodeStats.from_dict(s["stats"]) for s in load_summaries(out)]
    per_env = group_metrics(stats, seed=seed)
    result = {
        "per_env": {env: m.to_dict() for env, m in per_env.items()},
        "all": aggregate(stats, seed=seed).to_dict(),
    }
    atomic_write_json(paths.metrics, result)
    return result
