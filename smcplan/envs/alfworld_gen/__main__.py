"""Generate (warm the cache with) ALFWorld games and report generation and play statistics.

    python -m smcplan.envs.alfworld_gen --seeds 0-9 [--tasks pick_and_place,...]
        [--split all|train|test] [--cache-dir DIR] [--json OUT.json] [--no-replay]

For every (task type, seed): generation time (0 when the game was already cached), the
attempt that the expert solved, the floor plan, the walkthrough length, and (unless
``--no-replay``) the time of a first ``reset()`` and the steps/s of replaying the walkthrough
through :class:`smcplan.envs.alfworld.AlfWorldEnv`, which must end in a win.

Must not import anything from ``smcplan`` above ``smcplan.envs``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from smcplan.envs.alfworld_gen.generate import game_folder, generate_game
from smcplan.envs.alfworld_gen.scene import TASK_TYPES
from smcplan.errors import SmcplanError
from smcplan.jsonfile import write_json
from smcplan.options import argtype, check_out_path, parse_seed_ranges


def _seeds(text: str) -> list[int]:
    """``"0,3,5-7"`` -> ``[0, 3, 5, 6, 7]``; anything else (an empty item, a reversed or
    negative range, more than ``MAX_SEEDS`` seeds: counted before they are expanded) is an
    argparse error (one line, exit 2)."""
    return argtype(lambda t: parse_seed_ranges(t).take(), "seeds")(text)


def _tasks(text: str) -> list[str]:
    """A comma-separated list of ALFWorld task types; an unknown or empty one is an argparse
    error naming the known ones."""
    tasks = [t.strip() for t in text.split(",")]
    unknown = [t for t in tasks if t not in TASK_TYPES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown task type(s) {', '.join(map(repr, unknown))}; known: {', '.join(TASK_TYPES)}"
        )
    return tasks


def _one(task: str, seed: int, split: str, cache_dir: str | None, replay: bool) -> dict[str, Any]:
    cached = (game_folder(task, seed, None, split, cache_dir) / "game.tw-pddl").exists()
    t0 = time.perf_counter()
    game = generate_game(task, seed, split=split, cache_dir=cache_dir)
    row: dict[str, Any] = {
        "task_type": task,
        "seed": seed,
        "cached": cached,
        "generate_s": time.perf_counter() - t0,
        "floor_plan": game.floor_plan,
        "attempt": json.loads((game.game_file.parent / "traj_data.json").read_text())["smcplan"][
            "attempt"
        ],
        "walkthrough_len": len(game.walkthrough),
        "task": game.task,
    }
    if replay:
        from smcplan.envs.alfworld import AlfWorldEnv

        with AlfWorldEnv(task, seed, split=split, cache_dir=cache_dir, max_steps=500) as env:
            t0 = time.perf_counter()
            env.reset()
            row["reset_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            for action in game.walkthrough:
                result = env.step(action)
            row["steps_per_s"] = len(game.walkthrough) / (time.perf_counter() - t0)
            row["won"] = bool(result.info["won"])
    return row


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit status 2 (no usage block)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m smcplan.envs.alfworld_gen")
    parser.add_argument("--tasks", type=_tasks, default=list(TASK_TYPES))
    parser.add_argument("--seeds", type=_seeds, default=[0, 1, 2], help="e.g. 0-9 or 0,3,5-7")
    parser.add_argument("--split", default="all", choices=("all", "train", "test"))
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--json", default=None, help="write the per-game rows here")
    parser.add_argument("--no-replay", action="store_true")
    args = parser.parse_args(argv)
    from smcplan.interrupts import stop_on_signals

    try:
        with stop_on_signals():  # Ctrl-C / SIGTERM: exit 130 / 143, one line
            return _run(args)
    except KeyboardInterrupt as exc:
        what = exc.args[0] if exc.args else "stopped by SIGINT"
        print(f"\n{what}: generated games are cached; re-run to go on", file=sys.stderr)
        return getattr(exc, "exit_code", 130)
    except (SmcplanError, OSError) as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.json:
        check_out_path(args.json, "--json", "file")
    rows = []
    for task in args.tasks:
        for seed in args.seeds:
            row = _one(task, seed, args.split, args.cache_dir, not args.no_replay)
            rows.append(row)
            print(
                f"{task:24s} seed {seed:3d}  FloorPlan{row['floor_plan']:<4d} attempt "
                f"{row['attempt']}  gen {row['generate_s']:6.1f}s  expert "
                f"{row['walkthrough_len']:3d}"
                + (
                    f"  reset {row['reset_s']:5.2f}s  {row['steps_per_s']:5.1f} steps/s"
                    f"  won={row['won']}"
                    if "won" in row
                    else ""
                )
                + f"  | {row['task']}",
                flush=True,
            )
    print("\nper task type (fresh generations only for gen time)")
    for task in args.tasks:
        sub = [r for r in rows if r["task_type"] == task]
        fresh = [r["generate_s"] for r in sub if not r["cached"]]
        lengths = [r["walkthrough_len"] for r in sub]
        print(
            f"{task:24s} games {len(sub):3d}  first-attempt "
            f"{sum(r['attempt'] == 0 for r in sub):3d}"
            f"  expert len mean {statistics.mean(lengths):5.1f} max {max(lengths):3d}"
            + (f"  gen mean {statistics.mean(fresh):5.1f}s max {max(fresh):5.1f}s" if fresh else "")
        )
    if args.json:
        write_json(args.json, rows, indent=1)
    return 0 if all(r.get("won", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
