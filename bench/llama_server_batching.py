"""The model calls of one NeSyFS step on llama-server: one slot (``--parallel 1``) against P slots.

    PYTHONPATH=. .venv/bin/python bench/llama_server_batching.py --parallel 5 --repeats 3

Per role, the same inputs in both modes (so, unlike a whole agent run, nothing diverges): the
reflection's n = 5 votes on three contexts (one ``n_cmpl`` request each with P slots), the
world model's predicted observations for N = 4 particles (4 concurrent requests), the progress
judge on those 4 particles (Yes/No rows of 4 prompts, concurrently), the fast module's scoring
of each admissible action (rows of one prompt: one after another in both modes), and a 5-vote
free-text sample (no grammar) for the raw decode.  Each mode starts its own server (packaged
SmolLM2 Q4_1 GGUF, ``--threads`` threads) and warms every call once; then ``--repeats`` timed
calls.  Reports the median wall and CPU seconds (this process plus the server) per call, the
speed-up, and whether both modes returned the same outputs (the same seeds).  Writes
``bench/results/llama_server_batching.json`` with the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, write_json  # noqa: E402
from remote_step import OBS, cpu_seconds  # noqa: E402

TASK = "find the coin"
CONTEXTS = [
    OBS[0],
    OBS[1],
    "You are in the pantry. You see a shelf; on the shelf is a coin. Exits: south.",
]
ACTIONS = ["open fridge", "move north", "take coin"]
ADMISSIBLE = [
    "move north", "move south", "move east", "move west", "open fridge", "close fridge",
    "open door to north", "open door to south", "look around", "inventory", "take coin",
    "open oven", "close oven", "examine stove",
]  # fmt: skip


def calls(lm) -> dict:
    """The role calls, each a function of a seed returning comparable outputs."""
    from smcplan.llm.roles import ActionProposal, ObservationModel, ProgressModel, Reflection

    reflect = Reflection(lm, n=5, settings={"max_new_tokens": 32})
    world = ObservationModel(lm, max_new_tokens=32)
    judge = ProgressModel(lm)
    propose = ActionProposal(lm)
    particles = [f"Task: {TASK}\n{CONTEXTS[i % 3]}" for i in range(4)]
    moves = ["move north", "open fridge", "move east", "look around"]
    free = [[{"role": "user", "content": "Describe the kitchen of this house."}]]

    return {
        "reflection (n=5, 3 contexts)": lambda seed: [
            (v.votes, v.thought)
            for v in reflect([TASK] * 3, CONTEXTS, ACTIONS, seed=seed)
        ],
        "world model (N=4)": lambda seed: [s.text for s in world(particles, moves, seed=seed)],
        "progress judge (N=4)": lambda seed: [
            round(float(p.logp_yes), 3)
            for p in judge([TASK] * 4, particles, moves, [OBS[1]] * 4)
        ],
        "fast module scoring (14 actions)": lambda seed: [
            p.action for p in propose([TASK], [[]], [CONTEXTS[0]], [ADMISSIBLE], seed=seed)
        ],
        "free text (n=5, 32 tokens)": lambda seed: [
            s.text for s in lm.sample(free, n=5, max_new_tokens=32, seed=seed)[0]
        ],
    }


def run_mode(parallel: int, threads: int, repeats: int) -> dict:
    from smcplan.llm import load_model
    from smcplan.llm.backends.llamacpp_server import serve_llama_server

    out = {}
    with serve_llama_server("smollm2-135m", threads=threads, parallel=parallel) as url:
        lm = load_model(f"openai:{url}#smollm2-135m", timeout=600)
        for name, fn in calls(lm).items():
            fn(0)  # warm-up: grammar compilation, the prompt in a slot
            walls, cpus, outputs = [], [], []
            for k in range(repeats):
                t0, c0 = time.perf_counter(), cpu_seconds()
                outputs.append(fn(k + 1))
                walls.append(time.perf_counter() - t0)
                cpus.append(cpu_seconds() - c0)
            out[name] = {
                "wall_s": statistics.median(walls),
                "cpu_s": statistics.median(cpus),
                "outputs": outputs,
            }
        out["slots"] = lm.slots
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.parallel < 2 or args.repeats < 1 or args.threads < 1:
        parser.error("need --parallel >= 2, --repeats >= 1 and --threads >= 1")
    load_before = os.getloadavg()
    one = run_mode(1, args.threads, args.repeats)
    many = run_mode(args.parallel, args.threads, args.repeats)
    rows, roles = [], {}
    for name in one:
        if name == "slots":
            continue
        a, b = one[name], many[name]
        same = a["outputs"] == b["outputs"]
        roles[name] = {
            "p1": {k: a[k] for k in ("wall_s", "cpu_s")},
            f"p{args.parallel}": {k: b[k] for k in ("wall_s", "cpu_s")},
            "speedup_wall": a["wall_s"] / b["wall_s"],
            "speedup_cpu": a["cpu_s"] / b["cpu_s"],
            "same_outputs": same,
        }
        rows.append([
            name, f"{a['wall_s']:.2f}", f"{b['wall_s']:.2f}", f"{a['wall_s'] / b['wall_s']:.2f}x",
            f"{a['cpu_s']:.2f}", f"{b['cpu_s']:.2f}", "yes" if same else "no",
        ])  # fmt: skip
    print(f"\nSmolLM2 Q4_1 on llama-server, {args.threads} thread(s), median of {args.repeats}")
    print_table(
        ["call", "wall s P=1", f"wall s P={args.parallel}", "speed-up", "CPU s P=1",
         f"CPU s P={args.parallel}", "same outputs"],
        rows,
    )  # fmt: skip
    print(
        "wrote",
        write_json(
            "llama_server_batching",
            {
                "parallel": args.parallel,
                "threads": args.threads,
                "repeats": args.repeats,
                "roles": roles,
                "load_average_before": load_before,
                "load_average_after": os.getloadavg(),
                "command": " ".join([Path(sys.executable).name, *sys.argv]),
            },
        ),
    )


if __name__ == "__main__":
    main()
