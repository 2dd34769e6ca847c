"""Evaluation: run agents on benchmark sweeps, compute the seed papers' metrics, write reports.

``run_eval`` (harness, resumable), ``metrics`` (pure: SR, AR, AvgS, hallucination, invalid and
repetitive rates, with Wilson/bootstrap intervals), ``report`` (markdown tables, PNG plots, HTML
trajectory viewer). The top of the stack: it may import agents, envs and llm (lazily);
nothing in ``smcplan`` imports ``smcplan.eval``.
"""

from __future__ import annotations

from smcplan.eval.episodes import EpisodeSpec, resolve_episodes
from smcplan.eval.metrics import (
    EpisodeStats,
    Estimate,
    RunMetrics,
    aggregate,
    episode_stats,
    group_metrics,
    wilson_interval,
)
from smcplan.eval.runner import EvalConfig, RunConfigMismatch, load_summaries, run_eval

__all__ = [
    "EpisodeSpec",
    "EpisodeStats",
    "Estimate",
    "EvalConfig",
    "RunConfigMismatch",
    "RunMetrics",
    "aggregate",
    "episode_stats",
    "group_metrics",
    "load_summaries",
    "resolve_episodes",
    "run_eval",
    "wilson_interval",
]
