"""Pooled success per agent and benchmark (TextWorldExpress, ScienceWorld, ALFWorld-engine) from
run directories: SR with its Wilson 95% interval, mean score (AR) and HR (% of episodes with at
least one rejected action), each over all the benchmark's dev episodes of the run.

    .venv/bin/python scripts/results_pooled.py runs/dev-llm-random runs/dev-llm-react ...

Prints a markdown table (the first table of docs/results.md).
"""

from __future__ import annotations

import sys

from smcplan.eval.metrics import wilson_interval
from smcplan.eval.runner import load_summaries

BENCHMARKS = {
    "twx": "TextWorldExpress",
    "scienceworld": "ScienceWorld",
    "alfworld": "ALFWorld-engine",
}


def cells(summaries: list[dict]) -> list[str]:
    """``[SR % [CI] (wins/n), AR %, HR %]`` over the finished (non-error) episodes."""
    done = [s for s in summaries if s["status"] == "ok"]
    if not done:
        return ["–", "–", "–"]
    n, k = len(done), sum(bool(s["won"]) for s in done)
    lo, hi = wilson_interval(k, n)
    ar = 100 * sum(float(s["score"]) for s in done) / n
    hr = 100 * sum(s["stats"]["invalid_steps"] > 0 for s in done) / n
    return [
        f"{100 * k / n:.0f} [{100 * lo:.0f}, {100 * hi:.0f}] ({k}/{n})",
        f"{ar:.0f}",
        f"{hr:.0f}",
    ]


def main(runs: list[str]) -> None:
    heads = [
        f"{name} {what}"
        for name in BENCHMARKS.values()
        for what in ("SR % (wins/n)", "AR %", "HR %")
    ]
    print("| Agent | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    for run in runs:
        summaries = load_summaries(run)
        if not summaries:
            continue
        agent = summaries[0]["agent"]
        row = [
            c
            for prefix in BENCHMARKS
            for c in cells([s for s in summaries if s["env"].split(":", 1)[0] == prefix])
        ]
        print(f"| {agent} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
