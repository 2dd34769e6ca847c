"""Input checks of the planner: its settings and what components return (errors name the bad
value and the valid ones).

Imports JAX, NumPy and the planner's own modules; never agents, eval or cli.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.planning.batch import batch_size
from smcplan.planning.components import ComponentError, PlanningError
from smcplan.smc import resampling as _resampling
from smcplan.smc.validation import is_concrete

__all__ = [
    "validate_config",
    "component_name",
    "check_vector",
    "check_batch",
    "check_returned",
]

#: Weighting rules of :func:`~smcplan.planning.tsmc.tsmc`: ``"nesyfs"`` (the paper's rule) and
#: ``"twisted"`` (properly weighted twisted SMC for the target :math:`p_0\,\phi`).
WEIGHTINGS = ("nesyfs", "twisted")
#: How the planner picks its action: ``"sample"`` (the first action of particle
#: :math:`j \sim \mathrm{Cat}(W^H)`) or ``"max_weight"`` (the first action with the largest total
#: weight :math:`\sum_i W^H_i [a^i_1 = a]`).
CHOICES = ("sample", "max_weight")
#: What decides when the weights carry no information (every particle's progress equal at every
#: step, ``degenerate=True``): ``"proposal"`` = the first action the proposal gave the highest
#: probability at step 1 (lowest particle index among equals); ``"none"`` = the choice rule as if
#: nothing were degenerate (a uniform draw under ``choice="sample"``).
TIE_BREAKS = ("proposal", "none")


def validate_config(
    num_particles: Any,
    horizon: Any,
    weighting: str,
    lam: Any,
    choice: str,
    ess_threshold: Any,
    resampling: str | Callable,
    tie_break: str = "none",
) -> Callable:
    """Check the planner's settings; return the resampling function.  Errors name the bad value
    and the valid ones.  The one home of these checks: :func:`smcplan.planning.tsmc.tsmc`,
    :func:`smcplan.planning.plan.plan_pomdp` and :class:`smcplan.planning.PlannerConfig` call
    it."""
    if (
        isinstance(num_particles, bool)
        or not isinstance(num_particles, int | np.integer)
        or num_particles < 1
    ):
        raise PlanningError(f"num_particles must be an integer >= 1; got {num_particles!r}")
    if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer) or horizon < 1:
        raise PlanningError(f"horizon must be an integer >= 1; got {horizon!r}")
    if weighting not in WEIGHTINGS:
        raise PlanningError(f"unknown weighting {weighting!r}; known: {', '.join(WEIGHTINGS)}")
    if tie_break not in TIE_BREAKS:
        raise PlanningError(f"unknown tie_break {tie_break!r}; known: {', '.join(TIE_BREAKS)}")
    if choice not in CHOICES:
        raise PlanningError(f"unknown choice {choice!r}; known: {', '.join(CHOICES)}")
    if not isinstance(lam, int | float | np.floating) or not math.isfinite(float(lam)):
        raise PlanningError(f"lam must be a finite number; got {lam!r}")
    if not isinstance(ess_threshold, int | float | np.floating) or math.isnan(float(ess_threshold)):
        raise PlanningError(
            "ess_threshold must be a number (>= 1: resample every step, <= 0: never, else "
            f"adaptive); got {ess_threshold!r}"
        )
    try:
        return _resampling.get(resampling)
    except ValueError as err:
        raise PlanningError(str(err)) from None


def component_name(component: Any) -> str:
    """What a component is called in errors and in ``result.config``: its ``__name__`` (a
    function's name, or the name a wrapper copies), else its type's name (a protocol object)."""
    name = getattr(component, "__name__", None)
    if isinstance(name, str):
        return name
    inner = getattr(component, "func", None)  # functools.partial
    if inner is not None and isinstance(getattr(inner, "__name__", None), str):
        return str(inner.__name__)
    return type(component).__name__


def check_returned(out: Any, expected: type, what: str, t: int) -> Any:
    """``out`` if it is an ``expected`` (a :class:`~smcplan.planning.components.Proposed`,
    :class:`~smcplan.planning.components.Transition` or
    :class:`~smcplan.planning.components.Score`) or has all its fields; else a
    :class:`ComponentError` naming the component (``what``), the step and what it must return."""
    fields = expected._fields  # type: ignore[attr-defined]
    if isinstance(out, expected) or all(hasattr(out, f) for f in fields):
        return out
    shown = repr(out)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    raise ComponentError(
        f"step {t}: {what} returned {type(out).__name__} {shown}; it must return "
        f"smcplan.planning.{expected.__name__}({', '.join(fields)}), e.g. "
        f"return {expected.__name__}({fields[0]}=..., {fields[1]}=...)"
    )


def check_vector(x: Any, n: int, what: str, t: int, allow_neg_inf: bool = True) -> jax.Array:
    """(N,) float vector, no NaN, no +inf (values checked only outside jit)."""
    if np.shape(x) != (n,):
        raise PlanningError(
            f"step {t}: {what} has shape {np.shape(x)}; expected ({n},), one value per particle"
        )
    x = jnp.asarray(x, dtype=jnp.result_type(float))
    if is_concrete(x):
        v = np.asarray(x)
        if np.isnan(v).any():
            raise PlanningError(
                f"step {t}: {what} contains NaN at particles "
                f"{np.flatnonzero(np.isnan(v))[:5].tolist()} (a remote model reports NaN for "
                "a density its engine does not return, e.g. the proposal q of a constrained or "
                "tempered sample: use weighting='nesyfs' or a local model; docs/scale.md)"
            )
        if np.isposinf(v).any():
            raise PlanningError(
                f"step {t}: {what} contains +inf at particles "
                f"{np.flatnonzero(np.isposinf(v))[:5].tolist()}"
            )
        if not allow_neg_inf and np.isneginf(v).any():
            raise PlanningError(
                f"step {t}: {what} is -inf at particles "
                f"{np.flatnonzero(np.isneginf(v))[:5].tolist()}: "
                "the component sampled something it gives probability zero"
            )
    return x


def check_batch(batch: Any, n: int, what: str, t: int) -> None:
    try:
        m = batch_size(batch, what)
    except PlanningError as err:
        raise PlanningError(f"step {t}: {err}") from None
    if m != n:
        raise PlanningError(
            f"step {t}: {what} holds {m} items for {n} particles; components must return one per "
            "particle"
        )
