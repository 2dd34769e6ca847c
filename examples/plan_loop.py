r"""An agent builder's loop: ``smcplan.plan`` picks every action of a real TextWorldExpress game,
with its text defaults and no oracle.

    .venv/bin/python examples/plan_loop.py                 # twx:coin, dev seed 10000
    .venv/bin/python examples/plan_loop.py --seed 10002

``plan(task, memory, admissible_actions, ...)`` without ``config=`` runs its text defaults
(``smcplan.planning.config.PLAN_TEXT_DEFAULTS``, docs/planning.md "plan()'s text defaults"):
the learned world model shipped in ``models/trained/twx-coin-world-model`` (a LoRA adapter on
SmolLM2-135M, loaded once from the repository, nothing downloaded) imagines the reply to every
admissible action once (N = |A|, H = 1, greedy), the ``task+novelty`` twist scores each imagined
step against what the episode has seen (``Seen``, kept up to date below), and the best one is
taken (``choice="max_weight"``).  The planner never touches the game: the loop executes the
chosen action in the real environment itself.  The loop prints each step's action and the
seconds ``plan()`` took, and ends with whether the game was won (dev seed 10000: won in 4
steps; tests/test_examples.py runs it).
"""

from __future__ import annotations

import argparse
import time

import smcplan
from smcplan.envs import make
from smcplan.planning.seen import Seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=10000)
    parser.add_argument("--steps", type=int, default=25)
    args = parser.parse_args()

    env = make("twx:coin", split="dev")
    try:
        observation, info = env.reset(args.seed)
        seen = Seen().after(observation, None, info, "twx:coin")
        for step in range(args.steps):
            start = time.perf_counter()
            result = smcplan.plan(
                env.task, None, info["admissible_actions"], observation=observation,
                seen=seen, env_kind="twx:coin", key=step,
            )  # fmt: skip
            print(f"[{step}] > {result.action}   ({time.perf_counter() - start:.1f} s)")
            observation, _reward, done, info = env.step(result.action)
            seen = seen.after(observation, result.action, info, "twx:coin")
            if done:
                break
        cfg = result.config
        print(
            f"== won: {info['won']}, {step + 1} steps; world model {cfg['world_model_kind']} "
            f"{cfg['world_model_path']} (oracle: {cfg['oracle']}), {result.num_particles} "
            f"particles, horizon {result.horizon}, twist {cfg['progress']}"
        )
    finally:
        env.close()


if __name__ == "__main__":
    main()
