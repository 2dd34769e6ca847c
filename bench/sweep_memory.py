"""Resident memory of one sweep process, episode after episode, with and without the trim.

    PYTHONPATH=. .venv/bin/python bench/sweep_memory.py --episodes 12 --max-steps 5

Runs ``smcplan eval`` (ReAct, packaged SmolLM2, twx:coin dev seeds 10000..) in a fresh process
twice: as shipped (``LLMAgent.reset`` hands the freed heap back with glibc's ``malloc_trim``,
:mod:`smcplan.llm.host_memory`) and with that call disabled (the reference). Each process records
its resident set size at the start of every episode before the reset (= at the end of the
previous one) and its peak. Reports the RSS after the first episode, after the last, the growth
per episode between them and the peak, side by side. Writes ``bench/results/sweep_memory.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, write_json  # noqa: E402

MB = 1 << 20


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def child(args: argparse.Namespace) -> None:
    """One sweep in this process; prints a JSON line with the RSS samples."""
    import resource

    import smcplan.agents.llm_agent as llm_agent
    from smcplan.eval import EvalConfig, run_eval
    from smcplan.eval.build import default_make_agent

    if not args.trim:
        llm_agent.release_free_memory = lambda: False
    samples: list[int] = []

    def make_agent(name, lm, seed, config):
        agent = default_make_agent(name, lm, seed, config)
        reset = agent.reset

        def measured_reset(*a, **k):
            samples.append(_rss())
            return reset(*a, **k)

        agent.reset = measured_reset
        return agent

    model = args.model
    if model == "tiny":
        from smcplan.llm.testing import tiny_model_path

        model = str(tiny_model_path())
    config = EvalConfig(
        envs=["twx:coin"],
        agent="react",
        out=tempfile.mkdtemp(prefix="bench-mem-"),
        seeds=list(range(10000, 10000 + args.episodes)),
        max_steps=args.max_steps,
        model=model,
    )
    run_eval(config, progress=False, make_agent=make_agent)
    samples.append(_rss())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"rss_at_episode_start": samples, "peak_rss": peak}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--max-steps", type=int, default=5)
    parser.add_argument("--model", default=None, help="load_model name; 'tiny' = the test model")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-trim", dest="trim", action="store_false", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    runs, rows = {}, []
    for trim in (True, False):
        cmd = [sys.executable, __file__, "--child", "--episodes", str(args.episodes)]
        cmd += ["--max-steps", str(args.max_steps)]
        cmd += (["--model", args.model] if args.model else []) + ([] if trim else ["--no-trim"])
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        data = json.loads(out.strip().splitlines()[-1])
        # samples[0] is before the first episode; samples[k] after episode k
        s = data["rss_at_episode_start"]
        per_episode = (s[-1] - s[1]) / max(1, len(s) - 2)
        name = "trim (shipped)" if trim else "no trim (reference)"
        runs[name] = {**data, "growth_per_episode": per_episode}
        rows.append(
            [
                name,
                args.episodes,
                f"{s[1] / MB:.0f}",
                f"{s[-1] / MB:.0f}",
                f"{per_episode / MB:+.1f}",
                f"{data['peak_rss'] / MB:.0f}",
            ]
        )
    print_table(
        ["run", "episodes", "RSS after 1st MB", "RSS after last MB", "MB/episode", "peak MB"],
        rows,
    )
    print(
        "wrote",
        write_json(
            "sweep_memory",
            {
                "agent": "react",
                "env": "twx:coin",
                "model": args.model or "smollm2-135m",
                "episodes": args.episodes,
                "max_steps": args.max_steps,
                "runs": runs,
            },
        ),
    )


if __name__ == "__main__":
    main()
