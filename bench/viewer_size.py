"""Size of the trajectory viewer on generated runs, against the 5 MB target (50 steps, 20 episodes).

    .venv/bin/python bench/viewer_size.py [--runs DIR ...] [--episodes 20] [--max-steps 50]

Without ``--runs`` it generates two runs with the real harness on TextWorldExpress coin (dev seeds
10000-10019): the random agent, and NeSyFS with the tiny random-weight model
(``smcplan.llm.testing.tiny_model``; reflection off, so no slow thinking, but real KG records:
added / removed / retrieved facts at every step). For each run it writes the viewer and prints
steps, planner calls, bytes, bytes per step and the text scale ``write_viewer`` used; writes
bench/results/viewer_size.json. The worst case (every text past its bound, a planner call at
every step) is measured by tests/eval/test_viewer.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json  # noqa: E402

for _var in ("TORCH_COMPILE_DISABLE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")

from smcplan.eval.report import load_run  # noqa: E402
from smcplan.eval.viewer import write_viewer  # noqa: E402
from smcplan.eval.viewer.html import MAX_BYTES  # noqa: E402


def generate(root: Path, episodes: int, max_steps: int) -> list[Path]:
    from smcplan.eval import EvalConfig, run_eval
    from smcplan.llm.testing import tiny_model

    seeds = list(range(10000, 10000 + episodes))
    out = []
    for agent, extra in (("random", {}), ("nesyfs", {"reflection": False})):
        config = EvalConfig(
            envs=["twx:coin"], agent=agent, out=str(root / agent), seeds=seeds,
            max_steps=max_steps, agent_config=extra,
        )  # fmt: skip
        t0 = time.perf_counter()
        run_eval(config, load_lm=lambda *_: tiny_model(), progress=False)
        print(f"{agent}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        out.append(root / agent)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", nargs="*", type=Path)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--max-steps", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = args.runs or generate(Path(tmp), args.episodes, args.max_steps)
        rows, records = [], []
        for path in runs:
            run = load_run(path)
            run.label = run.agent
            steps = [st for _, st in run.iter_steps()]
            plans = sum(1 for st in steps if (st.get("meta") or {}).get("plan"))
            html = write_viewer([run], Path(tmp) / "viewer.html")
            size = html.stat().st_size
            scale = float(html.read_text().split('"scale":', 1)[1].split(",", 1)[0])
            rec = {
                "run": str(path), "agent": run.agent, "episodes": len(run.summaries),
                "steps": len(steps), "planner_calls": plans, "bytes": size,
                "bytes_per_step": round(size / max(1, len(steps))), "scale": scale,
            }  # fmt: skip
            records.append(rec)
            rows.append([rec[k] for k in rec if k != "run"] + [f"{100 * size / MAX_BYTES:.0f}%"])
    print_table(
        ["agent", "episodes", "steps", "planner calls", "bytes", "bytes/step", "scale", "of 5 MB"],
        rows,
    )
    write_json("viewer_size", {"max_bytes": MAX_BYTES, "runs": records})


if __name__ == "__main__":
    main()
