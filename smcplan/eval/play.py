"""One episode of a sweep, end to end: seed, build the env and the agent, play, summarise.

:func:`run_one_episode` is what both executors run per episode: the in-process loop of
:func:`smcplan.eval.runner.run_eval` and the Ray workers of :mod:`smcplan.eval.ray_sweep` (same
per-episode seed, same reseeding, same records), so ``--workers N`` reproduces ``--workers 1``.

Imports the eval layer's parts (build, config, loop, metrics, progress, records); never the
runner or the CLI.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smcplan.eval.build import EnvPool, attach_simulator, reseed_lm, seed_everything
from smcplan.eval.config import EvalConfig, now
from smcplan.eval.episodes import EpisodeSpec, episode_seed
from smcplan.eval.loop import (
    Callbacks,
    EpisodeFailed,
    EpisodeLog,
    error_record,
    run_episode,
    usage,
)
from smcplan.eval.metrics import episode_stats
from smcplan.eval.progress import Bars
from smcplan.eval.records import EPISODE_SCHEMA, JsonlWriter, RunPaths, atomic_write_json

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["play_episode", "run_one_episode"]

MakeAgent = Callable[[str, Any, int, dict[str, Any]], Any]


def play_episode(
    config: EvalConfig,
    spec: EpisodeSpec,
    pool: EnvPool,
    make_agent: MakeAgent,
    lm: LanguageModel | None,
    agent_seed: int,
    writer: JsonlWriter,
    log: EpisodeLog,
    bars: Bars,
) -> None:
    """Build the env and the agent and play the episode; failures of either raise
    ``EpisodeFailed``, a bad name or option (``ValueError``/``TypeError``) or a missing benchmark
    (``ImportError``) propagates: it is fatal for the sweep, not an episode error."""
    try:
        env = pool.get(spec)
    except (ValueError, TypeError, ImportError):
        raise
    except Exception as exc:  # noqa: BLE001 - the backend failed to start
        raise EpisodeFailed("env", exc) from exc
    try:
        agent = make_agent(config.agent, lm, agent_seed, dict(config.agent_config))
        attach_simulator(agent, env)
    except (ValueError, TypeError):
        raise
    except Exception as exc:  # noqa: BLE001
        raise EpisodeFailed("agent", exc) from exc
    run_episode(
        spec,
        env,
        agent,
        max_steps=config.max_steps,
        trials=config.trials,
        writer=writer,
        episode_id=spec.id,
        log=log,
        progress=Callbacks(on_step=bars.on_step, on_trial_start=bars.on_trial_start),
        lm=lm,
    )


_NO_TRIAL = {"won": False, "score": 0.0, "steps": 0, "return": 0.0, "truncated": False}


def run_one_episode(
    config: EvalConfig,
    paths: RunPaths,
    index: int,
    spec: EpisodeSpec,
    pool: EnvPool,
    make_agent: MakeAgent,
    lm: LanguageModel | None,
    bars: Bars,
) -> dict[str, Any]:
    """Seed, play and summarise one episode; write its summary atomically and return it."""
    episode_id = spec.id
    agent_seed = episode_seed(config.seed, episode_id)
    seed_everything(agent_seed)
    reseed_lm(lm, agent_seed)
    usage0 = usage(lm)
    started, t0 = now(), time.perf_counter()
    bars.start_episode(spec)
    log = EpisodeLog()
    error = None
    writer = JsonlWriter(paths.steps(episode_id))
    try:
        try:
            play_episode(config, spec, pool, make_agent, lm, agent_seed, writer, log, bars)
        except EpisodeFailed as failed:
            error = error_record(failed.source, failed.exc)
            if failed.source == "env":
                pool.discard(spec)
        writer.commit()  # not reached on KeyboardInterrupt: the partial file is left behind
    finally:
        writer.close()
    trials = log.trials
    last = trials[-1] if trials else _NO_TRIAL
    status = "error" if error else "ok"
    stats = episode_stats(
        log.records, env=spec.env, won=last["won"], score=last["score"], status=status
    )
    summary = {
        "schema": EPISODE_SCHEMA,
        "episode": episode_id,
        "index": index,
        "env": spec.env,
        "task": spec.task,
        "seed": spec.seed,
        "env_kwargs": spec.env_kwargs,
        "goal": log.goal,
        "agent": config.agent,
        "model": config.model,
        "agent_seed": agent_seed,
        "status": status,
        "error": error,
        "won": bool(last["won"]) and not error,
        "score": float(last["score"]),
        "steps": stats.steps,
        "return": float(last["return"]),
        "truncated": bool(last["truncated"]),
        "trials": trials,
        "stats": stats.to_dict(),
        "llm_usage": log.usage_since(usage0, lm),
        "wall_s": time.perf_counter() - t0,
        "started_at": started,
        "finished_at": now(),
    }
    atomic_write_json(paths.summary(episode_id), summary)
    return summary
