"""Resampling speed: smcplan (O(N) inverse-CDF counting) vs particles (numba) vs blackjax, one run.

    .venv/bin/python bench/resampling.py [--sizes 1000 100000 1000000] [--repeats 10]

``smcplan ms`` is the public call (with its eager weight check); ``kernel ms`` the jitted kernel
alone, as called inside a jitted planner.  Median wall time of one call (after warm-up, results
blocked on) for systematic, stratified and
multinomial at each N; prints a table and writes bench/results/resampling.json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median_seconds, print_table, write_json  # noqa: E402

from smcplan.smc import resampling as ours  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000, 1_000_000, 10_000_000])
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()

    import blackjax.smc.resampling as bj
    import particles.resampling as pr

    rows, records = [], []
    for n in args.sizes:
        rng = np.random.default_rng(0)
        w_np = rng.dirichlet(np.ones(n))
        w_jax = jnp.asarray(w_np, jnp.float32)
        key = jax.random.key(0)
        for scheme in ("systematic", "stratified", "multinomial"):
            ours_fn = ours.SCHEMES[scheme]
            kernel = getattr(
                ours, f"_{scheme}"
            )  # the jitted kernel, as called inside a jitted planner
            bj_fn = jax.jit(getattr(bj, scheme), static_argnums=2)
            pr_fn = getattr(pr, scheme)
            t_ours = median_seconds(
                lambda: ours_fn(key, w_jax, n).block_until_ready(), args.repeats
            )
            t_kernel = median_seconds(
                lambda: kernel(key, w_jax, n).block_until_ready(), args.repeats
            )
            t_bj = median_seconds(lambda: bj_fn(key, w_jax, n).block_until_ready(), args.repeats)
            t_pr = median_seconds(lambda: pr_fn(w_np, M=n), args.repeats)
            rec = {
                "n": n,
                "scheme": scheme,
                "smcplan_ms": 1e3 * t_ours,
                "smcplan_kernel_ms": 1e3 * t_kernel,
                "particles_ms": 1e3 * t_pr,
                "blackjax_ms": 1e3 * t_bj,
            }
            rec["speedup_vs_particles"] = t_pr / t_ours
            rec["speedup_vs_blackjax"] = t_bj / t_ours
            records.append(rec)
            rows.append(
                [
                    n,
                    scheme,
                    f"{1e3 * t_ours:.3f}",
                    f"{1e3 * t_kernel:.3f}",
                    f"{1e3 * t_pr:.3f}",
                    f"{1e3 * t_bj:.3f}",
                    f"{t_pr / t_ours:.2f}x",
                    f"{t_bj / t_ours:.2f}x",
                ]
            )
    print_table(
        [
            "N",
            "scheme",
            "smcplan ms",
            "kernel ms",
            "particles ms",
            "blackjax ms",
            "vs particles",
            "vs blackjax",
        ],
        rows,
    )
    path = write_json(
        "resampling", {"repeats": args.repeats, "jax": jax.__version__, "results": records}
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
