"""Benchmark the exact Bayes filter on RockSample (against pomdp-py) and the particle filter.

    .venv/bin/python bench/exact_filter.py                 # (4,4), (5,5), (7,8); ~1-2 minutes
    .venv/bin/python bench/exact_filter.py --pomdp-py-78   # also time pomdp-py on (7,8) (minutes)

Prints two tables and writes ``bench/results/exact_filter.json``:

1. one exact update (action ``check rock 1``, observation ``the rock looks good``, from the initial
   belief) on RockSample(4,4) |S| = 257, (5,5) |S| = 801 and (7,8) |S| = 12,545, side by side with
   pomdp-py's ``update_histogram_belief`` on the same states (its Python O(|S|^2) double loop).
   Ours is timed three ways: the public ``exact_update`` (name lookup, host sync, impossibility
   check), the jitted kernel ``bayes_update`` alone, and one step of ``exact_filter`` over 100
   steps (``lax.scan``).  The largest |ours - pomdp-py| over states checks both compute the same
   belief (pomdp-py gives impossible transitions probability 1e-9, so ~1e-6 differences are
   expected).  pomdp-py on (7,8) would take ~(12545/801)^2 = 245 times its (5,5) time, so it is
   skipped unless ``--pomdp-py-78``, and the extrapolation is printed instead.
2. bootstrap particle filter throughput (particles x steps per second) on RockSample(7,8) over a
   simulated 50-step episode, N = 10^3, 10^4, 10^5.

Times are medians after warm-up (JIT compilation excluded), as this process's CPU time (all its
threads) and as wall time; the CPU time is the one to compare on a shared machine, and the
1-minute load average is recorded.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json  # noqa: E402

from smcplan.pomdp import (  # noqa: E402
    bayes_update,
    domains,
    exact_filter,
    exact_update,
    particle_filter,
    simulate,
)

ACTION, OBSERVATION = "check rock 1", "the rock looks good"


def timed(fn, repeats: int, warmup: int = 2, inner: int = 1) -> dict:
    """Median seconds per call of ``fn()`` over ``repeats`` rounds of ``inner`` calls, after
    warm-up:
    ``cpu`` = this process's CPU time (all its threads; other jobs on a shared machine inflate it
    little), ``wall`` = elapsed time."""
    for _ in range(warmup):
        fn()
    cpu, wall = [], []
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(inner):
            fn()
        cpu.append((time.process_time() - c0) / inner)
        wall.append((time.perf_counter() - w0) / inner)
    return {"cpu": statistics.median(cpu), "wall": statistics.median(wall)}


def pomdp_py_setup(pomdp):
    """pomdp-py's RockSample models and a Histogram over the same states as ours (same order)."""
    import pomdp_py
    from pomdp_py.problems.rocksample import rocksample_problem as rs

    n, k = pomdp.metadata["n"], pomdp.metadata["k"]
    rock_locs = {tuple(pos): i for i, pos in enumerate(pomdp.metadata["rock_positions"])}

    def in_exit(pos):
        return pos[0] == n

    f = pomdp.factors
    states = []
    for s in range(pomdp.num_states):
        rocks = tuple("good" if (int(f["rocks"][s]) >> i) & 1 else "bad" for i in range(k))
        if f["done"][s]:
            states.append(
                rs.State((n, pomdp.metadata["start"][1]), tuple("bad" for _ in range(k)), True)
            )
        else:
            states.append(rs.State((int(f["x"][s]), int(f["y"][s])), rocks, False))
    histogram = pomdp_py.Histogram({st: float(p) for st, p in zip(states, pomdp.b0, strict=True)})
    models = dict(
        observation_model=rs.RSObservationModel(
            rock_locs, half_efficiency_dist=pomdp.metadata["half_efficiency_distance"]
        ),
        transition_model=rs.RSTransitionModel(n, rock_locs, in_exit),
    )
    action = rs.CheckAction(0)
    observation = rs.Observation("good")
    return pomdp_py.update_histogram_belief, histogram, action, observation, models, states


def time_pomdp_py(pomdp, repeats: int):
    update, histogram, action, observation, models, states = pomdp_py_setup(pomdp)
    result = update(histogram, action, observation, **models)
    belief = np.array([result[s] for s in states])
    return timed(
        lambda: update(histogram, action, observation, **models), repeats=repeats, warmup=0
    ), belief


def time_ours(pomdp, repeats: int) -> dict:
    a, o = pomdp.action_index(ACTION), pomdp.observation_index(OBSERVATION)
    arrays = pomdp.device()
    b0 = arrays.b0
    public = timed(
        lambda: exact_update(pomdp, b0, a, o).block_until_ready(), repeats=repeats, inner=20
    )
    kernel = jax.jit(bayes_update)
    kernel_time = timed(
        lambda: kernel(arrays.transition, arrays.O, b0, a, o)[0].block_until_ready(),
        repeats=repeats,
        inner=20,
    )
    steps = 100
    acts = np.full(steps, a)
    obs = np.zeros(steps, np.int64)  # "you observe nothing" is impossible after a check: use a move
    acts[::2] = pomdp.action_index("move north")
    obs[1::2] = o
    scan_time = timed(
        lambda: exact_filter(pomdp, acts, obs)[0].block_until_ready(), repeats=repeats
    )
    with jax.enable_x64(True):
        arrays64 = pomdp.device()
        public64 = timed(
            lambda: exact_update(pomdp, arrays64.b0, a, o).block_until_ready(),
            repeats=repeats,
            inner=20,
        )
        belief64 = np.asarray(exact_update(pomdp, arrays64.b0, a, o))
    return {
        "exact_update_s": public,
        "exact_update_float64_s": public64,
        "bayes_update_kernel_s": kernel_time,
        "exact_filter_per_step_s": {k: v / steps for k, v in scan_time.items()},
        "belief": belief64,
    }


def bench_updates(sizes, pomdp_py_78: bool, repeats: int):
    rows, records = [], []
    for n, k in sizes:
        t0 = time.perf_counter()
        pomdp = domains.rocksample(n, k)
        compile_s = time.perf_counter() - t0
        ours = time_ours(pomdp, repeats)
        run_ref = (n, k) != (7, 8) or pomdp_py_78
        ref_s, max_diff, note = None, None, ""
        if run_ref:
            ref_s, ref_belief = time_pomdp_py(pomdp, repeats=3)
            max_diff = float(np.abs(ref_belief - ours["belief"]).max())
        record = {
            "problem": f"RockSample({n},{k})",
            "num_states": pomdp.num_states,
            "compile_program_s": compile_s,
            **{key: v for key, v in ours.items() if key != "belief"},
            "pomdp_py_update_s": ref_s,
            "speedup_vs_pomdp_py_cpu": (ref_s["cpu"] / ours["exact_update_s"]["cpu"])
            if ref_s
            else None,
            "speedup_vs_pomdp_py_wall": (ref_s["wall"] / ours["exact_update_s"]["wall"])
            if ref_s
            else None,
            "max_abs_belief_difference": max_diff,
        }
        if not run_ref:
            prev = next(
                (
                    r
                    for r in records
                    if r["problem"] == "RockSample(5,5)" and r["pomdp_py_update_s"]
                ),
                None,
            )
            if prev:
                est = (
                    prev["pomdp_py_update_s"]["cpu"] * (pomdp.num_states / prev["num_states"]) ** 2
                )
                record["pomdp_py_update_cpu_s_extrapolated"] = est
                note = f"skipped: O(|S|^2), ~{est:.0f} s from (5,5)"
            else:
                note = "skipped (--pomdp-py-78 runs it)"
        records.append(record)
        rows.append(
            [
                record["problem"],
                pomdp.num_states,
                f"{compile_s:.2f}",
                f"{ours['exact_update_s']['cpu'] * 1e3:.3f} / "
                f"{ours['exact_update_s']['wall'] * 1e3:.3f}",
                f"{ours['exact_update_float64_s']['cpu'] * 1e3:.3f}",
                f"{ours['bayes_update_kernel_s']['cpu'] * 1e3:.3f}",
                f"{ours['exact_filter_per_step_s']['cpu'] * 1e3:.3f}",
                f"{ref_s['cpu'] * 1e3:.0f} / {ref_s['wall'] * 1e3:.0f}" if ref_s else note,
                f"{record['speedup_vs_pomdp_py_cpu']:.0f}x" if ref_s else "-",
                f"{max_diff:.1e}" if max_diff is not None else "-",
            ]
        )
    print_table(
        [
            "problem",
            "|S|",
            "compile s",
            "exact_update ms cpu/wall",
            "float64 ms",
            "kernel ms",
            "filter/step ms",
            "pomdp-py ms cpu/wall",
            "speed-up (cpu)",
            "max |diff|",
        ],
        rows,
    )
    return records


def bench_particles(sizes_n, steps: int = 50):
    pomdp = domains.rocksample(7, 8)
    rng = np.random.default_rng(0)
    actions = rng.integers(0, pomdp.num_actions, size=steps)
    observations = simulate(pomdp, actions, jax.random.key(0)).observations
    rows, records = [], []
    for n in sizes_n:
        keys = iter(jax.random.split(jax.random.key(1), 100))
        run = lambda: particle_filter(
            pomdp, actions, observations, n, next(keys)
        ).log_likelihood.block_until_ready()  # noqa: E731
        t = timed(run, repeats=5, warmup=1)
        rate = {k: n * steps / v for k, v in t.items()}
        records.append(
            {"num_particles": n, "steps": steps, "seconds": t, "particle_steps_per_s": rate}
        )
        rows.append(
            [
                n,
                steps,
                f"{t['cpu'] * 1e3:.1f} / {t['wall'] * 1e3:.1f}",
                f"{rate['cpu']:.3g} / {rate['wall']:.3g}",
            ]
        )
    print_table(["N", "steps", "filter ms cpu/wall", "particles x steps / s cpu/wall"], rows)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pomdp-py-78", action="store_true", help="also time pomdp-py on RockSample(7,8) (minutes)"
    )
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    print(
        f"jax {jax.__version__} on {jax.devices()[0].platform}; load average "
        f"{os.getloadavg()[0]:.1f}\n"
    )
    print("One exact belief update (check rock 1 -> good), ours vs pomdp-py:")
    updates = bench_updates([(4, 4), (5, 5), (7, 8)], args.pomdp_py_78, args.repeats)
    print("\nBootstrap particle filter on RockSample(7,8):")
    particles = bench_particles([1_000, 10_000, 100_000])
    path = write_json(
        "exact_filter",
        {
            "command": "python bench/exact_filter.py"
            + (" --pomdp-py-78" if args.pomdp_py_78 else ""),
            "load_average_1min": os.getloadavg()[0],
            "default_float": str(jnp.zeros(()).dtype),
            "updates": updates,
            "particle_filter": particles,
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
