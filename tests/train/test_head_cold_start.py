"""The cold start's l2 by cross-validation over episodes (smcplan.train.head_cold_start)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from smcplan.errors import InvalidArgumentError
from smcplan.train.head_cold_start import cross_validate_l2, episode_folds
from smcplan.train.head_objective import fit_max_likelihood, make_batch
from tests.tolerance import EPS64, log_softmax_tol, sum_tol


def _steps(seed, n=120, k=5, d=12, rule=True):
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=d) * 3
    zs = [rng.normal(size=(k, d)) / math.sqrt(d) for _ in range(n)]
    gold = [int(np.argmax(z @ w_true)) if rule else int(rng.integers(k)) for z in zs]
    episodes = [f"e{i // 6:03d}" for i in range(n)]  # 20 episodes of 6 steps
    return zs, gold, episodes


def test_folds_hold_out_whole_episodes_deterministically():
    eps = ["b", "a", "c", "a", "d", "b"]
    assert episode_folds(eps, 2).tolist() == [1, 0, 0, 0, 1, 1]  # ranks a0 b1 c2 d3, mod 2
    with pytest.raises(InvalidArgumentError, match="at most 4 folds"):
        episode_folds(eps, 5)


def test_the_table_is_the_held_out_nll_of_each_fold_fit():
    zs, gold, eps = _steps(0)
    best, table = cross_validate_l2(zs, gold, eps, [1e-3, 1e-1], folds=4)
    fold = episode_folds(eps, 4)
    for row in table:
        total, mag, term = 0.0, 0.0, 0.0
        for k in range(4):
            tr = [i for i in range(len(zs)) if fold[i] != k]
            w, _ = fit_max_likelihood(make_batch([zs[i] for i in tr], [gold[i] for i in tr]),
                                      row["l2"])  # fmt: skip
            for i in (i for i in range(len(zs)) if fold[i] == k):
                x = zs[i] @ w
                nll = -(x[gold[i]] - x.max() - math.log(np.exp(x - x.max()).sum()))
                total, mag, term = total + nll, max(mag, float(np.abs(x).max())), max(term, nll)
        n = len(zs)  # each term's log-softmax in another order, then the sum in another order
        tol = (n * log_softmax_tol(5, mag, EPS64) + sum_tol(n, term, EPS64)) / n
        assert abs(row["nll"] - total / n) <= tol, (row["nll"], total / n, tol)
    assert best == min(table, key=lambda r: r["nll"])["l2"]


def test_random_labels_choose_the_strongest_penalty_and_a_rule_a_weak_one():
    grid = [1e-6, 1e-2, 10.0]
    noisy, _ = cross_validate_l2(*_steps(1, rule=False), grid)
    assert noisy == 10.0  # any fit of random labels is worse than uniform held out
    ruled, table = cross_validate_l2(*_steps(2, rule=True), grid)
    assert ruled < 10.0 and min(r["nll"] for r in table) < math.log(5) / 2


def test_bad_input_names_the_argument():
    zs, gold, eps = _steps(0, n=12)
    with pytest.raises(InvalidArgumentError, match="one gold index"):
        cross_validate_l2(zs, gold[:-1], eps, [1.0])
    with pytest.raises(InvalidArgumentError, match="l2"):
        cross_validate_l2(zs, gold, eps, [-1.0])
    with pytest.raises(InvalidArgumentError, match="empty"):
        cross_validate_l2(zs, gold, eps, [], folds=2)
