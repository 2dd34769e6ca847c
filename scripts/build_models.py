"""`make models`: rebuild every shipped artifact of ``models/trained/`` from scratch, resumably.

    python scripts/build_models.py                      # every artifact
    python scripts/build_models.py twx-coin-world-model # one
    python scripts/build_models.py --list               # names and their commands

Each artifact is a recipe: shell commands (collect data, train, measure on held-out seeds) run
in order under ``--runs`` (default ``runs/models``), then a ship step that writes the folder
``models/trained/<name>/`` with its manifest (:mod:`smcplan.train.ship`).  A finished command
leaves ``<runs>/<name>/<step>.done`` holding its wall time, so a stopped build resumes where it
stopped; a trainer's own checkpoints resume the step that was running (``--resume``).  The
manifest records these exact commands, so ``tests/models`` checks that the recipe here and the
shipped manifest agree.  Times (2 cores, 2026-12-06) are printed per step and recorded.
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BASE_MODEL = "smollm2-135m"
WM = "twx-coin-world-model"
CRITIC = "twx-coin-critic-head"
#: the first ``CHECK_*`` held-out examples scored at ship time are shipped as ``check.jsonl``
CHECK_WM = 24
CHECK_CRITIC_STATES = 10


@dataclass
class Step:
    """One command of a recipe; ``resumable``: the trainer takes ``--resume`` once its output
    folder ``output`` exists."""

    name: str
    command: str
    output: str
    resumable: bool = False


@dataclass
class Recipe:
    kind: str
    description: str
    steps: list[Step]
    ship: Callable[[Path, Path], dict]
    settings: dict = field(default_factory=dict)


def _wm_steps(r: str) -> list[Step]:
    return [
        Step(
            "collect-train",
            "smcplan train collect --env twx:coin --seeds 0-59 --split train --source oracle "
            f"--max-steps 25 --branches all --out {r}/train.jsonl --resume --no-progress",
            f"{r}/train.jsonl",
        ),
        Step(
            "collect-test",
            "smcplan train collect --env twx:coin --seeds 20000-20009 --split test "
            f"--source oracle --max-steps 25 --branches all --out {r}/test.jsonl --resume "
            "--no-progress",
            f"{r}/test.jsonl",
        ),
        Step(
            "train",
            f"smcplan train world-model --data {r}/train.jsonl --out {r}/lora --seed 0 "
            "--epochs 1 --batch-size 4 --save-steps 10 --opt max_examples=600 --opt target=head "
            "--opt threads=2 --opt max_length=768 --no-progress",
            f"{r}/lora",
            resumable=True,
        ),
        Step(
            "evaluate",
            f"smcplan train evaluate --data {r}/test.jsonl --branches --sample 60 --seed 0 "
            f"--target head --adapter {r}/lora/adapter --out {r}/score.json --no-progress",
            f"{r}/score.json",
        ),
    ]


def _gold_steps(r: str) -> list[Step]:
    """The seeded gold paths of coin's dev seeds 10000-10039 and test seeds 20000-20019."""
    return [
        Step(
            "collect-dev",
            "smcplan train collect --env twx:coin --seeds 10000-10039 --source gold --split dev "
            f"--out {r}/gold-dev.jsonl --resume --no-progress",
            f"{r}/gold-dev.jsonl",
        ),
        Step(
            "collect-test",
            "smcplan train collect --env twx:coin --seeds 20000-20019 --source gold "
            f"--split test --out {r}/gold-test.jsonl --resume --no-progress",
            f"{r}/gold-test.jsonl",
        ),
    ]


def _critic_steps(r: str) -> list[Step]:
    return [
        *_gold_steps(r),
        Step(
            "train",
            f"smcplan train critic-head --data {r}/gold-dev.jsonl --out {r}/head-notes "
            "--opt threads=2 --no-progress",
            f"{r}/head-notes",
            resumable=True,
        ),
        Step(
            "evaluate",
            f"python scripts/critic_auc.py --data {r}/gold-test.jsonl --states 40 "
            f"--skip-prompted --map-notes --head {r}/head-notes/head --out {r}/auc.json",
            f"{r}/auc.json",
        ),
    ]


RLVMR = "twx-coin-rlvmr-head"
#: the policy-head runs live where a later session finds them: committed checkpoints (the
#: heads read the task and each candidate's map note, --opt context=task, docs/train_rlaw_rlvmr.md
#: "The task context"; the earlier runs stay in models/checkpoints/twx-coin-rlvmr-head (no
#: notes, shipped until session 32) and -notes (full state text and notes, until session 36))
RLVMR_CK = "models/checkpoints/" + RLVMR + "-task"
RLVMR_TRAIN = "[" + ",".join(str(s) for s in range(10100, 10400)) + "]"
RLVMR_EVAL = "[" + ",".join(str(s) for s in range(10040, 10100)) + "]"
RLVMR_COLD_EVAL = "[" + ",".join(str(s) for s in range(10040, 10050)) + "]"  # the cold start's
#: the test episodes of each cell, and the first ``CHECK_POLICY_STATES`` gold test states shipped
RLVMR_TEST_SEEDS = "20100-20139"  # 20000-20019 and 20060-20079 were spent on earlier heads
RLVMR_TEST = f"--env twx:coin --seeds {RLVMR_TEST_SEEDS} --split test --max-steps 25 --seed 0"
CHECK_POLICY_STATES = 10
#: GRPO-MR and GRPO iterations (4 dev seeds, G = 8 episodes of at most 25 steps, each)
RLVMR_ITERATIONS = 80
#: what the head reads (both recorded in the head, so the rlvmr agent builds the same texts)
RLVMR_HEAD_OPTS = "--opt map_notes=true --opt context=task"


def _rlvmr_run(name: str, extra: str = "") -> Step:
    ck = RLVMR_CK
    return Step(
        name,
        f"smcplan train grpo-mr-head --out {ck}/{name} --lr 10 "
        f"--opt init_head={ck}/cold/reference --opt feature_cache={ck}/cold/features.npz "
        f"--opt env=twx:coin --opt split=dev --opt seeds={RLVMR_TRAIN} "
        f"--opt seeds_per_iteration=4 --opt group_size=8 --opt iterations={RLVMR_ITERATIONS} "
        f"--opt max_episode_steps=25 --opt eval_every=5 --opt eval_seeds={RLVMR_EVAL} "
        f"--opt threads=1 {RLVMR_HEAD_OPTS}{extra} --no-progress",
        f"{ck}/{name}",
        resumable=True,
    )


def _rlvmr_test(name: str, head: str) -> Step:
    return Step(
        f"test-{name}",
        f"smcplan eval {RLVMR_TEST} --agent rlvmr --agent-arg policy_head={head} "
        f"--out {{runs}}/{RLVMR}/test-{name} --no-progress --retry-errors",
        f"{{runs}}/{RLVMR}/test-{name}",
    )


def _rlvmr_steps(r: str) -> list[Step]:
    ck = RLVMR_CK
    return [
        *_gold_steps(r),
        Step(
            "cold",
            f"smcplan train grpo-mr-head --data {r}/gold-dev.jsonl --out {ck}/cold "
            "--opt env=twx:coin --opt split=dev --opt iterations=0 "
            f"--opt eval_seeds={RLVMR_COLD_EVAL} --opt max_episode_steps=25 --opt threads=1 "
            f"{RLVMR_HEAD_OPTS} --no-progress",
            f"{ck}/cold",
        ),
        _rlvmr_run("grpo-mr"),
        _rlvmr_run("grpo", " --opt vanilla=true"),
        _rlvmr_test("cold", f"{ck}/cold/reference"),
        _rlvmr_test("grpo-mr", f"{ck}/grpo-mr/head"),
        _rlvmr_test("grpo", f"{ck}/grpo/head"),
        Step(
            "test-react",
            f"smcplan eval {RLVMR_TEST} --agent react --out {r}/test-react --no-progress "
            "--retry-errors",
            f"{r}/test-react",
        ),
    ]


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, allow_nan=False) + "\n")


def ship_world_model(work: Path, dest: Path) -> dict:
    """fp16 adapter, ``check.jsonl`` (the first ``CHECK_WM`` scored held-out examples, with
    the prediction and event match recorded at ship time) and the metrics."""
    from smcplan.train.ship import ship_adapter
    from smcplan.train.world_model import heldout_examples

    ship_adapter(work / "lora" / "adapter", dest, BASE_MODEL)
    score = _read_json(work / "score.json")
    examples = heldout_examples(
        [work / "test.jsonl"], branches=True, target="head", sample=score["n"], seed=0
    )
    check = []
    for ex, pred in zip(examples[:CHECK_WM], score["predictions"][:CHECK_WM], strict=True):
        assert ex["completion"] == pred["truth"], "held-out draw differs from the scored one"
        check.append({**ex, "prediction": pred["prediction"], "event": pred["event"]})
    _write_jsonl(dest / "check.jsonl", check)
    train = _read_json(work / "lora" / "train.json")
    return {
        "heldout": {
            "data": "twx:coin test seeds 20000-20009, real steps and branches, 60 drawn (seed 0)",
            "n": score["n"],
            "event_match": score["event"],
            "event_match_wilson95": score["event_ci"],
            "exact": score["exact"],
            "exact_wilson95": score["exact_ci"],
            "token_f1": score["f1"],
            "token_f1_ci95": score["f1_ci"],
        },
        "check": {
            "file": "check.jsonl",
            "n": len(check),
            "event_match": sum(bool(c["event"]) for c in check),
        },
        "train": {
            "examples": train["examples"],
            "steps": train["steps"],
            "train_loss": sum(train["losses"]) / len(train["losses"]),  # the trainer's mean
            "mean_loss_last_10_steps": sum(train["losses"][-10:]) / len(train["losses"][-10:]),
        },
        "episodes": (
            "NeSyFS with this recipe's adapter (docs/train.md, each6: N = |A|, H = 1, "
            "max_weight, task+novelty, with the coin rules): 39/40 = 97.5 % (Wilson 87-100) "
            "on held-out test seeds 20020-20059 (session 27's build of the same recipe)"
        ),
    }


def ship_critic_head(work: Path, dest: Path) -> dict:
    """The head, ``check.jsonl`` (the labelled actions of the first ``CHECK_CRITIC_STATES``
    of the 40 scored held-out states, with their map notes) and the metrics."""
    from smcplan.agents.map_notes import episode_maps
    from smcplan.train.critic import critic_labels
    from smcplan.train.data import read_shard
    from smcplan.train.ship import ship_head

    ship_head(work / "head-notes" / "head", dest)
    auc = _read_json(work / "auc.json")
    shard = read_shard(work / "gold-test.jsonl")
    rows = random.Random(0).sample(shard.transitions, min(40, len(shard.transitions)))
    maps = episode_maps(shard.transitions, shard.header.get("env") or "auto")
    labels = critic_labels(rows[:CHECK_CRITIC_STATES], maps)
    _write_jsonl(dest / "check.jsonl", labels)
    head = auc["head"]
    train = _read_json(work / "head-notes" / "train.json")
    return {
        "heldout": {
            "data": "twx:coin gold paths of test seeds 20000-20019, 40 states drawn (seed 0), "
            "every admissible action scored",
            "states": head["states"],
            "n": head["n"],
            "positives": head["positives"],
            "auc": head["auc"],
            "auc_bootstrap95_over_states": head["auc_ci"],
        },
        "check": {
            "file": "check.jsonl",
            "states": CHECK_CRITIC_STATES,
            "n": len(labels),
            "positives": sum(r["label"] for r in labels),
        },
        "cv_auc_dev": train.get("cv_auc"),
        "C": train.get("C"),
        "layers": train.get("layers"),
    }


def policy_check_rows(head_dir: Path, shard: Path, states: int) -> list[dict]:
    """The first ``states`` gold states of ``shard`` with the shipped head's log-probabilities
    of their candidates, computed now on the frozen model (``check.jsonl``)."""
    from smcplan.llm import load_model
    from smcplan.llm.roles.policy_head import LMFeatures, PolicyHead
    from smcplan.train.data import read_shard
    from smcplan.train.head_episodes import gold_steps

    head = PolicyHead.load(head_dir)
    read = read_shard(shard)
    maps = None
    if head.info.get("map_notes"):  # the notes the head was trained with, as the cold start
        from smcplan.train.critic import _maps

        maps = _maps(read.transitions, [read.header])
    steps = gold_steps(read.transitions, head.tags, head.info.get("recent", 3), maps,
                       head.info.get("context", "full"))  # fmt: skip
    features = LMFeatures(load_model(head.info.get("model")), head.layers)
    rows = []
    for step in steps[:states]:
        notes = step.get("notes")
        logp = head.log_probs(features(step["state"], step["pairs"], notes))
        row = {"state": step["state"], "pairs": [list(p) for p in step["pairs"]],
               "gold": step["gold"], "logp": [float(x) for x in logp]}  # fmt: skip
        rows.append(row if notes is None else {**row, "notes": list(notes)})
    return rows


def ship_rlvmr_head(work: Path, dest: Path) -> dict:
    """The GRPO-MR head, ``check.jsonl`` (:func:`policy_check_rows` on the gold test states)
    and the metrics: held-out learning curves and the test cells, paired."""
    from ablation_table import cell, pair

    from smcplan.train.ship import POLICY_HEAD_FILES, ship_head

    ck = ROOT / RLVMR_CK
    ship_head(ck / "grpo-mr" / "head", dest, POLICY_HEAD_FILES)
    check = policy_check_rows(dest, work / "gold-test.jsonl", CHECK_POLICY_STATES)
    _write_jsonl(dest / "check.jsonl", check)
    runs = {n: work / f"test-{n}" for n in ("grpo-mr", "grpo", "cold", "react")}
    cells = {n: cell(r) for n, r in runs.items()}
    pairs = [pair(runs["grpo-mr"], runs[b]) for b in ("cold", "grpo", "react")]
    curves = {}
    for run in ("grpo-mr", "grpo"):
        train = _read_json(ck / run / "train.json")
        curves[run] = {"heldout_start": train["heldout_start"]["success_rate"],
                       "heldout_success_rate": train["heldout_success_rate"],
                       "train_success_rate": train["success_rate"]}  # fmt: skip
    mr = cells["grpo-mr"]
    return {
        "heldout": {
            "data": f"twx:coin test seeds {RLVMR_TEST_SEEDS}, 25 steps, greedy head (argmax)",
            "n": mr["n"],
            "won": mr["won"],
            "success_rate": mr["sr"],
            "success_rate_wilson95": [mr["sr_lo"], mr["sr_hi"]],
            "rep_per_step_is": "the eval's repetitive steps per step (docs/eval.md), not the "
            "repeated actions per step of docs/train_rlaw_rlvmr.md",
            "cells": {
                n: {k: c[k] for k in ("n", "won", "sr", "sr_lo", "sr_hi", "rep_per_step")}
                for n, c in cells.items()
            },
            "paired": [
                {k: p[k] for k in ("a", "b", "n", "both", "a_only", "b_only", "mcnemar_p")}
                for p in pairs
            ],
        },
        "curves": {
            "data": "greedy head on dev seeds 10040-10099 (held out from training)",
            **curves,
        },
        "check": {"file": "check.jsonl", "n": len(check)},
    }


RECIPES: dict[str, Recipe] = {
    WM: Recipe(
        kind="peft-lora-adapter",
        description=(
            "Learned world model for TextWorldExpress coin: a LoRA adapter on SmolLM2-135M "
            "trained on the first sentence of the next observation of oracle steps and "
            "counterfactual branches (every admissible action on a clone). Serves "
            "planner.world_model='learned' with world_model_path='twx-coin-world-model'."
        ),
        steps=_wm_steps("{runs}/" + WM),
        ship=ship_world_model,
        settings={"target": "head", "observation_role": "observation"},
    ),
    CRITIC: Recipe(
        kind="score-head",
        description=(
            "RLAW critic for TextWorldExpress coin: a logistic head on SmolLM2-135M's hidden "
            "state where the critic writes its score (the critic prompt with map notes), fitted "
            "on gold-path labels of dev seeds. Serves the rlaw agent with "
            "critic_path='twx-coin-critic-head'."
        ),
        steps=_critic_steps("{runs}/" + CRITIC),
        ship=ship_critic_head,
        settings={"map_notes": True},
    ),
    RLVMR: Recipe(
        kind="policy-head",
        description=(
            "RLVMR policy for TextWorldExpress coin: a linear-softmax head over (tag, action) "
            "candidates on SmolLM2-135M's frozen hidden state, each candidate read after the "
            "task alone with the note the agent's own place map writes for its action; cold "
            "start by maximum likelihood on the rule-tagged gold steps of dev seeds, then 80 "
            "iterations of GRPO-MR (alpha = 0.5) on dev seeds. Serves the rlvmr agent with "
            "policy_head='twx-coin-rlvmr-head'."
        ),
        steps=_rlvmr_steps("{runs}/" + RLVMR),
        ship=ship_rlvmr_head,
        settings={
            "alpha": 0.5,
            "learning_rate": 10,
            "iterations": RLVMR_ITERATIONS,
            "seeds_per_iteration": 4,
            "map_notes": True,
            "context": "task",
        },
    ),
}


def commands(name: str, runs: str = "runs/models") -> list[str]:
    """The recipe's commands as they run (and as the manifest records them)."""
    return [s.command.format(runs=runs) for s in RECIPES[name].steps]


def build(name: str, runs: str, dest_root: Path) -> dict:
    from smcplan.train.ship import write_manifest

    recipe = RECIPES[name]
    work = ROOT / runs / name
    work.mkdir(parents=True, exist_ok=True)
    seconds = {}
    for step in recipe.steps:
        marker = work / f"{step.name}.done"
        command = step.command.format(runs=runs)
        if marker.is_file():
            seconds[step.name] = float(marker.read_text())
            print(f"[{name}] {step.name}: done before ({seconds[step.name]:.0f} s)", flush=True)
            continue
        argv = shlex.split(command)
        if step.resumable and (ROOT / step.output.format(runs=runs)).exists():
            argv.append("--resume")
        argv[0] = str(BIN / argv[0])
        print(f"[{name}] {step.name}: {command}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.run(argv, cwd=ROOT).returncode
        if code:
            print(f"[{name}] {step.name} failed (exit {code}); rerun to resume", file=sys.stderr)
            raise SystemExit(code)
        seconds[step.name] = round(time.perf_counter() - t0, 1)
        marker.write_text(str(seconds[step.name]))
        print(f"[{name}] {step.name}: {seconds[step.name]:.0f} s", flush=True)
    dest = dest_root / name
    metrics = recipe.ship(work, dest)
    data = [ROOT / runs / name / f for f in _data_files(name)]
    manifest = write_manifest(
        dest,
        name=name,
        kind=recipe.kind,
        description=recipe.description,
        base_model=BASE_MODEL,
        commands=commands(name, runs),
        data=data,
        metrics=metrics,
        settings=recipe.settings,
        seconds=seconds,
        root=ROOT,
    )
    print(f"[{name}] shipped {dest} ({manifest['bytes']} bytes)", flush=True)
    return manifest


def _data_files(name: str) -> list[str]:
    if name == WM:
        return ["train.jsonl", "test.jsonl"]
    return ["gold-dev.jsonl", "gold-test.jsonl"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help=f"artifacts (default: all of {list(RECIPES)})")
    parser.add_argument("--runs", default="runs/models", help="work folder, relative to the repo")
    parser.add_argument("--dest", type=Path, default=ROOT / "models" / "trained")
    parser.add_argument("--list", action="store_true", help="print the recipes and exit")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in RECIPES]
    if unknown:
        parser.error(f"unknown artifact {unknown[0]!r}; known: {', '.join(RECIPES)}")
    names = args.names or list(RECIPES)
    if args.list:
        for n in names:
            print(n)
            for c in commands(n, args.runs):
                print(f"  {c}")
        return 0
    t0 = time.perf_counter()
    try:
        for n in names:
            build(n, args.runs, args.dest)
    except KeyboardInterrupt:
        print("make models: stopped; rerun to resume from the last finished step", file=sys.stderr)
        return 130
    print(f"make models: {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
