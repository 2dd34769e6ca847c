"""The table of docs/ablation.md from the run directories of scripts/ablation.sh.

    python scripts/ablation_table.py [runs/ablation] [--json runs/ablation/table.json]
    python scripts/ablation_table.py runs/ablation --pair CELL_A CELL_B [--pair ...]

Per cell (one run directory): n finished episodes (errors excluded and counted), SR with its
Wilson 95% interval, AR (mean final score), repetition per step (RLVMR's repetitive action:
same action and same observation as an earlier step), LLM calls per step, agent seconds per
step, slow-thinking calls, and the share of those calls whose weights were degenerate (every
particle with the same progress at every step), for the whole twist and for each part of a sum
(the part's own delta equal for every particle: ``meta["plan"]["decided_by"]`` does not name it).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from smcplan.eval.metrics import mcnemar_exact_p, wilson_interval
from smcplan.planning.progress import looks_failed


def summaries_of(run: Path) -> list[dict]:
    """The run's episode summaries (``episodes/*.json``), finished or not, in file order."""
    return [json.loads(p.read_text()) for p in sorted((run / "episodes").glob("*.json"))]


def cell(run: Path) -> dict:
    config = json.loads((run / "config.json").read_text())
    agent_config = config.get("config", {}).get("agent_config", {}) or {}
    summaries = summaries_of(run)
    ok = [s for s in summaries if s["status"] == "ok"]
    n, k = len(ok), sum(bool(s["won"]) for s in ok)
    steps = sum(s["stats"]["total_steps"] for s in ok) or 1
    plans = degenerate = 0
    agent_s = 0.0
    informative: dict[str, int] = {}
    for s in ok:
        path = run / "episodes" / f"{s['episode']}.steps.jsonl"
        for line in path.read_text().splitlines():
            record = json.loads(line)
            agent_s += float(record.get("agent_s", 0.0))
            plan = (record.get("meta") or {}).get("plan")
            if plan:
                plans += 1
                degenerate += bool(plan.get("degenerate"))
                decided = plan.get("decided_by")
                parts = decided.split("+") if isinstance(decided, str) else decided or ()
                for part in () if str(decided).startswith(("tie-break", "sampling")) else parts:
                    informative[part] = informative.get(part, 0) + 1
    lo, hi = wilson_interval(k, n) if n else (None, None)
    return {
        "cell": run.name,
        "env": ok[0]["env"] if ok else None,
        "agent": config.get("identity", {}).get("agent"),
        "oracle": bool(config.get("oracle_world_model")),
        "twist": agent_config.get("progress", "lm")
        if config["identity"]["agent"] == "nesyfs"
        else None,
        "n": n,
        "errors": len(summaries) - n,
        "won": k,
        "sr": k / n if n else None,
        "sr_lo": lo,
        "sr_hi": hi,
        "ar": sum(float(s["score"]) for s in ok) / n if n else None,
        "rep_per_step": sum(s["stats"]["repetitive_steps"] for s in ok) / steps,
        "llm_calls_per_step": sum(float(s["stats"]["llm_calls"]) for s in ok) / steps,
        "s_per_step": agent_s / steps,
        "plan_calls": plans,
        "degenerate_rate": degenerate / plans if plans else None,
        # per part of a sum twist: the share of calls in which its delta was equal for every
        # particle at every step (that part alone carried no information)
        "degenerate_by_part": {
            part: 1.0 - informative.get(part, 0) / plans
            for part in str(agent_config.get("progress", "lm")).split("+")
        }
        if plans and config["identity"]["agent"] == "nesyfs"
        else {},
    }


def _failure_replies(run: Path, episode: str) -> int:
    """Steps of the episode that the game answered with a failure or no-op text."""
    lines = (run / "episodes" / f"{episode}.steps.jsonl").read_text().splitlines()
    return sum(looks_failed(json.loads(line).get("feedback", "")) for line in lines)


def _episodes(run: Path) -> dict[int, dict]:
    """seed -> (won, repetitive steps, failure replies, steps) of the run's finished episodes."""
    return {
        int(s["seed"]): {
            "won": bool(s["won"]),
            "rep": s["stats"]["repetitive_steps"],
            "failed": _failure_replies(run, s["episode"]),
            "steps": s["stats"]["total_steps"],
        }
        for s in summaries_of(run)
        if s["status"] == "ok"
    }


def pair(a: Path, b: Path) -> dict:
    """Two cells on the episodes (seeds) both finished: SR, repetition and failure replies per
    step of each, and the discordant pairs (won by one only), which is what a paired comparison
    rests on, with the exact McNemar p-value on them."""
    ea, eb = _episodes(a), _episodes(b)
    seeds = sorted(set(ea) & set(eb))

    def side(e: dict[int, dict]) -> dict:
        steps = sum(e[s]["steps"] for s in seeds) or 1
        return {
            "won": sum(e[s]["won"] for s in seeds),
            "rep_per_step": sum(e[s]["rep"] for s in seeds) / steps,
            "failed_per_step": sum(e[s]["failed"] for s in seeds) / steps,
        }

    a_only = [s for s in seeds if ea[s]["won"] and not eb[s]["won"]]
    b_only = [s for s in seeds if eb[s]["won"] and not ea[s]["won"]]
    return {
        "a": a.name,
        "b": b.name,
        "seeds": seeds,
        "n": len(seeds),
        "a_stats": side(ea),
        "b_stats": side(eb),
        "both": sum(ea[s]["won"] and eb[s]["won"] for s in seeds),
        "a_only": a_only,
        "b_only": b_only,
        "mcnemar_p": mcnemar_exact_p(len(a_only), len(b_only)),
    }


def fmt(x: float | None, pct: bool = False, digits: int = 2) -> str:
    if x is None:
        return "–"
    return f"{100 * x:.0f}" if pct else f"{x:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", nargs="?", default="runs/ablation")
    parser.add_argument("--json", default=None)
    parser.add_argument("--pair", nargs=2, action="append", metavar=("A", "B"), default=[])
    args = parser.parse_args()
    if args.pair:
        print(
            "| A | B | common episodes | SR A | SR B | rep/step A | rep/step B "
            "| failure replies/step A | B | won by both | A only (seeds) | B only (seeds) "
            "| exact McNemar p |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for a, b in args.pair:
            r = pair(Path(args.root) / a, Path(args.root) / b)
            sa, sb = r["a_stats"], r["b_stats"]
            print(
                f"| {a} | {b} | {r['n']} | {sa['won']}/{r['n']} | {sb['won']}/{r['n']} "
                f"| {sa['rep_per_step']:.2f} | {sb['rep_per_step']:.2f} "
                f"| {sa['failed_per_step']:.2f} | {sb['failed_per_step']:.2f} | {r['both']} "
                f"| {len(r['a_only'])} {r['a_only'] or ''} "
                f"| {len(r['b_only'])} {r['b_only'] or ''} | {r['mcnemar_p']:.3g} |"
            )
        return
    rows = [cell(p) for p in sorted(Path(args.root).iterdir()) if (p / "config.json").exists()]
    print(
        "| cell | env | n (err) | SR % [Wilson 95%] | AR % | rep/step | LLM calls/step | s/step "
        "| plan calls | degenerate % | degenerate % per part |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        sr = f"{fmt(r['sr'], True)} [{fmt(r['sr_lo'], True)}, {fmt(r['sr_hi'], True)}]"
        name = r["cell"] + (" (oracle)" if r["oracle"] else "")
        cols = [
            name,
            str(r["env"]),
            f"{r['n']} ({r['errors']})",
            sr,
            fmt(r["ar"], True),
            fmt(r["rep_per_step"]),
            fmt(r["llm_calls_per_step"], digits=1),
            fmt(r["s_per_step"], digits=1),
            str(r["plan_calls"]),
            fmt(r["degenerate_rate"], True),
            ", ".join(f"{k} {fmt(v, True)}" for k, v in r["degenerate_by_part"].items()) or "–",
        ]
        print("| " + " | ".join(cols) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
