"""What one oracle planning step costs on ScienceWorld (why docs/ablation.md cut its cell).

    PYTHONPATH=. python scripts/scienceworld_plan_cost.py [--task find-living-thing] [--n 8] [--h 2]

Resets the task's first dev variation, prints the number of admissible actions (the simulator's
valid action-object combinations) and the gold path, then times one ``smcplan.plan`` call with
the simulator world model (each particle a ``clone()``: a second simulator in the same JVM,
replayed), the env twist and the uniform proposal: wall seconds and this process's CPU seconds
(the JVM's are not counted).
"""

from __future__ import annotations

import argparse
import time

import smcplan
from smcplan.envs import make


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="find-living-thing")
    parser.add_argument("--n", type=int, default=8)
    parser.add_argument("--h", type=int, default=2)
    args = parser.parse_args()
    env = make(f"scienceworld:{args.task}", split="dev", max_steps=25)
    try:
        obs, info = env.reset()
        print(f"{len(info['admissible_actions'])} admissible actions; gold: {env.gold_actions()}")
        cpu, wall = time.process_time(), time.time()
        res = smcplan.plan(
            env.task, None, env.admissible_actions(), observation=obs, key=0,
            world_model="simulator", simulator=env.clone, progress="env", proposal="uniform",
            num_particles=args.n, horizon=args.h, lam=3.0, choice="max_weight", extractor="none",
        )  # fmt: skip
        print(
            f"one plan call (N={args.n}, H={args.h}): {time.time() - wall:.1f} s wall, "
            f"{time.process_time() - cpu:.1f} s CPU in this process; chose {res.action!r}"
        )
    finally:
        env.close()


if __name__ == "__main__":
    main()
