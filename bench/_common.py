"""Shared helpers for benchmarks: timing (median of repeats after warm-up), tables, JSON output."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def median_seconds(
    fn: Callable[[], Any],
    repeats: int = 10,
    warmup: int = 2,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Median time of ``fn()`` over ``repeats`` calls after ``warmup`` untimed calls.

    ``clock`` is wall time by default; ``time.process_time`` measures this process's CPU time,
    which other jobs on a shared machine inflate less."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }


def write_json(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"benchmark": name, "machine": machine(), "unix_time": time.time(), **payload}
    path.write_text(json.dumps(payload, indent=2))
    return path


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print(" | ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("-|-".join("-" * w for w in widths))
    for r in cells:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths)))
