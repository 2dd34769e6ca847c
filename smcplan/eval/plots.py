"""PNG plots of a report: success rates with 95% intervals, and the planner's weight/ESS
diagnostics.

Uses matplotlib's non-interactive ``Agg`` backend (imported here, lazily from ``report``); reads
runs through :class:`smcplan.eval.records.Run`. Must not import envs, agents or llm.

Plan diagnostics come from the step meta of slow-thinking calls, ``meta["plan"]``, the summary of
``smcplan.planning.PlanResult.to_dict()``: ``ess`` (H,) = 1/Σ_i (W_i^t)² after each planning
step t, ``num_particles`` N, ``action_mass`` {a: Σ_i W_i^H [a_1^i = a]}, and optionally the final
normalised ``log_weights``. Plotted: ESS_t/N per planning step (1 = all particles equally
weighted, 1/N = weight degeneracy) and the mass of the chosen first action (how decided the
planner was).

Layout (any label length, any number of runs): constrained layout; one legend right of the axes,
outside them, labels wrapped (``textwrap``) and split into columns when tall; tick labels and axes
titles wrapped; the figure grows until everything lies inside it (tests/eval/test_plots.py checks
the rendered boxes).
"""

from __future__ import annotations

import math
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smcplan.eval.records import Run

__all__ = [
    "plan_diagnostics",
    "plot_success_rates",
    "plot_plan_diagnostics",
    "success_rate_figure",
    "plan_diagnostics_figure",
]


def _mpl():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _float(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def plan_diagnostics(plan: Mapping[str, Any]) -> dict[str, Any] | None:
    """From one ``meta["plan"]`` dict: ``ess_frac`` (ESS_t/N per step), ``chosen_mass``, ``N``.

    ``chosen_mass`` is the planner's mass on the executed first action (``action_mass[action]``),
    else the largest normalised final weight when only ``log_weights`` are logged. Returns
    ``None`` when the dict carries neither ESS nor weights.
    """
    if not isinstance(plan, Mapping):
        return None
    n = plan.get("num_particles")
    log_w = plan.get("log_weights")
    weights = None
    if isinstance(log_w, list | tuple) and log_w:
        lw = np.array([_float(x) for x in log_w])
        lw = np.where(np.isnan(lw), -np.inf, lw)
        if np.isfinite(lw).any():
            weights = np.exp(lw - lw[np.isfinite(lw)].max())
            weights /= weights.sum()
            n = n or len(lw)
    ess = plan.get("ess")
    if isinstance(ess, int | float):
        ess = [ess]
    if not n and not ess:
        return None
    ess_frac: list[float] = []
    if isinstance(ess, list | tuple) and n:
        ess_frac = [_float(e) / float(n) for e in ess]
    elif weights is not None:
        ess_frac = [float(1.0 / np.sum(weights**2)) / len(weights)]
    mass = plan.get("action_mass")
    chosen = plan.get("action")
    if isinstance(mass, Mapping) and mass:
        chosen_mass = _float(mass.get(chosen, max(_float(v) for v in mass.values())))
    elif weights is not None:
        chosen_mass = float(weights.max())
    else:
        chosen_mass = math.nan
    if not ess_frac and math.isnan(chosen_mass):
        return None
    return {"ess_frac": ess_frac, "chosen_mass": chosen_mass, "N": n}


#: characters per line of a wrapped legend label and x tick label, and a first guess of the
#: title's per inch of figure (then shortened until the title is no wider than its axes)
_LABEL_CHARS = 30
_TICK_CHARS = 16
_TITLE_CHARS_PER_INCH = 10.0
#: a legend taller than this many text lines is split into columns
_LEGEND_LINES = 24
_DPI = 120


def _wrap(text: Any, width: int) -> str:
    """``text`` on lines of at most ``width`` characters (long words and names broken too), with
    ``$`` escaped so that a label is never read as mathtext."""
    lines = textwrap.wrap(str(text), width=max(1, width)) or [str(text)]
    return "\n".join(lines).replace("$", r"\$")


def _color(i: int, n: int) -> Any:
    """Colour of series ``i`` of ``n``: matplotlib's cycle, tab20 beyond 10, then a colormap."""
    if n <= 10:
        return f"C{i}"
    import matplotlib

    if n <= 20:
        return matplotlib.colormaps["tab20"](i)
    return matplotlib.colormaps["turbo"](i / max(1, n - 1))


def _legend(fig: Any, handles: Sequence[Any], labels: Sequence[str]) -> Any:
    """One figure legend right of the axes, outside them (constrained layout keeps its room):
    labels wrapped, in as many columns as keep it about ``_LEGEND_LINES`` lines tall."""
    wrapped = [_wrap(label, _LABEL_CHARS) for label in labels]
    lines = sum(w.count("\n") + 1 for w in wrapped)
    ncols = max(1, math.ceil(lines / _LEGEND_LINES))
    return fig.legend(
        handles, wrapped, loc="outside right upper", fontsize="small", ncols=ncols, frameon=False
    )


def _fit(fig: Any, titles: Mapping[Any, str], legend: Any, min_axes_in: float) -> Any:
    """Give each axes its title (wrapped to the axes' width) and grow the figure until the
    legend, the titles, the tick labels and ``min_axes_in`` inches of axes fit inside it
    (constrained layout places them); returns the figure, drawn."""
    renderer = fig.canvas.get_renderer()
    if legend is not None:  # its size needs no layout: room for it before the first draw
        box = legend.get_window_extent(renderer)
        width, height = fig.get_size_inches()
        fig.set_size_inches(
            max(width, box.width / fig.dpi + min_axes_in + 1.0),
            max(height, box.height / fig.dpi + 0.4),
        )
    with warnings.catch_warnings():  # a pass before the figure has grown may not fit yet
        warnings.filterwarnings("ignore", message="constrained_layout not applied")
        return _grow(fig, renderer, titles, legend, min_axes_in)


def _grow(fig: Any, renderer: Any, titles: Mapping[Any, str], legend: Any, min_axes_in: float):
    width, _ = fig.get_size_inches()
    chars = {ax: int(width * _TITLE_CHARS_PER_INCH) for ax in titles}  # title line length
    for _ in range(6):
        width, height = fig.get_size_inches()
        for ax, title in titles.items():
            ax.set_title(_wrap(title, chars[ax]))
        fig.canvas.draw()
        need_w, need_h = width, height
        if legend is not None:
            box = legend.get_window_extent(renderer)
            need_w = max(need_w, box.width / fig.dpi + min_axes_in + 1.0)
            need_h = max(need_h, box.height / fig.dpi + 0.4)
        tight = fig.get_tightbbox(renderer)  # inches
        need_w = max(need_w, width + max(0.0, tight.x1 - width) + max(0.0, -tight.x0))
        need_h = max(need_h, height + max(0.0, tight.y1 - height) + max(0.0, -tight.y0))
        wrapped = True
        for ax in titles:  # a title wider than its axes: shorter lines, in proportion
            title_w = ax.title.get_window_extent(renderer).width
            axes_w = ax.get_window_extent(renderer).width
            if title_w > axes_w + 1:
                longest = max(len(line) for line in ax.title.get_text().split("\n"))
                chars[ax] = max(8, min(longest - 1, int(longest * axes_w / title_w)))
                wrapped = False
        if need_w <= width + 0.01 and need_h <= height + 0.01 and wrapped:
            return fig
        fig.set_size_inches(need_w, need_h)
    fig.canvas.draw()
    return fig


def _save(fig: Any, path: str | Path) -> Path:
    plt = _mpl()
    path = Path(path)
    fig.savefig(path, dpi=_DPI)
    plt.close(fig)
    return path


def success_rate_figure(runs: Sequence[Run]) -> Any:
    """The figure :func:`plot_success_rates` saves, laid out and drawn (the caller closes it)."""
    plt = _mpl()
    benches: list[str] = []
    for run in runs:
        for env in run.envs:
            if env not in benches:
                benches.append(env)
    width = 0.8 / max(1, len(runs))
    axes_in = max(3.0, len(benches) * max(1.4, 0.3 * len(runs)))
    fig, ax = plt.subplots(figsize=(axes_in + 1.0, 3.6), layout="constrained", dpi=_DPI)
    x = np.arange(len(benches))
    handles = []
    for i, run in enumerate(runs):
        vals, lo, hi = [], [], []
        for b in benches:
            m = run.metrics.get(b)
            sr = m.success_rate if m is not None else None
            if sr is None or sr.value is None:
                vals.append(np.nan)
                lo.append(0.0)
                hi.append(0.0)
            else:
                vals.append(100 * sr.value)
                lo.append(100 * (sr.value - sr.lo))
                hi.append(100 * (sr.hi - sr.value))
        handles.append(
            ax.bar(
                x + (i - (len(runs) - 1) / 2) * width,
                vals,
                width,
                yerr=[lo, hi],
                capsize=3,
                color=_color(i, len(runs)),
            )
        )
    ax.set_xticks(x, [_wrap(b, _TICK_CHARS) for b in benches])
    ax.set_ylabel("success rate (%)")
    ax.set_ylim(0, 105)
    ax.grid(axis="y", alpha=0.3)
    legend = _legend(fig, handles, [run.label for run in runs]) if runs else None
    return _fit(fig, {ax: "Success rate per agent (95% Wilson intervals)"}, legend, axes_in)


def plot_success_rates(runs: Sequence[Run], path: str | Path) -> Path:
    """Grouped bars: SR (%) per benchmark and agent, with Wilson 95% intervals as error bars.

    The legend sits right of the axes with every label wrapped, the figure grows to hold it, and
    the title is wrapped to the figure: any number of runs with labels of any length fit.
    """
    return _save(success_rate_figure(runs), path)


def collect_plan_diagnostics(runs: Sequence[Run]) -> dict[str, list[dict[str, Any]]]:
    """Per run label, the diagnostics of every logged slow-thinking call (see plan_diagnostics)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        for _, step in run.iter_steps():
            plan = (step.get("meta") or {}).get("plan")
            diag = plan_diagnostics(plan) if plan is not None else None
            if diag is not None:
                out.setdefault(run.label, []).append(diag)
    return out


def plan_diagnostics_figure(runs: Sequence[Run]) -> Any:
    """The figure :func:`plot_plan_diagnostics` saves, laid out and drawn (the caller closes it);
    ``None`` when no run logged a plan."""
    data = collect_plan_diagnostics(runs)
    if not data:
        return None
    plt = _mpl()
    from matplotlib.lines import Line2D

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6), layout="constrained", dpi=_DPI)
    handles, labels = [], []
    for i, (label, diags) in enumerate(data.items()):
        color = _color(i, len(data))
        horizon = max((len(d["ess_frac"]) for d in diags), default=0)
        if horizon:
            mat = np.full((len(diags), horizon), np.nan)
            for j, d in enumerate(diags):
                mat[j, : len(d["ess_frac"])] = d["ess_frac"]
            t = np.arange(1, horizon + 1)
            mean = np.nanmean(mat, axis=0)
            q10, q90 = np.nanquantile(mat, 0.1, axis=0), np.nanquantile(mat, 0.9, axis=0)
            ax1.plot(t, mean, marker="o", color=color)
            ax1.fill_between(t, q10, q90, alpha=0.2, color=color)
        masses = [d["chosen_mass"] for d in diags if not math.isnan(d["chosen_mass"])]
        if masses:
            ax2.hist(masses, bins=np.linspace(0, 1, 21), alpha=0.5, color=color)
        handles.append(Line2D([], [], color=color, marker="o", linewidth=2))
        labels.append(f"{label} ({len(diags)} calls)")
    from matplotlib.ticker import MaxNLocator

    ax1.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax1.set_xlabel("planning step t")
    ax1.set_ylabel("ESS / N")
    ax1.set_ylim(0, 1.05)
    ax1.grid(alpha=0.3)
    ax2.set_xlabel("planner mass on the executed first action")
    ax2.set_ylabel("slow-thinking calls")
    legend = _legend(fig, handles, labels)
    titles = {ax1: "Effective sample size of slow thinking", ax2: "How decided the planner was"}
    return _fit(fig, titles, legend, 6.0)


def plot_plan_diagnostics(runs: Sequence[Run], path: str | Path) -> Path | None:
    """Two panels: mean ESS_t/N per planning step (with 10–90% band) and the chosen action's mass,
    one colour per run, one legend right of both (labels wrapped, as in plot_success_rates).

    Returns ``None`` (and writes nothing) when no run logged a plan.
    """
    fig = plan_diagnostics_figure(runs)
    return None if fig is None else _save(fig, path)
