"""Benchmark: the TSMC planner on toy POMDPs, side by side with the exact expectimax reference.

For each domain (Tiger; household "check first"; the default 3-receptacle household), planner
configuration, number of particles N and horizon H it reports

* decisions per second of ``smcplan.plan`` once compiled (median over ``--seeds`` runs per
  belief; the best run too, since a shared machine adds noise), next to the time of one
  ``smcplan.pomdp.solve_exact`` call on the same belief;
* the jit compile time (first call minus a steady-state call), separately;
* the agreement rate: the fraction of runs whose action is optimal by ``solve_exact``'s
  Q-values (any of the tied optimal actions; ``n/a`` where the exact tree is too large).

Configurations: ``twisted/reward`` (plan()'s default: twisted SMC for p0 exp(beta G_H) with the
terminal reward potential), ``twisted/reward_cumulative`` (the myopic reward twist),
``twisted/value`` (the exact expectimax value twist) and ``nesyfs/value`` (the NeSyFS rule with
the exact value twist's progress, lam = 5); the value twists only where the belief tree fits.

    .venv/bin/python bench/planner_toy.py                # the full grid (several minutes on 2
    cores)
    .venv/bin/python bench/planner_toy.py --quick        # N in {64, 1024}, H = 3, 5 seeds

Prints a table and writes ``bench/results/planner_toy.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from smcplan.planning import PlanningError, plan
from smcplan.pomdp import TreeTooLargeError, exact_q_values, solve_exact
from smcplan.pomdp.domains import household, household_check_first, tiger

CONFIGS: dict[str, dict[str, Any]] = {
    "twisted/reward": dict(weighting="twisted", twist="reward", beta=1.0),
    "twisted/reward_cumulative": dict(weighting="twisted", twist="reward_cumulative", beta=1.0),
    "twisted/value": dict(weighting="twisted", twist="value", beta=1.0),
    "nesyfs/value": dict(weighting="nesyfs", twist="value", lam=5.0),
}


def domains() -> dict[str, tuple[Any, list[np.ndarray]]]:
    t = tiger()
    return {
        "tiger": (t, [np.array([0.5, 0.5]), np.array([0.999, 0.001]), np.array([0.001, 0.999])]),
        "household_check_first": (household_check_first(), [None]),
        "household": (household(), [None]),
    }


def reference(
    pomdp: Any, beliefs: list[Any], horizon: int
) -> tuple[list[set[int]] | None, float | None, str]:
    """The optimal first actions per belief (all of them when several tie: the household's
    receptacles are symmetric under a uniform prior) and solve_exact's mean time, or why skipped."""
    try:
        optimal, times = [], []
        for b in beliefs:
            b = pomdp.b0 if b is None else b
            t0 = time.perf_counter()
            solve_exact(pomdp, b, horizon)
            times.append(time.perf_counter() - t0)
            q = exact_q_values(pomdp, b, horizon)
            optimal.append(set(np.flatnonzero(q >= q.max() - 1e-9 * (1 + abs(q.max()))).tolist()))
        return optimal, statistics.mean(times), ""
    except TreeTooLargeError as err:
        return None, None, f"solve_exact: {str(err).split(';')[0]}"


def run_cell(
    pomdp: Any,
    beliefs: list[Any],
    n: int,
    horizon: int,
    config: dict[str, Any],
    seeds: int,
    exact: list[set[int]] | None,
) -> dict[str, Any]:
    # first call compiles (jit caches on shapes and static settings)
    t0 = time.perf_counter()
    plan(pomdp, beliefs[0], 10_000, n, horizon, **config)  # returns host values: synchronous
    first = time.perf_counter() - t0
    times, agree = [], 0
    for b_idx, b in enumerate(beliefs):
        for seed in range(seeds):
            t0 = time.perf_counter()
            res = plan(pomdp, b, seed, n, horizon, **config)
            times.append(time.perf_counter() - t0)
            if exact is not None:
                agree += int(res.action in exact[b_idx])
    steady = statistics.median(times)
    runs = len(beliefs) * seeds
    return {
        "decisions_per_s": 1.0 / steady,
        "ms_per_decision": 1e3 * steady,
        "best_ms_per_decision": 1e3 * min(times),
        "compile_s": max(first - steady, 0.0),
        "agreement": agree / runs if exact is not None else None,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-particles", type=int, nargs="+", default=[64, 1024, 16384])
    parser.add_argument("--horizons", type=int, nargs="+", default=[3, 6])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--domains", nargs="+", default=list(domains()), choices=list(domains()))
    parser.add_argument(
        "--seeds", type=int, default=10, help="runs per belief (agreement and timing)"
    )
    parser.add_argument("--quick", action="store_true", help="N in {64, 1024}, H = 3, 5 seeds")
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "planner_toy.json")
    )
    args = parser.parse_args()
    if args.quick:
        args.num_particles, args.horizons, args.seeds = [64, 1024], [3], 5

    rows: list[dict[str, Any]] = []
    header = (
        f"{'domain':<22} {'config':<26} {'N':>6} {'H':>2} {'dec/s':>9} {'ms/dec':>8} "
        f"{'best ms':>8} "
        f"{'compile s':>9} {'agree':>6} {'exact ms':>9}"
    )
    print(header)
    print("-" * len(header))
    all_domains = domains()
    for dname in args.domains:
        pomdp, beliefs = all_domains[dname]
        for horizon in args.horizons:
            exact, exact_s, why = reference(pomdp, beliefs, horizon)
            for cname in args.configs:
                for n in args.num_particles:
                    row: dict[str, Any] = {
                        "domain": dname,
                        "config": cname,
                        "num_particles": n,
                        "horizon": horizon,
                        "exact_ms": None if exact_s is None else 1e3 * exact_s,
                        "exact_note": why,
                    }
                    try:
                        row.update(
                            run_cell(pomdp, beliefs, n, horizon, CONFIGS[cname], args.seeds, exact)
                        )
                    except PlanningError as err:  # the exact value twist does not fit
                        row.update(skipped=str(err).split(";")[0])
                        print(
                            f"{dname:<22} {cname:<26} {n:>6} {horizon:>2}  skipped: "
                            f"{row['skipped'][:60]}"
                        )
                        rows.append(row)
                        continue
                    agree = "n/a" if row["agreement"] is None else f"{row['agreement']:.2f}"
                    ex = "n/a" if row["exact_ms"] is None else f"{row['exact_ms']:.2f}"
                    print(
                        f"{dname:<22} {cname:<26} {n:>6} {horizon:>2} "
                        f"{row['decisions_per_s']:>9.1f} "
                        f"{row['ms_per_decision']:>8.2f} {row['best_ms_per_decision']:>8.2f} "
                        f"{row['compile_s']:>9.2f} "
                        f"{agree:>6} {ex:>9}",
                        flush=True,
                    )
                    rows.append(row)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "cpu": platform.processor() or platform.machine(),
        "seeds_per_belief": args.seeds,
    }
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
