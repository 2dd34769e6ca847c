r"""The policy head's cold start, and its regulariser chosen by cross-validation over episodes.

The cold-start head is :math:`\hat w_\lambda = \arg\min_w -\frac1N \sum_i \log\pi_w(c_i) +
\frac{\lambda}{2}\lVert w\rVert^2` (:func:`~smcplan.train.head_objective.fit_max_likelihood`).
A :math:`\lambda` that is too small fits the gold steps almost exactly: the head is then nearly
deterministic, the :math:`G` episodes of a GRPO group come out the same, and every advantage is
0 (seen in the first smoke run).  :func:`cross_validate_l2` picks :math:`\lambda` from ``grid``
by :math:`K`-fold cross-validation in which the folds hold out whole *episodes* (the steps of
one episode share its states, so a step-level split would leak them):

.. math:: \mathrm{CV}(\lambda) = \frac{1}{N} \sum_{k=1}^{K} \sum_{i \in F_k}
    -\log \pi_{\hat w_\lambda^{(-k)}}(c_i \mid s_i),

the held-out negative log-likelihood per step, with :math:`\hat w_\lambda^{(-k)}` fitted without
fold :math:`F_k`.  The minimiser is chosen (ties: the larger :math:`\lambda`).  Episode ``e``'s
fold is its rank among the sorted episode names modulo :math:`K`: deterministic, no draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from smcplan.agents.rlvmr_rewards import TAGS
from smcplan.errors import InvalidArgumentError, check_float, check_int
from smcplan.llm.roles.policy_head import PolicyHead
from smcplan.train.head_episodes import gold_steps
from smcplan.train.head_objective import fit_max_likelihood, make_batch, segment_log_softmax

__all__ = ["episode_folds", "cross_validate_l2", "cold_start_head", "standardised"]


def episode_folds(episodes: Sequence[str], folds: int) -> np.ndarray:
    """The fold of each step: the rank of its episode among the sorted distinct episodes,
    modulo ``folds``."""
    check_int(folds, "folds", minimum=2)
    names = sorted(set(episodes))
    if len(names) < folds:
        raise InvalidArgumentError(
            f"folds={folds} but only {len(names)} episodes; give at most {len(names)} folds"
        )
    rank = {e: i % folds for i, e in enumerate(names)}
    return np.array([rank[e] for e in episodes])


def _held_out(w: np.ndarray, zs: list[np.ndarray], gold: list[int]) -> tuple[float, float, float]:
    """Summed NLL, correct argmaxes and summed entropy of ``w`` on the steps."""
    batch = make_batch(zs, gold)
    logp = segment_log_softmax(batch.z @ w, batch.starts, batch.seg)
    ends = [*batch.starts[1:].tolist(), int(batch.z.shape[0])]
    nll = correct = entropy = 0.0
    for s, e, c in zip(batch.starts.tolist(), ends, batch.chosen.tolist(), strict=True):
        part = logp[s:e]
        nll -= float(logp[c])
        correct += float(s + int(np.argmax(part)) == c)
        entropy -= float(np.sum(np.exp(part) * part))
    return nll, correct, entropy


def cross_validate_l2(
    zs: Sequence[np.ndarray],
    gold: Sequence[int],
    episodes: Sequence[str],
    grid: Sequence[float],
    folds: int = 5,
) -> tuple[float, list[dict[str, Any]]]:
    """:math:`\\lambda^* = \\arg\\min_{\\lambda \\in \\text{grid}} \\mathrm{CV}(\\lambda)`
    (module docstring) for steps with standardised candidate features ``zs[i]`` (n_i, d), gold
    index ``gold[i]`` and episode ``episodes[i]``.  Returns it and one row per
    :math:`\\lambda`: held-out ``nll`` and ``accuracy`` per step, the mean ``entropy`` of the
    held-out policies (nats) and the ``steps``."""
    if not (len(zs) == len(gold) == len(episodes)) or not zs:
        raise InvalidArgumentError(
            f"zs, gold and episodes: {len(zs)}, {len(gold)} and {len(episodes)} steps; give one "
            "gold index and one episode name per step, at least one step"
        )
    grid = [check_float(x, "l2", minimum=0.0, min_inclusive=False) for x in grid]
    if not grid:
        raise InvalidArgumentError("l2 grid is empty; give at least one value, e.g. [1e-4,1e-2]")
    fold = episode_folds(list(episodes), folds)
    table = []
    for lam in grid:
        nll = correct = entropy = 0.0
        for k in range(folds):
            train = [i for i in range(len(zs)) if fold[i] != k]
            test = [i for i in range(len(zs)) if fold[i] == k]
            batch = make_batch([zs[i] for i in train], [gold[i] for i in train])
            w, _ = fit_max_likelihood(batch, lam)
            a, b, c = _held_out(w, [zs[i] for i in test], [gold[i] for i in test])
            nll, correct, entropy = nll + a, correct + b, entropy + c
        n = len(zs)
        table.append({"l2": lam, "nll": nll / n, "accuracy": correct / n, "entropy": entropy / n,
                      "steps": n})  # fmt: skip
    best = min(table, key=lambda r: (r["nll"], -r["l2"]))
    return float(best["l2"]), table


def cold_start_head(
    shards: Any, features: Any, tags: Any = TAGS, l2: Any = 1e-6, recent: int = 3,
    layers: Any = (), folds: int = 5, map_notes: bool = False, context: str = "full",
) -> PolicyHead:  # fmt: skip
    """The cold-start head (module docstring, step 1) fitted on the gold steps of ``shards``;
    ``l2`` a grid of several values: the one of least held-out NLL, ``folds``-fold over
    episodes (:func:`smcplan.train.head_cold_start.cross_validate_l2`), its table in ``info``;
    ``map_notes``: each candidate carries its map note, from the place maps the critic's noted
    examples use (the shards' env rules, each state's map read from its episode's earlier gold
    steps: :func:`smcplan.agents.map_notes.episode_maps`); ``context``: what the state text
    holds (:func:`smcplan.llm.roles.policy_head.state_text`)."""
    from smcplan.train.data import read_shard

    reads = [read_shard(s) for s in shards]
    transitions = [tr for r in reads for tr in r.transitions]
    maps = None
    if map_notes:
        from smcplan.train.critic import _maps

        maps = _maps(transitions, [r.header for r in reads])
    steps = gold_steps(transitions, tags, recent, maps, context)
    if not steps:
        raise InvalidArgumentError(
            f"no won episode in {[str(s) for s in shards]}: the cold start needs successful "
            "gold episodes (smcplan train collect --source gold)"
        )
    if maps is None:  # the plain call: features that take no notes still work
        phis = [features(s["state"], s["pairs"]) for s in steps]
    else:
        phis = [features(s["state"], s["pairs"], s["notes"]) for s in steps]
    rows = np.concatenate(phis)
    base = PolicyHead.uniform(rows.shape[1], tags, layers)
    base = standardised(base, rows, "the gold steps' candidates")
    zs, gold = [base.standardise(p) for p in phis], [s["gold"] for s in steps]
    grid = [float(x) for x in (l2 if isinstance(l2, (list, tuple)) else [l2])]
    table = None
    if len(grid) > 1:
        l2, table = cross_validate_l2(zs, gold, [str(s["episode"]) for s in steps], grid, folds)
    else:
        l2 = grid[0]
    w, fit = fit_max_likelihood(make_batch(zs, gold), l2)
    info = {**fit, "examples": len(steps), "episodes": len({s["episode"] for s in steps}),
            "l2": l2, "chance": float(np.mean([1.0 / len(s["pairs"]) for s in steps]))}  # fmt: skip
    if table is not None:
        info["l2_cv"] = {"folds": folds, "table": table}
    return base.with_weight(w, cold_start=info)


def standardised(head: PolicyHead, rows: np.ndarray, source: str) -> PolicyHead:
    """``head`` with :math:`\\mu, \\sigma` the mean and standard deviation of the feature
    ``rows`` (a column with :math:`\\sigma \\le 10^{-6} \\max \\sigma` keeps 1)."""
    scale = rows.std(axis=0)
    scale = np.where(scale > 1e-6 * max(float(scale.max()), 1e-300), scale, 1.0)
    info = {k: v for k, v in head.info.items() if k != "standardise"}
    return PolicyHead(head.layers, rows.mean(axis=0), scale, head.weight, head.tags,
                      {**info, "standardised_on": source})  # fmt: skip
