r"""The objectives of a linear-softmax policy head, with exact gradients (pure NumPy).

A batch holds :math:`N` steps; step :math:`i` has candidates :math:`j \in C_i` with features
:math:`z_j \in \mathbb{R}^d` (standardised:
:meth:`smcplan.llm.roles.policy_head.PolicyHead.standardise`), the chosen candidate
:math:`c_i`, its advantage :math:`A_i`, the sampling policy's log-probability
:math:`\log\pi_{\text{old}}(c_i)` and the reference policy's log-probabilities
:math:`\log\pi_{\text{ref}}(j)`.  With :math:`\pi_w(j) = e^{w^\top z_j} /
\sum_{j' \in C_i} e^{w^\top z_{j'}}` and :math:`\bar z_i = \sum_{j \in C_i} \pi_w(j) z_j`:

.. math:: \nabla_w \log \pi_w(c_i) = z_{c_i} - \bar z_i .

**GRPO(-MR) step** (:func:`surrogate`): the clipped surrogate with a KL penalty to the
reference, :math:`\rho_i = \pi_w(c_i)/\pi_{\text{old}}(c_i)`,

.. math::

    L(w) = -\frac1N \sum_i \min\big(\rho_i A_i,\ \mathrm{clip}(\rho_i, 1-\epsilon, 1+\epsilon)
    A_i\big) + \frac{\beta}{N} \sum_i \mathrm{KL}\big(\pi_w(\cdot|s_i)\,\Vert\,
    \pi_{\text{ref}}(\cdot|s_i)\big),

.. math::

    \nabla L = -\frac1N \sum_i [\text{unclipped}_i]\, A_i \rho_i (z_{c_i} - \bar z_i)
    + \frac{\beta}{N} \sum_i \sum_{j \in C_i} \pi_w(j)\,(d_j - \mathrm{KL}_i)\, z_j,
    \quad d_j = \log\pi_w(j) - \log\pi_{\text{ref}}(j),

where "unclipped" means the minimum is the :math:`\rho_i A_i` term (with :math:`A_i > 0`:
:math:`\rho_i \le 1 + \epsilon`; with :math:`A_i < 0`: :math:`\rho_i \ge 1 - \epsilon`).  The
KL is exact over the step's candidates (the LoRA trainer estimates it at the sampled answer
with verl's k3; here the whole distribution is at hand).  :func:`policy_update` takes
``epochs`` full-batch gradient steps :math:`w \leftarrow w - \eta \nabla L` (the gradient's norm
clipped to ``max_grad_norm``): no optimizer state, so an update is a function of :math:`w` and
the batch only.

**Cold start** (:func:`fit_max_likelihood`): :math:`\min_w -\frac1N\sum_i \log\pi_w(c_i) +
\frac{\lambda}{2}\lVert w\rVert^2`, gradient :math:`\frac1N\sum_i(\bar z_i - z_{c_i}) +
\lambda w`: convex, solved by L-BFGS (SciPy) to its unique optimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from smcplan.errors import InvalidArgumentError, check_float, check_int

__all__ = [
    "StepBatch",
    "make_batch",
    "segment_log_softmax",
    "surrogate",
    "policy_update",
    "nll",
    "fit_max_likelihood",
]


@dataclass(frozen=True)
class StepBatch:
    """Packed steps: ``z`` (M, d) the candidates' features, step ``i`` owning rows
    ``starts[i]:starts[i+1]`` (``seg[m]`` the step of row ``m``); ``chosen[i]`` the row of its
    chosen candidate; ``advantages``, ``old_logp`` (of the chosen rows), ``ref_logp`` (M,)."""

    z: np.ndarray
    starts: np.ndarray
    seg: np.ndarray
    chosen: np.ndarray
    advantages: np.ndarray
    old_logp: np.ndarray
    ref_logp: np.ndarray

    @property
    def steps(self) -> int:
        return int(self.starts.size)


def make_batch(
    z: Sequence[np.ndarray],
    chosen: Sequence[int],
    advantages: Sequence[float] | None = None,
    old_logp: Sequence[float] | None = None,
    ref_logp: Sequence[np.ndarray] | None = None,
) -> StepBatch:
    """A :class:`StepBatch` from one ``(n_i, d)`` array per step and the chosen index *within*
    each step; missing advantages are 0, missing log-probabilities 0 (uniform references need
    not be given for :func:`fit_max_likelihood`)."""
    if not z:
        raise InvalidArgumentError("the batch has no steps; play at least one step first")
    n = len(z)
    for name, seq in (("chosen", chosen), ("advantages", advantages), ("old_logp", old_logp)):
        if seq is not None and len(seq) != n:
            raise InvalidArgumentError(f"{name}: {len(seq)} values for {n} steps; give one each")
    sizes = np.array([len(x) for x in z])
    if np.any(sizes == 0):
        raise InvalidArgumentError("a step has no candidates; each needs at least one")
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    for i, (k, m) in enumerate(zip(chosen, sizes, strict=True)):
        check_int(k, f"chosen[{i}]", minimum=0, maximum=int(m) - 1)
    ref = (
        np.concatenate([np.asarray(r, np.float64).reshape(-1) for r in ref_logp])
        if ref_logp is not None
        else np.zeros(int(sizes.sum()))
    )
    if ref.size != sizes.sum():
        raise InvalidArgumentError(f"ref_logp: {ref.size} values for {sizes.sum()} candidates")
    return StepBatch(
        z=np.concatenate([np.asarray(x, np.float64) for x in z]),
        starts=starts,
        seg=np.repeat(np.arange(n), sizes),
        chosen=starts + np.asarray(chosen, dtype=np.int64),
        advantages=np.zeros(n) if advantages is None else np.asarray(advantages, np.float64),
        old_logp=np.zeros(n) if old_logp is None else np.asarray(old_logp, np.float64),
        ref_logp=ref,
    )


def segment_log_softmax(logits: np.ndarray, starts: np.ndarray, seg: np.ndarray) -> np.ndarray:
    """The log-softmax of ``logits`` within each step's rows (stable: the step's max first)."""
    top = np.maximum.reduceat(logits, starts)[seg]
    e = np.exp(logits - top)
    return logits - top - np.log(np.add.reduceat(e, starts))[seg]


def _clip_norm(g: np.ndarray, max_norm: float | None) -> tuple[np.ndarray, float]:
    norm = float(np.linalg.norm(g))
    if max_norm is not None and norm > max_norm:
        return g * (max_norm / norm), norm
    return g, norm


def surrogate(
    w: np.ndarray, batch: StepBatch, clip_eps: float = 0.2, kl_coef: float = 0.01
) -> tuple[float, np.ndarray, dict[str, float]]:
    """:math:`L(w)` of the module docstring, its exact gradient and ``{"surrogate", "kl",
    "clip_fraction", "ratio_max"}`` (means over the steps)."""
    logp = segment_log_softmax(batch.z @ w, batch.starts, batch.seg)
    p = np.exp(logp)
    zbar = np.add.reduceat(p[:, None] * batch.z, batch.starts)
    n = batch.steps
    a = batch.advantages
    ratio = np.exp(logp[batch.chosen] - batch.old_logp)
    plain = ratio * a
    clipped = np.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * a
    obj = np.minimum(plain, clipped)
    unclipped = plain <= clipped
    coef = np.where(unclipped, a * ratio, 0.0)
    grad = -(coef[:, None] * (batch.z[batch.chosen] - zbar)).sum(axis=0) / n
    d = logp - batch.ref_logp
    kl = np.add.reduceat(p * d, batch.starts)
    grad += kl_coef * ((p * (d - kl[batch.seg]))[:, None] * batch.z).sum(axis=0) / n
    loss = float(-obj.mean() + kl_coef * kl.mean())
    stats = {
        "surrogate": float(obj.mean()),
        "kl": float(kl.mean()),
        "clip_fraction": float(np.mean(~unclipped & (a != 0))),
        "ratio_max": float(ratio.max()),
    }
    return loss, grad, stats


def policy_update(
    w: np.ndarray,
    batch: StepBatch,
    learning_rate: float,
    epochs: int,
    clip_eps: float = 0.2,
    kl_coef: float = 0.01,
    max_grad_norm: float | None = 1.0,
) -> tuple[np.ndarray, dict[str, Any]]:
    """``epochs`` full-batch gradient steps on :func:`surrogate` from ``w``; returns the new
    weights and ``{"loss_before", "loss_after", "kl", "clip_fraction", "grad_norm", ...}``."""
    lr = check_float(learning_rate, "learning_rate", minimum=0.0, min_inclusive=False)
    check_int(epochs, "epochs", minimum=1)
    check_float(clip_eps, "clip_eps", minimum=0.0, min_inclusive=False)
    check_float(kl_coef, "kl_coef", minimum=0.0)
    w = np.asarray(w, np.float64).copy()
    first, norms = None, []
    for _ in range(epochs):
        loss, grad, stats = surrogate(w, batch, clip_eps, kl_coef)
        first = first if first is not None else (loss, stats)
        grad, norm = _clip_norm(grad, max_grad_norm)
        norms.append(norm)
        w -= lr * grad
    loss, _, stats = surrogate(w, batch, clip_eps, kl_coef)
    return w, {
        "steps": epochs,
        "loss_before": first[0],
        "loss_after": loss,
        "surrogate_before": first[1]["surrogate"],
        "surrogate_after": stats["surrogate"],
        "kl": stats["kl"],
        "clip_fraction": stats["clip_fraction"],
        "ratio_max": stats["ratio_max"],
        "grad_norm_first": norms[0],
        "grad_norm_last": norms[-1],
    }


def nll(w: np.ndarray, batch: StepBatch, l2: float) -> tuple[float, np.ndarray]:
    """The cold start's objective (module docstring) and its gradient."""
    logp = segment_log_softmax(batch.z @ w, batch.starts, batch.seg)
    zbar = np.add.reduceat(np.exp(logp)[:, None] * batch.z, batch.starts)
    n = batch.steps
    loss = -logp[batch.chosen].mean() + 0.5 * l2 * float(w @ w)
    grad = (zbar - batch.z[batch.chosen]).sum(axis=0) / n + l2 * w
    return float(loss), grad


def fit_max_likelihood(
    batch: StepBatch, l2: float = 1e-6, w0: np.ndarray | None = None
) -> tuple[np.ndarray, dict[str, Any]]:
    """The cold-start weights: the minimiser of :func:`nll` (L-BFGS from ``w0``, default 0).
    Returns them and ``{"nll", "accuracy", "converged", "iterations"}`` (accuracy: the share of
    steps whose chosen candidate is the head's argmax)."""
    from scipy.optimize import minimize

    l2 = check_float(l2, "l2", minimum=0.0, min_inclusive=False)
    d = batch.z.shape[1]
    res = minimize(
        nll, np.zeros(d) if w0 is None else np.asarray(w0, np.float64), args=(batch, l2),
        jac=True, method="L-BFGS-B", options={"maxiter": 5000, "gtol": 1e-9, "ftol": 1e-15},
    )  # fmt: skip
    w = np.asarray(res.x, np.float64)
    logits = batch.z @ w
    best = np.array([int(np.argmax(logits[s:e])) for s, e in _bounds(batch)]) + batch.starts
    return w, {
        "nll": float(res.fun),
        "accuracy": float(np.mean(best == batch.chosen)),
        "converged": bool(res.success),
        "iterations": int(res.nit),
    }


def _bounds(batch: StepBatch) -> list[tuple[int, int]]:
    ends = [*batch.starts[1:].tolist(), int(batch.z.shape[0])]
    return list(zip(batch.starts.tolist(), ends, strict=True))
