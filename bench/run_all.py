"""Run every benchmark in ``bench/`` (``make bench``), each writing ``bench/results/<name>.json``.

    .venv/bin/python bench/run_all.py            # the quick settings below (minutes on 2 cores)
    .venv/bin/python bench/run_all.py --full     # each script's own defaults (hours)
    .venv/bin/python bench/run_all.py kg envs    # only these

:data:`QUICK` lists every script with the arguments of its quick run; a script in ``bench/``
that is not listed makes this runner fail (``tests/test_bench.py`` checks it too), so a new
benchmark cannot be left out. Each script runs in its own process; afterwards its JSON must
exist and be newer than the start of the run. Writes ``bench/results/run_all.json`` (command,
seconds and exit status per script).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"

#: script stem -> arguments of its quick run (``--full`` drops them)
QUICK: dict[str, list[str]] = {
    "resampling": ["--sizes", "1000", "100000", "1000000", "--repeats", "5"],
    "exact_filter": ["--repeats", "10"],
    "kg": ["--quick"],
    "planner_toy": ["--quick"],
    "twist_cost": ["--repeats", "5"],
    "envs": ["--envs", "twx:coin", "webshop", "toy:household", "--steps", "200"],
    "alfworld_clone": [
        "--seeds",
        "100",
        "--depths",
        "0",
        "10",
        "--repeats",
        "3",
        "--plan-calls",
        "1",
    ],
    "llm_roles": ["--batches", "1", "8", "--precisions", "fp32", "--skip-load"],
    "shared_prefill": ["--quick"],
    "sibling_features": ["--quick"],
    "llm_cuda": [],  # writes a "skipped" record when no CUDA device is visible
    "viewer_size": ["--episodes", "5", "--max-steps", "20"],
    "agent_step": ["--agents", "react", "--seeds", "10000", "--steps", "2"],
    "profile_step": ["--agents", "react", "--steps", "1", "--top", "10"],
    # tiny random-weight model: smcplan's train_sft against plain TRL (~30 s on 2 cores)
    "train_throughput": ["--model", "tiny", "--examples", "32", "--steps", "8"],
    # tiny random-weight model: one GRPO-MR iteration, LoRA against the policy head (~30 s)
    "grpo_iteration": ["--model", "tiny", "--group-size", "2", "--max-steps", "5"],
    # need smcplan[scale] (Ray; llama-cpp-python's server)
    "ray_workers": ["--episodes", "2", "--max-steps", "3", "--model", "tiny"],
    "remote_step": ["--steps", "1"],
    "llama_server_batching": ["--repeats", "1"],
}


def scripts() -> list[str]:
    """The benchmark scripts in ``bench/`` (helpers start with ``_``; this runner excluded)."""
    return sorted(
        p.stem for p in BENCH.glob("*.py") if not p.name.startswith("_") and p.stem != "run_all"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scripts to run (default: all)")
    parser.add_argument("--full", action="store_true", help="each script's own defaults")
    args = parser.parse_args(argv)
    missing = sorted(set(scripts()) - set(QUICK))
    if missing:
        print(f"bench/run_all.py: no quick settings for {', '.join(missing)}; add them to QUICK")
        return 2
    unknown = sorted(set(args.names) - set(QUICK))
    if unknown:
        print(
            f"bench/run_all.py: unknown benchmark {', '.join(unknown)}; known: {', '.join(QUICK)}"
        )
        return 2
    runs = []
    for name in args.names or list(QUICK):
        cmd = [sys.executable, str(BENCH / f"{name}.py"), *([] if args.full else QUICK[name])]
        print(f"\n=== {' '.join(cmd[1:])}", flush=True)
        start = time.time()
        rc = subprocess.run(cmd, cwd=BENCH.parent).returncode
        out = RESULTS / f"{name}.json"
        wrote = out.exists() and out.stat().st_mtime >= start
        runs.append(
            {
                "name": name,
                "command": cmd[1:],
                "rc": rc,
                "json": wrote,
                "seconds": round(time.time() - start, 1),
            }
        )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "run_all.json").write_text(json.dumps({"full": args.full, "runs": runs}, indent=1))
    print("\nbenchmark | rc | JSON | s")
    for r in runs:
        print(f"{r['name']} | {r['rc']} | {'yes' if r['json'] else 'NO'} | {r['seconds']}")
    return 0 if all(r["rc"] == 0 and r["json"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
