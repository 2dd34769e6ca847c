"""Environment adapters: start time, reset time, steps/s under random admissible actions, memory.

    .venv/bin/python bench/envs.py [--envs twx:coin twx:cookingworld scienceworld:boil webshop \
        toy:household alfworld:pick_and_place] [--steps 2000] [--sw-steps 200] [--seed 0]

For each env: construct it (JVM start included), time ``reset`` over 5 seeds (median), then
take random admissible actions (``random.Random(seed)``) for ``--steps`` steps (``--sw-steps``
for ScienceWorld, which is ~50x slower), resetting when an episode ends (steps/s counts the
time inside ``step`` only; episodes end at 100 steps in both implementations).  Memory: resident set
of this Python process and of the env's JVM (where there is one) after the run.

Side by side, in the same run, the reference: the benchmark's own Python wrapper
(``textworld_express.TextWorldExpressEnv``, ``scienceworld.ScienceWorldEnv``) driven by the same
policy, so the adapter's overhead (supervision, bookkeeping, info dict) is visible.  WebShop's
original server cannot run offline, the toy POMDPs have no other implementation, and ALFWorld's
reference is its own adapter's concern: those rows have no reference.

Prints a table and writes ``bench/results/envs.json``.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json  # noqa: E402

from smcplan.envs import make  # noqa: E402

SEEDS = {
    "twx": [20000, 20001, 20002, 20003, 20004],
    "scienceworld": None,  # the task's first 5 test variations
    "webshop": [0, 1, 2, 3, 4],
    "toy": [0, 1, 2, 3, 4],
    "alfworld": [0, 1, 2, 3, 4],
}


def _rss_mb(pid: int | None) -> float | None:
    if pid is None:
        return None
    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except psutil.NoSuchProcess:
        return None


def _random_steps(step, reset, admissible, steps: int, rng: random.Random) -> tuple[float, int]:
    """Seconds spent in ``steps`` random admissible actions (resets not counted) and the number
    of episodes that ended."""
    episodes, seconds = 0, 0.0
    for _ in range(steps):
        action = rng.choice(admissible())
        t0 = time.perf_counter()
        done = step(action)
        seconds += time.perf_counter() - t0
        if done:
            episodes += 1
            reset()
    return seconds, episodes


def _row(name, impl, start_s, reset_times, step, reset, admissible, steps, rng, jvm_pid):
    """Time ``steps`` random steps; the result row (memory measured after the steps)."""
    seconds, episodes = _random_steps(step, reset, admissible, steps, rng)
    return {
        "env": name,
        "impl": impl,
        "start_s": start_s,
        "reset_ms": 1e3 * statistics.median(reset_times),
        "steps": steps,
        "steps_per_s": steps / seconds,
        "episodes_ended": episodes,
        "python_rss_mb": _rss_mb(psutil.Process().pid),
        "jvm_rss_mb": _rss_mb(jvm_pid()),
    }


def bench_adapter(name: str, steps: int, seed: int) -> dict[str, Any]:
    family = name.split(":")[0]
    t0 = time.perf_counter()
    env = make(name)
    start_s = time.perf_counter() - t0
    try:
        seeds = SEEDS[family] or env.variations("test")[:5]
        reset_times = []
        for s in seeds:
            t0 = time.perf_counter()
            env.reset(s)
            reset_times.append(time.perf_counter() - t0)
        env.reset(seeds[0])
        rng = random.Random(seed)
        state = {"actions": env.admissible_actions()}

        def step(action: str) -> bool:
            result = env.step(action)
            state["actions"] = result.info["admissible_actions"]
            return result.done

        def reset() -> None:
            env.reset(seeds[0])
            state["actions"] = env.admissible_actions()

        return _row(name, "smcplan", start_s, reset_times, step, reset,
                    lambda: state["actions"], steps, rng, lambda: getattr(env, "java_pid", None))
    finally:
        env.close()
        gc.collect()


def bench_reference(name: str, steps: int, seed: int) -> dict[str, Any] | None:
    family, _, item = name.partition(":")
    rng = random.Random(seed)
    if family == "twx":
        from textworld_express import TextWorldExpressEnv

        t0 = time.perf_counter()
        raw = TextWorldExpressEnv(envStepLimit=99)  # theirs ends after limit + 1
        start_s = time.perf_counter() - t0
        seeds = SEEDS["twx"]
        reset_times = []
        for s in seeds:
            t0 = time.perf_counter()
            _, infos = raw.reset(seed=s, gameFold="test", gameName=item, gameParams="",
                                 generateGoldPath=True)
            reset_times.append(time.perf_counter() - t0)
        state = {"actions": sorted(infos["validActions"])}

        def step(action: str) -> bool:
            _, _, done, infos = raw.step(action)
            state["actions"] = sorted(infos["validActions"])
            return done

        def reset() -> None:
            _, infos = raw.reset(seed=seeds[0], gameFold="test", gameName=item, gameParams="",
                                 generateGoldPath=True)
            state["actions"] = sorted(infos["validActions"])

        reset()
        pid = raw._gateway.java_process.pid
    elif family == "scienceworld":
        from scienceworld import ScienceWorldEnv

        t0 = time.perf_counter()
        raw = ScienceWorldEnv("", envStepLimit=99)
        start_s = time.perf_counter() - t0
        raw.load(item, 0, "easy")
        seeds = list(raw.get_variations_test())[:5]
        reset_times = []
        for s in seeds:
            t0 = time.perf_counter()
            raw.load(item, s, "easy")
            _, infos = raw.reset()
            reset_times.append(time.perf_counter() - t0)
        state = {"actions": sorted(set(infos["valid"]))}

        def step(action: str) -> bool:
            _, _, done, infos = raw.step(action)
            state["actions"] = sorted(set(infos["valid"]))
            return done

        def reset() -> None:
            raw.load(item, seeds[0], "easy")
            _, infos = raw.reset()
            state["actions"] = sorted(set(infos["valid"]))

        reset()
        pid = raw._gateway.java_process.pid
    else:
        return None
    try:
        return _row(name, "reference", start_s, reset_times, step, reset,
                    lambda: state["actions"], steps, rng, lambda: pid)
    finally:
        raw.close()
        try:
            raw._gateway.java_process.wait(timeout=10)
        except Exception:
            raw._gateway.java_process.kill()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", nargs="+", default=["twx:coin", "twx:cookingworld",
                                                    "scienceworld:boil", "webshop",
                                                    "toy:household"])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--sw-steps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    records = []
    for name in args.envs:
        steps = args.sw_steps if name.startswith("scienceworld") else args.steps
        for fn in (bench_adapter, bench_reference):
            rec = fn(name, steps, args.seed)
            if rec is not None:
                records.append(rec)
                print(f"  {rec['impl']:9s} {name}: {rec['steps_per_s']:.0f} steps/s", flush=True)

    def fmt(x: float | None, spec: str) -> str:
        return "-" if x is None else format(x, spec)

    rows = [
        [r["env"], r["impl"], fmt(r["start_s"], ".2f"), fmt(r["reset_ms"], ".1f"),
         fmt(r["steps_per_s"], ".0f"), r["episodes_ended"], fmt(r["python_rss_mb"], ".0f"),
         fmt(r["jvm_rss_mb"], ".0f")]
        for r in records
    ]
    print_table(["env", "impl", "start s", "reset ms", "steps/s", "episodes", "python MB",
                 "JVM MB"], rows)
    path = write_json("envs", {"seed": args.seed, "results": records})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
