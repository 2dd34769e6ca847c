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
    log = [_read(p) for p in iters]
    if (folder / "train.json").is_file():  # a finished run: its iterations, not later ones
        log = log[: _read(folder / "train.json")["iterations"]]
    return {
        "name": folder.name,
        "config": _read(folder / "config.json"),
        "start": _read(start) if start.is_file() else None,
        "log": log,
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


def _series(run: dict[str, Any], start: dict[str, Any] | None, key: str) -> tuple[list, list]:
    """(iterations, values) of one panel: ``heldout:<field>`` reads the greedy held-out
    evaluations (iteration 0: the starting head), ``<field>`` the training rollouts."""
    xs, ys = [], []
    if key.startswith("heldout:"):
        field = key.split(":", 1)[1]
        s = run["start"] or start
        if s is not None:
            xs.append(0)
            ys.append(s[field])
        for m in run["log"]:
            if "heldout" in m:
                xs.append(m["iteration"] + 1)
                ys.append(m["heldout"][field])
        return xs, ys
    for m in run["log"]:
        xs.append(m["iteration"] + 1)
        total = max(1, sum(m["tags"].values()))
        ys.append(m["tags"]["explore"] / total if key == "explore_share" else m[key])
    return xs, ys


def figure(runs: list[dict[str, Any]], start: dict[str, Any] | None, path: Path) -> Path:
    """Held-out success and repetition (greedy), training success and explore share."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per = {int(r["config"].get("seeds_per_iteration") or 0) for r in runs}
    k = per.pop() if len(per) == 1 else -1  # 0: every seed each iteration; -1: runs differ
    seeds = {0: "all dev seeds", 1: "1 dev seed", -1: "dev seeds"}.get(k, f"{k} dev seeds")
    panels = [("held-out success (greedy)", "heldout:success_rate"),
              ("held-out repeated actions per step", "heldout:repeat_rate"),
              (f"training success (sampled, {seeds} an iteration)", "success_rate"),
              ("training share of explore steps", "explore_share")]  # fmt: skip
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6), layout="constrained")
    for run in runs:
        for ax, (title, key) in zip(axes, panels, strict=True):
            ax.plot(*_series(run, start, key), marker="o", label=run["name"])
            ax.set_title(title)
            ax.set_xlabel("iteration (updates)")
    axes[0].legend(loc="best")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def test_cells(folders: list[Path]) -> str:
    """Test episodes of ``smcplan eval`` runs: SR with its Wilson interval, repeated actions
    per step (an action already taken in the episode, as in training) and, against the first
    run, the paired exact McNemar test on the seeds both finished."""
    from smcplan.eval.metrics import mcnemar_exact_p, wilson_interval

    runs = {}
    for folder in folders:
        won, steps, repeats = {}, 0, 0
        for summary in sorted((folder / "episodes").glob("*.json")):
            s = _read(summary)
            if s.get("status") != "ok":
                continue
            won[int(s["seed"])] = bool(s["won"])
            lines = (folder / "episodes" / f"{s['episode']}.steps.jsonl").read_text().splitlines()
            actions = [json.loads(line)["action"] for line in lines if line]
            steps += len(actions)
            repeats += sum(a in actions[:i] for i, a in enumerate(actions))
        runs[folder.name] = (won, repeats / max(1, steps))
    first = folders[0].name
    rows = ["| cell | SR (Wilson 95 %) | repeated actions/step | only first won | only this won "
            "| McNemar p |", "| --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for name, (won, rep) in runs.items():
        k, n = sum(won.values()), len(won)
        lo, hi = wilson_interval(k, n)
        cells = (
            f"| {name} | {k}/{n} = {100 * k / n:.0f} % ({100 * lo:.0f}-{100 * hi:.0f}) | {rep:.2f}"
        )
        if name == first:
            rows.append(cells + " | – | – | – |")
            continue
        base = runs[first][0]
        seeds = sorted(set(base) & set(won))
        a = [x for x in seeds if base[x] and not won[x]]
        b = [x for x in seeds if won[x] and not base[x]]
        rows.append(
            cells + f" | {len(a)} {a} | {len(b)} {b} | {mcnemar_exact_p(len(a), len(b)):.3g} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--start", type=Path, help="the run whose held-out start is iteration 0")
    ap.add_argument("--png", type=Path, help="write the figure here")
    ap.add_argument("--test", type=Path, nargs="+", help="eval runs to compare, the first paired")
    args = ap.parse_args(argv)
    runs = [load_run(r) for r in args.runs]
    start = None
    if args.start is not None:
        start = _read(args.start / "heldout-start.json")
        for run in runs:
            run["start"] = run["start"] or start
    print(table(runs))
    if args.test:
        print()
        print(test_cells(args.test))
    if args.png:
        print(f"figure: {figure(runs, start, args.png)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
