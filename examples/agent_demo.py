"""Play one episode with one agent and print the trajectory, the record and the cost per step.

    python examples/agent_demo.py --agent nesyfs --env twx:coin --seed 10000 --steps 10

``--model`` takes what :func:`smcplan.llm.load_model` takes (default: the packaged SmolLM2),
``--tiny`` uses the random-weight test model; ``--config key=value`` (repeatable, values parsed
as JSON when they parse) goes to the agent. ``--json PATH`` writes the step records.

A development tool (no metrics, no resuming): ``smcplan eval`` is the harness. Imports the
agents, ``smcplan.envs`` and ``smcplan.llm``; nothing from ``smcplan.eval``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python examples/agent_demo.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--agent", default="nesyfs")
    parser.add_argument("--env", default="twx:coin")
    parser.add_argument("--seed", type=int, default=None, help="environment seed")
    parser.add_argument("--agent-seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--model", default=None)
    parser.add_argument("--tiny", action="store_true", help="the random-weight test model")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads of the model (1: best on a shared or 2-core machine)",
    )
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--json", default=None, metavar="PATH")
    args = parser.parse_args(argv)
    os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")

    from smcplan.agents import make
    from smcplan.envs import make as make_env

    config = {}
    for item in args.config:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--config wants KEY=VALUE; got {item!r}")
        config[key] = _value(value)
    lm = None
    if args.agent != "random":
        t0 = time.perf_counter()
        if args.tiny:
            from smcplan.llm.testing import tiny_model

            lm = tiny_model()
        else:
            from smcplan.llm import load_model

            lm = load_model(args.model, threads=args.threads)
        print(f"model {lm.name} loaded in {time.perf_counter() - t0:.1f} s")
    agent = make(args.agent, lm=lm, seed=args.agent_seed, **config)
    env = make_env(args.env)
    records = []
    try:
        obs, info = env.reset(args.seed)
        actions = list(info["admissible_actions"])
        print(f"task: {env.task}\n[0] {obs.strip()}")
        t0 = time.perf_counter()
        agent.reset(env.task, obs, actions)
        print(f"reset {time.perf_counter() - t0:.1f} s")
        total = 0.0
        for t in range(args.steps):
            t0 = time.perf_counter()
            step = agent.act(obs, actions, info)
            dt = time.perf_counter() - t0
            total += dt
            obs, reward, done, info = env.step(step.action)
            meta = step.meta
            line = (
                f"[{t + 1}] {step.action!r}  ({dt:.1f} s, {meta.get('llm_calls', 0)} calls, "
                f"{meta.get('llm_tokens', 0)} tokens, rejections {meta.get('rejections', 0)}, "
                f"slow {bool(meta.get('slow_thinking'))}, executed {meta.get('executed', '-')})"
            )
            print(line)
            if step.thought:
                print(f"    thought: {step.thought[:160]!r}")
            print(f"    -> {obs.strip()[:200]}")
            records.append({"t": t, "action": step.action, "thought": step.thought, "tag": step.tag,
                            "meta": meta, "agent_s": dt, "observation": obs, "reward": reward})
            if done:
                break
            actions = list(info["admissible_actions"])
        agent.end_episode(bool(info.get("won")), float(info.get("score", 0.0)))
        n = len(records)
        print(f"won {bool(info.get('won'))}, score {float(info.get('score', 0.0)):.2f}, "
              f"{n} steps, {total:.1f} s in act ({total / max(n, 1):.1f} s/step)")
    finally:
        env.close()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(records, f, ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
