"""Learning curves of `smcplan train grpo-mr-head` runs: a Markdown table and a figure.

    R=models/checkpoints/twx-coin-rlvmr-head
    python scripts/learning_curves.py $R/grpo-mr $R/grpo --start $R/cold \
        --png docs/img/rlvmr_head_curves.png

Each run folder holds `config.json`, `heldout-start.json` (the starting head, greedy, on the
held-out seeds) and `checkpoints/iter-k/metrics.json` (written after iteration k; `heldout`
where the greedy head was evaluated).  Per iteration the table gives the training rollouts'
success rate, process return, repetition and invalid actions per step and tag shares, and the
held-out success rate where it was measured; `--start` names a run whose `heldout-start.json`
is the common starting point (iteration 0) when the runs began from its head.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

TAGS = ("planning", "explore", "reflection", "monitor")


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def load_run(folder: Path) -> dict[str, Any]:
    """The config, the held-out result of the starting head and each iteration's metrics."""
    if not (folder / "config.json").is_file():
        raise SystemExit(f"error: {folder} is not a grpo-mr-head run (no config.json)")
    iters = sorted((folder / "checkpoints").glob("iter-*/metrics.json"))
    start = folder / "heldout-start.json"
    return {
        "name": folder.name,
        "config": _read(folder / "config.json"),
        "start": _read(start) if start.is_file() else None,
        "log": [_read(p) for p in iters],
    }


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f} %"


def table(runs: list[dict[str, Any]]) -> str:
    """One Markdown row per run and iteration (iteration k: after k updates)."""
    head = ("| run | iter | held-out SR (greedy) | train SR | process return | rep/step | "
            "invalid/step | tags P/E/R/M |")  # fmt: skip
    rows = [head, "| " + " | ".join(["---"] * 8) + " |"]
    for run in runs:
        start = run["start"]
        if start is not None:
            rows.append(f"| {run['name']} | 0 | {_held(start)} | – | – "
                        f"| {start['repeat_rate']:.2f} | {start['invalid_rate']:.2f} "
                        f"| {_tags(start)} |")  # fmt: skip
        for m in run["log"]:
            held = _held(m["heldout"]) if "heldout" in m else "–"
            rows.append(
                f"| {run['name']} | {m['iteration'] + 1} | {held} | {_pct(m['success_rate'])} "
                f"| {m['process_return_mean']:.2f} | {m['repeat_rate']:.2f} "
                f"| {m.get('invalid_rate', float('nan')):.2f} | {_tags(m)} |"
            )
    return "\n".join(rows)


def _held(h: dict[str, Any]) -> str:
    won = sum(bool(v) for v in h["won"].values())
    return f"{won}/{len(h['won'])}"


def _tags(m: dict[str, Any]) -> str:
    total = max(1, sum(m["tags"].values()))
    return "/".join(f"{100 * m['tags'].get(t, 0) / total:.0f}" for t in TAGS)


def figure(runs: list[dict[str, Any]], start: dict[str, Any] | None, path: Path) -> Path:
    """Held-out success, training success, repetition and invalid actions per iteration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("held-out success (greedy)", "heldout"), ("training success (sampled)",
              "success_rate"), ("repeated actions per step", "repeat_rate"),
              ("invalid actions per step", "invalid_rate")]  # fmt: skip
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6), layout="constrained")
    for run in runs:
        s = run["start"] or start
        for ax, (title, key) in zip(axes, panels, strict=True):
            xs, ys = [], []
            if s is not None and key != "success_rate":
                xs.append(0)
                ys.append(s["success_rate"] if key == "heldout" else s[key])
            for m in run["log"]:
                if key == "heldout":
                    if "heldout" in m:
                        xs.append(m["iteration"] + 1)
                        ys.append(m["heldout"]["success_rate"])
                elif key in m:
                    xs.append(m["iteration"] + 1)
                    ys.append(m[key])
            ax.plot(xs, ys, marker="o", label=run["name"])
            ax.set_title(title)
            ax.set_xlabel("iteration (updates)")
    axes[0].legend(loc="best")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--start", type=Path, help="the run whose held-out start is iteration 0")
    ap.add_argument("--png", type=Path, help="write the figure here")
    args = ap.parse_args(argv)
    runs = [load_run(r) for r in args.runs]
    start = None
    if args.start is not None:
        start = _read(args.start / "heldout-start.json")
        for run in runs:
            run["start"] = run["start"] or start
    print(table(runs))
    if args.png:
        print(f"figure: {figure(runs, start, args.png)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
