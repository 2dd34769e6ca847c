"""The README's picture of the planner thinking: one NeSyFS slow-thinking call in the viewer.

    .venv/bin/python scripts/viewer_screenshot.py            # -> docs/img/viewer_slow_thinking.png

Runs the real harness with the real NeSyFS agent and the packaged SmolLM2-135M (``--model``) on
``--env`` (default TextWorldExpress coin, dev seed 10000) for ``--max-steps`` steps, with
N = 4 particles and H = 2 planning steps. The reflection is a stand-in that turns down the
first three proposals, so slow thinking runs at step 0 (the viewer's test fixture,
``tests/eval/planner_run.py``; the step records are NeSyFS's own). Then ``smcplan report``
writes the viewer and headless Chromium (Debian ``chromium``) takes a 1280x900 screenshot of
that step. About ten minutes on the shared 2 CPU cores (``--reuse``: seconds).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
for _var in ("TORCH_COMPILE_DISABLE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")

from smcplan.eval.records import RunPaths, read_jsonl  # noqa: E402
from smcplan.eval.report import write_report  # noqa: E402
from tests.eval.browser import chromium, screenshot  # noqa: E402
from tests.eval.planner_run import planner_run  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(REPO / "docs/img/viewer_slow_thinking.png"))
    ap.add_argument("--run-dir", default="runs/viewer-screenshot", help="relative to the repo")
    ap.add_argument("--model", default=None, help="smcplan.llm.load_model name (default SmolLM2)")
    ap.add_argument("--env", default="twx:coin")
    ap.add_argument("--seed", type=int, default=10000)
    ap.add_argument("--max-steps", type=int, default=3)
    ap.add_argument("--size", default="1280x900")
    ap.add_argument("--reuse", action="store_true", help="keep an existing --run-dir, only redraw")
    args = ap.parse_args(argv)
    if chromium() is None:
        print("chromium is not installed: apt-get install -y chromium", file=sys.stderr)
        return 2
    os.chdir(REPO)  # the viewer shows the run's path as given: keep it relative
    run_dir = Path(args.run_dir)
    if not (args.reuse and (run_dir / "config.json").exists()):
        from smcplan.llm import load_model

        shutil.rmtree(run_dir, ignore_errors=True)
        planner_run(run_dir, load_model(args.model), env=args.env, seed=args.seed,
                    max_steps=args.max_steps)  # fmt: skip
    report = write_report([run_dir], run_dir / "report", plots=False)
    (steps,) = RunPaths(run_dir).episodes.glob("*.steps.jsonl")
    t = next(r["t"] for r in read_jsonl(steps) if r["meta"].get("plan"))
    w, h = (int(x) for x in args.size.split("x"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    screenshot(run_dir / "report" / "viewer.html", out, f"t={t}&focus=1", size=(w, h))
    print(f"{out} ({out.stat().st_size} bytes); viewer: {report['files'][-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
