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
that raises is recorded as an error episode and the sweep goes on; SIGINT or SIGTERM stops it
(:mod:`smcplan.interrupts`: the episode in flight is dropped, its partial step file discarded on
resume, and ``smcplan eval`` exits 130 / 143).

The parts live in their own modules: :mod:`~smcplan.eval.config` (configuration, identity check,
resume, metrics file), :mod:`~smcplan.eval.build` (agents, model, environments, seeds),
:mod:`~smcplan.eval.loop` (one episode) and :mod:`~smcplan.eval.progress` (bars); this module
composes them into :func:`run_eval` and re-exports their public names.

Layering: imports ``smcplan.envs``, ``smcplan.agents`` and ``smcplan.llm`` lazily (through
:mod:`~smcplan.eval.build`); nothing in ``smcplan`` below ``eval``/``cli`` imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

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
    pending,
    write_config,
    write_run_metrics,
)
from smcplan.eval.episodes import EpisodeSpec, resolve_episodes
from smcplan.eval.loop import (
    EpisodeLog,
    run_episode,
)
from smcplan.eval.play import MakeAgent, run_one_episode
from smcplan.eval.progress import Bars
from smcplan.eval.records import RunPaths
from smcplan.interrupts import stops_on_signals

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

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


@stops_on_signals  # SIGINT/SIGTERM: SweepInterrupted, the episode in flight is dropped
def run_eval(
    config: EvalConfig,
    *,
    specs: Sequence[EpisodeSpec] | None = None,
    make_env: Callable[..., Any] | None = None,
    make_agent: MakeAgent | None = None,
    load_lm: Callable[[str | None, str | None], Any] | None = None,
    progress: bool = True,
    show: TextIO | None = None,
    workers: int = 1,
    ray_address: str | None = None,
) -> list[dict[str, Any]]:
    """Run (or resume) the sweep of ``config`` into ``config.out``; return all episode summaries.

    ``specs`` overrides the episodes resolved from the config; ``make_env``/``make_agent``/
    ``load_lm`` replace ``smcplan.envs.make``/``smcplan.agents.make``/``smcplan.llm.load_model``
    (fault injection in tests, custom setups). ``show``: a stream that receives the trajectory
    (task, thoughts, actions, feedback) as it happens. ``workers > 1`` (or ``ray_address``) runs
    the episodes on Ray workers (:mod:`smcplan.eval.ray_sweep`), with the same records.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1; got {workers}")
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
    lm: LanguageModel | None = None
    lm_loaded = False

    def episode_ended(summary: dict[str, Any]) -> None:
        bars.end_episode(summary)
        if config.fail_fast and summary["status"] == "error":
            raise RuntimeError(
                f"episode {summary['episode']} failed ({summary['error']['type']}: "
                f"{summary['error']['message']})"
            )

    try:
        if workers > 1 or ray_address:
            from smcplan.eval.ray_sweep import run_parallel

            run_parallel(
                config, paths, todo, workers=workers, address=ray_address, make_env=make_env,
                make_agent=make_agent, load_lm=load_lm, on_summary=episode_ended,
            )  # fmt: skip
            todo = []
        for index, spec in todo:
            # the model is loaded only when an episode is left to run, and only if the agent
            # declares that it needs one
            if not lm_loaded:
                if config.model != "none" and agent_needs_lm(config.agent):
                    lm = load_lm(config.model, config.quantization)
                lm_loaded = True
            episode_ended(run_one_episode(config, paths, index, spec, pool, make_agent, lm, bars))
    finally:
        bars.close()
        pool.close()
    write_run_metrics(config.out, seed=config.seed)
    wanted = {s.id for s in specs}
    return [s for s in load_summaries(config.out) if s["episode"] in wanted]
