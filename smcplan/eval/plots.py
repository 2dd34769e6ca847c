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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smcplan.eval.records import Run

__all__ = ["plan_diagnostics", "plot_success_rates", "plot_plan_diagnostics"]


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


def plot_success_rates(runs: Sequence[Run], path: str | Path) -> Path:
    """Grouped bars: SR (%) per benchmark and agent, with Wilson 95% intervals as error bars."""
    plt = _mpl()
    benches: list[str] = []
    for run in runs:
        for env in run.envs:
            if env not in benches:
                benches.append(env)
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(benches) + 1.5 * len(runs)), 3.6))
    x = np.arange(len(benches))
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
        ax.bar(
            x + (i - (len(runs) - 1) / 2) * width,
            vals,
            width,
            yerr=[lo, hi],
            capsize=3,
            label=run.label,
        )
    ax.set_xticks(x, benches, rotation=15 if len(benches) > 3 else 0)
    ax.set_ylabel("success rate (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Success rate per agent (95% Wilson intervals)")
    ax.legend(fontsize="small", ncols=min(4, len(runs)))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


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


def plot_plan_diagnostics(runs: Sequence[Run], path: str | Path) -> Path | None:
    """Two panels: mean ESS_t/N per planning step (with 10–90% band) and the chosen action's mass.

    Returns ``None`` (and writes nothing) when no run logged a plan.
    """
    data = collect_plan_diagnostics(runs)
    if not data:
        return None
    plt = _mpl()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for label, diags in data.items():
        horizon = max((len(d["ess_frac"]) for d in diags), default=0)
        if horizon:
            mat = np.full((len(diags), horizon), np.nan)
            for i, d in enumerate(diags):
                mat[i, : len(d["ess_frac"])] = d["ess_frac"]
            t = np.arange(1, horizon + 1)
            mean = np.nanmean(mat, axis=0)
            q10, q90 = np.nanquantile(mat, 0.1, axis=0), np.nanquantile(mat, 0.9, axis=0)
            (line,) = ax1.plot(t, mean, marker="o", label=f"{label} ({len(diags)} calls)")
            ax1.fill_between(t, q10, q90, alpha=0.2, color=line.get_color())
        masses = [d["chosen_mass"] for d in diags if not math.isnan(d["chosen_mass"])]
        if masses:
            ax2.hist(masses, bins=np.linspace(0, 1, 21), alpha=0.5, label=label)
    from matplotlib.ticker import MaxNLocator

    ax1.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax1.set_xlabel("planning step t")
    ax1.set_ylabel("ESS / N")
    ax1.set_ylim(0, 1.05)
    ax1.set_title("Effective sample size of slow thinking")
    ax1.legend(fontsize="small")
    ax1.grid(alpha=0.3)
    ax2.set_xlabel("planner mass on the executed first action")
    ax2.set_ylabel("slow-thinking calls")
    ax2.set_title("How decided the planner was")
    ax2.legend(fontsize="small")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
