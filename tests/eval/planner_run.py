r"""Run directories with real planner records, for the viewer's tests and the README screenshot.

:func:`planner_run` runs the real harness (:func:`smcplan.eval.run_eval`) with the real NeSyFS
agent (its own slow thinker: ``smcplan.plan`` with the language-model roles, N = 4, H = 2) on a
real environment (``toy:household`` by default) and the given model (the tests use the tiny
random-weight model :func:`smcplan.llm.testing.tiny_model`). Only the reflection is a test
double: it says No to the first ``K`` proposals of the episode (so step 0 runs slow thinking
once) and Yes afterwards. The step records are used as NeSyFS wrote them; :func:`check_trace`
verifies each slow-thinking call's ``meta["plan"]["trace"]`` against the NeSyFS weight
recurrence

.. math:: \log W^t_i = \log W^{t-1}_{A_t(i)} + \lambda\,\delta^i_t - \log\sum_j(\cdot)_j
          \quad(\log W^{t-1} = -\log N \text{ after resampling}),

so the viewer is tested on a trace that is what the planner did.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from smcplan.llm import Verdict
from tests.tolerance import EPS32, smc_logweight_tol

N, H, K = 4, 2, 3


class NoThenYes:
    """A reflection role: No to the first ``k`` proposals it judges, Yes to all later ones."""

    def __init__(self, k: int = K, n: int = 5) -> None:
        self.k, self.n, self.calls = k, n, 0

    def __call__(self, tasks, contexts, actions, seed=None):
        out = []
        for _ in tasks:
            yes = self.calls >= self.k
            self.calls += 1
            votes = [True] * self.n if yes else [i % 3 == 0 for i in range(self.n)]
            frac = sum(votes) / self.n  # 2/5 Yes for a "No": below the 80% threshold
            reason = "it looks useful" if yes else "the coin is not in this room"
            out.append(Verdict(yes, frac, votes, reason, [reason] * self.n))
        return out


def check_trace(trace: dict[str, Any], lam: float = 1.0) -> None:
    r"""The agreed trace is one NeSyFS-weighted SMC run: per step, the log-weights follow
    :math:`\log W^t \propto \log W^{t-1}_{A_t} + \lambda\delta^t` (uniform after resampling),
    ``weights`` = exp(``log_weights``), ESS = :math:`1/\sum_i (W^t_i)^2`, ancestors index the
    previous step (identity at t = 1)."""
    steps = trace["steps"]
    n = len(steps[0]["actions"])
    log_w = np.full(n, -math.log(n))
    for k, st in enumerate(steps):
        assert st["t"] == k + 1 and len(st["actions"]) == len(st["observations"]) == n
        assert all(len(o) <= 160 for o in st["observations"])
        anc = np.asarray(st["ancestors"])
        assert anc.tolist() == list(range(n)) if k == 0 else ((0 <= anc) & (anc < n)).all()
        prev = np.full(n, -math.log(n)) if st["resampled"] else log_w[anc]
        x = prev + lam * np.asarray(st["delta"], dtype=float)
        log_w = x - np.logaddexp.reduce(x)
        # float32 log-weights after k + 1 reweightings (|lw| <= lam * (k + 1) + log n; delta in
        # [0, 1]) vs this float64 recomputation; W = exp(lw) <= 1 adds one rounding
        tol = smc_logweight_tol(k + 1, n, lam * (k + 1) + math.log(n))
        np.testing.assert_allclose(np.asarray(st["log_weights"], dtype=float), log_w, atol=tol)
        np.testing.assert_allclose(st["weights"], np.exp(log_w), atol=tol + EPS32)
        assert abs(st["ess"] - 1.0 / float(np.sum(np.exp(2 * log_w)))) < 1e-4
    assert trace["chosen_index"] is None or 0 <= trace["chosen_index"] < n


def planner_run(
    root: Path,
    lm: Any,
    *,
    env: str = "toy:household",
    seed: int = 0,
    max_steps: int = 3,
    num_particles: int = N,
    horizon: int = H,
) -> Path:
    """A run directory (real harness, NeSyFS on ``env`` seed ``seed``) whose step 0 ran slow
    thinking once (N = 4, H = 2 by default); its ``meta["plan"]`` carries the agreed trace."""
    from smcplan.agents import make
    from smcplan.eval import EvalConfig, run_eval
    from smcplan.eval.records import RunPaths, read_jsonl

    def make_agent(name, lm_, agent_seed, config):
        return make(
            "nesyfs", lm=lm_, seed=agent_seed, reflector=NoThenYes(),
            num_particles=num_particles, horizon=horizon,
        )  # fmt: skip

    config = EvalConfig(
        envs=[env], agent="nesyfs", out=str(root), seeds=[seed], max_steps=max_steps
    )
    (summary,) = run_eval(config, make_agent=make_agent, load_lm=lambda *_: lm, progress=False)
    path = RunPaths(root).steps(summary["episode"])
    records = list(read_jsonl(path))
    for r in records:
        if r["meta"].get("plan"):
            check_trace(r["meta"]["plan"]["trace"])
    return Path(root)
