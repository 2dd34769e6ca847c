"""ALFWorld ``clone()``: replaying the episode on a fresh engine vs checking a snapshot out.

    .venv/bin/python bench/alfworld_clone.py [--seeds 100 101 102] [--depths 0 5 10 20]
        [--repeats 5] [--plan-calls 3]

The simulator world model (``world_model="simulator"``) gives every particle its own
``clone()`` of the environment, so on ALFWorld a planning step costs N clones plus N·H engine
steps, and resampling clones again. Two implementations, side by side in one run on the same
games and states:

* ``replay`` (the reference): a fresh TextWorld ``PddlEnv`` loads the game and replays the
  episode's actions (``AlfWorldEnv(clone_by="replay")``);
* ``snapshot``: the clone shares the engine and checks its state out of fast-downward's state
  registry (``clone_by="snapshot"``, the default; :mod:`smcplan.envs.alfworld_gen.engine`).

Rows: CPU milliseconds for ``clone()`` + one step of the clone at episode depth t (the gold
walkthrough's first t actions, padded with "look" when it is shorter), median of ``--repeats``;
and CPU seconds of one ``smcplan.plan`` call (simulator, env+task twist, uniform proposal,
N = 8, H = 3, λ = 3, the ablation's settings) at depth 10, with the chosen action, which must be
the same in both modes (same key, same dynamics). CPU time (``time.process_time``) because the
machine is shared. Writes ``bench/results/alfworld_clone.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json  # noqa: E402

MODES = ("replay", "snapshot")


def _advance(env: Any, depth: int) -> None:
    gold = env.gold_actions()
    for action in (gold[: max(0, len(gold) - 1)] + ["look"] * depth)[:depth]:
        env.step(action)


@contextlib.contextmanager
def _game_at(seed: int, mode: str, depth: int) -> Iterator[Any]:
    """Game ``seed`` of pick_and_place (split train), cloning by ``mode``, ``depth`` steps in."""
    from smcplan.envs import make

    with make(
        "alfworld:pick_and_place", seed=seed, split="train", max_steps=100, clone_by=mode
    ) as env:
        env.reset()
        _advance(env, depth)
        yield env


def _clone_and_step_ms(env: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        twin = env.clone()
        twin.step("look")
        times.append(time.process_time() - t0)
        twin.close()
    return 1e3 * statistics.median(times)


def _plan_call(env: Any, key: int) -> tuple[float, str]:
    import smcplan

    t0 = time.process_time()
    res = smcplan.plan(
        env.task,
        None,
        env.admissible_actions(),
        observation="",
        key=key,
        world_model="simulator",
        simulator=env.clone,
        progress="env+task",
        proposal="uniform",
        num_particles=8,
        horizon=3,
        lam=3.0,
        choice="max_weight",
        extractor="none",
    )
    return time.process_time() - t0, res.action


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[100, 101, 102])
    ap.add_argument("--depths", type=int, nargs="+", default=[0, 5, 10, 20])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--plan-calls", type=int, default=3)
    args = ap.parse_args(argv)

    clone_rows, plan_rows = [], []
    for seed in args.seeds:
        for depth in args.depths:
            row: dict[str, Any] = {"seed": seed, "depth": depth}
            for mode in MODES:
                with _game_at(seed, mode, depth) as env:
                    row[f"{mode}_ms"] = _clone_and_step_ms(env, args.repeats)
            row["speedup"] = row["replay_ms"] / row["snapshot_ms"]
            clone_rows.append(row)
        row = {"seed": seed, "depth": 10}
        for mode in MODES:
            with _game_at(seed, mode, 10) as env:
                calls = [_plan_call(env, key) for key in range(args.plan_calls)]
                row[f"{mode}_s"] = statistics.median(c[0] for c in calls)
                row[f"{mode}_actions"] = [c[1] for c in calls]
        row["speedup"] = row["replay_s"] / row["snapshot_s"]
        row["same_actions"] = row["replay_actions"] == row["snapshot_actions"]
        plan_rows.append(row)

    print("clone() + one step of the clone, CPU ms (median)")
    print_table(
        ["seed", "t", "replay (ref)", "snapshot", "speedup"],
        [
            [
                r["seed"],
                r["depth"],
                f"{r['replay_ms']:.1f}",
                f"{r['snapshot_ms']:.1f}",
                f"{r['speedup']:.1f}x",
            ]
            for r in clone_rows
        ],
    )
    print("\none plan() call at t = 10 (simulator, env+task, uniform, N=8, H=3), CPU s (median)")
    print_table(
        ["seed", "replay (ref)", "snapshot", "speedup", "same actions"],
        [
            [
                r["seed"],
                f"{r['replay_s']:.2f}",
                f"{r['snapshot_s']:.2f}",
                f"{r['speedup']:.1f}x",
                r["same_actions"],
            ]
            for r in plan_rows
        ],
    )
    path = write_json(
        "alfworld_clone", {"args": vars(args), "clone": clone_rows, "plan": plan_rows}
    )
    print(f"\nwrote {path}")
    return 0 if all(r["same_actions"] for r in plan_rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
