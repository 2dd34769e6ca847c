"""A ReAct step on TextWorldExpress coin through llama-cpp-python's server vs the in-process model.

    PYTHONPATH=. nice -n 10 .venv/bin/python bench/remote_step.py --steps 3

Starts the server on 127.0.0.1 (packaged SmolLM2 GGUF, one thread), plays the first ``--steps``
steps of dev seed 10000 with ``make("react", seed=0)`` once through
``load_model("openai:<url>#smollm2-135m")`` and once with ``load_model(threads=1)``, and reports
the wall time per step (median), the model calls per step and whether the two chose the same
actions. One warm-up step per backend is not timed (outlines builds its index on first use).
Writes ``bench/results/remote_step.json``.
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


def play(lm, steps: int) -> tuple[list[float], list[str], int]:
    from smcplan.agents import make
    from smcplan.envs import make as make_env

    env = make_env("twx:coin", split="dev", max_steps=50)
    times, actions = [], []
    try:
        for timed in (False, True):  # warm-up episode step, then the timed steps
            agent = make("react", lm=lm, seed=0)
            obs, info = env.reset(10000)
            acts = list(info["admissible_actions"])
            agent.reset(env.task, obs, acts)
            calls0 = lm.usage.calls
            for _ in range(steps if timed else 1):
                t0 = time.perf_counter()
                step = agent.act(obs, acts, info)
                if timed:
                    times.append(time.perf_counter() - t0)
                    actions.append(step.action)
                obs, _, done, info = env.step(step.action)
                if done:
                    break
                acts = list(info["admissible_actions"])
        return times, actions, lm.usage.calls - calls0
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    from smcplan.llm import load_model
    from smcplan.llm.llamacpp_server import serve_llamacpp

    result = {}
    with serve_llamacpp("smollm2-135m", threads=1) as url:
        remote = load_model(f"openai:{url}#smollm2-135m", timeout=600)
        result["server"] = play(remote, args.steps)
    result["in-process"] = play(load_model(threads=1), args.steps)
    rows, out = [], {}
    for name, (times, actions, calls) in result.items():
        med = statistics.median(times)
        rows.append(
            [name, len(times), f"{med:.1f}", f"{sum(times):.1f}", calls, " / ".join(actions)]
        )
        out[name] = {"step_s": times, "median_step_s": med, "calls": calls, "actions": actions}
    print_table(["backend", "steps", "median s/step", "total s", "model calls", "actions"], rows)
    same = result["server"][1] == result["in-process"][1]
    print("same actions:", same)
    print(
        "wrote", write_json("remote_step", {"steps": args.steps, "runs": out, "same_actions": same})
    )


if __name__ == "__main__":
    main()
