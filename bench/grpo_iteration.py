"""The cost of one GRPO-MR iteration: today's LoRA recipe against the policy heads, same run.

    .venv/bin/python bench/grpo_iteration.py                          # tiny random-weight model
    .venv/bin/python bench/grpo_iteration.py --model smollm2 --group-size 2 --max-steps 5

Issue 54's unit is one iteration of G = 8 episodes x 25 steps on 2 cores (target: <= 10 min).
Both paths play the same budget on the same task: ``--group-size`` episodes of at most
``--max-steps`` steps of ``--env`` (default ``twx:coin``, split ``dev``, task seed
``--task-seed`` 10000), run seed ``--seed``, ``--model`` (``tiny``: the random-weight test
model; ``smollm2``: the packaged SmolLM2-135M-Instruct; or a folder) on ``--threads`` torch
threads, each with its trainer's default update settings:

* ``lora`` (today's path, ``smcplan train grpo-mr``, :mod:`smcplan.train.grpo_mr`): the model
  loaded as ``train_grpo_mr`` loads it (prefix cache on) and its policy
  ``grpo_mr._policy`` (a fresh LoRA, the base model the KL reference; ``--adapter``: a
  cold-start adapter, trained and frozen as the reference); **rollouts** =
  ``grpo_mr._play_group`` (the RLVMR agent writing ``<tag>...</tag><action>...</action>`` at
  temperature 1, three LM calls a step); **update** = ``grpo_mr._update_group`` (the GRPO-MR
  advantages, then ``PolicyOptimizer.update``: the clipped, KL-regularised objective,
  backpropagated through PEFT LoRA: ``epochs`` 1, minibatches of 8 answers).  The loop of
  ``train_grpo_mr`` is these two calls per task seed; no seam runs a whole iteration alone.
* ``head`` (the CPU-sized path, ``smcplan train grpo-mr-head``,
  :mod:`smcplan.train.grpo_mr_head`): features as ``train_grpo_mr_head`` builds them
  (``load_model(prefix_cache=False)``, an empty ``FeatureCache``, ``LMFeatures``), the start
  from ``grpo_mr_head._start`` (no cold-start data: the uniform head, standardised on iteration
  0's candidates; ``--init-head``: a saved head), then one call of ``grpo_mr_head._iteration``,
  the trainer's own iteration.  Its **rollouts** are the time inside its ``play_episode`` calls
  (wrapped for timing, nothing else changed: the frozen model's hidden state per (tag, action)
  candidate through the cache, a linear-softmax draw, the env step); its **update** is the rest
  of ``_iteration`` (the GRPO-MR advantages, the batch, ``policy_update``: 10 exact NumPy
  gradient steps of the clipped, KL-regularised objective on the head).  ``--head-notes``:
  with map notes (the shipped head's recipe).
* ``head_task`` (``grpo-mr-head --opt context=task --opt map_notes=true``): the same trainer
  and iteration, each candidate's text its tag, action and map note after the task alone, so
  its features repeat across states and episodes (``--init-head-task``: a saved head made so).

Each path runs in its own process (so its peak RSS, ``resource.getrusage`` with the model load
included, is its own), one after the other.  Measured per phase: wall seconds
(``time.perf_counter``) and CPU seconds (``time.process_time``: all threads of the process,
less inflated by other jobs on a shared machine); per environment step for the rollouts (and
the median of the single steps, from a clock read after every ``env.step``), per step in the
batch for the update.  Model load and set-up are timed apart and excluded.  The head path also
reports its feature cache's hits and misses over the iteration (the G episodes start from the
same state, so they share its candidates' features; the cache starts empty here, as in
iteration 0 of a run without a cold start).  No warm-up: each phase runs once, as in a run's
first iteration (prefix and feature caches empty, the optimizer's first step).

**The iteration estimate is an extrapolation, not a measurement**: each phase's mean cost per
step times ``--target-group`` x ``--target-steps`` (8 x 25 = 200 steps).  It is linear in
steps, so it leaves out what does not scale so: the LoRA prompts carry the history and grow
with the episode (longer episodes cost more per step than the first ``--max-steps``), while a
group of 8 shares more first states in the head's cache than a group of 2 (fewer misses per
step).  Writes ``bench/results/grpo_iteration.json`` for the tiny model
(``grpo_iteration_<model>.json`` for another, so ``make bench`` does not overwrite it;
``--out`` writes elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
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

from _common import machine, print_table, write_json  # noqa: E402

PATHS = ("lora", "head", "head_task")
LABELS = {
    "lora": "LoRA, smcplan train grpo-mr",
    "head": "policy head, grpo-mr-head",
    "head_task": "policy head, grpo-mr-head --opt context=task --opt map_notes=true",
}


# ---------------------------------------------------------------- clocks


class Clock:
    """Wall and CPU seconds accumulated over the ``with`` blocks it times."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> Clock:
        self._w, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c


class TimedEnv:
    """The env, with a wall/CPU clock read after every ``reset`` and ``step``: a step's cost
    is the time from the previous read (the agent's decision and the env's step)."""

    def __init__(self, env) -> None:
        self._env, self.marks = env, []  # (kind, wall, cpu)

    def _mark(self, kind: str) -> None:
        self.marks.append((kind, time.perf_counter(), time.process_time()))

    def reset(self, *args, **kwargs):
        out = self._env.reset(*args, **kwargs)
        self._mark("reset")
        return out

    def step(self, *args, **kwargs):
        out = self._env.step(*args, **kwargs)
        self._mark("step")
        return out

    def step_seconds(self) -> tuple[list[float], list[float]]:
        """Wall and CPU seconds of each step (from the previous reset or step)."""
        walls, cpus = [], []
        for (_, w0, c0), (kind, w1, c1) in zip(self.marks, self.marks[1:]):
            if kind == "step":
                walls.append(w1 - w0)
                cpus.append(c1 - c0)
        return walls, cpus

    def __getattr__(self, name):
        return getattr(self._env, name)


def model_arg(name: str) -> str | None:
    """``load_model``'s argument for ``--model``: the tiny model's folder, ``None`` (the
    packaged SmolLM2) or the name/folder as given."""
    if name == "tiny":
        from smcplan.llm.testing import tiny_model_path

        return str(tiny_model_path())
    return None if name == "smollm2" else name


def make_env(spec: dict) -> TimedEnv:
    from smcplan import envs

    return TimedEnv(envs.make(spec["env"], **({"split": spec["split"]} if spec["split"] else {})))


def phase(clock: Clock, steps: int) -> dict:
    return {
        "steps": steps,
        "wall_s": clock.wall,
        "cpu_s": clock.cpu,
        "wall_s_per_step": clock.wall / steps,
        "cpu_s_per_step": clock.cpu / steps,
    }


# ---------------------------------------------------------------- the two paths (one process each)


def run_lora(spec: dict, out: Path) -> dict:
    from smcplan.llm import load_model
    from smcplan.train import grpo_mr

    cfg = grpo_mr.GRPOMRConfig(
        out=out,
        env=spec["env"],
        seeds=(spec["task_seed"],),
        split=spec["split"],
        model=model_arg(spec["model"]),
        adapter=Path(spec["adapter"]) if spec["adapter"] else None,
        group_size=spec["group_size"],
        iterations=1,
        max_steps=spec["max_steps"],
        alpha=spec["alpha"],
        threads=spec["threads"],
        seed=spec["seed"],
    ).validated()
    setup = Clock()
    with setup:  # as train_grpo_mr loads them
        lm = load_model(cfg.model, threads=cfg.threads, seed=cfg.seed)
        policy = grpo_mr._policy(lm, cfg)
        env = make_env(spec)
    rollouts, update = Clock(), Clock()
    try:
        with rollouts:
            group = grpo_mr._play_group(env, lm, spec["task_seed"], cfg, 0)
        with update:
            flat, stats = grpo_mr._update_group(policy, group, cfg)
    finally:
        env.close()
    steps = sum(len(g["prompts"]) for g in group)
    prompts = [p for g in group for p in g["prompts"]]
    answers = [r for g in group for r in g["responses"]]
    return {
        "setup": {"wall_s": setup.wall, "cpu_s": setup.cpu},
        "rollouts": phase(rollouts, steps),
        "update": phase(update, len(flat)),
        "step_seconds": env.step_seconds(),
        "diagnostics": {
            "episodes": len(group),
            "won": sum(g["won"] for g in group),
            "tags": [t for g in group for t in g["tags"]],
            "advantage_abs_mean": sum(abs(a) for a in flat) / max(1, len(flat)),
            "prompt_tokens_mean": statistics.mean(len(lm.encode_prompt(p)) for p in prompts),
            "answer_tokens_mean": statistics.mean(
                len(lm.encode_continuation(a, add_eos=True)) for a in answers
            ),
            "update": stats.to_dict(),
            "reference": policy.reference,
        },
    }


def run_head(spec: dict, out: Path, task_context: bool = False) -> dict:
    from unittest import mock

    from smcplan.llm import load_model
    from smcplan.llm.roles.policy_head import FeatureCache, LMFeatures
    from smcplan.train import grpo_mr_head as trainer

    init = "init_head_task" if task_context else "init_head"
    cfg = trainer.HeadGRPOConfig(
        out=out,
        env=spec["env"],
        seeds=(spec["task_seed"],),
        split=spec["split"],
        model=model_arg(spec["model"]),
        init_head=(Path(spec[init]) if spec[init] else None),
        group_size=spec["group_size"],
        map_notes=task_context or bool(spec["head_notes"]),
        context="task" if task_context else "full",
        iterations=1,
        max_steps=spec["max_steps"],
        alpha=spec["alpha"],
        threads=spec["threads"],
        seed=spec["seed"],
    ).validated()
    setup = Clock()
    with setup:  # as train_grpo_mr_head builds them
        lm = load_model(cfg.model, threads=cfg.threads, seed=cfg.seed, prefix_cache=False)
        features = LMFeatures(lm, cfg.layers, FeatureCache(cfg.cache_entries), cfg.batch)
        ref, head, _ = trainer._start(cfg, out, features)
        env = make_env(spec)
    rollouts, whole, episodes = Clock(), Clock(), []
    play = trainer.play_episode

    def timed_play(*args, **kwargs):
        with rollouts:
            episode = play(*args, **kwargs)
        episodes.append(episode)
        return episode

    try:
        with mock.patch.object(trainer, "play_episode", timed_play), whole:
            _, _, metrics = trainer._iteration(cfg, 0, env, head, ref, features)
    finally:
        env.close()
    if len(episodes) != cfg.group_size:
        raise SystemExit(
            f"grpo_mr_head._iteration played {len(episodes)} episodes through play_episode, "
            f"expected {cfg.group_size}: the trainer no longer calls grpo_mr_head.play_episode; "
            "time its rollouts where it now plays them"
        )
    update = Clock()
    update.wall, update.cpu = whole.wall - rollouts.wall, whole.cpu - rollouts.cpu
    steps = sum(e["steps"] for e in episodes)
    candidates = [f.shape[0] for e in episodes for f in e["features"]]
    cache = features.cache
    return {
        "setup": {"wall_s": setup.wall, "cpu_s": setup.cpu},
        "rollouts": phase(rollouts, steps),
        "update": phase(update, metrics["steps"]),
        "step_seconds": env.step_seconds(),
        "feature_cache": {
            "hits": cache.hits,
            "misses": cache.misses,
            "hit_rate": cache.hits / max(1, cache.hits + cache.misses),
        },
        "diagnostics": {
            "episodes": len(episodes),
            "won": sum(e["won"] for e in episodes),
            "tags": [t for e in episodes for t in e["tags"]],
            "advantage_abs_mean": metrics["advantage_abs_mean"],
            "candidates_per_step_mean": statistics.mean(candidates),
            "feature_dim": int(features.dim),
            "layers": list(features.layers),
            "update": metrics["update"],
        },
    }


def worker(which: str, spec: dict, result_file: str) -> None:
    from transformers.utils import logging

    logging.set_verbosity_error()
    with tempfile.TemporaryDirectory(prefix=f"grpo_iteration-{which}-") as out:
        if which == "lora":
            record = run_lora(spec, Path(out))
        else:
            record = run_head(spec, Path(out), task_context=which == "head_task")
    walls, cpus = record.pop("step_seconds")
    record["rollouts"]["median_step_wall_s"] = statistics.median(walls) if walls else None
    record["rollouts"]["median_step_cpu_s"] = statistics.median(cpus) if cpus else None
    record["rollouts"]["step_wall_s"] = walls
    record["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(result_file).write_text(json.dumps({"path": which, **record}, default=str))


def spawn(which: str, spec: dict, verbose: bool = False) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        result = handle.name
    try:
        cmd = [sys.executable, __file__, "--worker", which, "--spec", json.dumps(spec)]
        done = subprocess.run(
            [*cmd, "--result", result], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        if done.returncode != 0 or verbose:
            print(done.stdout, end="")
        if done.returncode != 0:
            raise SystemExit(f"the {which} run failed (exit status {done.returncode})")
        return json.loads(Path(result).read_text())
    finally:
        os.unlink(result)


# ---------------------------------------------------------------- the comparison


def estimate(record: dict, steps: int) -> dict:
    """Mean cost per step of each phase times ``steps`` (the extrapolation of the docstring)."""
    r, u = record["rollouts"], record["update"]
    return {
        "rollouts_wall_s": r["wall_s_per_step"] * steps,
        "rollouts_cpu_s": r["cpu_s_per_step"] * steps,
        "update_wall_s": u["wall_s_per_step"] * steps,
        "update_cpu_s": u["cpu_s_per_step"] * steps,
        "iteration_wall_s": (r["wall_s_per_step"] + u["wall_s_per_step"]) * steps,
        "iteration_cpu_s": (r["cpu_s_per_step"] + u["cpu_s_per_step"]) * steps,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny", help="tiny (default), smollm2, or a folder")
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    parser.add_argument("--env", default="twx:coin")
    parser.add_argument("--split", default="dev", help="the env's split ('' for none)")
    parser.add_argument("--task-seed", type=int, default=10000)
    parser.add_argument("--group-size", type=int, default=2, help="episodes measured (G)")
    parser.add_argument("--max-steps", type=int, default=5, help="steps per episode at most")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each run")
    parser.add_argument("--alpha", type=float, default=0.5, help="GRPO-MR's mix (1: GRPO)")
    parser.add_argument("--seed", type=int, default=0, help="the runs' seed")
    parser.add_argument("--adapter", default=None, help="LoRA path: a cold-start adapter")
    parser.add_argument("--init-head", default=None, help="head path: a saved policy head")
    parser.add_argument("--head-notes", action="store_true", help="head path: with map notes")
    parser.add_argument(
        "--init-head-task", default=None, help="head_task path: a saved context=task head"
    )
    parser.add_argument("--target-group", type=int, default=8, help="G of the estimate")
    parser.add_argument("--target-steps", type=int, default=25, help="steps of the estimate")
    parser.add_argument("--out", default=None, help="write the JSON here, not bench/results/")
    parser.add_argument("--verbose", action="store_true", help="show the runs' own output")
    parser.add_argument("--worker", choices=PATHS, help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, json.loads(args.spec), args.result)
        return 0
    if args.group_size < 2 or args.max_steps < 1 or args.threads < 1:
        parser.error(
            f"--group-size {args.group_size} / --max-steps {args.max_steps} / --threads "
            f"{args.threads}: give a group of at least 2 (GRPO's), at least 1 step, 1 thread"
        )
    spec = {
        "model": args.model,
        "env": args.env,
        "split": args.split or None,
        "task_seed": args.task_seed,
        "group_size": args.group_size,
        "max_steps": args.max_steps,
        "threads": args.threads,
        "alpha": args.alpha,
        "seed": args.seed,
        "adapter": args.adapter,
        "init_head": args.init_head,
        "head_notes": args.head_notes,
        "init_head_task": args.init_head_task,
    }
    target = args.target_group * args.target_steps
    print("config:", json.dumps(spec), flush=True)
    load0 = os.getloadavg()
    records = {}
    for which in args.paths:
        print(f"--- {which}", flush=True)
        records[which] = spawn(which, spec, args.verbose)
        records[which]["estimate"] = estimate(records[which], target)
    load1 = os.getloadavg()

    rows = []
    for which, r in records.items():
        est = r["estimate"]
        for name in ("rollouts", "update"):
            p = r[name]
            rows.append(
                [
                    which,
                    name,
                    p["steps"],
                    f"{p['wall_s']:.3g}",
                    f"{p['cpu_s']:.3g}",
                    f"{p['wall_s_per_step']:.3g}",
                    f"{p['cpu_s_per_step']:.3g}",
                    f"{est[f'{name}_wall_s']:.3g}",
                    f"{est[f'{name}_cpu_s']:.3g}",
                ]
            )
        rows.append(
            [
                which,
                "iteration (est.)",
                "",
                "",
                "",
                "",
                "",
                f"{est['iteration_wall_s']:.3g}",
                f"{est['iteration_cpu_s']:.3g}",
            ]
        )
    unit = f"{args.target_group}x{args.target_steps}"
    print()
    print_table(
        [
            "path",
            "phase",
            "steps measured",
            "wall s",
            "CPU s",
            "wall s/step",
            "CPU s/step",
            f"{unit} wall s (est.)",
            f"{unit} CPU s (est.)",
        ],
        rows,
    )
    measured = {w: (r["rollouts"]["steps"], r["update"]["steps"]) for w, r in records.items()}
    note = (
        f"The {unit} = {target}-step iteration is an extrapolation, linear in steps, from the "
        "measured mean cost per step: "
        + "; ".join(f"{w}: {a} rollout steps, {b} update steps" for w, (a, b) in measured.items())
        + f" ({args.group_size} episodes of at most {args.max_steps} steps)."
    )
    print(f"\n{note}")
    for which, r in records.items():
        print(
            f"{which} ({LABELS[which]}): peak RSS {r['peak_rss_mib']:.0f} MiB; set-up (load, "
            f"not timed above) {r['setup']['wall_s']:.1f} s; median rollout step "
            f"{r['rollouts']['median_step_wall_s']:.3g} s wall"
        )
    for which in ("head", "head_task"):
        if which in records:
            c = records[which]["feature_cache"]
            print(
                f"{which} feature cache over the iteration: {c['hits']} hits, {c['misses']} "
                f"misses (hit rate {c['hit_rate']:.2f}; empty at the start)"
            )
    walls = {w: r["estimate"]["iteration_wall_s"] for w, r in records.items()}
    ratio = walls["lora"] / walls["head"] if {"lora", "head"} <= set(walls) else None
    ratios = {
        f"{a}_over_{b}": walls[a] / walls[b]
        for a, b in (("lora", "head"), ("lora", "head_task"), ("head", "head_task"))
        if a in walls and b in walls
    }
    for key, value in ratios.items():
        a, b = key.split("_over_")
        print(f"{a} / {b}, estimated iteration wall time: {value:.1f}x")
    for which, r in records.items():
        verdict = "meets" if r["estimate"]["iteration_wall_s"] <= 600 else "misses"
        print(
            f"{which} on {args.model}: {verdict} issue 54's target of <= 600 s per {unit} "
            "iteration (estimate)"
        )
    print(
        f"load average before/after: {load0[0]:.2f} / {load1[0]:.2f} (other jobs on the "
        "machine inflate wall time; CPU s is less affected)"
    )
    name = "grpo_iteration" if args.model == "tiny" else f"grpo_iteration_{Path(args.model).name}"
    payload = {
        "config": spec,
        "timing": "wall (perf_counter) and CPU (process_time, all threads) seconds of the "
        "rollouts (per environment step) and of the update (per step in the batch); model "
        "load and set-up excluded (reported as setup)",
        "extrapolation": {
            "note": note,
            "method": "linear: mean cost per step of each phase x target steps",
            "target_group": args.target_group,
            "target_steps": args.target_steps,
            "target_total_steps": target,
            "measured_steps": {w: {"rollouts": a, "update": b} for w, (a, b) in measured.items()},
        },
        "paths": records,
        "lora_over_head_iteration_wall": ratio,
        "iteration_wall_ratios": ratios,
        "loadavg_before_after": [load0, load1],
    }
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        full = {"benchmark": name, "machine": machine(), "unix_time": time.time(), **payload}
        path.write_text(json.dumps(full, indent=2))
    else:
        path = write_json(name, payload)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
