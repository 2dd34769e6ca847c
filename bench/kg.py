"""Benchmark the knowledge-graph belief: update, retrieve and copy time against graph size.

    .venv/bin/python bench/kg.py            # sizes 10^2 .. 10^4, about a minute on one core
    .venv/bin/python bench/kg.py --quick    # fewer repetitions

Prints two tables and writes ``bench/results/kg.json``:

1. per size n (facts): one ``update`` of a 5-fact batch (a move, a state change, an event, a new
   fact, a closure), one ``retrieve(task, k=2, limit=50)``, one ``copy()``, and one copy followed by
   its first write (what a planner particle pays); side by side with the reference, a networkx
   ``MultiDiGraph`` holding the same facts, copied with ``copy.deepcopy`` and with ``G.copy()``;
2. 1,000 copies of a 500-fact graph (the particle case of the issue), each then written once,
   against the same 1,000 networkx deep copies.

Times are the median of 7 (``--quick``: 3) runs of a timed loop, measured as this process's CPU
time (``time.process_time``), so that other jobs on a shared machine inflate them less than wall
time would.  The graphs
are synthetic but shaped like the benchmarks' (rooms, containers, objects with one place each,
states, events), built from a seeded ``random.Random``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import networkx as nx

from smcplan.memory import KnowledgeGraph

SIZES = (100, 300, 1_000, 3_000, 10_000)
RESULTS = Path(__file__).parent / "results" / "kg.json"


def synthetic_graph(n: int, seed: int = 0) -> KnowledgeGraph:
    """A graph of exactly ``n`` facts: objects in containers in rooms, states, events."""
    rng = random.Random(seed)
    rooms = max(2, n // 60)
    containers = max(4, n // 12)
    kg = KnowledgeGraph()
    step = 0
    while len(kg) < n:
        step += 1
        r = rng.random()
        c = f"container {rng.randrange(containers)}"
        if r < 0.15:
            fact = (c, "in", f"room {rng.randrange(rooms)}")
        elif r < 0.65:
            fact = (f"object {rng.randrange(n)}", rng.choice(["in", "on"]), c)
        elif r < 0.85:
            fact = (rng.choice([c, f"object {rng.randrange(n)}"]), "is",
                    rng.choice(["open", "closed", "hot", "clean", "sliced"]))
        else:
            fact = ("agent", rng.choice(["opened", "visited", "picked up"]),
                    rng.choice([c, f"object {rng.randrange(n)}"]))
        kg.update([fact], step=step)
    return kg


def to_networkx_reference(kg: KnowledgeGraph) -> nx.MultiDiGraph:
    return kg.to_networkx()


def update_batch(
    rng: random.Random, n: int, step: int
) -> tuple[list[tuple[str, str, str]], list[str]]:
    containers = max(4, n // 12)
    c = f"container {rng.randrange(containers)}"
    batch = [
        (f"object {rng.randrange(n)}", "in", c),
        (c, "is", rng.choice(["open", "closed"])),
        ("agent", "opened", c),
        (f"object {rng.randrange(n)}", "is", "hot"),
        ("agent", "at", c),
    ]
    return batch, [c]


def timed(fn, loops: int, repeats: int) -> float:
    """Median over ``repeats`` of the mean CPU seconds per call of ``fn`` over ``loops`` calls."""
    samples = []
    for _ in range(repeats):
        t0 = time.process_time()
        for _ in range(loops):
            fn()
        samples.append((time.process_time() - t0) / loops)
    return statistics.median(samples)


def bench_size(n: int, repeats: int) -> dict[str, float]:
    kg = synthetic_graph(n)
    g = to_networkx_reference(kg)
    rng = random.Random(1)
    state = {"step": kg.step}

    def do_update() -> None:
        state["step"] += 1
        batch, closed = update_batch(rng, n, state["step"])
        kg.update(batch, step=state["step"], closed=closed)

    task = "put a hot object 7 in container 3 and look in room 1"
    loops_fast = max(20, 20_000 // n)
    loops_slow = max(3, 2_000 // n)

    def copy_and_write() -> None:
        twin = kg.copy()
        twin.update([("object 1", "in", "container 2")], step=state["step"] + 1)

    return {
        "facts": len(kg),
        "update_us": 1e6 * timed(do_update, loops_fast, repeats),
        "retrieve_us": 1e6 * timed(lambda: kg.retrieve(task, k=2, limit=50), loops_slow, repeats),
        "copy_us": 1e6 * timed(kg.copy, loops_fast * 5, repeats),
        "copy_then_write_us": 1e6 * timed(copy_and_write, loops_fast, repeats),
        "nx_deepcopy_us": 1e6 * timed(lambda: copy.deepcopy(g), loops_slow, repeats),
        "nx_copy_us": 1e6 * timed(g.copy, loops_slow, repeats),
    }


def bench_particles(num_copies: int, n: int, repeats: int) -> dict[str, float]:
    kg = synthetic_graph(n, seed=2)
    g = to_networkx_reference(kg)

    def cow() -> None:
        [kg.copy() for _ in range(num_copies)]

    def cow_write() -> None:
        for i in range(num_copies):
            twin = kg.copy()
            twin.update([(f"object {i % n}", "in", "container 0")], step=kg.step + 1)

    def nx_deep() -> None:
        [copy.deepcopy(g) for _ in range(num_copies)]

    def nx_deep_write() -> None:
        for i in range(num_copies):
            twin = copy.deepcopy(g)
            twin.add_edge(f"object {i % n}", "container 0", key="in")

    out = {"copies": num_copies, "facts": len(kg)}
    out["cow_copy_ms"] = 1e3 * timed(cow, 1, repeats)
    out["cow_copy_then_write_ms"] = 1e3 * timed(cow_write, 1, repeats)
    out["nx_deepcopy_ms"] = 1e3 * timed(nx_deep, 1, max(1, repeats // 2))
    out["nx_deepcopy_then_write_ms"] = 1e3 * timed(nx_deep_write, 1, max(1, repeats // 2))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 7")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    args = parser.parse_args()
    repeats = 3 if args.quick else 7

    rows = [bench_size(n, repeats) for n in args.sizes]
    header = ("facts", "update", "retrieve", "copy", "copy+write", "nx deepcopy", "nx G.copy()")
    print(f"Per-operation CPU time in microseconds (median of {repeats} runs)")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print(
            f"| {r['facts']} | {r['update_us']:.1f} | {r['retrieve_us']:.1f} | {r['copy_us']:.2f} "
            f"| {r['copy_then_write_us']:.1f} | {r['nx_deepcopy_us']:.0f} | {r['nx_copy_us']:.0f} |"
        )

    particles = bench_particles(1_000, 500, repeats)
    print()
    print(f"1,000 copies of a {particles['facts']}-fact graph (CPU ms, total)")
    print("| copy-on-write | copy-on-write + 1 write each | networkx deepcopy | "
          "networkx deepcopy + 1 write each | speed-up (copies) |")
    print("|---|---|---|---|---|")
    speedup = particles["nx_deepcopy_ms"] / particles["cow_copy_ms"]
    print(f"| {particles['cow_copy_ms']:.1f} | {particles['cow_copy_then_write_ms']:.1f} "
          f"| {particles['nx_deepcopy_ms']:.0f} | {particles['nx_deepcopy_then_write_ms']:.0f} "
          f"| {speedup:.0f}x |")

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "repeats": repeats,
        "clock": "time.process_time",
        "load_average": list(os.getloadavg()),
        "per_size": rows,
        "particles": particles,
    }, indent=1) + "\n")
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
