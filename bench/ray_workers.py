"""Episodes per hour of ``smcplan eval`` with 1 worker (in-process) and N Ray workers.

    PYTHONPATH=. .venv/bin/python bench/ray_workers.py --episodes 16 --workers 1 2

ReAct with the packaged SmolLM2 on TextWorldExpress coin (dev seeds 10000..), 10 steps per
episode, exactly as ``smcplan eval --env twx:coin --agent react --max-steps 10 --workers N``.
Reports the wall time of the whole sweep (Ray start-up and one model load per worker included),
episodes/hour from it, the summed per-episode wall time divided by the sweep's wall time
(the parallelism actually obtained), and whether every episode's records equal those of the
1-worker run apart from timings, the seconds before the first episode started (start-up) and
each run's summed episode time relative to the first run's (contention between workers).
Writes ``bench/results/ray_workers.json``.

``--llama-server P`` serves the model on one llama.cpp ``llama-server`` with P slots
(``--server-threads`` threads) that every worker shares (``--model openai:<url>#smollm2-135m``
for each run): the workers' requests decode in the server's batches instead of each worker
running its own model.

    PYTHONPATH=. .venv/bin/python bench/ray_workers.py --agent nesyfs --max-steps 5 \
        --episodes 4 --workers 1 2 --llama-server 10 --server-threads 2
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, write_json  # noqa: E402


def _records(out: str) -> dict:
    from smcplan.eval.ray_sweep import TIMING_FIELDS
    from smcplan.eval.records import RunPaths, read_json, read_jsonl

    paths = RunPaths(out)
    result = {}
    for p in paths.summaries():
        s = {k: v for k, v in read_json(p).items() if k not in TIMING_FIELDS}
        s["stats"] = {k: v for k, v in s["stats"].items() if k not in TIMING_FIELDS}
        steps = [
            {k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in read_jsonl(paths.steps(s["episode"]))
        ]
        result[s["episode"]] = (s, steps)
    return result


def _unix(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--max-steps", type=int, default=10)
    parser.add_argument("--agent", default="react")
    parser.add_argument("--env", default="twx:coin")
    parser.add_argument(
        "--model",
        default=None,
        help="load_model name (default SmolLM2); 'tiny' = the tiny test model",
    )
    parser.add_argument("--llama-server", type=int, default=None, metavar="P",
                        help="share one llama-server with P slots between the workers")
    parser.add_argument("--server-threads", type=int, default=2)
    args = parser.parse_args()
    if args.llama_server is None:
        _sweeps(args)
        return
    from smcplan.llm.backends.llamacpp_server import serve_llama_server

    name = args.model or "smollm2-135m"
    with serve_llama_server(name, threads=args.server_threads, parallel=args.llama_server) as url:
        args.served = f"openai:{url}#{name}"
        _sweeps(args)


def _sweeps(args: argparse.Namespace) -> None:
    from smcplan.eval import EvalConfig, run_eval

    model = getattr(args, "served", None) or args.model
    if model == "tiny":
        from smcplan.llm.testing import tiny_model_path

        model = str(tiny_model_path())

    rows, runs, reference = [], {}, None
    root = tempfile.mkdtemp(prefix="bench-ray-")
    for n in args.workers:
        out = os.path.join(root, f"w{n}")
        config = EvalConfig(
            envs=[args.env],
            agent=args.agent,
            out=out,
            seeds=list(range(10000, 10000 + args.episodes)),
            max_steps=args.max_steps,
            model=model,
        )
        t0, t0_unix = time.perf_counter(), time.time()
        summaries = run_eval(config, progress=False, workers=n)
        wall = time.perf_counter() - t0
        busy = sum(s["wall_s"] for s in summaries)
        # seconds from the sweep's start to its first episode's start (Ray, model and env start-up;
        # started_at has one-second resolution)
        startup = min(_unix(s["started_at"]) for s in summaries) - t0_unix
        busy_ref = busy if not runs else next(iter(runs.values()))["episode_wall_s_sum"]
        records = _records(out)
        reference = records if reference is None else reference
        same = records == reference
        eph = len(summaries) / wall * 3600
        runs[n] = {
            "wall_s": wall,
            "episodes": len(summaries),
            "episodes_per_hour": eph,
            "episode_wall_s_sum": busy,
            "parallelism": busy / wall,
            "startup_s": startup,
            "episode_time_vs_first": busy / busy_ref,
            "steps": sum(s["steps"] for s in summaries),
            "errors": sum(s["status"] == "error" for s in summaries),
            "same_records_as_first": same,
        }
        rows.append(
            [
                n,
                len(summaries),
                f"{wall:.0f}",
                f"{eph:.1f}",
                f"{busy / wall:.2f}",
                f"{startup:.0f}",
                f"{busy / busy_ref:.2f}",
                same,
            ]
        )
    base = runs[args.workers[0]]["episodes_per_hour"]
    for row, n in zip(rows, args.workers, strict=True):
        row.append(f"{runs[n]['episodes_per_hour'] / base:.2f}x")
    print_table(
        [
            "workers",
            "episodes",
            "wall s",
            "episodes/h",
            "parallelism",
            "start-up s",
            "episode time",
            "same",
            "speed-up",
        ],
        rows,
    )
    print(
        "wrote",
        write_json(
            "ray_workers_llama_server" if args.llama_server else "ray_workers",
            {
                "agent": args.agent,
                "env": args.env,
                "model": args.model or "smollm2-135m",
                "llama_server_slots": args.llama_server,
                "server_threads": args.server_threads if args.llama_server else None,
                "max_steps": args.max_steps,
                "runs": runs,
                "load_average": os.getloadavg(),
            },
        ),
    )


if __name__ == "__main__":
    main()
