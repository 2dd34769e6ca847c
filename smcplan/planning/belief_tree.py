r"""Exact values of every belief reachable from a root within H steps, indexed by history code.

A particle of the POMDP planner carries the code of its action–observation history from the
root belief :math:`b_0`,

.. math:: c_0 = 0, \qquad c_t = c_{t-1}\,|A|\,|\Omega| + a_t\,|\Omega| + o_t,

so that the :math:`(|A||\Omega|)^d` histories of depth :math:`d` are the integers
:math:`[0, (|A||\Omega|)^d)`.  This module expands the full belief tree level by level,
:math:`b^{a,o}(s') \propto O[a,s',o] \sum_s T[a,s,s'] b(s)`, and backs up expectimax values
(Kaelbling, Littman & Cassandra 1998; the same recursion as :func:`smcplan.pomdp.solve_exact`)

.. math::
    Q_k(b, a) = \sum_s b(s) R(s,a) + \gamma \sum_o P(o \mid b, a)\, V_{k-1}(b^{a,o}),
    \qquad V_k(b) = \max_a Q_k(b, a), \qquad V_0 \equiv 0,

where :math:`k = H - d` decisions remain at depth :math:`d`.  Alongside, the *soft* values of
the twisted target :math:`p_0(x_{1:H})\,e^{\beta G_H}` (uniform prior policy :math:`p_0` over the
allowed actions, :math:`G_H = \sum_t \gamma^{t-1} r_t`):

.. math::
    F_H \equiv 1, \qquad F_d(b) = \sum_a p_0(a)\, e^{\beta\gamma^d r(b,a)}
    \sum_o P(o \mid b, a)\, F_{d+1}(b^{a,o}),

so that :math:`\psi^*_d = e^{\beta G_d} F_d(b_d) = \mathbb E_{p_0}[e^{\beta G_H} \mid x_{\le d}]`
is the optimal twist (Zhao et al. 2024, §3) and :math:`F_0(b_0)` the target's normaliser.  The
exact value-based twists of the planner look values up by code in O(1) per particle.
Zero-probability histories keep a
placeholder belief and value 0; they are never reached by a world model that samples from the
POMDP.  Exact only for tiny problems (the tree has :math:`(|A||\Omega|)^{H-1}` leaves);
:class:`~smcplan.planning.components.PlanningError` is raised beyond :data:`MAX_NODES`.

NumPy float64; imports only :mod:`smcplan.pomdp` and the planning errors.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from smcplan.planning.components import PlanningError
from smcplan.pomdp.model import DiscretePOMDP

__all__ = ["BeliefTree", "belief_tree", "MAX_NODES", "MAX_CODE"]

#: Largest number of beliefs one level of the tree may hold (times |S| floats of memory).
MAX_NODES = 2_000_000
#: History codes are int32.
MAX_CODE = 2**31 - 1


class BeliefTree(NamedTuple):
    r"""``values[d]``: (branching**d,) :math:`V_{H-d}`; ``q_values[d]``: (branching**d, A)
    :math:`Q_{H-d}`; ``log_soft[d]``: (branching**d,) :math:`\log F_d`; ``log_soft_q[d]``:
    (branching**d, A) :math:`\log` of the summand of :math:`F_d` for each action, without
    :math:`p_0(a)`; ``beliefs[d]``: (branching**d, S); ``branching`` = |A| |Ω|."""

    values: list[np.ndarray]
    q_values: list[np.ndarray]
    log_soft: list[np.ndarray]
    log_soft_q: list[np.ndarray]
    beliefs: list[np.ndarray]
    branching: int
    horizon: int


def belief_tree(
    pomdp: DiscretePOMDP, belief: Any, horizon: int, beta: float = 1.0, mask: Any = None
) -> BeliefTree:
    r"""Expand the belief tree of depth ``horizon - 1`` below ``belief`` and back up
    :math:`V_{H-d}`, :math:`Q_{H-d}` and the soft values :math:`\log F_d` (inverse temperature
    ``beta``, uniform prior over the actions in ``mask``) at every node (module docstring).

    Expectimax values maximise over the allowed actions only (disallowed ones get ``-inf``)."""
    b = np.asarray(belief, dtype=np.float64)
    if b.shape != (pomdp.num_states,):
        raise PlanningError(
            f"belief must have shape (S,) = ({pomdp.num_states},) for {pomdp.name}; got {b.shape}"
        )
    n_a, n_o = pomdp.num_actions, pomdp.num_observations
    branching = n_a * n_o
    deepest = branching ** (horizon - 1)
    if deepest > MAX_NODES or branching**horizon > MAX_CODE:
        raise PlanningError(
            f"an exact value twist over horizon {horizon} on {pomdp.name} needs (|A| |O|)^(H-1) = "
            f"{branching}^{horizon - 1} = {deepest:,} beliefs at the last level (limit "
            f"{MAX_NODES:,}); "
            "use a smaller horizon or RewardProgress"
        )
    mask = np.ones(n_a, bool) if mask is None else np.asarray(mask, bool)
    log_p0 = np.where(mask, -np.log(mask.sum()), -np.inf)
    T, O, R = pomdp.T, pomdp.O, pomdp.R  # noqa: N806, E741
    levels = [b[None]]
    evidence: list[np.ndarray] = []  # P(o | b, a) per level, shape (M, A, O)
    for _ in range(1, horizon):
        parents = levels[-1]
        predicted = np.einsum("ms,ast->mat", parents, T)  # (M, A, S')
        joint = predicted[..., None] * O[None]  # (M, A, S', O)
        p_obs = joint.sum(axis=2)  # (M, A, O)
        safe = np.where(p_obs > 0, p_obs, 1.0)
        children = np.moveaxis(joint / safe[:, :, None, :], 2, 3)  # (M, A, O, S')
        children = np.where((p_obs > 0)[..., None], children, parents[:, None, None, :])
        evidence.append(p_obs)
        levels.append(children.reshape(-1, pomdp.num_states))
    empty = [np.empty(0)] * horizon
    q_values, values, log_soft_q, log_soft = list(empty), list(empty), list(empty), list(empty)
    with np.errstate(divide="ignore"):
        for d in range(horizon - 1, -1, -1):
            r = levels[d] @ R  # (M, A)
            q, lq = r, beta * pomdp.discount**d * r
            if d < horizon - 1:
                child_v = values[d + 1].reshape(-1, n_a, n_o)
                q = q + pomdp.discount * np.sum(evidence[d] * child_v, axis=2)
                child_f = log_soft[d + 1].reshape(-1, n_a, n_o)
                lq = lq + _logsumexp(np.log(evidence[d]) + child_f, axis=2)
            q_values[d], log_soft_q[d] = q, lq
            values[d] = np.where(mask, q, -np.inf).max(axis=1)
            log_soft[d] = _logsumexp(log_p0 + lq, axis=1)
    return BeliefTree(
        values=values,
        q_values=q_values,
        log_soft=log_soft,
        log_soft_q=log_soft_q,
        beliefs=levels,
        branching=branching,
        horizon=horizon,
    )


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))
