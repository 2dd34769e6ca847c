"""The evaluation harness: run an agent on a sweep of episodes, log every step, resume after a kill.

For each episode (see :mod:`smcplan.eval.episodes`) the harness builds a fresh agent seeded by
``episode_seed(run seed, episode id)``, reseeds the global RNGs (``random``, ``numpy`` and, when
already imported, ``torch``) with the same value, resets the environment with the episode's
seed and alternates ``agent.act`` / ``env.step`` until ``done`` or ``max_steps``. With
``trials > 1`` a lost episode is retried on the same task with the same agent (Reflexion's
protocol: ``end_episode`` lets it reflect between trials) until it wins or the trials run out.

Crash safety (see :mod:`smcplan.eval.records`): step lines are flushed as they happen, the
episode summary is written atomically last, and a rerun skips every episode that has a
summary. A backend that dies (``EnvError`` or any exception from the environment) or an agent
that raises is recorded as an error episode and the sweep goes on; ``KeyboardInterrupt`` stops it.

The parts live in their own modules: :mod:`~smcplan.eval.config` (configuration, identity check,
resume, metrics file), :mod:`~smcplan.eval.build` (agents, model, environments, seeds),
:mod:`~smcplan.eval.loop` (one episode) and :mod:`~smcplan.eval.progress` (bars); this module
composes them into :func:`run_eval` and re-exports their public names.

Layering: imports ``smcplan.envs``, ``smcplan.agents`` and ``smcplan.llm`` lazily (through
:mod:`~smcplan.eval.build`); nothing in ``smcplan`` below ``eval``/``cli`` imports this module.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from smcplan.eval.build import (
    EnvPool,
    agent_needs_lm,
    check_agent,
    default_load_lm,
    default_make_agent,
    default_make_env,
    reseed_lm,
    seed_everything,
)
from smcplan.eval.config import (
    IDENTITY_FIELDS,
    EvalConfig,
    RunConfigMismatch,
    check_config,
    load_summaries,
    now,
    pending,
    write_config,
    write_run_metrics,
)
from smcplan.eval.episodes import EpisodeSpec, episode_seed, resolve_episodes
from smcplan.eval.loop import (
    Callbacks,
    EpisodeFailed,
    EpisodeLog,
    error_record,
    run_episode,
    usage,
    usage_delta,
)
from smcplan.eval.metrics import episode_stats
from smcplan.eval.progress import Bars
from smcplan.eval.records import EPISODE_SCHEMA, JsonlWriter, RunPaths, atomic_write_json

__all__ = [
    "IDENTITY_FIELDS",
    "EpisodeLog",
    "EvalConfig",
    "RunConfigMismatch",
    "agent_needs_lm",
    "default_load_lm",
    "default_make_agent",
    "default_make_env",
    "load_summaries",
    "reseed_lm",
    "run_episode",
    "run_eval",
    "seed_everything",
    "write_run_metrics",
]

MakeAgent = Callable[[str, Any, int, dict[str, Any]], Any]


def run_eval(
    config: EvalConfig,
    *,
    specs: Sequence[EpisodeSpec] | None = None,
    make_env: Callable[..., Any] | None = None,
    make_agent: MakeAgent | None = None,
    load_lm: Callable[[str | None, str | None], Any] | None = None,
    progress: bool = True,
    show: TextIO | None = None,
) -> list[dict[str, Any]]:
    """Run (or resume) the sweep of ``config`` into ``config.out``; return all episode summaries.

    ``specs`` overrides the episodes resolved from the config; ``make_env``/``make_agent``/
    ``load_lm`` replace ``smcplan.envs.make``/``smcplan.agents.make``/``smcplan.llm.load_model``
    (fault injection in tests, custom setups). ``show``: a stream that receives the trajectory
    (task, thoughts, actions, feedback) as it happens.
    """
    paths = RunPaths(config.out)
    if make_agent is None:
        check_agent(config.agent)  # unknown agent names fail before anything is written
    if specs is None:
        specs = resolve_episodes(
            config.envs,
            split=config.split,
            seeds=config.seeds,
            episodes=config.episodes,
            env_kwargs=config.env_config,
        )
    check_config(paths, config)
    paths.episodes.mkdir(parents=True, exist_ok=True)
    write_config(paths, config, specs)
    todo = pending(paths, specs, config.retry_errors)
    make_env = make_env or default_make_env
    make_agent = make_agent or default_make_agent
    load_lm = load_lm or default_load_lm

    bars = Bars(len(specs), len(specs) - len(todo), config.max_steps, progress, show)
    pool = EnvPool(make_env, {"max_steps": config.max_steps})
    lm: Any = None
    lm_loaded = False
    try:
        for index, spec in todo:
            # the model is loaded only when an episode is left to run, and only if the agent
            # declares that it needs one
            if not lm_loaded:
                if config.model != "none" and agent_needs_lm(config.agent):
                    lm = load_lm(config.model, config.quantization)
                lm_loaded = True
            summary = _run_one(config, paths, index, spec, pool, make_agent, lm, bars)
            bars.end_episode(summary)
            if config.fail_fast and summary["status"] == "error":
                raise RuntimeError(
                    f"episode {spec.id} failed ({summary['error']['type']}: "
                    f"{summary['error']['message']})"
                )
    finally:
        bars.close()
        pool.close()
    write_run_metrics(config.out, seed=config.seed)
    wanted = {s.id for s in specs}
    return [s for s in load_summaries(config.out) if s["episode"] in wanted]


def _play(
    config: EvalConfig,
    spec: EpisodeSpec,
    pool: EnvPool,
    make_agent: MakeAgent,
    lm: Any,
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


def _run_one(
    config: EvalConfig,
    paths: RunPaths,
    index: int,
    spec: EpisodeSpec,
    pool: EnvPool,
    make_agent: MakeAgent,
    lm: Any,
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
            _play(config, spec, pool, make_agent, lm, agent_seed, writer, log, bars)
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
        "llm_usage": usage_delta(usage0, lm),
        "wall_s": time.perf_counter() - t0,
        "started_at": started,
        "finished_at": now(),
    }
    atomic_write_json(paths.summary(episode_id), summary)
    return summary
