"""Does a world model make the text planner choose better actions? Paired, on real states.

For the first ``--states`` steps of the held-out episodes in a shard written by ``smcplan train
collect`` (states the oracle planner reached), the script replays the episode on the real
environment up to that state, then chooses an action four ways, and scores each choice by stepping
a clone of the real environment once:

* ``random``: a uniform draw from the admissible actions (what the planner with N = 1, H = 1 and
  the uniform proposal executes: its single particle's first action, no weight compared);
* ``lm``: the text planner, N = 4, H = 2 (the defaults), uniform proposal, twist ``task+novelty``
  (LLM-free), imagined observations from untrained SmolLM2 (``world_model="lm"``);
* ``learned``: the same planner and key with the learned world model (``--adapter``; repeat
  ``--adapter NAME=PATH`` to compare several, each an arm of its own);
* ``oracle``: the action the shard recorded (the simulator-world-model planner that collected it).

An action is **productive** when the real step raises the score (the coin is taken), enters a
place not yet visited in the episode, or opens a door; otherwise (a revisit, a failure reply, a
no-op) it is not.  The planner never touches the environment: only the scoring does.  Pairs are
compared with the exact McNemar test (``smcplan.eval.metrics.mcnemar_exact_p``).
``--temperature`` is the world models' ``observation_temperature`` (default 1, the planner's);
``--planner KEY=VALUE`` sets any other field of the two planner arms' :class:`PlannerConfig`
(``particles_per_action=1 horizon=1 choice=max_weight``: N = |A| at each state, so the
stratified uniform proposal tries every admissible action exactly once, and the best imagined
outcome is taken).

    python scripts/wm_decisions.py --data runs/wm/test.jsonl --states 30 \\
        --adapter runs/wm2/lora320/adapter --out runs/wm2/decisions.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

for _var in ("TORCH_COMPILE_DISABLE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ENV_KIND = "textworld_express"


def productive(env, action: str, seen) -> bool:
    """The real outcome of ``action`` from ``env``'s state (on a clone): score up, a new place or
    a door opened."""
    twin = env.clone()
    try:
        nxt, reward, _done, info = twin.step(action)  # the reward is the score's increment
    finally:
        twin.close()
    after = seen.after(nxt, action, dict(info or {}), ENV_KIND)
    new_place = after.place is not None and after.place not in seen.places
    return bool(float(reward or 0.0) > 0 or new_place or str(nxt).startswith("You open"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a shard of `smcplan train collect`")
    parser.add_argument(
        "--adapter",
        action="append",
        default=[],
        help="a learned world model (DIR/adapter), or NAME=DIR/adapter; repeatable (none: the "
        "lm arm only)",
    )
    parser.add_argument(
        "--temperature", type=float, default=1.0, help="observation_temperature of the world models"
    )
    parser.add_argument("--skip-lm", action="store_true", help="no untrained-SmolLM2 arm")
    parser.add_argument("--states", type=int, default=30, help="how many states (first steps)")
    parser.add_argument("--out", required=True, help="where to write the JSON result")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--planner",
        action="append",
        metavar="KEY=VALUE",
        help="a PlannerConfig field of the lm and learned arms (JSON value), repeatable, e.g. "
        "particles_per_action=1 (N = |A| per state) horizon=1 choice=max_weight; default "
        "the planner's defaults",
    )
    args = parser.parse_args(argv)

    from smcplan.cli import parse_kv
    from smcplan.envs import make
    from smcplan.eval.metrics import mcnemar_exact_p
    from smcplan.llm import ObservationModel, load_model
    from smcplan.memory import KnowledgeGraph
    from smcplan.planning import PlannerConfig
    from smcplan.planning.learned import learned_observation_model
    from smcplan.planning.seen import Seen
    from smcplan.planning.text_components import plan_text
    from smcplan.train.data import read_shard

    options = {
        "proposal": "uniform",
        "progress": "task+novelty",
        "observation_temperature": args.temperature,
        **parse_kv(args.planner),
    }
    planner = PlannerConfig.from_options(options)

    shard = read_shard(args.data)
    by_episode: dict[str, list[dict]] = {}
    for t in shard.transitions:
        by_episode.setdefault(t["episode"], []).append(t)
    lm = load_model(threads=args.threads)
    tokens, temp = planner.observation_tokens, planner.observation_temperature
    adapters = dict(
        a.split("=", 1) if "=" in a else ("learned" if i == 0 else f"learned{i + 1}", a)
        for i, a in enumerate(args.adapter)
    )
    models = (
        {}
        if args.skip_lm
        else {"lm": ObservationModel(lm, temperature=temp, max_new_tokens=tokens)}
    )
    for name, path in adapters.items():
        models[name] = learned_observation_model(path, tokens, like=lm, temperature=temp)
    env = make(shard.header["env"], **shard.header.get("env_kwargs", {}))
    rows, t0 = [], time.perf_counter()
    try:
        for episode, steps in sorted(by_episode.items()):
            if len(rows) >= args.states:
                break
            seed = steps[0]["seed"]
            obs, info = env.reset(seed)
            kg = KnowledgeGraph()
            kg.observe(obs, None, env_kind=ENV_KIND, step=0)
            seen = Seen().after(obs, None, dict(info), ENV_KIND)
            for step in steps:
                if len(rows) >= args.states:
                    break
                admissible = list(env.admissible_actions())
                key = seed * 1000 + step["t"]
                choice = {
                    "random": random.Random(key).choice(admissible),
                    "oracle": step["action"],
                }
                for name, model in models.items():
                    result = plan_text(
                        env.task,
                        kg,
                        admissible,
                        observation=obs,
                        key=key,
                        config=planner,
                        seen=seen,
                        extractor="rule",
                        env_kind=ENV_KIND,
                        observation_model=model,
                    )
                    choice[name] = result.action
                row = {
                    "episode": episode,
                    "t": step["t"],
                    "choice": choice,
                    "productive": {k: productive(env, a, seen) for k, a in choice.items()},
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
                nxt, _r, _d, info = env.step(step["action"])  # follow the recorded episode
                kg.observe(nxt, step["action"], env_kind=ENV_KIND, step=step["t"] + 1)
                seen = seen.after(nxt, step["action"], dict(info or {}), ENV_KIND)
                obs = nxt
    finally:
        env.close()
    arms = ("random", *models, "oracle")
    rate = {a: sum(r["productive"][a] for r in rows) / len(rows) for a in arms}
    pairs = {}
    named = list(models)
    compared = [(a, b) for i, a in enumerate(named) for b in named[i + 1 :]]
    compared = [(b, a) for a, b in compared] + [(a, "random") for a in named]
    for a, b in compared:
        only_a = sum(r["productive"][a] and not r["productive"][b] for r in rows)
        only_b = sum(r["productive"][b] and not r["productive"][a] for r in rows)
        pairs[f"{a} vs {b}"] = {
            "only_first": only_a,
            "only_second": only_b,
            "p": mcnemar_exact_p(only_a, only_b),
        }
    out = {
        "n": len(rows),
        "productive_rate": rate,
        "pairs": pairs,
        "seconds": time.perf_counter() - t0,
        "data": args.data,
        "adapters": adapters,
        "temperature": temp,
        "planner": {k: str(v) if k == "world_model" else v for k, v in planner.__dict__.items()},
        "rows": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
