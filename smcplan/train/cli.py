"""``smcplan train``: collect trajectories, run a trainer, score a world model.

Examples::

    smcplan train collect --env twx:coin --seeds 10000-10009 --source oracle --out runs/wm/dev.jsonl
    smcplan train world-model --data runs/wm/dev.jsonl --out runs/wm/lora --max-steps 100
    smcplan train evaluate --data runs/wm/test.jsonl --adapter runs/wm/lora/adapter \
        --out runs/wm/score-lora.json

Usage errors are one line on stderr with exit status 2 (integers and seed lists are parsed
strictly, ``--opt`` values against the trainer's schema, :mod:`smcplan.train.options`); every
command runs under :func:`~smcplan.interrupts.stop_on_signals`: Ctrl-C (or SIGTERM) stops it
cleanly with exit 130 (143) and one line, the last checkpoint or the finished episodes kept:
rerun with ``--resume``.  ``--no-progress`` silences every progress bar (also transformers' and
datasets').
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smcplan.errors import SmcplanError
from smcplan.options import (
    MAX_INT,
    MAX_SEED,
    argtype,
    check_out_path,
    int_text,
    parse_float,
    parse_int,
    parse_seed_ranges,
)

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit status 2 (no usage block)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


#: ``--seeds``: kept as ranges; counted and checked before they are expanded (``_cmd_collect``)
_seeds = argtype(parse_seed_ranges, "seeds")


def _branches(text: str) -> int | str:
    if text == "all":
        return text
    value = int_text(text)
    if value is None or not 0 <= value <= MAX_INT:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= 0 or 'all', got {text!r}"
            + (f" (at most {MAX_INT})" if value is not None and value > 0 else "")
        )
    return value


def _count(minimum: int, maximum: int = MAX_INT):
    """An integer in ``[minimum, maximum]``, strictly (ASCII digits: no ``1.5``, ``1_0``)."""

    def parse(text: str) -> int:
        value = int_text(text)
        if value is None or not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"must be an integer >= {minimum}, got {text!r}"
                + (f" (at most {maximum})" if value is not None and value > maximum else "")
            )
        return value

    return parse


def _positive_float(text: str) -> float:
    try:
        return parse_float(text, "value", minimum=0.0, min_inclusive=False)
    except SmcplanError:
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}") from None


def _kv(text: str) -> str:
    if "=" not in text or not text.split("=", 1)[0].strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return text


def _options(items: Sequence[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items or ():
        key, value = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def build_parser() -> argparse.ArgumentParser:
    from smcplan.train.registry import trainer_names

    parser = _Parser(prog="smcplan train", description="Collect trajectories and train models.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    co = sub.add_parser("collect", help="play episodes into a resumable JSONL shard")
    co.add_argument("--env", required=True, help="environment name, e.g. twx:coin")
    co.add_argument("--seeds", required=True, type=_seeds, help="e.g. 10000-10009")
    co.add_argument("--source", default="oracle", choices=["oracle", "gold", "agent"])
    co.add_argument("--agent", help="agent name for --source agent (e.g. react)")
    co.add_argument("--agent-arg", action="append", type=_kv, metavar="KEY=VALUE")
    co.add_argument("--env-arg", action="append", type=_kv, metavar="KEY=VALUE")
    co.add_argument("--split", help="the env's seed fold (train, dev, test)")
    co.add_argument("--model", help="language model of an LLM agent")
    co.add_argument("--max-steps", type=_count(1), default=25)
    co.add_argument(
        "--branches",
        type=_branches,
        default=0,
        help="counterfactual steps per state on a clone (K or 'all'; for world models)",
    )
    co.add_argument("--out", required=True, help="the shard file (.jsonl)")
    co.add_argument("--resume", action="store_true", help="skip episodes already in the shard")
    co.add_argument("--no-progress", action="store_true")

    ev = sub.add_parser(
        "evaluate",
        help="next-observation exact match, token F1 and event match; reward and done "
        "precision and recall for an adapter trained with targets reward and done",
    )
    ev.add_argument("--data", required=True, action="append", type=Path, help="held-out shard")
    ev.add_argument("--model", help="base model (default: the packaged SmolLM2)")
    ev.add_argument("--adapter", type=Path, help="a LoRA adapter folder")
    ev.add_argument("--depths", default="0", help="context depths, e.g. 0,1 (default 0)")
    ev.add_argument("--limit", type=_count(1), help="at most this many examples (first ones)")
    ev.add_argument(
        "--sample",
        type=_count(1),
        help="a uniform draw of this many examples (seeded by --seed), applied before --limit",
    )
    ev.add_argument("--seed", type=_count(0, MAX_SEED), default=0, help="the seed of --sample")
    ev.add_argument(
        "--branches", action="store_true", help="also score the shard's counterfactual branches"
    )
    ev.add_argument("--max-new-tokens", type=_count(1), default=128)
    ev.add_argument(
        "--target",
        choices=("full", "head"),
        default="full",
        help="score against the whole next observation or its first sentence (the target of "
        "`world-model --opt target=head`)",
    )
    ev.add_argument("--out", type=Path, help="write the score (and predictions) as JSON")
    ev.add_argument("--no-progress", action="store_true")

    for name in trainer_names():
        tp = sub.add_parser(name, help=f"run the {name} trainer")
        tp.add_argument("--data", action="append", type=Path, default=[], help="dataset file")
        tp.add_argument("--out", required=True, type=Path, help="output folder")
        tp.add_argument("--model", help="base model (registry name or folder)")
        tp.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
        tp.add_argument("--seed", type=_count(0, MAX_SEED), default=0)
        tp.add_argument("--max-steps", type=_count(1), help="optimizer steps (overrides epochs)")
        tp.add_argument("--epochs", type=_positive_float)
        tp.add_argument("--lr", type=_positive_float, help="learning rate")
        tp.add_argument("--batch-size", type=_count(1))
        tp.add_argument("--save-steps", type=_count(1), help="checkpoint every k steps")
        tp.add_argument(
            "--opt",
            action="append",
            type=_kv,
            metavar="KEY=VALUE",
            help="a trainer-specific option",
        )
        tp.add_argument("--no-progress", action="store_true")
    return parser


def _cmd_collect(args: argparse.Namespace) -> int:
    from smcplan.train.collect import collect

    # counted before expanded: a huge range is refused, not grown
    seeds = args.seeds.take(hint="give fewer seeds (a later --resume run adds more)")
    check_out_path(args.out, "--out", "file")
    env_kwargs = _options(args.env_arg)
    if args.split:
        env_kwargs.setdefault("split", args.split)
    result = collect(
        args.env,
        seeds,
        args.out,
        source=args.source,
        agent=args.agent,
        agent_config=_options(args.agent_arg),
        env_kwargs=env_kwargs,
        split=args.split,
        max_steps=args.max_steps,
        model=args.model,
        resume=args.resume,
        progress=not args.no_progress,
        branches=args.branches,
    )
    print(
        f"{result.path}: {result.played} episodes played ({result.won} won), "
        f"{result.skipped} already there, {result.transitions} transitions, "
        f"{result.seconds:.1f} s"
    )
    return 0


def _depths(text: str) -> list[int]:
    return [parse_int(d, "--depths (integers >= 0 such as 0,1)", minimum=0, maximum=MAX_INT)
            for d in text.split(",")]  # fmt: skip


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from smcplan.jsonfile import write_json
    from smcplan.llm import load_model
    from smcplan.train.data import read_shard
    from smcplan.train.world_model import evaluate_world_model, world_model_examples

    if args.out:
        check_out_path(args.out, "--out", "file")
    from smcplan.llm.roles.world_outcome import read_targets

    shards = [read_shard(path) for path in args.data]
    targets = read_targets(args.adapter)  # what the adapter was trained to write
    examples = world_model_examples(
        [t for s in shards for t in s.transitions],
        _depths(args.depths),
        [b for s in shards for b in s.branches] if args.branches else (),
        args.target,
        targets,
    )
    if args.sample is not None and args.sample < len(examples):
        import random

        picked = sorted(random.Random(args.seed).sample(range(len(examples)), args.sample))
        examples = [examples[i] for i in picked]
    examples = examples[: args.limit]
    lm = load_model(args.model, adapter=args.adapter)
    score = evaluate_world_model(
        lm, examples, max_new_tokens=args.max_new_tokens, progress=not args.no_progress,
        targets=targets,
    )  # fmt: skip
    line = (
        f"n={score.n} exact={score.exact:.3f} [{score.exact_ci[0]:.3f}, "
        f"{score.exact_ci[1]:.3f}] f1={score.f1:.3f} [{score.f1_ci[0]:.3f}, "
        f"{score.f1_ci[1]:.3f}] event={score.event:.3f} [{score.event_ci[0]:.3f}, "
        f"{score.event_ci[1]:.3f}] (branches: {score.branches}) {score.seconds:.0f} s"
    )
    if score.outcome_line():
        line += " " + score.outcome_line()
    print(line)
    if args.out:  # no NaN token in the file: a non-finite score is null, explained
        body = {
            "model": args.model,
            "adapter": str(args.adapter) if args.adapter else None,
            "data": [str(p) for p in args.data],
            "with_branches": bool(args.branches),
            "sample": args.sample,
            "seed": args.seed,
            **score.to_dict(with_predictions=True),
        }
        write_json(args.out, body)
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from smcplan.interrupts import stop_on_signals
    from smcplan.train.registry import TrainRequest, trainer

    entry = trainer(args.command)
    check_out_path(args.out, "--out", "dir")
    request = TrainRequest(
        trainer=args.command,
        out=args.out,
        data=list(args.data),
        model=args.model,
        resume=args.resume,
        seed=args.seed,
        max_steps=args.max_steps,
        epochs=args.epochs,
        learning_rate=args.lr,
        batch_size=args.batch_size,
        save_steps=args.save_steps,
        progress=not args.no_progress,
        options=_options(args.opt),
    )
    with stop_on_signals():  # nested in main's: the same handlers
        manifest = entry(request)
    if "summary" in manifest:  # a trainer that says what it did in its own words
        done = str(manifest["summary"])
    elif "steps" in manifest:
        done = f"{manifest['steps']} steps"
    else:
        done = (
            f"{manifest.get('examples', '?')} examples, cross-validated AUC "
            f"{manifest.get('cv_auc', float('nan')):.3f}"
        )
    print(f"{args.command}: {done} -> {manifest.get('weights', args.out)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``smcplan train ...`` (``argv`` without the leading ``train``)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    from smcplan.eval.progress import progress_bars
    from smcplan.interrupts import stop_on_signals

    try:
        # SIGINT / SIGTERM raise SweepInterrupted (a KeyboardInterrupt) between backend calls,
        # never inside one (py4j's socket read): exit 130 / 143 with the one line below
        with stop_on_signals(), progress_bars(not args.no_progress):
            if args.command == "collect":
                return _cmd_collect(args)
            if args.command == "evaluate":
                return _cmd_evaluate(args)
            return _cmd_train(args)
    except KeyboardInterrupt as exc:
        code = getattr(exc, "exit_code", 130)
        what = exc.args[0] if exc.args else "stopped by SIGINT"
        out = getattr(args, "out", None)
        kept = (
            "nothing was written: rerun the same command"
            if args.command == "evaluate"
            else f"finished work under {out} is kept (the last checkpoint, the finished "
            "episodes): rerun with --resume"
        )
        print(f"\nsmcplan train {args.command}: {what}; {kept}", file=sys.stderr)
        return code
    except (SmcplanError, ValueError, OSError, ImportError) as exc:
        if os.environ.get("SMCPLAN_DEBUG"):
            raise
        print(f"smcplan train {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
