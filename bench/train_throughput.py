"""SFT throughput (tokens/s): smcplan's ``train_sft`` against a plain TRL script, same config.

    .venv/bin/python bench/train_throughput.py                       # tiny random-weight model
    .venv/bin/python bench/train_throughput.py --model smollm2 --steps 8 --batch-size 4 \\
        --max-length 256

The same world-model examples (``--examples`` prompt/completion pairs built by
:func:`smcplan.train.world_model.world_model_examples` from deterministic synthetic transitions
of a small text house: no download, no environment) and the same config (LoRA r / alpha /
dropout / target modules, AdamW lr, cosine schedule, weight decay, batch size, gradient
accumulation, max length, optimizer steps, seed, float32, CPU threads) are trained two ways,
each in its own process (so peak RSS is its own):

* ``smcplan``: :func:`smcplan.llm.finetune.train_sft`, the entry ``smcplan train world-model``
  (and critic, cold-start) uses;
* ``trl``: the reference, ``trl.SFTTrainer`` + ``trl.SFTConfig`` + ``peft.LoraConfig`` written
  out here with the same values (bf16 and gradient checkpointing set off as smcplan does: TRL's
  own defaults turn both on; ``--runs ... trl-defaults`` adds a run that keeps them, with
  ``use_cpu=True``, without which they refuse to start on a machine with no GPU).

Measured by one ``TrainerCallback`` in every run: wall and CPU seconds (``time.process_time``,
all threads of the process) of the training steps only, from ``on_train_begin`` to the last
``on_step_end`` (model load, tokenisation, trainer set-up and the checkpoint/adapter saves after
the last step are excluded); tokens seen = the non-pad input tokens (prompt + completion, the
batches' ``attention_mask`` sum: TRL's logged ``num_tokens``) of every micro-batch, and the
completion (loss) tokens; tokens/s = tokens / steps wall; also the rate after the first step
(warm-up excluded) and the median over steps 2.. of each step's tokens / wall (robust to another
job's burst on a shared machine); tokens per CPU-second; peak RSS of the process
(``resource.getrusage``, load included); the loss of every step and the final one.  Both runs
use the same seed and data order, so their losses should agree to float32 noise; the script says
whether they do, and lists every field of the effective ``SFTConfig`` / ``LoraConfig`` that
differs between the runs instead of hiding it.  ``--repeats`` alternates the runs (smcplan, trl,
smcplan, ...) and reports medians.  Writes ``bench/results/train_throughput.json``
(``train_throughput_<model>.json`` for other models).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_table, write_json  # noqa: E402

RUNS = ("smcplan", "trl", "trl-defaults")
#: fields of the effective TrainingArguments that name places or runs, not training
IGNORED_ARGS = {
    "output_dir",
    "logging_dir",
    "run_name",
    "save_strategy",
    "save_steps",
    "save_total_limit",
    "disable_tqdm",
    "use_cpu",
    "report_to",
}

#: what a differing field means for the comparison (null = TRL's default)
NOTES = {
    "completion_only_loss": "null = TRL's default, which for prompt/completion data is "
    "completion-only loss too (same loss tokens: see 'loss tok')",
    "data_seed": "null = the data order follows seed (the same order)",
    "num_train_epochs": "ignored: max_steps is set",
    "lr_scheduler_kwargs": "{} and null: no extra scheduler arguments either way",
    "dataloader_pin_memory": "no effect without an accelerator",
    "bf16": "bfloat16 autocast, emulated on CPU (slow)",
    "gradient_checkpointing": "recomputes activations in the backward pass",
    "activation_checkpointing": "transformers' new name of gradient_checkpointing",
}

# ---------------------------------------------------------------- the examples (deterministic)

ROOMS = ["kitchen", "pantry", "hallway", "living room", "bedroom", "garden", "bathroom", "study"]
THINGS = ["coin", "key", "apple", "book", "lamp", "mug", "box", "note"]
CONTAINERS = ["fridge", "drawer", "cupboard", "chest", "oven", "shelf"]
DIRECTIONS = ["north", "south", "east", "west"]


def transitions(episodes: int, steps: int, seed: int) -> list[dict]:
    """Synthetic shard transitions of a small text house (the fields
    :func:`~smcplan.train.world_model.world_model_examples` reads), from ``seed`` only."""
    rng = random.Random(seed)
    out = []
    for e in range(episodes):
        rooms = rng.sample(ROOMS, 4)
        goal = rng.choice(THINGS)
        facts = [[rooms[i], f"{rng.choice(DIRECTIONS)} of", rooms[i + 1]] for i in range(3)]
        here = rooms[0]

        def look(room: str) -> str:
            box, thing = rng.choice(CONTAINERS), rng.choice(THINGS)
            exits = ", ".join(rng.sample(DIRECTIONS, 2))
            return (
                f"You are in the {room}. You see a {box}; in the {box} is a {thing}. "
                f"Exits: {exits}."
            )

        observation = look(here)
        for t in range(steps):
            kind = rng.randrange(3)
            if kind == 0:
                here = rng.choice([r for r in rooms if r != here])
                action, nxt = f"move {rng.choice(DIRECTIONS)}", look(here)
            elif kind == 1:
                box = rng.choice(CONTAINERS)
                action = f"open {box}"
                nxt = f"You open the {box}. Inside is a {rng.choice(THINGS)}."
            else:
                thing = rng.choice(THINGS)
                action = f"take {thing}"
                nxt = (
                    f"You take the {thing}."
                    if thing == goal or rng.random() < 0.5
                    else f"There is no {thing} here."
                )
            out.append(
                {
                    "episode": f"ep{e}",
                    "t": t,
                    "task": f"find the {goal}",
                    "facts": facts,
                    "observation": observation,
                    "action": action,
                    "next_observation": nxt,
                }
            )
            observation = nxt
    return out


def examples(n: int, seed: int) -> list[dict]:
    """``n`` world-model SFT examples (depths 0 and 1, as ``smcplan train world-model``)."""
    from smcplan.train.world_model import world_model_examples

    rows = world_model_examples(transitions(max(1, n // 7 + 1), 4, seed), depths=(0, 1))
    if len(rows) < n:
        raise SystemExit(f"built {len(rows)} examples, fewer than --examples {n}")
    return [{"prompt": r["prompt"], "completion": r["completion"]} for r in rows[:n]]


# ---------------------------------------------------------------- the measuring callback


def _plain(value):
    """JSON for config values: sets sorted (their order is arbitrary), the rest as text."""
    return sorted(value) if isinstance(value, (set, frozenset)) else str(value)


def _meter():
    from transformers import TrainerCallback

    class Meter(TrainerCallback):
        """Timestamps of the training steps, the logged losses/tokens, the effective configs."""

        def __init__(self) -> None:
            self.begin = self.cpu_begin = None
            self.ends: list[float] = []
            self.cpu_ends: list[float] = []
            self.logs: list[dict] = []
            self.args: dict = {}
            self.peft: dict = {}
            self.counter: CompletionTokens | None = None

        def on_train_begin(self, args, state, control, model=None, train_dataloader=None, **kw):
            self.args = args.to_dict()
            if train_dataloader is not None:  # count the loss tokens of the batches it builds
                # accelerate's DataLoaderShard iterates the DataLoader it wraps
                loader = getattr(train_dataloader, "base_dataloader", train_dataloader)
                self.counter = CompletionTokens(loader.collate_fn)
                loader.collate_fn = train_dataloader.collate_fn = self.counter
            config = getattr(model, "peft_config", {}).get("default")
            if config is not None:
                self.peft = json.loads(json.dumps(config.to_dict(), default=_plain))
            self.begin, self.cpu_begin = time.perf_counter(), time.process_time()

        def on_step_end(self, args, state, control, **kw):
            self.ends.append(time.perf_counter())
            self.cpu_ends.append(time.process_time())

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "loss" in logs:
                self.logs.append({"step": state.global_step, **logs})

    return Meter()


class CompletionTokens:
    """Counts the loss (completion) tokens of every micro-batch the collator builds."""

    def __init__(self, collator) -> None:
        self.collator, self.per_batch = collator, []

    def __call__(self, features):
        batch = self.collator(features)
        labels = batch.get("labels")
        if labels is not None:
            self.per_batch.append(int((labels != -100).sum()))
        return batch


# ---------------------------------------------------------------- one run (in its own process)


def model_path(name: str) -> str:
    if name == "tiny":
        from smcplan.llm.testing import tiny_model_path

        return str(tiny_model_path())
    try:
        from smcplan.llm.registry import resolve  # the folder load_model() would load
    except ImportError:  # the module moved: ask load_model() which folder it loaded
        from smcplan.llm import load_model

        return load_model(None if name == "smollm2" else name).model.name_or_path
    return resolve(None if name == "smollm2" else name).path


def run_smcplan(spec: dict, path: str, out: str, meter) -> None:
    from smcplan.llm.finetune import LoraSettings, SFTSettings, sft_dataset, train_sft

    settings = SFTSettings(
        learning_rate=spec["lr"],
        scheduler="cosine",
        weight_decay=spec["weight_decay"],
        max_steps=spec["steps"],
        batch_size=spec["batch_size"],
        grad_accum=spec["grad_accum"],
        max_length=spec["max_length"],
        seed=spec["seed"],
        threads=spec["threads"],
        progress=False,
        save_steps=max(spec["steps"], 1),
    )
    lora = LoraSettings(
        r=spec["lora_r"],
        alpha=spec["lora_alpha"],
        dropout=spec["dropout"],
        target_modules=tuple(spec["targets"]),
    )
    train_sft(
        path,
        sft_dataset(examples(spec["examples"], spec["seed"])),
        out,
        settings,
        lora=lora,
        callbacks=[meter],
    )


def run_trl(spec: dict, path: str, out: str, meter, defaults: bool = False) -> None:
    """The reference: a plain TRL + PEFT script with the same values."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig, SFTTrainer

    torch.set_num_threads(spec["threads"])
    set_seed(spec["seed"])
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    data = Dataset.from_list(
        [
            {
                "prompt": ex["prompt"],
                "completion": [{"role": "assistant", "content": ex["completion"]}],
            }
            for ex in examples(spec["examples"], spec["seed"])
        ]
    )
    # TRL's defaults (bf16 and gradient checkpointing on) refuse to start on a machine without
    # a GPU ("Your setup doesn't support bf16/gpu") unless use_cpu is set: trl-defaults sets it
    extra = {"use_cpu": True} if defaults else {"bf16": False, "gradient_checkpointing": False}
    config = SFTConfig(
        output_dir=out,
        learning_rate=spec["lr"],
        lr_scheduler_type="cosine",
        weight_decay=spec["weight_decay"],
        max_steps=spec["steps"],
        per_device_train_batch_size=spec["batch_size"],
        gradient_accumulation_steps=spec["grad_accum"],
        max_length=spec["max_length"],
        seed=spec["seed"],
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        **extra,
    )
    peft = LoraConfig(
        r=spec["lora_r"],
        lora_alpha=spec["lora_alpha"],
        lora_dropout=spec["dropout"],
        target_modules=list(spec["targets"]),
        bias="none",
        task_type="CAUSAL_LM",
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=data,
        processing_class=tokenizer,
        peft_config=peft,
        callbacks=[meter],
    )
    trainer.train()


def worker(which: str, spec: dict, result_file: str) -> None:
    from transformers.utils import logging

    logging.set_verbosity_error()
    path = model_path(spec["model"])
    meter = _meter()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"train_throughput-{which}-") as out:
        if which == "smcplan":
            run_smcplan(spec, path, out, meter)
        else:
            run_trl(spec, path, out, meter, defaults=which == "trl-defaults")
    whole = time.perf_counter() - t0
    logs = meter.logs
    tokens = [int(x["num_tokens"]) for x in logs if "num_tokens" in x]
    per_step = [b - a for a, b in zip([0, *tokens[:-1]], tokens)]
    wall = meter.ends[-1] - meter.begin
    cpu = meter.cpu_ends[-1] - meter.cpu_begin
    steady_wall = meter.ends[-1] - meter.ends[0] if len(meter.ends) > 1 else None
    steady_tokens = sum(per_step[1:]) if len(per_step) > 1 else None
    step_wall = [b - a for a, b in zip([meter.begin, *meter.ends[:-1]], meter.ends)]
    rates = [n / w for n, w in zip(per_step[1:], step_wall[1:]) if w > 0]
    record = {
        "run": which,
        "steps": len(meter.ends),
        "tokens": tokens[-1] if tokens else None,
        "tokens_per_step": per_step,
        "completion_tokens": sum(meter.counter.per_batch) if meter.counter else None,
        "steps_wall_s": wall,
        "steps_cpu_s": cpu,
        "step_wall_s": step_wall,
        # the median over steps 2.. of each step's tokens / wall: robust to other jobs' bursts
        "tokens_per_s_median_step": statistics.median(rates) if rates else None,
        "tokens_per_s": tokens[-1] / wall if tokens else None,
        "tokens_per_s_after_first_step": (
            steady_tokens / steady_wall if steady_wall and steady_tokens else None
        ),
        "whole_call_wall_s": whole,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "losses": [float(x["loss"]) for x in logs],
        "final_loss": float(logs[-1]["loss"]) if logs else None,
        "args": meter.args,
        "peft": meter.peft,
    }
    Path(result_file).write_text(json.dumps(record, default=str))


# ---------------------------------------------------------------- the comparison


def spawn(which: str, spec: dict, verbose: bool = False) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        result = handle.name
    try:
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            which,
            "--spec",
            json.dumps(spec),
            "--result",
            result,
        ]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if done.returncode != 0 or verbose:
            print(done.stdout, end="")
        if done.returncode != 0:
            raise SystemExit(f"the {which} run failed (exit status {done.returncode})")
        return json.loads(Path(result).read_text())
    finally:
        os.unlink(result)


def config_diff(a: dict, b: dict, ignore: set[str] = frozenset()) -> dict:
    keys = sorted((set(a) | set(b)) - ignore)
    return {k: [a.get(k), b.get(k)] for k in keys if a.get(k) != b.get(k)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny", help="tiny (default), smollm2, or a folder")
    parser.add_argument("--runs", nargs="+", choices=RUNS, default=["smcplan", "trl"])
    parser.add_argument("--examples", type=int, default=32)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--grad-accum", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--lora-r", type=int, default=16)
    parser.add_argument("--lora-alpha", type=int, default=32)
    parser.add_argument("--dropout", type=float, default=0.05)
    parser.add_argument("--targets", nargs="+", default=["q_proj", "k_proj", "v_proj", "o_proj"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: 1 for tiny, 2 otherwise)"
    )
    parser.add_argument("--repeats", type=int, default=1, help="alternating runs of each")
    parser.add_argument(
        "--loss-tolerance",
        type=float,
        default=1e-3,
        help="relative |final loss difference| that still counts as agreeing",
    )
    parser.add_argument("--verbose", action="store_true", help="show the runs' own output")
    parser.add_argument("--worker", choices=RUNS, help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, json.loads(args.spec), args.result)
        return 0
    threads = args.threads or (1 if args.model == "tiny" else 2)
    spec = {
        "model": args.model,
        "examples": args.examples,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "grad_accum": args.grad_accum,
        "max_length": args.max_length,
        "lr": args.lr,
        "weight_decay": args.weight_decay,
        "lora_r": args.lora_r,
        "lora_alpha": args.lora_alpha,
        "dropout": args.dropout,
        "targets": args.targets,
        "seed": args.seed,
        "threads": threads,
    }
    print("config:", json.dumps(spec), flush=True)
    load0 = os.getloadavg()
    records: dict[str, list[dict]] = {r: [] for r in args.runs}
    for _ in range(args.repeats):
        for which in args.runs:
            print(f"--- {which}", flush=True)
            records[which].append(spawn(which, spec, args.verbose))
    load1 = os.getloadavg()

    def med(which: str, key: str):
        values = [r[key] for r in records[which] if r[key] is not None]
        return statistics.median(values) if values else None

    ref = "trl" if "trl" in records else args.runs[-1]
    summary = {}
    for which in args.runs:
        first = records[which][0]
        summary[which] = {
            "steps": first["steps"],
            "tokens": first["tokens"],
            "completion_tokens": first["completion_tokens"],
            **{
                k: med(which, k)
                for k in (
                    "steps_wall_s",
                    "steps_cpu_s",
                    "tokens_per_s",
                    "tokens_per_s_after_first_step",
                    "tokens_per_s_median_step",
                    "whole_call_wall_s",
                    "peak_rss_mib",
                )
            },
            "final_loss": first["final_loss"],
            "losses": first["losses"],
        }
    rows = []
    for which, s in summary.items():
        speed = s["tokens_per_s"] / summary[ref]["tokens_per_s"]
        rows.append(
            [
                which,
                s["steps"],
                s["tokens"],
                s["completion_tokens"],
                f"{s['steps_wall_s']:.2f}",
                f"{s['steps_cpu_s']:.2f}",
                f"{s['tokens_per_s']:.0f}",
                f"{s['tokens_per_s_median_step'] or float('nan'):.0f}",
                f"{s['tokens'] / s['steps_cpu_s']:.0f}",
                f"{speed:.2f}",
                f"{s['peak_rss_mib']:.0f}",
                f"{s['final_loss']:.4f}",
            ]
        )
    print()
    print_table(
        [
            "run",
            "steps",
            "tokens",
            "loss tok",
            "steps wall s",
            "CPU s",
            "tok/s",
            "tok/s median step",
            "tok/CPU-s",
            f"x {ref}",
            "peak RSS MiB",
            "final loss",
        ],
        rows,
    )
    comparisons = {}
    for which in args.runs:
        if which == ref:
            continue
        a, b = records[which][0], records[ref][0]
        fa, fb = a["final_loss"], b["final_loss"]
        rel = abs(fa - fb) / max(abs(fb), 1e-12)
        per_step = max((abs(x - y) for x, y in zip(a["losses"], b["losses"])), default=None)
        comparisons[which] = {
            "against": ref,
            "final_loss_rel_diff": rel,
            "max_step_loss_abs_diff": per_step,
            "losses_agree": rel <= args.loss_tolerance,
            "same_tokens_per_step": a["tokens_per_step"] == b["tokens_per_step"],
            "args_diff": config_diff(a["args"], b["args"], IGNORED_ARGS),
            "args_diff_bookkeeping": {
                k: v
                for k, v in config_diff(a["args"], b["args"]).items()
                if k in IGNORED_ARGS and k not in ("output_dir", "logging_dir", "run_name")
            },
            "peft_diff": config_diff(a["peft"], b["peft"]),
        }
        c = comparisons[which]
        print(
            f"\n{which} vs {ref}: final loss {fa:.6f} vs {fb:.6f} (relative difference "
            f"{rel:.2e}: {'agree' if c['losses_agree'] else 'DIFFER'}; largest per-step "
            f"|diff| {per_step:.2e}); same tokens per step: {c['same_tokens_per_step']}"
        )
        print(
            "  training config fields that differ ("
            f"{which} / {ref}): {json.dumps(c['args_diff']) if c['args_diff'] else 'none'}"
        )
        print(f"  checkpointing/CLI fields that differ: {json.dumps(c['args_diff_bookkeeping'])}")
        peft = json.dumps(c["peft_diff"]) if c["peft_diff"] else "none"
        print(f"  LoRA config fields that differ: {peft}")
        for key in c["args_diff"]:
            if key in NOTES:
                print(f"    {key}: {NOTES[key]}")
    print(
        f"\nload average before/after: {load0[0]:.2f} / {load1[0]:.2f} "
        f"(2-core machine: other jobs inflate wall time; CPU s is less affected)"
    )
    name = (
        "train_throughput" if args.model == "tiny" else f"train_throughput_{Path(args.model).name}"
    )
    path = write_json(
        name,
        {
            "config": spec,
            "tokens_counted": "non-pad input tokens (prompt + completion) of every micro-batch "
            "(attention_mask sum, TRL's num_tokens); loss tokens = completion tokens (labels "
            "!= -100)",
            "timing": "on_train_begin to the last on_step_end: training steps only",
            "summary": summary,
            "comparisons": comparisons,
            "runs": records,
            "loadavg_before_after": [load0, load1],
        },
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
