r"""Run directories with real planner records, for the viewer's tests and the README screenshot.

:func:`planner_run` runs the real harness (:func:`smcplan.eval.run_eval`) with the real NeSyFS
agent on the real ``toy:household`` environment and the tiny random-weight model
(:func:`smcplan.llm.testing.tiny_model`). Only the reflection is a test double: it says No to
the first ``K`` proposals of the episode (so step 0 runs slow thinking once) and Yes afterwards.

When NeSyFS's slow thinking records the trace itself (``PlanResult.trace``, issue 12) its own
planner runs and the record is used as written. Before that, the planner is the real text planner
(:func:`smcplan.plan`, the slow thinker's roles on the same model) with its twist wrapped by
:class:`RecordingTwist`, which sees exactly what the planner
sees at each step :math:`t`: the particles' proposed actions :math:`a^i_t`, imagined observations
:math:`o^i_t` and the twist's :math:`\delta^i_t`, :math:`\log\psi^i_t`. :func:`trace_of` turns that
and the :class:`~smcplan.planning.PlanResult` (ancestry, resampling flags, ESS, final log-weights)
into the agreed ``meta["plan"]["trace"]``, recomputing the normalised log-weights by the NeSyFS
rule

.. math:: \log W^t_i = \log W^{t-1}_{A_t(i)} + \lambda\,\delta^i_t - \log\sum_j(\cdot)_j
          \quad(\log W^{t-1} = -\log N \text{ after resampling}),

and checks them against the planner's own final log-weights and ESS: the trace is the planner's,
not a reconstruction that could drift from it. Either way :func:`check_trace` verifies the
recorded trace against that recurrence.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from smcplan.llm import Verdict
from smcplan.planning import PlanResult

N, H, K = 4, 2, 3
#: Whether NeSyFS's slow thinking records the trace itself (``PlanResult.trace``, issue 12).
AGENT_WRITES_TRACE = hasattr(PlanResult, "trace")


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


class RecordingTwist:
    """Wraps a planner twist; keeps, per call, what the planner scored at that step."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.steps: list[dict[str, Any]] = []

    def __call__(self, key, particles, t, horizon):
        score = self.inner(key, particles, t, horizon)
        self.steps.append(
            {
                "t": int(t),
                "actions": [p.steps[-1][0] for p in particles],
                "observations": [p.steps[-1][1][:160] for p in particles],
                "delta": np.asarray(score.delta, dtype=float).tolist(),
                "log_psi": np.asarray(score.log_psi, dtype=float).tolist(),
            }
        )
        return score


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
        np.testing.assert_allclose(np.asarray(st["log_weights"], dtype=float), log_w, atol=1e-5)
        np.testing.assert_allclose(st["weights"], np.exp(log_w), atol=1e-5)
        assert abs(st["ess"] - 1.0 / float(np.sum(np.exp(2 * log_w)))) < 1e-4
    assert trace["chosen_index"] is None or 0 <= trace["chosen_index"] < n


def trace_of(result: Any, recorded: list[dict[str, Any]], lam: float) -> dict[str, Any]:
    """The agreed trace of one planner call (module docstring); asserts it matches ``result``."""
    n, steps = result.num_particles, []
    ancestry = np.asarray(result.ancestry)
    resampled = np.asarray(result.resampled)
    log_w = np.full(n, -math.log(n))
    for k, rec in enumerate(recorded):
        anc = ancestry[k]
        assert rec["actions"] == list(result.step_actions[k])
        prev = np.full(n, -math.log(n)) if resampled[k] else log_w[anc]
        x = prev + lam * np.asarray(rec["delta"])
        log_w = x - np.logaddexp.reduce(x)
        w = np.exp(log_w)
        ess = 1.0 / float(np.sum(w**2))
        assert abs(ess - float(np.asarray(result.ess)[k])) < 1e-4
        steps.append(
            {
                **rec,
                "ancestors": anc.tolist(),
                "log_weights": log_w.tolist(),
                "weights": w.tolist(),
                "ess": ess,
                "resampled": bool(resampled[k]),
            }
        )
    np.testing.assert_allclose(log_w, np.asarray(result.log_weights), atol=1e-5)
    return {
        "steps": steps,
        "chosen_index": result.chosen_index,
        "action": str(result.action),
        "truncated": False,
    }


class TracingPlanner:
    """NeSyFS's ``planner=``: the real text planner with a recording twist; keeps each call's
    trace (in call order) for :func:`planner_run` to put into the step records."""

    def __init__(self, lm: Any, num_particles: int = N, horizon: int = H, lam: float = 1.0):
        from smcplan.llm import ActionProposal, ObservationModel, ProgressModel

        self.lm, self.n, self.h, self.lam = lm, num_particles, horizon, lam
        self.proposer = ActionProposal(lm, temperature=1.0, think=False)
        self.observation_model = ObservationModel(lm, max_new_tokens=24)
        self.progress_model = ProgressModel(lm)
        self.traces: list[dict[str, Any]] = []

    def __call__(self, ctx, kg, admissible, seed, extractor=None):
        from smcplan import plan
        from smcplan.planning.text_components import LMProgress

        twist = RecordingTwist(LMProgress(self.progress_model, ctx.task))
        result = plan(
            ctx.task,
            kg,
            list(admissible),
            lm=self.lm,
            observation=ctx.observation,
            key=int(seed),
            extractor=extractor if extractor is not None else "none",
            proposer=self.proposer,
            observation_model=self.observation_model,
            twist=twist,
            num_particles=self.n,
            horizon=self.h,
            lam=self.lam,
        )
        self.traces.append(trace_of(result, twist.steps, self.lam))
        return result


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

    # NeSyFS's own slow thinker writes the trace once PlanResult can (issue 12); before that the
    # recording planner above supplies it
    planner = None if AGENT_WRITES_TRACE else TracingPlanner(lm, num_particles, horizon)

    def make_agent(name, lm_, agent_seed, config):
        return make(
            "nesyfs", lm=lm_, seed=agent_seed, reflector=NoThenYes(), planner=planner,
            num_particles=num_particles, horizon=horizon,
        )  # fmt: skip

    config = EvalConfig(
        envs=[env], agent="nesyfs", out=str(root), seeds=[seed], max_steps=max_steps
    )
    (summary,) = run_eval(config, make_agent=make_agent, load_lm=lambda *_: lm, progress=False)
    path = RunPaths(root).steps(summary["episode"])
    records = list(read_jsonl(path))
    if planner is not None:  # put the recorded traces into the step records, in call order
        traces = iter(planner.traces)
        for r in records:
            plan_ = r["meta"].get("plan")
            if plan_ is not None:
                plan_.update(world_model="lm", oracle=False, twist="lm", tie_break=None)
                plan_["trace"] = next(traces)
                final = plan_["trace"]["steps"][-1]["weights"]
                plan_["degenerate"] = max(final) - min(final) < 1e-12
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    for r in records:
        if r["meta"].get("plan"):
            check_trace(r["meta"]["plan"]["trace"])
    return Path(root)
