"""The ``smcplan`` command line: ``eval`` (a resumable sweep), ``report`` (compare runs), ``list``.

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
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from smcplan.errors import SmcplanError
from smcplan.options import (
    MAX_INT,
    MAX_SEED,
    SeedRanges,
    argtype,
    check_out_path,
    int_text,
    parse_seed_ranges,
)

__all__ = ["main", "build_parser", "parse_seeds", "parse_kv", "SeedRanges", "parse_seed_ranges"]

#: ``--seeds``: kept as ranges (:class:`~smcplan.options.SeedRanges`), counted before expanded
_seed_ranges = argtype(parse_seed_ranges, "seeds")


def _int_at_least(minimum: int, what: str, maximum: int = MAX_INT):
    """An argparse ``type`` accepting integers in ``[minimum, maximum]``, strictly (ASCII digits:
    no ``1.5``, ``1_0``, ``1e3``); ``what`` names them in errors."""

    def parse(text: str) -> int:
        value = int_text(text)
        if value is None:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        if not minimum <= value <= maximum:
            hint = f" (at most {maximum})" if value > maximum else ""
            raise argparse.ArgumentTypeError(f"expected {what}{hint}, got {value}")
        return value

    return parse


_positive_int = _int_at_least(1, "a positive integer")
_non_negative_int = _int_at_least(0, "an integer >= 0")
_seed_int = _int_at_least(0, f"an integer in [0, {MAX_SEED}]", MAX_SEED)


def _kv_item(text: str) -> str:
    if "=" not in text or not text.split("=", 1)[0].strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return text


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit status 2 (no usage block)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parse_seeds(text: str) -> list[int]:
    """``"0,3,5-7"`` -> ``[0, 3, 5, 6, 7]`` (ranges inclusive; at most
    :data:`~smcplan.options.MAX_SEEDS` seeds, counted before they are expanded)."""
    return _seed_ranges(text).take()


def parse_kv(items: Sequence[str] | None) -> dict[str, Any]:
    """``["n=8", "weighting=twisted", "flags=[1,2]"]`` -> dict; values parsed as JSON if they can.
    """
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
    value = int_text(text)
    if value is None or not 1 <= value <= MAX_INT:
        raise argparse.ArgumentTypeError(
            f"must be a positive integer, got {text!r}"
            + (f" (at most {MAX_INT})" if value is not None and value > 0 else "")
        )
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
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
        type=_seed_ranges,
        default=None,
        help="explicit env seeds instead of a split, e.g. 0-19 or 1,4,9",
    )
    ev.add_argument(
        "--episodes", type=_positive_int, default=None, help="at most this many episodes per env"
    )
    ev.add_argument(
        "--model",
        default=None,
        help="language model for smcplan.llm.load_model (default: packaged SmolLM2; "
        "'none': no model; 'openai:<base_url>#<model>': a vLLM/SGLang/llama.cpp server); "
        "loaded only if the agent takes one",
    )
    ev.add_argument("--quantization", choices=["nf4", "int8"], default=None)
    ev.add_argument(
        "--seed",
        type=_seed_int,
        default=0,
        help="run seed (per-episode seeds derive from it)",
    )
    ev.add_argument(
        "--max-steps", type=_positive_int, default=50, help="step limit per episode (default 50)"
    )
    ev.add_argument(
        "--trials",
        type=_positive_int,
        default=1,
        help="retries of a lost episode with the same agent (Reflexion), default 1",
    )
    ev.add_argument(
        "--agent-arg",
        action="append",
        type=_kv_item,
        metavar="KEY=VALUE",
        help="extra agent config (JSON values), repeatable; GROUP.FIELD sets a field of the "
        "agent's settings, e.g. planner.num_particles=16 or reflection.samples=7",
    )
    ev.add_argument(
        "--env-arg",
        action="append",
        type=_kv_item,
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
    rp.add_argument("--seed", type=_seed_int, default=0, help="bootstrap seed (default 0)")
    rp.add_argument(
        "--resamples", type=_positive_int, default=2000, help="bootstrap resamples (default 2000)"
    )
    rp.add_argument("--no-plots", action="store_true")
    rp.add_argument("--no-viewer", action="store_true")

    sub.add_parser("list", help="list the registered agents and environments")
    sub.add_parser("train", help="collect trajectories and train models (smcplan train --help)",
                   add_help=False)
    return parser


def _default_out(agent: str, envs: Sequence[str]) -> str:
    from smcplan.eval.records import slug

    return f"runs/{slug(agent)}-{slug('+'.join(envs))}"


def _cmd_eval(args: argparse.Namespace) -> int:
    # --episodes caps the seeds before they are expanded (a range can be huge); without it more
    # than MAX_SEEDS seeds are refused, and every seed taken must be <= MAX_SEED
    seeds = args.seeds.take(args.episodes) if args.seeds is not None else None
    from smcplan.eval.report import detail_table, load_run
    from smcplan.eval.runner import EvalConfig, run_eval

    envs = [e for item in args.env for e in item.split(",") if e]
    agent_config, env_config = parse_kv(args.agent_arg), parse_kv(args.env_arg)
    out = args.out or _default_out(args.agent, envs)
    _check_eval_usage(args.agent, envs, agent_config, env_config, args.model, out, seeds)
    config = EvalConfig(
        envs=envs,
        agent=args.agent,
        out=out,
        split=args.split,
        seeds=seeds,
        episodes=args.episodes,
        model=args.model,
        quantization=args.quantization,
        seed=args.seed,
        max_steps=args.max_steps,
        trials=args.trials,
        agent_config=agent_config,
        env_config=env_config,
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


def _check_eval_usage(
    agent: str,
    env_names: Sequence[str],
    agent_config: dict[str, Any],
    env_config: dict[str, Any],
    model: str | None,
    out: str,
    seeds: Sequence[int] | None = None,
) -> None:
    """Usage errors of ``eval`` found before anything is written (``UnknownNameError`` and
    ``ValueError`` become exit status 2): unknown agent/env, option keys neither takes (the
    message lists the valid ones), ``--model`` for an agent without a model, ``--out`` a file,
    a seed an env refuses (``envs.check_seeds``: TextWorldExpress's folds, without a JVM)."""
    from smcplan import agents, envs
    from smcplan.errors import check_options

    check_out_path(out, "--out", "dir")
    agents.spec(agent)
    if model not in (None, "none") and not agents.uses_model(agent):
        raise ValueError(f"agent {agent!r} takes no language model; drop --model {model}")
    agents.check_agent_options(agent, agent_config, f"agent {agent!r} (--agent-arg)")
    agents.check_settings(agent, agent_config)
    known = envs.env_names()
    for name in env_names:
        family = name.partition(":")[0]
        members = [name] if name in known else [k for k in known if k.partition(":")[0] == name]
        if not members and family not in {k.partition(":")[0] for k in known}:
            envs.make(name)  # raises the registry's own "unknown env" error, with suggestions
        for member in members:
            check_options(f"env {member!r} (--env-arg)", env_config, envs.env_options(member))
            if seeds is not None:
                envs.check_seeds(member, seeds, **env_config)


def _cmd_report(args: argparse.Namespace) -> int:
    from smcplan.eval.report import write_report

    check_out_path(args.out, "--out", "dir")
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


_default_showwarning = warnings.showwarning


def _show_warning(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """Our own warnings (damaged run files) as one ``smcplan: warning: ...`` line."""
    if category.__module__.startswith("smcplan"):
        print(f"smcplan: warning: {message}", file=sys.stderr)
    else:
        _default_showwarning(message, category, *args, **kwargs)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``smcplan`` console script (``SMCPLAN_DEBUG=1``: full tracebacks)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["train"]:  # its own parser (smcplan.train.cli)
        from smcplan.train.cli import main as train_main

        return train_main(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors and --help: the status, not an exception
        return int(exc.code or 0)
    from smcplan.eval.progress import progress_bars
    from smcplan.interrupts import stop_on_signals

    try:
        # every command under stop_on_signals: SIGINT / SIGTERM exit 130 / 143 with one line
        with warnings.catch_warnings(), stop_on_signals():
            warnings.showwarning = _show_warning
            if args.command == "eval":
                with progress_bars(not args.no_progress):
                    return _cmd_eval(args)
            if args.command == "report":
                return _cmd_report(args)
            return _cmd_list()
    except KeyboardInterrupt as exc:  # SIGINT / SIGTERM (smcplan.interrupts.SweepInterrupted)
        code = getattr(exc, "exit_code", 130)
        what = exc.args[0] if exc.args else "stopped by SIGINT"
        done = (
            "the episode in flight was dropped (finished episodes are kept); re-run the same "
            "command to resume"
            if args.command == "eval"
            else "nothing is lost; re-run the same command"
        )
        print(f"\n{what}: {done}", file=sys.stderr)
        return code
    except (SmcplanError, ValueError, OSError, ImportError) as exc:
        if os.environ.get("SMCPLAN_DEBUG"):
            raise
        print(f"smcplan {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
