"""The ``smcplan`` command line: ``eval`` (run a resumable sweep), ``report`` (compare runs), ``list``.

Examples::

    smcplan eval --env twx:coin --agent random --split dev --episodes 20 --seed 0 --out runs/rnd
    smcplan eval --env twx:coin --agent nesyfs --seeds 0-4 --model smollm2-135m --show
    smcplan report runs/rnd runs/nesyfs --out runs/report

Also runnable as ``python -m smcplan.cli``. Sits at the top of the stack with ``smcplan.eval``:
imports agents, envs and llm only lazily (through the harness); nothing imports this module.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main", "build_parser", "parse_seeds", "parse_kv"]

_RANGE = re.compile(r"(\d+)\s*-\s*(\d+)")


def parse_seeds(text: str) -> list[int]:
    """``"0,3,5-7"`` -> ``[0, 3, 5, 6, 7]`` (ranges inclusive)."""
    seeds: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        match = _RANGE.fullmatch(part)
        try:
            if match:
                a, b = int(match[1]), int(match[2])
                if b < a:
                    raise ValueError
                seeds.extend(range(a, b + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"bad seed list {text!r}: use integers and inclusive ranges, e.g. 0,3,5-7"
            ) from None
    if not seeds:
        raise argparse.ArgumentTypeError(f"empty seed list {text!r}")
    return seeds


def parse_kv(items: Sequence[str] | None) -> dict[str, Any]:
    """``["n=8", "weighting=twisted", "flags=[1,2]"]`` -> dict; values parsed as JSON if they can."""
    out: dict[str, Any] = {}
    for item in items or ():
        if "=" not in item:
            raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smcplan",
        description="Probabilistic-programming planning for language agents: evaluation CLI.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser(
        "eval",
        help="run an agent on a sweep of episodes (resumable)",
        description="Run an agent on a sweep of episodes. Re-running with the same --out "
        "skips finished episodes; a kill loses at most the episode in flight.",
    )
    ev.add_argument(
        "--env",
        action="append",
        required=True,
        metavar="NAME",
        help="env name (twx:coin) or prefix (twx); repeat or comma-separate",
    )
    ev.add_argument(
        "--agent", required=True, help="random, react, reflexion, zeroshot, nesyfs, rlaw, rlvmr"
    )
    ev.add_argument(
        "--split", default="dev", help="named split from smcplan.envs.splits (default dev)"
    )
    ev.add_argument(
        "--seeds",
        type=parse_seeds,
        default=None,
        help="explicit env seeds instead of a split, e.g. 0-19 or 1,4,9",
    )
    ev.add_argument("--episodes", type=int, default=None, help="at most this many episodes per env")
    ev.add_argument(
        "--model",
        default=None,
        help="language model for smcplan.llm.load_model (default: packaged SmolLM2; "
        "'none': no model; 'openai:<base_url>#<model>': a vLLM/SGLang/llama.cpp server); "
        "loaded only if the agent takes one",
    )
    ev.add_argument("--quantization", choices=["nf4", "int8"], default=None)
    ev.add_argument(
        "--seed", type=int, default=0, help="run seed (per-episode seeds derive from it)"
    )
    ev.add_argument("--max-steps", type=int, default=50, help="step limit per episode (default 50)")
    ev.add_argument(
        "--trials",
        type=int,
        default=1,
        help="retries of a lost episode with the same agent (Reflexion), default 1",
    )
    ev.add_argument(
        "--agent-arg",
        action="append",
        metavar="KEY=VALUE",
        help="extra agent config (JSON values), repeatable",
    )
    ev.add_argument(
        "--env-arg",
        action="append",
        metavar="KEY=VALUE",
        help="extra smcplan.envs.make kwargs (JSON values), repeatable",
    )
    ev.add_argument("--out", default=None, help="run directory (default runs/<agent>-<env>)")
    ev.add_argument(
        "--workers",
        type=_positive,
        default=1,
        help="episodes in parallel on Ray workers, each with its own env and model (default 1: "
        "in-process); same records as 1",
    )
    ev.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="connect to this Ray cluster (e.g. auto, or 10.0.0.1:6379) instead of starting one",
    )
    ev.add_argument(
        "--retry-errors", action="store_true", help="re-run episodes that ended in an error"
    )
    ev.add_argument("--fail-fast", action="store_true", help="stop at the first error episode")
    ev.add_argument("--no-progress", action="store_true", help="no progress bars")
    ev.add_argument(
        "--show", action="store_true", help="print the trajectory (thoughts, actions, feedback)"
    )

    rp = sub.add_parser(
        "report",
        help="compare runs: markdown table, PNG plots, HTML viewer",
        description="Side-by-side table (SR / AvgS / HR with 95%% intervals per agent and "
        "benchmark), plots and a trajectory viewer for one or more run directories.",
    )
    rp.add_argument("runs", nargs="+", help="run directories written by `smcplan eval`")
    rp.add_argument("--out", default="runs/report", help="output folder (default runs/report)")
    rp.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    rp.add_argument(
        "--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)"
    )
    rp.add_argument("--no-plots", action="store_true")
    rp.add_argument("--no-viewer", action="store_true")

    sub.add_parser("list", help="list the registered agents and environments")
    return parser


def _default_out(agent: str, envs: Sequence[str]) -> str:
    from smcplan.eval.records import slug

    return f"runs/{slug(agent)}-{slug('+'.join(envs))}"


def _cmd_eval(args: argparse.Namespace) -> int:
    from smcplan.eval.report import detail_table, load_run
    from smcplan.eval.runner import EvalConfig, run_eval

    envs = [e for item in args.env for e in item.split(",") if e]
    config = EvalConfig(
        envs=envs,
        agent=args.agent,
        out=args.out or _default_out(args.agent, envs),
        split=args.split,
        seeds=args.seeds,
        episodes=args.episodes,
        model=args.model,
        quantization=args.quantization,
        seed=args.seed,
        max_steps=args.max_steps,
        trials=args.trials,
        agent_config=parse_kv(args.agent_arg),
        env_config=parse_kv(args.env_arg),
        retry_errors=args.retry_errors,
        fail_fast=args.fail_fast,
    )
    summaries = run_eval(
        config,
        progress=not args.no_progress,
        show=sys.stdout if args.show else None,
        workers=args.workers,
        ray_address=args.ray_address,
    )
    run = load_run(config.out, seed=config.seed)
    run.label = config.agent
    print(f"\n{len(summaries)} episodes in {config.out}")
    for env in run.metrics:
        print(f"\n{env}\n{detail_table([run], env)}")
    errors = [s for s in summaries if s["status"] == "error"]
    for s in errors:
        print(
            f"error in {s['episode']}: {s['error']['type']}: {s['error']['message']}",
            file=sys.stderr,
        )
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from smcplan.eval.report import write_report

    result = write_report(
        args.runs,
        args.out,
        seed=args.seed,
        num_resamples=args.resamples,
        plots=not args.no_plots,
        viewer=not args.no_viewer,
    )
    print(result["markdown"])
    print("\nwrote: " + ", ".join(result["files"]), file=sys.stderr)
    return 0


def _cmd_list() -> int:
    from smcplan import agents

    print("agents: " + ", ".join(sorted(agents.AGENTS)))
    try:
        from smcplan import envs

        names = envs.env_names()
        print("envs:   " + ", ".join(sorted(names)))
    except ImportError as exc:
        print(f"envs:   unavailable ({exc})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``smcplan`` console script (``SMCPLAN_DEBUG=1``: full tracebacks)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "eval":
            return _cmd_eval(args)
        if args.command == "report":
            return _cmd_report(args)
        return _cmd_list()
    except KeyboardInterrupt:
        print("\ninterrupted; re-run the same command to resume", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, ImportError) as exc:
        if os.environ.get("SMCPLAN_DEBUG"):
            raise
        print(f"smcplan {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
