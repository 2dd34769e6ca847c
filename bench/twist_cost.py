"""The rule-based twists' cost per planner step against the path length, the carried twists
(``smcplan.planning.twist_carry``: one step per particle) against reading each particle's whole
path from the root (``smcplan.planning.twist_reread``, the implementation before issue 52), in
the same run.

For each path length L in {1, 5, 10, 25, 50}: N = 8 particles of L imagined TextWorldExpress-
like steps (moves, doors, replies, triplets, outcomes; a seeded generator), after an episode
that has seen three rooms.  The timed call is each twist's call at planner step L, on fresh
children of the step-(L-1) particles whose summaries the twist carried from its call at step
L-1, as in a run (building the children is not timed).  Both implementations give the same
numbers (checked here too).  ``--repeats`` (default 30): median and best of that many calls.
Results: bench/results/twist_cost.json.

    .venv/bin/python bench/twist_cost.py
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import jax
import numpy as np

from smcplan.planning.outcome import Outcome
from smcplan.planning.progress import Seen
from smcplan.planning.text_particle import TextParticle
from smcplan.planning.twist_env import EnvProgress
from smcplan.planning.twist_reread import reread_score
from smcplan.planning.twist_rules import NoveltyProgress, ProcessProgress
from smcplan.planning.twist_task import TaskProgress

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json  # noqa: E402

TASK = "Your task is to search the environment and find the coin.  Once you find the coin, take it."
ROOMS = ("kitchen", "living room", "corridor", "backyard", "pantry", "bathroom")
DIRS = ("north", "south", "east", "west")
EPISODE = (
    "You are in the kitchen. In one part of the room you see a stove. \n"
    "To the North you see a closed patio door. To the West you see the living room. ",
    "You are in the living room. You see a sofa. \nTo the East you see the kitchen. "
    "To the South you see a closed wood door. ",
    "You are in the kitchen. You see a stove. \nTo the West you see the living room. ",
)
LENGTHS = (1, 5, 10, 25, 50)
N = 8


def imagined_step(rng: random.Random) -> tuple[str, str, tuple, Outcome]:
    d, q = rng.choice(DIRS), rng.choice(ROOMS)
    action, reply = rng.choice(
        (
            (f"move {d}", f"You are in the {q}. You see a table. \nTo the East you see a door. "),
            (f"open door to {d}", f"You open the wood door, revealing the {q}. "),
            (f"close door to {d}", f"You close the door to the {q}."),
            ("look around", f"You are in the {q}. In one part of the room you see a coin. "),
            ("take coin", "You pick up the coin. "),
            (f"move {d}", "You can't move there, the door is closed."),
        )
    )
    triplets = (("agent", "in", q),) if rng.random() < 0.5 else ()
    return action, reply, triplets, Outcome(score=0.0, invalid=rng.random() < 0.1)


def paths(length: int, seed: int) -> list[list[TextParticle]]:
    """The batches of steps 1..length-1 (shared parents, as after resampling)."""
    rng = random.Random(seed)
    batch = [TextParticle(kg=None, root_observation=EPISODE[-1])] * N
    out = []
    for _ in range(length - 1):
        batch = [
            batch[rng.randrange(N)].extend(a, o, outcome=oc, triplets=tr)
            for a, o, tr, oc in (imagined_step(rng) for _ in range(N))
        ]
        out.append(batch)
    return out


def children(parents: list[TextParticle], rng: random.Random) -> list[TextParticle]:
    return [
        p.extend(a, o, outcome=oc, triplets=tr)
        for p, (a, o, tr, oc) in zip(parents, (imagined_step(rng) for _ in parents), strict=True)
    ]


def twists(seen: Seen) -> dict:
    return {
        "novelty": NoveltyProgress(seen, "twx"),
        "rlvmr": ProcessProgress(seen, "twx"),
        "task": TaskProgress(TASK, seen.layout, "twx"),
        "env": EnvProgress(),
    }


def measure(length: int, repeats: int, seed: int) -> dict:
    seen = Seen()
    for obs in EPISODE:
        seen = seen.after(obs, "move west", {}, "twx")
    key = jax.random.key(0)
    root = [TextParticle(kg=None, root_observation=EPISODE[-1])] * N
    out = {}
    for name, twist in twists(seen).items():
        before = paths(length, seed)
        for t, batch in enumerate(before, start=1):
            twist(key, batch, t, length)  # the summaries a run leaves at step L - 1
        parents = before[-1] if before else root
        rng = random.Random(seed + 1)
        times: dict[str, list[float]] = {"reread": [], "carried": []}
        for _ in range(repeats + 2):
            batch = children(parents, rng)
            t0 = time.perf_counter()
            old = reread_score(twist, key, batch, length, length)
            t1 = time.perf_counter()
            new = twist(key, batch, length, length)
            t2 = time.perf_counter()
            assert np.array_equal(np.asarray(old.log_psi), np.asarray(new.log_psi))
            times["reread"].append(t1 - t0)
            times["carried"].append(t2 - t1)
        out[name] = {
            k: {"median_ms": 1e3 * statistics.median(v[2:]), "best_ms": 1e3 * min(v[2:])}
            for k, v in times.items()
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows, results = [], {}
    for length in LENGTHS:
        res = measure(length, args.repeats, args.seed)
        results[str(length)] = res
        total = {
            impl: {s: sum(res[n][impl][s] for n in res) for s in ("median_ms", "best_ms")}
            for impl in ("reread", "carried")
        }
        results[str(length)]["all four"] = total
        rows.append(
            [
                length,
                f"{total['reread']['median_ms']:.2f} / {total['reread']['best_ms']:.2f}",
                f"{total['carried']['median_ms']:.2f} / {total['carried']['best_ms']:.2f}",
                f"{total['reread']['best_ms'] / total['carried']['best_ms']:.1f}x",
                " ".join(
                    f"{n} {res[n]['reread']['best_ms']:.2f}->{res[n]['carried']['best_ms']:.2f}"
                    for n in ("novelty", "rlvmr", "task", "env")
                ),
            ]
        )
    print(f"twists' time per planner step, N = {N} particles (ms: median / best)")
    print_table(
        ["path length", "reread (before)", "carried (now)", "speedup (best)", "per twist (best)"],
        rows,
    )
    path = write_json(
        "twist_cost",
        {"num_particles": N, "repeats": args.repeats, "lengths": list(LENGTHS), "results": results},
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
