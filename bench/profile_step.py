"""Where one agent step's time goes: cProfile of ``act`` for ReAct, NeSyFS and RLAW (cache on).

    taskset -c 1 .venv/bin/python bench/profile_step.py --agents react nesyfs rlaw --steps 2

Runs ``--steps`` steps of each agent on one twx:coin seed with the packaged SmolLM2 (1 thread)
and profiles the last one (the earlier steps warm the prefix cache, as in an episode). Prints
the functions with the most cumulative and own time, grouped into the buckets that matter for
decoding: model forward, the grammar mask (outlines), the sampling arithmetic, tokenisation and
the prefix cache's bookkeeping. Writes ``bench/results/profile_step.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from pathlib import Path

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_json  # noqa: E402

#: (bucket, substring of "file:function") — the first match wins
BUCKETS = [
    ("model forward", "module.py:_call_impl"),
    ("grammar mask (outlines)", "outlines"),
    ("tokenizer", "tokenization"),
    ("prefix cache", "prefix_cache.py"),
]


def _own_time_by_bucket(stats: pstats.Stats) -> dict[str, float]:
    out: dict[str, float] = {}
    for (file, _line, func), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():
        key = f"{file}:{func}"
        if "module.py" in file and func == "_call_impl":
            continue
        for name, pattern in BUCKETS[1:]:
            if pattern in key:
                out[name] = out.get(name, 0.0) + tt
                break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", nargs="+", default=["react", "nesyfs", "rlaw"])
    parser.add_argument("--seed", type=int, default=10000)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--cache", choices=("on", "off"), default="on")
    args = parser.parse_args()

    from smcplan.agents import make
    from smcplan.envs import make as make_env
    from smcplan.llm import load_model

    lm = load_model(threads=1, prefix_cache=args.cache == "on")
    report = {}
    for name in args.agents:
        agent = make(name, lm=lm, seed=0)
        env = make_env("twx:coin")
        try:
            obs, info = env.reset(args.seed)
            agent.reset(env.task, obs, list(info["admissible_actions"]))
            for t in range(args.steps):
                last = t == args.steps - 1
                prof = cProfile.Profile() if last else None
                before = lm.usage.as_dict()
                c0 = time.process_time()
                if prof is not None:
                    prof.enable()
                step = agent.act(obs, list(info["admissible_actions"]), info)
                if prof is not None:
                    prof.disable()
                cpu = time.process_time() - c0
                usage = {k: v - before[k] for k, v in lm.usage.as_dict().items()}
                print(f"{name} step {t}: {cpu:.2f} CPU s, {usage}, action {step.action!r}")
                obs, _r, done, info = env.step(step.action)
                if done:
                    break
        finally:
            env.close()
        stats = pstats.Stats(prof)
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(args.top)
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(args.top)
        print(buf.getvalue())
        report[name] = {"cpu_s": cpu, "usage": usage, "own_s": _own_time_by_bucket(stats),
                        "total_s": stats.total_tt, "profile": buf.getvalue()}
        print(name, "own time by bucket:", report[name]["own_s"], "total", stats.total_tt)
    print("wrote", write_json("profile_step", report))


if __name__ == "__main__":
    main()
