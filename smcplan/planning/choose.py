"""How the planner reads its final particles: weight mass per first action, one particle's
item, and whether a run was degenerate (the weights carried no information).

Imports only NumPy and the batch helpers.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from smcplan.planning.batch import Batch, is_list_batch, to_host_list

__all__ = ["action_mass", "item", "degenerate"]


def action_mass(first_actions: Batch, log_weights: jax.Array) -> dict[Any, float]:
    w = np.exp(np.asarray(log_weights, dtype=np.float64))
    if not is_list_batch(first_actions):
        acts = np.asarray(first_actions)
        if acts.ndim == 1 and np.issubdtype(acts.dtype, np.integer):
            uniq, inv = np.unique(acts, return_inverse=True)
            mass = np.bincount(inv, weights=w, minlength=len(uniq))
            return {int(a): float(m) for a, m in zip(uniq, mass, strict=True)}
        first_actions = to_host_list(first_actions)
    out: dict[Any, float] = {}
    for a, wi in zip(first_actions, w, strict=True):
        k = a if not isinstance(a, list) else tuple(a)
        out[k] = out.get(k, 0.0) + float(wi)
    return out


def item(batch: Batch, j: int) -> Any:
    if is_list_batch(batch):
        return batch[j]
    x = np.asarray(batch)[j]
    return x.item() if np.ndim(x) == 0 else x


def degenerate(weighting: str, deltas: list[Any], increments: list[Any]) -> bool:
    r"""True when the weights carry no information: every particle had the same :math:`\delta_t`
    at every step (``"nesyfs"``), or the same incremental log-weight (``"twisted"``)."""
    rows = deltas if weighting == "nesyfs" and all(d is not None for d in deltas) else increments
    for row in rows:
        v = np.asarray(row, dtype=np.float64)
        if v.size == 0:
            continue
        same_inf = np.all(np.isneginf(v) == np.isneginf(v[0]))
        finite = v[np.isfinite(v)]
        if not same_inf or (finite.size and float(finite.max() - finite.min()) > 0.0):
            return False
    return True
