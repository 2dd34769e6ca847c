r"""Exact finite-horizon planning by expectimax over the belief tree, to validate planners.

For horizon :math:`h` (number of decisions left) the optimal value of a belief is

.. math::
    V_0(b) = 0, \qquad
    Q_h(b, a) = \sum_s b(s) R(s, a) + \gamma \sum_{o:\,P(o|b,a)>0} P(o \mid b, a)\,
    V_{h-1}(b^{a,o}),
    \qquad V_h(b) = \max_a Q_h(b, a),

with :math:`b^{a,o}` the exact Bayes update (Kaelbling, Littman & Cassandra 1998, §4; Smallwood &
Sondik 1973).  The tree is expanded breadth-first with every belief of a level in one NumPy
array, skipping zero-probability observations, then values are backed up level by level.
Cost :math:`O((|A|\,|\Omega^+|)^{h-1} |A|\,|S|^2)` with :math:`|\Omega^+|` the observations of
positive probability: exact for tiny problems (Tiger up to horizon ~8, the household domain up
to ~4); :class:`TreeTooLargeError` is raised instead of exhausting memory.

Computed in NumPy float64 (independent of JAX's precision setting) because it is the reference.
Ties between actions (values within ``1e-9 * (1 + |V|)``) go to the lowest action index.

Imports only numpy and :mod:`smcplan.pomdp.model`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from smcplan.errors import ArgumentTypeError, SmcplanError, check_int
from smcplan.pomdp.checks import check_belief
from smcplan.pomdp.model import DiscretePOMDP

__all__ = ["solve_exact", "exact_q_values", "TreeTooLargeError", "MAX_TREE_ENTRIES"]

#: Largest (number of beliefs in one level) × |S| the expansion may hold (≈ 160 MB of float64).
MAX_TREE_ENTRIES = 2 * 10**7

_TIE = 1e-9


class TreeTooLargeError(SmcplanError, MemoryError):
    """The belief tree for the requested horizon does not fit :data:`MAX_TREE_ENTRIES`."""


def _expand(
    T: np.ndarray, O: np.ndarray, beliefs: np.ndarray, limit: int, what: str  # noqa: N803, E741
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Children of every belief: (parent*A + a) index, P(o|b,a), child beliefs — only P > 0."""
    predicted = np.einsum("ms,ast->mat", beliefs, T)  # (M, A, S')
    p_obs = np.einsum("mas,aso->mao", predicted, O)  # (M, A, O)
    m_idx, a_idx, o_idx = np.nonzero(p_obs > 0)
    if m_idx.size * T.shape[1] > limit:
        raise TreeTooLargeError(
            f"{what}: {m_idx.size:,} beliefs of {T.shape[1]} states exceed {limit:,} entries; use "
            "a smaller horizon"
        )
    probs = p_obs[m_idx, a_idx, o_idx]
    children = (
        predicted[m_idx, a_idx, :] * np.transpose(O, (0, 2, 1))[a_idx, o_idx, :] / probs[:, None]
    )
    return m_idx * T.shape[0] + a_idx, probs, children


def exact_q_values(pomdp: DiscretePOMDP, belief: Any, horizon: int) -> np.ndarray:
    r""":math:`Q_h(b, a)` for every action (float64, shape (A,)), by exhaustive expectimax."""
    if not isinstance(pomdp, DiscretePOMDP):
        raise ArgumentTypeError(f"pomdp must be a DiscretePOMDP; got {type(pomdp).__name__}")
    horizon = check_int(horizon, "horizon", minimum=1)
    b = check_belief(belief, pomdp.num_states, "belief", pomdp.name)
    T, O, R = pomdp.T, pomdp.O, pomdp.R  # noqa: N806, E741
    n_a, n_s = pomdp.num_actions, pomdp.num_states

    levels = [b[None]]
    links: list[tuple[np.ndarray, np.ndarray]] = []  # per level: (parent*A + a, P(o|b,a))
    for depth in range(1, horizon):
        parents = levels[-1]
        if parents.shape[0] * n_a * max(n_s, pomdp.num_observations) > MAX_TREE_ENTRIES:
            raise TreeTooLargeError(
                f"horizon {horizon} on {pomdp.name}: level {depth} would predict "
                f"{parents.shape[0]:,} x {n_a} beliefs "
                f"of {n_s} states (> {MAX_TREE_ENTRIES:,} entries); use a smaller horizon"
            )
        slot, probs, children = _expand(
            T, O, parents, MAX_TREE_ENTRIES, f"horizon {horizon} on {pomdp.name}, level {depth}"
        )
        links.append((slot, probs))
        levels.append(children)

    # back up from the deepest level (1 decision left) to the root (horizon decisions left)
    values = (levels[-1] @ R).max(axis=1)  # V_1
    q = levels[-1] @ R
    for depth in range(horizon - 1, 0, -1):
        slot, probs = links[depth - 1]
        parents = levels[depth - 1]
        future = np.zeros(parents.shape[0] * n_a)
        np.add.at(future, slot, probs * values)
        q = parents @ R + pomdp.discount * future.reshape(parents.shape[0], n_a)
        values = q.max(axis=1)
    return q[0]


def solve_exact(pomdp: DiscretePOMDP, belief: Any, horizon: int) -> tuple[int, float]:
    r"""Optimal first action and value :math:`(\arg\max_a Q_h(b,a),\ V_h(b))` over ``horizon``
    steps.

    Ties (within ``1e-9 (1 + |V|)``) are broken towards the lowest action index, so the answer
    does not depend on floating-point noise.  Use ``pomdp.action_names[action]`` for the name.
    """
    q = exact_q_values(pomdp, belief, horizon)
    best = q.max()
    action = int(np.flatnonzero(q >= best - _TIE * (1.0 + abs(best)))[0])
    return action, float(best)
