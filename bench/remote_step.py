"""A ReAct step on TextWorldExpress coin: llama.cpp servers vs in-process llama.cpp vs transformers.

    PYTHONPATH=. taskset -c 1 .venv/bin/python bench/remote_step.py --steps 3

(a timing: pinned to one core, not niced; the server inherits the pinning.) Plays the first
``--steps`` steps of dev seed 10000 with ``make("react", seed=0)`` four times, each with the
packaged SmolLM2 on one thread: through llama.cpp's C++ ``llama-server`` and through
llama-cpp-python's server on 127.0.0.1 (``load_model("openai:<url>#smollm2-135m")``, the Q4_1
GGUF; ``--servers`` picks them), on llama.cpp in this process
(``load_model("llamacpp:")``, the same GGUF) and on transformers (``load_model(threads=1)``, fp32
weights dequantised from it). Reports the wall time per step (median), the model calls, how the
server's rows were scored (``forced`` in one request / ``retried`` / ``echo``), the CPU seconds
per step (this process plus the server: robust to other jobs on the machine) and whether the
backends chose the same actions (different kernels and quantisation, so they may not); then
the CPU seconds of the decode-heavy roles (triplet extraction + a 5-sample reflection). One
warm-up step per backend is not timed (outlines builds its index on first use). Writes
``bench/results/remote_step.json`` with the load average before and after.
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


def cpu_seconds() -> float:
    """CPU time of this process and of a llama.cpp server it started (a contention-robust
    measure next to wall time: other jobs on the machine inflate wall time, not CPU time)."""
    import psutil

    total = time.process_time()
    for child in psutil.Process().children(recursive=True):
        try:
            line = " ".join(child.cmdline())
            if "llama_cpp.server" in line or "llama-server" in line:
                t = child.cpu_times()
                total += t.user + t.system
        except psutil.Error:
            pass
    return total


def play(lm, steps: int) -> tuple[list[float], list[str], int, dict, list[float]]:
    from smcplan.agents import make
    from smcplan.envs import make as make_env

    env = make_env("twx:coin", split="dev", max_steps=50)
    times, actions, cpus = [], [], []
    try:
        for timed in (False, True):  # warm-up episode step, then the timed steps
            agent = make("react", lm=lm, seed=0)
            obs, info = env.reset(10000)
            acts = list(info["admissible_actions"])
            agent.reset(env.task, obs, acts)
            calls0 = lm.usage.calls
            for _ in range(steps if timed else 1):
                t0, c0 = time.perf_counter(), cpu_seconds()
                step = agent.act(obs, acts, info)
                if timed:
                    times.append(time.perf_counter() - t0)
                    cpus.append(cpu_seconds() - c0)
                    actions.append(step.action)
                obs, _, done, info = env.step(step.action)
                if done:
                    break
                acts = list(info["admissible_actions"])
        paths = dict(getattr(lm, "scoring_paths", {}))
        return times, actions, lm.usage.calls - calls0, paths, cpus
    finally:
        env.close()


OBS = [
    "You are in the kitchen. In one part of the room you see a stove. There is also an oven. "
    "You also see a fridge that is closed. To the north you see a closed wooden door.",
    "You are in the backyard. In one part of the room you see a barbecue. There is also a "
    "patio table, that has nothing on it. To the south you see a closed sliding patio door.",
]


def roles(lm, repeats: int) -> list[float]:
    """CPU seconds of the decode-heavy roles NeSyFS calls per step: triplet extraction (JSON,
    two observations) and reflection (5 yes/no samples with a reason), ``repeats`` times."""
    from smcplan.llm.roles import Reflection, TripletExtractor

    extract, reflect = TripletExtractor(lm, temperature=1.0), Reflection(lm)
    extract(OBS, ["look", "look"], seed=0)  # warm-up (outlines / grammar compilation)
    out = []
    for k in range(repeats):
        c0 = cpu_seconds()
        extract(OBS, ["look", "look"], seed=k + 1)
        reflect(["find the coin"], [OBS[0]], ["open fridge"], seed=k + 1)
        out.append(cpu_seconds() - c0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--role-repeats", type=int, default=3)
    parser.add_argument(
        "--servers",
        nargs="*",
        default=["llama-server", "llama-cpp-python"],
        choices=["llama-server", "llama-cpp-python"],
        help="which servers to run (none: the in-process backends only)",
    )
    args = parser.parse_args()
    from smcplan.llm import load_model
    from smcplan.llm.backends.llamacpp_server import serve_llama_server, serve_llamacpp

    result = {}
    load_before = os.getloadavg()
    role_cpu = {}
    servers = {
        "llama-server": ("llama.cpp llama-server (C++)", serve_llama_server),
        "llama-cpp-python": ("llama-cpp-python server", serve_llamacpp),
    }
    for key in args.servers:
        name, serve = servers[key]
        with serve("smollm2-135m", threads=1) as url:
            remote = load_model(f"openai:{url}#smollm2-135m", timeout=600)
            result[name] = play(remote, args.steps)
            role_cpu[name] = roles(remote, args.role_repeats)
    lcpp = load_model("llamacpp:", threads=1)
    result["llama.cpp in-process"] = play(lcpp, args.steps)
    role_cpu["llama.cpp in-process"] = roles(lcpp, args.role_repeats)
    del lcpp
    local = load_model(threads=1)
    result["transformers in-process"] = play(local, args.steps)
    role_cpu["transformers in-process"] = roles(local, args.role_repeats)
    load_after = os.getloadavg()
    rows, out = [], {}
    for name, (times, actions, calls, paths, cpus) in result.items():
        med, cpu = statistics.median(times), statistics.median(cpus)
        rows.append(
            [name, len(times), f"{med:.1f}", f"{cpu:.1f}", f"{sum(times):.1f}", calls,
             paths or "-", " / ".join(actions)]
        )  # fmt: skip
        out[name] = {
            "step_s": times,
            "median_step_s": med,
            "step_cpu_s": cpus,
            "median_step_cpu_s": cpu,
            "calls": calls,
            "scoring_paths": paths,
            "actions": actions,
        }
    print_table(
        [
            "backend",
            "steps",
            "median s/step",
            "median CPU s/step",
            "total s",
            "model calls",
            "server rows",
            "actions",
        ],  # fmt: skip
        rows,
    )
    print()
    print_table(
        ["backend", "triplets (2 obs) + reflection (n=5): median CPU s"],
        [[name, f"{statistics.median(v):.1f}"] for name, v in role_cpu.items()],
    )
    same = len({tuple(r[1]) for r in result.values()}) == 1
    print("same actions:", same, " load average before", load_before, "after", load_after)
    payload = {
        "steps": args.steps,
        "runs": out,
        "same_actions": same,
        "roles_cpu_s": role_cpu,
        "load_average_before": load_before,
        "load_average_after": load_after,
    }
    print("wrote", write_json("remote_step", payload))


if __name__ == "__main__":
    main()
