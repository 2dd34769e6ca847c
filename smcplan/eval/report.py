"""``smcplan report``: side-by-side tables (markdown), plots (PNG) and an HTML trajectory viewer.

Reads only run directories written by :mod:`smcplan.eval.runner` (``config.json`` and the episode
summaries; step files only for the plan diagnostics and the viewer). Imports ``matplotlib``
lazily in :mod:`smcplan.eval.plots`; must not import envs, agents or llm.

Tables follow the seed papers' layout (RLAW / NeSyFS / RLVMR): one row per agent, and per
benchmark the success rate (SR, %), the average steps of successful episodes (AvgS) and the
hallucination rate (HR, % of episodes with at least one rejected action), each with its 95%
interval (Wilson for rates, seeded percentile bootstrap for means; see :mod:`metrics`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smcplan.eval.metrics import (
    EpisodeStats,
    Estimate,
    aggregate,
    group_metrics,
    upgrade_stats,
)
from smcplan.eval.records import Run, RunPaths, read_json, read_summary

__all__ = [
    "Run",
    "load_run",
    "fmt_estimate",
    "markdown_report",
    "write_report",
]


def load_run(path: str | os.PathLike[str], *, seed: int = 0, num_resamples: int = 2000) -> Run:
    """Load a run directory and compute its metrics per benchmark and overall."""
    paths = RunPaths(path)
    if not paths.config.exists():
        raise FileNotFoundError(
            f"{path} is not a run directory (no config.json); make one with `smcplan eval`"
        )
    config = read_json(paths.config)
    summaries = sorted(
        (read_summary(p) for p in paths.summaries()),
        key=lambda s: (s.get("index", 0), s.get("episode", "")),
    )
    run = Run(path=Path(path), config=config, summaries=summaries)
    stats = [
        EpisodeStats.from_dict(
            s["stats"]
            if "repeated_pair_steps" in s["stats"]
            else upgrade_stats(s["stats"], run.steps(s["episode"]))
        )
        for s in summaries
    ]
    run.metrics = group_metrics(stats, seed=seed, num_resamples=num_resamples)
    run.overall = aggregate(stats, seed=seed, num_resamples=num_resamples)
    return run


def variant(config: dict[str, Any]) -> str:
    """What of the agent's configuration a reader must see in its label: ``"oracle world model"``
    when slow thinking steps clones of the real environment (``world_model="simulator"``),
    ``"learned world model"`` for a trained one (``world_model="learned"``; not an oracle),
    ``"free"`` for free-form
    actions (``action_mode="free"``), ``"guided"`` for RLVMR with its process rewards used as an
    inference-time guide (``guidance`` or ``tag_guidance`` > 0; the paper's inference has none),
    joined by ``", "``; ``""`` for the defaults."""
    ident = config.get("identity", {})
    agent_config = ident.get("agent_config") or config.get("config", {}).get("agent_config") or {}
    from smcplan.planning.config import WorldModelKind, world_model_of

    world = world_model_of(agent_config)
    parts = []
    if config.get("oracle_world_model") or (world is not None and world.oracle):
        parts.append("oracle world model")
    elif world is WorldModelKind.LEARNED:
        parts.append("learned world model")
    if str(agent_config.get("action_mode", "admissible")) == "free":
        parts.append("free")
    agent = str(ident.get("agent", ""))
    if agent.startswith("rlvmr") and "+guide" not in agent:
        beta = [agent_config.get(k, 0) for k in ("guidance", "tag_guidance")]
        if any(float(b or 0) > 0 for b in beta):
            parts.append("guided")
    return ", ".join(parts)


def _label_runs(runs: Sequence[Run]) -> None:
    """Label = agent and its :func:`variant` in braces (``react {free}``); add the model, then
    the directory name, until labels are unique."""

    def base(r: Run) -> str:
        v = variant(r.config)
        return f"{r.agent} {{{v}}}" if v else r.agent

    for run in runs:
        run.label = base(run)
    for extend in (
        lambda r: f"{base(r)} ({r.model})" if r.model else base(r),
        lambda r: f"{base(r)} [{r.path.name}]",
    ):
        labels = [r.label for r in runs]
        for run in runs:
            if labels.count(run.label) > 1:
                run.label = extend(run)


def fmt_estimate(est: Estimate, *, percent: bool = False, digits: int = 1) -> str:
    """``"74.0 [60.1, 84.2]"`` (``percent`` multiplies by 100); ``"–"`` when undefined."""
    if est.value is None:
        return "–"
    k = 100.0 if percent else 1.0
    if est.lo is None or est.hi is None:
        return f"{est.value * k:.{digits}f}"
    return f"{est.value * k:.{digits}f} [{est.lo * k:.{digits}f}, {est.hi * k:.{digits}f}]"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _benchmarks(runs: Sequence[Run]) -> list[str]:
    seen: dict[str, None] = {}
    for run in runs:
        for env in run.envs:
            seen.setdefault(env, None)
    return list(seen)


def main_table(runs: Sequence[Run]) -> str:
    """Agents × benchmarks: SR % / AvgS / HR %, each with its 95% interval (papers' layout)."""
    benches = _benchmarks(runs)
    header = ["Agent"]
    for b in benches:
        header += [f"{b} SR %", f"{b} AvgS", f"{b} HR %"]
    rows = []
    for run in runs:
        row = [run.label]
        for b in benches:
            m = run.metrics.get(b)
            if m is None:
                row += ["", "", ""]
                continue
            row += [
                fmt_estimate(m.success_rate, percent=True),
                fmt_estimate(m.avg_steps_success),
                fmt_estimate(m.hallucination_rate, percent=True),
            ]
        rows.append(row)
    return _table(header, rows)


DETAIL_COLUMNS: tuple[tuple[str, str, bool, int], ...] = (
    # (header, RunMetrics attribute, percent, digits)
    ("SR %", "success_rate", True, 1),
    ("AR %", "average_score", True, 1),
    ("AvgS", "avg_steps_success", False, 1),
    ("HR %", "hallucination_rate", True, 1),
    ("invalid/step %", "invalid_rate", True, 1),
    ("repetitive/step %", "repetitive_rate", True, 1),
    ("repeat (a,o)/step %", "repeated_pair_rate", True, 1),
    ("rejections/ep", "rejections_per_episode", False, 2),
    ("slow thinking/ep", "slow_thinking_per_episode", False, 2),
    ("LLM calls/step", "llm_calls_per_step", False, 2),
    ("tokens/step", "llm_tokens_per_step", False, 0),
    ("cached %", "cache_hit_rate", True, 0),
    ("s/step", "wall_s_per_step", False, 3),
)


def detail_table(runs: Sequence[Run], benchmark: str) -> str:
    """Every metric of every agent on one benchmark, with n and the number of error episodes."""
    header = ["Agent", "n", "errors"] + [c[0] for c in DETAIL_COLUMNS]
    rows = []
    for run in runs:
        m = run.metrics.get(benchmark)
        if m is None:
            continue
        row = [run.label, str(m.n), str(m.n_errors)]
        row += [
            fmt_estimate(getattr(m, attr), percent=pct, digits=d)
            for _, attr, pct, d in DETAIL_COLUMNS
        ]
        rows.append(row)
    return _table(header, rows)


def runs_table(runs: Sequence[Run]) -> str:
    header = ["Agent", "run", "model", "episodes", "errors", "max steps", "trials", "seed"]
    rows = []
    for run in runs:
        ident = run.config.get("identity", {})
        n_err = sum(s.get("status") == "error" for s in run.summaries)
        rows.append(
            [
                run.label,
                f"`{run.path}`",
                str(ident.get("model") or "default (smollm2-135m)")
                if run.agent != "random"
                else "–",
                str(len(run.summaries)),
                str(n_err),
                str(ident.get("max_steps")),
                str(ident.get("trials")),
                str(ident.get("seed")),
            ]
        )
    return _table(header, rows)


def markdown_report(runs: Sequence[Run], *, images: Sequence[str] = ()) -> str:
    """The whole report as markdown (tables, definitions, links to the plots)."""
    _label_runs(runs)
    parts = [
        "# smcplan evaluation report",
        "",
        "SR = success rate, AvgS = mean steps of successful episodes, HR = hallucination rate "
        "(% of episodes with at least one action the environment rejected; RLAW). "
        "repetitive/step = steps repeating the previous action with no change of observation or "
        "score (RLVMR); repeat (a,o)/step = steps whose action and observation already occurred "
        "together earlier in the trial. {free} = actions written by the model "
        "(action_mode=free), else chosen from the admissible set; {guided} = RLVMR's process "
        "rewards used as an inference-time guide (not the paper's inference). "
        "Brackets: 95% intervals (Wilson for rates; seeded percentile bootstrap over episodes "
        "for means and per-step rates). Error episodes (backend died) are excluded and counted.",
        "",
        "## Runs",
        "",
        runs_table(runs),
        "",
        "## SR / AvgS / HR per agent and benchmark",
        "",
        main_table(runs),
        "",
    ]
    for bench in _benchmarks(runs):
        parts += [f"## {bench}", "", detail_table(runs, bench), ""]
    if images:
        parts += ["## Plots", ""]
        parts += [f"![{Path(img).stem}]({Path(img).name})" for img in images]
        parts.append("")
    return "\n".join(parts)


def write_report(
    run_dirs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    seed: int = 0,
    num_resamples: int = 2000,
    plots: bool = True,
    viewer: bool = True,
) -> dict[str, Any]:
    """Write ``report.md``, ``sr.png``, ``plan_diagnostics.png`` (if any run planned) and
    ``viewer.html`` into ``out``; return ``{"markdown": text, "files": [paths]}``."""
    if not run_dirs:
        raise ValueError("report needs at least one run directory")
    runs = [load_run(p, seed=seed, num_resamples=num_resamples) for p in run_dirs]
    _label_runs(runs)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    images: list[str] = []
    if plots:
        from smcplan.eval import plots as _plots

        images.append(str(_plots.plot_success_rates(runs, out / "sr.png")))
        diag = _plots.plot_plan_diagnostics(runs, out / "plan_diagnostics.png")
        if diag is not None:
            images.append(str(diag))
    if viewer:
        from smcplan.eval.viewer import write_viewer

        files.append(str(write_viewer(runs, out / "viewer.html")))
    text = markdown_report(runs, images=images)
    md = out / "report.md"
    md.write_text(text, encoding="utf-8")
    return {"markdown": text, "files": [str(md), *images, *files], "runs": runs}
