"""Per-cell step statistics of the free-form-action sweep, counting episodes cut by the deadline.

``smcplan report`` counts finished episodes only. On the shared CPU an 8-step episode of an LLM
agent can take longer than a session has left, so this script also reads the step files of
episodes still in flight (``<id>.steps.jsonl.partial``) and prints, per (agent, env) cell: the
steps run, the episodes started and finished, the rejected (``invalid``) steps and their rate,
the episodes with at least one rejected action so far (HR over started episodes: a lower bound
for the cut ones), RLVMR's repetitive/step and the repeated-pair rate (``docs/eval.md``), and
the first rejected actions.

    .venv/bin/python scripts/results_free_steps.py runs/free-* runs/alf/free-*
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from smcplan.eval.metrics import repeated_pair_flags, repetitive_flags


def cell(run_dir: Path) -> dict:
    finished = sorted(run_dir.glob("episodes/*.steps.jsonl"))
    partial = sorted(run_dir.glob("episodes/*.steps.jsonl.partial"))
    episodes = []
    for path in finished + partial:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if rows:
            episodes.append(rows)
    steps = [r for ep in episodes for r in ep]
    invalid = [r for r in steps if r["invalid"]]
    return {
        "cell": run_dir.name.removeprefix("free-"),
        "steps": len(steps),
        "episodes": len(episodes),
        "finished": len(finished),
        "won": sum(bool(ep[-1].get("won")) for ep in episodes),
        "invalid": len(invalid),
        "hr": sum(any(r["invalid"] for r in ep) for ep in episodes),
        "repetitive": sum(sum(repetitive_flags(ep)) for ep in episodes),
        "pairs": sum(sum(repeated_pair_flags(ep)) for ep in episodes),
        "examples": [r["action"] for r in invalid[:3]],
    }


def main(argv: list[str]) -> int:
    print("| cell | steps | episodes (finished) | won | invalid/step | HR (episodes with a "
          "rejected action / started) | repetitive/step | repeat (a,o)/step | rejected, e.g. |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in sorted(Path(p) for p in argv if Path(p).is_dir()):
        c = cell(d)
        n = c["steps"] or 1
        print(
            f"| {c['cell']} | {c['steps']} | {c['episodes']} ({c['finished']}) | {c['won']} | "
            f"{c['invalid']}/{c['steps']} = {100 * c['invalid'] / n:.0f}% | "
            f"{c['hr']}/{c['episodes']} | {100 * c['repetitive'] / n:.0f}% | "
            f"{100 * c['pairs'] / n:.0f}% | {'; '.join(repr(a) for a in c['examples'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
