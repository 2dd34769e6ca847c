"""The free-form-action sweep of docs/results.md ("Free-form actions"): ReAct, RLAW, RLVMR and
NeSyFS with ``action_mode="free"`` on one TextWorldExpress game and one ALFWorld-engine task type.

Episodes are dev data: twx:coin dev-fold seeds 10000-10009 and alfworld:pick_and_place seeds
100-109 on ALFRED's training scenes (``split="train"``, the scenes of the dev split), 8 steps
each. The sweep grows in rounds: round k runs episode k of every (agent, env) cell, so that when
the time budget (``--until HH:MM``, UTC wall clock; checked before each cell) runs out every
cell has about the same n. The
model is loaded once; every cell is its own resumable run directory
``runs/free-<agent>-<env>``, so a rerun continues where the last one stopped. Then
``smcplan report runs/free-*`` (or ``--report``) makes the tables.

    nice -n 10 .venv/bin/python scripts/results_free_mode.py --episodes 10 --until 18:00 --report
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

AGENTS = ("react", "rlaw", "rlvmr", "nesyfs")
CELLS = {  # env -> (seeds, env kwargs)
    "twx:coin": (list(range(10000, 10010)), {}),
    "alfworld:pick_and_place": (list(range(100, 110)), {"split": "train"}),
}


def out_dir(root: Path, agent: str, env: str) -> Path:
    return root / f"free-{agent}-{env.replace(':', '_')}"


def deadline(until: str | None) -> dt.datetime | None:
    """The next UTC time ``HH:MM`` from now (tomorrow's when today's has passed)."""
    if until is None:
        return None
    hh, mm = (int(x) for x in until.split(":"))
    now = dt.datetime.now(dt.UTC)
    at = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    return at if at > now else at + dt.timedelta(days=1)


def past(at: dt.datetime | None) -> bool:
    return at is not None and dt.datetime.now(dt.UTC) >= at


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10, help="episodes per cell (<= 10)")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument(
        "--until", help="start no new cell after this UTC time HH:MM (its next occurrence)"
    )
    parser.add_argument("--agents", default=",".join(AGENTS))
    parser.add_argument("--envs", default=",".join(CELLS), help="a subset of the two envs")
    parser.add_argument("--out", default="runs")
    parser.add_argument("--report", action="store_true", help="write runs/report-free at the end")
    args = parser.parse_args(argv)
    if not 1 <= args.episodes <= 10:
        parser.error(f"--episodes must be in 1..10; got {args.episodes}")

    from smcplan.eval.runner import EvalConfig, run_eval
    from smcplan.llm import load_model

    stop_at = deadline(args.until)
    lm = load_model()
    root = Path(args.out)
    agents = [a for a in args.agents.split(",") if a]
    envs = [e for e in args.envs.split(",") if e]
    unknown = sorted(set(envs) - set(CELLS))
    if unknown:
        parser.error(f"unknown env(s) {', '.join(unknown)}; known: {', '.join(CELLS)}")
    for k in range(1, args.episodes + 1):
        for agent in agents:
            for env in envs:
                seeds, env_kwargs = CELLS[env]
                if past(stop_at):
                    print(f"time budget reached in round {k}, before {agent} {env}", flush=True)
                    return report(args, root, agents)
                cfg = EvalConfig(
                    envs=[env],
                    agent=agent,
                    out=str(out_dir(root, agent, env)),
                    seeds=seeds[:k],
                    max_steps=args.max_steps,
                    seed=0,
                    agent_config={"action_mode": "free"},
                    env_config=dict(env_kwargs),
                )
                summaries = run_eval(cfg, load_lm=lambda *_: lm, progress=False)
                done = [s for s in summaries if s.get("status") == "ok"]
                invalid = sum(s["stats"]["invalid_steps"] for s in done)
                print(
                    f"{dt.datetime.now(dt.UTC):%H:%M:%S} round {k} {agent} {env}: "
                    f"{len(done)} ok, {sum(s['won'] for s in done)} won, {invalid} invalid steps",
                    flush=True,
                )
    return report(args, root, agents)


def report(args: argparse.Namespace, root: Path, agents: list[str]) -> int:
    """``smcplan report`` of the cells run so far into ``<out>/report-free`` (with ``--report``)."""
    if args.report:
        from smcplan.eval.report import write_report

        dirs = [out_dir(root, a, e) for a in agents for e in CELLS if out_dir(root, a, e).exists()]
        result = write_report(dirs, root / "report-free", plots=False, viewer=False)
        print(result["markdown"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
