"""``smcplan eval --workers N [--ray-address ADDR]``: the sweep's episodes on Ray workers.

Worker side: :class:`WorkerFactory` is shipped to each Ray actor, which builds an
:class:`EpisodeWorker` there: its own environment pool and (when the agent needs one) its own
language model, loaded once per worker (a local model, or a client of a shared serving engine
for ``openai:`` models). The worker runs an episode exactly as ``--workers 1`` does (the same
:func:`smcplan.eval.play.run_one_episode`: same per-episode seed, same reseeding, same records)
into a scratch directory of its own and returns the step lines and the summary.

Driver side: :func:`write_outcome` puts them into the run directory, steps first and the
summary last, each atomically, so the directory has the same files and format as a sequential
run and stays resumable; an episode whose worker died twice gets an error summary
(``error.source == "worker"``). Which worker ran an episode, and when, changes nothing in its
records except the timings (``wall_s``, ``started_at``, ``finished_at``, ``agent_s``,
``env_s``).

Ray itself is used only through :mod:`smcplan.eval.parallel`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smcplan.eval.episodes import EpisodeSpec, episode_seed
from smcplan.eval.records import EPISODE_SCHEMA, RunPaths, atomic_write_json

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["WorkerFactory", "EpisodeWorker", "write_outcome", "failure_summary", "run_parallel"]

#: fields of a summary / step record that measure time and so differ between runs
TIMING_FIELDS = ("wall_s", "started_at", "finished_at", "agent_s", "env_s")


@dataclass
class WorkerFactory:
    """Picklable recipe for one worker's episode runner (called inside the Ray actor)."""

    config: Any
    make_env: Callable[..., Any]
    make_agent: Callable[..., Any]
    load_lm: Callable[[str | None, str | None], Any]

    def __call__(self) -> EpisodeWorker:
        return EpisodeWorker(self)


class EpisodeWorker:
    """Runs episodes one at a time in a Ray worker; see the module docstring."""

    def __init__(self, factory: WorkerFactory) -> None:
        from smcplan.eval.build import EnvPool
        from smcplan.eval.progress import Bars

        self.f = factory
        self.scratch = tempfile.mkdtemp(prefix="smcplan-worker-")
        self.paths = RunPaths(self.scratch)
        self.paths.episodes.mkdir(parents=True, exist_ok=True)
        self.pool = EnvPool(factory.make_env, {"max_steps": factory.config.max_steps})
        self.bars = Bars(0, 0, factory.config.max_steps, False, None)
        self.lm: LanguageModel | None = None
        self._lm_loaded = False

    def __call__(self, index: int, spec: EpisodeSpec) -> dict[str, Any]:
        from smcplan.eval.build import agent_needs_lm
        from smcplan.eval.play import run_one_episode

        config = self.f.config
        if not self._lm_loaded:
            if config.model != "none" and agent_needs_lm(config.agent):
                self.lm = self.f.load_lm(config.model, config.quantization)
            self._lm_loaded = True
        summary = run_one_episode(
            config, self.paths, index, spec, self.pool, self.f.make_agent, self.lm, self.bars
        )
        steps_path = self.paths.steps(spec.id)
        with open(steps_path, encoding="utf-8") as handle:
            steps = handle.read()
        os.remove(steps_path)
        os.remove(self.paths.summary(spec.id))
        return {"summary": summary, "steps": steps}

    def close(self) -> None:
        self.pool.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


def write_outcome(paths: RunPaths, outcome: dict[str, Any]) -> dict[str, Any]:
    """Write a worker's episode into the run directory (steps, then summary; both atomic)."""
    summary = outcome["summary"]
    target = paths.steps(summary["episode"])
    tmp = target.with_name(target.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(outcome["steps"])
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, target)
    atomic_write_json(paths.summary(summary["episode"]), summary)
    return summary


def failure_summary(
    config: Any, index: int, spec: EpisodeSpec, exc: BaseException
) -> dict[str, Any]:
    """The summary of an episode whose worker process died on every attempt."""
    from smcplan.eval.config import now as _now
    from smcplan.eval.loop import error_record
    from smcplan.eval.metrics import episode_stats

    stats = episode_stats([], env=spec.env, won=False, score=0.0, status="error")
    now = _now()
    return {
        "schema": EPISODE_SCHEMA,
        "episode": spec.id,
        "index": index,
        "env": spec.env,
        "task": spec.task,
        "seed": spec.seed,
        "env_kwargs": spec.env_kwargs,
        "goal": "",
        "agent": config.agent,
        "model": config.model,
        "agent_seed": episode_seed(config.seed, spec.id),
        "status": "error",
        "error": error_record("worker", exc),
        "won": False,
        "score": 0.0,
        "steps": stats.steps,
        "return": 0.0,
        "truncated": False,
        "trials": [],
        "stats": stats.to_dict(),
        "llm_usage": None,
        "wall_s": 0.0,
        "started_at": now,
        "finished_at": now,
    }


def run_parallel(
    config: Any,
    paths: RunPaths,
    todo: Sequence[tuple[int, EpisodeSpec]],
    *,
    workers: int,
    address: str | None,
    make_env: Callable[..., Any],
    make_agent: Callable[..., Any],
    load_lm: Callable[[str | None, str | None], Any],
    on_summary: Callable[[dict[str, Any]], None],
    on_started: Callable[[list[int]], None] | None = None,
) -> None:
    """Run ``todo`` on ``workers`` Ray actors, writing each finished episode as it arrives."""
    from smcplan.eval.parallel import run_on_ray

    def on_result(index: int, spec: EpisodeSpec, outcome: dict[str, Any]) -> None:
        on_summary(write_outcome(paths, outcome))

    def on_failure(index: int, spec: EpisodeSpec, exc: BaseException) -> None:
        summary = failure_summary(config, index, spec, exc)
        (paths.steps(spec.id)).write_text("", encoding="utf-8")
        atomic_write_json(paths.summary(spec.id), summary)
        on_summary(summary)

    run_on_ray(
        list(todo),
        WorkerFactory(config, make_env, make_agent, load_lm),
        workers=workers,
        address=address,
        on_result=on_result,
        on_failure=on_failure,
        on_started=on_started,
    )
