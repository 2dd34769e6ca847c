"""Fingerprint the harness: the step records and summaries of three fixed sweeps, timings removed.

Used to show that a refactoring of :mod:`smcplan.eval` changes no behaviour: run it on the old
commit and on the new one, and compare the files (they must be byte-identical)::

    PYTHONPATH=<old tree> python scripts/step_records.py /tmp/before.json
    PYTHONPATH=$PWD python scripts/step_records.py /tmp/after.json --compare /tmp/before.json

The sweeps: the random agent on TextWorldExpress ``twx:coin`` dev seeds 10000-10002 (3 episodes,
20 steps), ReAct with the tiny random-weight model on seeds 10000-10001 (2 episodes, 3 steps), and
NeSyFS with the simulator (oracle) world model, the ``env`` twist and K = 1 on the tiny model,
seeds 10000-10001 (2 episodes, 4 steps: the planner runs after each rejection).
Removed before comparing, at any depth: the wall-clock fields (``agent_s``, ``env_s``,
``wall_s``, ``started_at``, ``finished_at``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

for _var in ("TORCH_COMPILE_DISABLE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TIMING = {"agent_s", "env_s", "wall_s", "started_at", "finished_at"}


def _strip(value):
    """``value`` without the TIMING keys, at any depth (summaries' ``stats`` time too)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def sweep(
    out: Path,
    agent: str,
    seeds: list[int],
    max_steps: int,
    model: str | None,
    agent_config: dict | None = None,
) -> dict:
    from smcplan.eval import EvalConfig, run_eval
    from smcplan.eval.records import RunPaths, read_jsonl

    config = EvalConfig(
        envs=["twx:coin"], agent=agent, out=str(out), seeds=seeds, max_steps=max_steps,
        model=model, agent_config=dict(agent_config or {}),
    )
    summaries = run_eval(config, progress=False)
    paths = RunPaths(out)
    return {
        s["episode"]: {
            "summary": _strip(s),
            "steps": [_strip(r) for r in read_jsonl(paths.steps(s["episode"]))],
        }
        for s in summaries
    }


def fingerprint() -> dict:
    from smcplan.llm.testing import tiny_model_path

    with tempfile.TemporaryDirectory() as tmp:
        return {
            "random": sweep(Path(tmp, "random"), "random", [10000, 10001, 10002], 20, None),
            "react": sweep(
                Path(tmp, "react"), "react", [10000, 10001], 3, str(tiny_model_path())
            ),
            "nesyfs-oracle": sweep(
                Path(tmp, "nesyfs"), "nesyfs", [10000, 10001], 4, str(tiny_model_path()),
                {"world_model": "simulator", "progress": "env", "max_rejections": 1},
            ),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="where to write the fingerprint (JSON)")
    parser.add_argument("--compare", help="a fingerprint to compare with, byte for byte")
    args = parser.parse_args(argv)
    text = json.dumps(fingerprint(), sort_keys=True, indent=1)
    Path(args.out).write_text(text)
    n = sum(len(e["steps"]) for run in json.loads(text).values() for e in run.values())
    print(f"{args.out}: {n} step records")
    if args.compare:
        same = Path(args.compare).read_text() == text
        print("identical" if same else f"DIFFERENT from {args.compare}")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
