r"""One slow-thinking call as the viewer draws it: a genealogy of N particles over H planning steps.

Input: a step record's ``meta["plan"]`` (NeSyFS slow thinking, ``smcplan.agents.slow_thinking``).
Its ``"trace"`` holds, per planning step :math:`t = 1..H`, the N proposed actions
:math:`a^i_t`, the imagined observations :math:`o^i_t`, the ancestors :math:`A_t` (index of each
particle's parent in step :math:`t-1`; identity at :math:`t = 1`), :math:`\delta^i_t`,
:math:`\log\psi^i_t`, the normalised log-weights :math:`\log W^t_i` after reweighting, the
weights :math:`W^t_i`, :math:`\mathrm{ESS}_t = 1/\sum_i (W^t_i)^2` and whether resampling ran
before step t.  Older records carry only ``PlanResult.to_dict(arrays=True)`` (``step_actions``,
``ancestry``, final ``log_weights``, ``ess``, ``resampled``) or just the summary (``action_mass``,
``ess``): :func:`plan_view` draws what there is and says what is missing.

Output: a compact dict whose strings are indices into the viewer's string table
(:class:`~smcplan.eval.viewer.data.Strings`); floats are rounded (weights to 4 decimals, logs to
3), which is all a drawing needs.  Pure standard library.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["plan_view", "lineage", "OBS_CHARS"]

#: Imagined observations are cut to this many characters (the producer's bound, enforced again).
OBS_CHARS = 160
#: Bars of the first-action marginal shown (the rest are summed into "other").
MASS_TOP = 12


def _num(x: Any, digits: int) -> float | None:
    """A finite float rounded to ``digits`` decimals; ``None`` for missing, "-inf", NaN, text."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return round(v, digits) if math.isfinite(v) else None


def _vector(x: Any, n: int, digits: int) -> list[float | None] | None:
    if not isinstance(x, list | tuple) or len(x) != n:
        return None
    return [_num(v, digits) for v in x]


def _weights_from_logs(log_w: list[float | None]) -> list[float]:
    r""":math:`W_i = e^{\ell_i} / \sum_j e^{\ell_j}` (``None`` = :math:`-\infty`)."""
    finite = [v for v in log_w if v is not None]
    if not finite:
        return [0.0] * len(log_w)
    m = max(finite)
    e = [0.0 if v is None else math.exp(v - m) for v in log_w]
    z = sum(e)
    return [round(v / z, 4) for v in e]


def _ess(w: Sequence[float]) -> float | None:
    s = sum(v * v for v in w)
    return round(1.0 / s, 3) if s > 0 else None


def lineage(ancestors: Sequence[Sequence[int]], t: int, i: int) -> list[int]:
    """Indices of particle ``i`` of step ``t`` (1-based) and its ancestors at steps ``t-1..1``,
    returned oldest first: ``[i_1, ..., i_t]`` with ``i_{s-1} = ancestors[s-1][i_s]`` (shorter
    when a parent was cut off a summarised trace, index -1)."""
    path = [int(i)]
    for s in range(t, 1, -1):
        parent = int(ancestors[s - 1][path[-1]])
        if parent < 0:
            break
        path.append(parent)
    return path[::-1]


def _steps_from_trace(trace: dict[str, Any], ref: Callable[[Any, int], int]) -> list[dict] | None:
    raw = trace.get("steps")
    if not isinstance(raw, list) or not raw:
        return None
    steps: list[dict] = []
    for k, st in enumerate(raw):
        if not isinstance(st, dict) or not isinstance(st.get("actions"), list):
            return None
        n = len(st["actions"])
        n_prev = len(steps[-1]["a"]) if steps else n
        anc = st.get("ancestors")
        anc = [int(a) for a in anc] if isinstance(anc, list) and len(anc) == n else list(range(n))
        anc = [a if 0 <= a < n_prev else -1 for a in anc]  # -1: a parent the trace cut off
        log_w = _vector(st.get("log_weights"), n, 3)
        w = _vector(st.get("weights"), n, 4)
        if w is None or any(v is None for v in w):
            w = _weights_from_logs(log_w) if log_w is not None else [round(1.0 / n, 4)] * n
        obs = st.get("observations")
        steps.append(
            {
                "t": int(st.get("t", k + 1)),
                "a": [ref(a, 200) for a in st["actions"]],
                "o": [ref(o, OBS_CHARS) for o in obs]
                if isinstance(obs, list) and len(obs) == n
                else None,
                "anc": anc,
                "w": w,
                "lw": log_w,
                "d": _vector(st.get("delta"), n, 3),
                "psi": _vector(st.get("log_psi"), n, 3),
                "ess": _num(st.get("ess"), 3) if st.get("ess") is not None else _ess(w),
                "rs": bool(st.get("resampled", False)),
            }
        )
    return steps


def _steps_from_arrays(plan: dict[str, Any], ref: Callable[[Any, int], int]) -> list[dict] | None:
    """``to_dict(arrays=True)`` records: actions and ancestry per step, final weights only."""
    acts, anc = plan.get("step_actions"), plan.get("ancestry")
    if not isinstance(acts, list) or not isinstance(anc, list) or len(acts) != len(anc) or not acts:
        return None
    ess, rs = plan.get("ess") or [], plan.get("resampled") or []
    steps = []
    for k, (a, p) in enumerate(zip(acts, anc, strict=True)):
        n = len(a)
        final = k == len(acts) - 1
        log_w = _vector(plan.get("log_weights"), n, 3) if final else None
        steps.append(
            {
                "t": k + 1,
                "a": [ref(x, 200) for x in a],
                "o": None,
                "anc": [int(x) for x in p] if len(p) == n else list(range(n)),
                "w": _weights_from_logs(log_w) if log_w is not None else None,
                "lw": log_w,
                "d": None,
                "psi": None,
                "ess": _num(ess[k], 3) if k < len(ess) else None,
                "rs": bool(rs[k]) if k < len(rs) else False,
            }
        )
    return steps


def plan_view(plan: Any, ref: Callable[[Any, int], int]) -> dict[str, Any] | None:
    """The drawable form of one ``meta["plan"]`` (module docstring); ``None`` if not a plan.

    ``ref(text, limit)`` interns ``text`` cut to ``limit`` characters and returns its index.
    """
    if not isinstance(plan, dict):
        return None
    trace = plan.get("trace") if isinstance(plan.get("trace"), dict) else {}
    steps = _steps_from_trace(trace, ref) if trace else None
    source = "trace" if steps else None
    if steps is None:
        steps = _steps_from_arrays(plan, ref)
        source = "arrays" if steps else None
    action = trace.get("action", plan.get("action"))
    chosen = trace.get("chosen_index", plan.get("chosen_index"))
    mass = plan.get("action_mass") if isinstance(plan.get("action_mass"), dict) else {}
    ranked = sorted(((str(a), _num(m, 4) or 0.0) for a, m in mass.items()), key=lambda kv: -kv[1])
    other = round(sum(m for _, m in ranked[MASS_TOP:]), 4)
    config = plan.get("config") if isinstance(plan.get("config"), dict) else {}
    n = plan.get("num_particles", len(steps[0]["a"]) if steps else None)
    view: dict[str, Any] = {
        "action": ref(action, 200),
        "chosen": int(chosen) if isinstance(chosen, int) and not isinstance(chosen, bool) else None,
        "N": n,
        "H": plan.get("horizon", len(steps) if steps else None),
        "weighting": plan.get("weighting"),
        "lam": config.get("lam"),
        "choice": config.get("choice"),
        "world_model": plan.get("world_model"),
        "oracle": plan.get("oracle"),
        "twist": plan.get("twist"),
        "degenerate": plan.get("degenerate"),
        "tie_break": plan.get("tie_break"),
        "decided_by": plan.get("decided_by"),
        "log_Z": _num(plan.get("log_Z"), 3),
        "mass": [[ref(a, 200), m] for a, m in ranked[:MASS_TOP]]
        + ([[None, other]] if other else []),
        "ess": [_num(e, 3) for e in plan.get("ess") or []],
        "truncated": bool(trace.get("truncated", False)),
        "source": source,
        "steps": steps,
    }
    if steps and view["chosen"] is not None and not 0 <= view["chosen"] < len(steps[-1]["a"]):
        view["chosen"] = None  # an index the trace cannot show (summarised trace)
    imagined = plan.get("imagined")
    if isinstance(imagined, list):
        view["imagined"] = [
            [ref(s.get("action"), 200), ref(s.get("observation"), OBS_CHARS)]
            for s in imagined
            if isinstance(s, dict)
        ]
    return view
