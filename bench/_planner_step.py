"""``bench/agent_step.py --planner``: a planner step's processed tokens per second against the
machine's fp32 matmul rate, measured in the same run (see agent_step.py's docstring)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

from _common import print_table, write_json

MATMUL_N = 1024


def matmul_rate(threads: int, repeats: int) -> dict[str, float]:
    """GFLOP/s of ``torch.matmul`` of two fp32 ``MATMUL_N`` x ``MATMUL_N`` matrices (2 n^3 FLOP)
    with ``threads`` intra-op threads: the median wall time of ``repeats`` after 2 warm-ups."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        a = torch.randn(MATMUL_N, MATMUL_N, generator=gen)
        b = torch.randn(MATMUL_N, MATMUL_N, generator=gen)
        for _ in range(2):
            torch.matmul(a, b)
        walls, cpus = [], []
        for _ in range(repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            torch.matmul(a, b)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
    finally:
        torch.set_num_threads(before)
    flop = 2.0 * MATMUL_N**3
    wall = statistics.median(walls)
    return {
        "threads": threads,
        "seconds": wall,
        "gflops": flop / wall / 1e9,
        "best_gflops": flop / min(walls) / 1e9,
        "cpu_seconds": statistics.median(cpus),
    }


class _ForwardCounter:
    """Per model forward: prompt passes (``logits_to_keep=1``: unmasked input tokens) and
    decoding passes (one token per row), and the FLOPs the batch computed (padding and finished
    rows included): 2 x (non-embedding parameters) per input position, 2 x vocab x width per
    logits row, 4 x layers x (heads x head_dim) per (query, key column) pair."""

    def __init__(self, model) -> None:
        cfg = model.config
        self.layers = cfg.num_hidden_layers
        self.attn_width = cfg.num_attention_heads * getattr(
            cfg, "head_dim", cfg.hidden_size // cfg.num_attention_heads
        )
        embed = model.get_input_embeddings().weight.numel()
        head = 0 if getattr(cfg, "tie_word_embeddings", False) else embed
        self.linear = sum(p.numel() for p in model.parameters()) - embed - head
        self.vocab_width = cfg.vocab_size * cfg.hidden_size
        self.reset()
        self._handle = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def reset(self) -> None:
        self.prefill_tokens = self.prefill_passes = 0
        self.decode_passes = self.decode_rows = 0
        self.flop = 0.0

    def _hook(self, module, args, kwargs) -> None:
        ids, mask = kwargs.get("input_ids"), kwargs.get("attention_mask")
        if ids is None or mask is None:
            return
        rows, width = ids.shape
        keys = mask.shape[1]
        logits_rows = rows * (1 if kwargs.get("logits_to_keep") == 1 else width)
        self.flop += 2.0 * rows * width * self.linear + 2.0 * logits_rows * self.vocab_width
        self.flop += 4.0 * self.layers * self.attn_width * rows * width * keys
        if kwargs.get("logits_to_keep") == 1:
            self.prefill_passes += 1
            self.prefill_tokens += int(mask[:, -width:].sum())
        else:
            self.decode_passes += 1
            self.decode_rows += rows

    def close(self) -> None:
        self._handle.remove()


def _timed(lm, log: list[float]) -> None:
    """Wrap ``lm.sample`` so that each call's wall seconds are appended to ``log``."""
    inner = lm.sample

    def sample(*a, **k):
        t0 = time.perf_counter()
        try:
            return inner(*a, **k)
        finally:
            log.append(time.perf_counter() - t0)

    lm.sample = sample


def _env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    from smcplan.cli import parse_kv

    return parse_kv(getattr(args, "env_arg", None))


def _planner_steps(args: argparse.Namespace, seed: int, rates: dict[int, float]) -> list[dict]:
    import smcplan
    from smcplan.envs import make as make_env
    from smcplan.games import DEFAULT_WORLD_MODEL
    from smcplan.planning.learned import learned_lm
    from smcplan.planning.seen import Seen

    t0 = time.perf_counter()
    world_model = args.world_model or DEFAULT_WORLD_MODEL
    lm = learned_lm(world_model)  # the object plan() loads for world_model_path= (cached)
    load_s = time.perf_counter() - t0
    lm.threads = args.threads
    params = sum(p.numel() for p in lm.model.parameters())
    counter = _ForwardCounter(lm.model)
    sample_s: list[float] = []
    _timed(lm, sample_s)
    env = make_env(args.env, **_env_kwargs(args))
    options = {"world_model_path": world_model} if args.world_model else {}
    if args.progress:
        options["progress"] = args.progress
    steps: list[dict[str, Any]] = []
    try:
        obs, info = env.reset(seed)
        seen = Seen().after(obs, None, info, args.env)
        for t in range(args.steps):
            actions = list(info["admissible_actions"])
            before = lm.usage.as_dict()
            counter.reset()
            sample_s.clear()
            w0, c0 = time.perf_counter(), time.process_time()
            result = smcplan.plan(
                env.task,
                None,
                actions,
                observation=obs,
                seen=seen,
                env_kind=args.env,
                key=t,
                **options,
            )
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            after = lm.usage.as_dict()
            prefilled = (after["prompt_tokens"] - before["prompt_tokens"]) - (
                after["cached_tokens"] - before["cached_tokens"]
            )
            decoded = after["generated_tokens"] - before["generated_tokens"]
            tokens = prefilled + decoded
            rate = rates[args.threads]
            step = {
                "t": t,
                "actions": len(actions),
                "particles": result.num_particles,
                "action": result.action,
                "wall_s": wall,
                "cpu_s": cpu,
                "model_calls": len(sample_s),
                "model_wall_s": sum(sample_s),
                "prompt_tokens": after["prompt_tokens"] - before["prompt_tokens"],
                "cached_tokens": after["cached_tokens"] - before["cached_tokens"],
                "prefilled_tokens": prefilled,
                "decoded_tokens": decoded,
                "prefill_passes": counter.prefill_passes,
                "prefill_tokens_run": counter.prefill_tokens,
                "decode_passes": counter.decode_passes,
                "decode_rows_run": counter.decode_rows,
                "tokens_per_s": tokens / wall,
                "gflops": tokens * 2.0 * params / wall / 1e9,
                "computed_gflop": counter.flop / 1e9,
                "computed_gflops": counter.flop / wall / 1e9,
            }
            step["fraction_of_matmul"] = step["gflops"] / rate
            step["computed_fraction_of_matmul"] = step["computed_gflops"] / rate
            steps.append(step)
            print(
                f"[{t}] |A| = {len(actions)}: {wall:.2f} s ({sum(sample_s):.2f} s in the model), "
                f"{prefilled} prefilled + {decoded} decoded tokens = {tokens / wall:.0f} tok/s, "
                f"{step['gflops']:.2f} GFLOP/s = {100 * step['fraction_of_matmul']:.1f} % of "
                f"matmul; > {result.action}",
                flush=True,
            )
            obs, _reward, done, info = env.step(result.action)
            seen = seen.after(obs, result.action, info, args.env)
            if done:
                break
    finally:
        env.close()
        counter.close()
        lm.__dict__.pop("sample", None)  # the class's method again
    for s in steps:
        s["model_load_s"] = load_s
        s["parameters"] = params
    return steps


def _react_steps(args: argparse.Namespace, seed: int) -> list[dict[str, Any]]:
    from smcplan.agents import make
    from smcplan.envs import make as make_env
    from smcplan.llm import load_model

    lm = load_model(args.model, threads=args.threads, seed=args.model_seed)
    agent = make("react", lm=lm, seed=args.agent_seed)
    env = make_env(args.env, **_env_kwargs(args))
    out = []
    try:
        obs, info = env.reset(seed)
        actions = list(info["admissible_actions"])
        agent.reset(env.task, obs, actions)
        for t in range(args.react_steps):
            before = lm.usage.as_dict()
            w0, c0 = time.perf_counter(), time.process_time()
            step = agent.act(obs, actions, info)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            after = lm.usage.as_dict()
            out.append(
                {
                    "t": t,
                    "actions": len(actions),
                    "wall_s": wall,
                    "cpu_s": cpu,
                    **{k: after[k] - before[k] for k in after},
                }
            )
            obs, _reward, done, info = env.step(step.action)
            if done:
                break
            actions = list(info["admissible_actions"])
    finally:
        env.close()
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _summary(steps: list[dict[str, Any]]) -> dict[str, float]:
    """Steps pooled: tokens and FLOPs over the summed wall seconds."""
    wall = sum(s["wall_s"] for s in steps)
    tokens = sum(s["prefilled_tokens"] + s["decoded_tokens"] for s in steps)
    if not steps or wall <= 0:
        return {"steps": len(steps)}
    gflops = tokens * 2.0 * steps[0]["parameters"] / wall / 1e9
    return {
        "steps": len(steps),
        "wall_s_per_step": wall / len(steps),
        "model_share": sum(s["model_wall_s"] for s in steps) / wall,
        "tokens_per_s": tokens / wall,
        "gflops": gflops,
        "computed_gflops": sum(s["computed_gflop"] for s in steps) / wall,
    }


def planner_main(args: argparse.Namespace) -> None:
    import torch

    name = "agent_step_planner" if args.name == "agent_step" else args.name
    load_start = list(os.getloadavg())
    thread_counts = sorted({1, args.threads})
    start = {n: matmul_rate(n, args.matmul_repeats) for n in thread_counts}
    steps = _planner_steps(args, args.seeds[0], {n: r["gflops"] for n, r in start.items()})
    react = _react_steps(args, args.seeds[0]) if args.react_steps > 0 else []
    end = {n: matmul_rate(n, args.matmul_repeats) for n in thread_counts}
    rate = (start[args.threads]["gflops"] + end[args.threads]["gflops"]) / 2
    load_s = None
    for s in steps:  # against the mean of the two measurements
        s["fraction_of_matmul"] = s["gflops"] / rate
        s["computed_fraction_of_matmul"] = s["computed_gflops"] / rate
        load_s = s.pop("model_load_s")
    summary = {
        "flop_per_token": 2.0 * steps[0]["parameters"] if steps else None,
        "matmul_gflops": rate,
        "all_steps": _summary(steps),
        # the first plan() also builds the planner and compiles its JAX kernels
        "after_first": _summary(steps[1:]),
        "react_wall_s_per_step": _mean([r["wall_s"] for r in react]),
    }
    result = {
        "mode": "planner",
        "env": args.env,
        "seed": args.seeds[0],
        "env_args": _env_kwargs(args),
        "world_model": args.world_model,
        "progress": args.progress,
        "threads": args.threads,
        "torch_threads_default": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "load_average_start": load_start,
        "command": " ".join(["python", "bench/agent_step.py", *sys.argv[1:]]),
        "matmul": {"n": MATMUL_N, "start": start, "end": end},
        "summary": summary,
        "planner_steps": steps,
        "react_steps": react,
    }
    print(
        f"\nfp32 matmul {MATMUL_N}x{MATMUL_N}, GFLOP/s (start / end): "
        + ", ".join(
            f"{n} thread(s) {start[n]['gflops']:.1f} / {end[n]['gflops']:.1f}"
            for n in thread_counts
        )
    )
    print(f"{args.env} seed {args.seeds[0]}, plan() text defaults, {args.threads} thread(s):")
    print_table(
        ["step", "|A|", "wall s", "model s", "prefilled", "decoded", "tok/s", "GFLOP/s (2N)",
         "% matmul", "computed GFLOP/s", "% matmul (computed)"],
        [
            [s["t"], s["actions"], f"{s['wall_s']:.2f}", f"{s['model_wall_s']:.2f}",
             s["prefilled_tokens"], s["decoded_tokens"], f"{s['tokens_per_s']:.0f}",
             f"{s['gflops']:.2f}", f"{100 * s['fraction_of_matmul']:.1f}",
             f"{s['computed_gflops']:.2f}", f"{100 * s['computed_fraction_of_matmul']:.1f}"]
            for s in steps
        ],
    )  # fmt: skip
    for label in ("all_steps", "after_first"):
        pooled = summary[label]
        if pooled.get("wall_s_per_step") is None:
            continue
        for key in ("gflops", "computed_gflops"):
            pooled[key.replace("gflops", "fraction_of_matmul")] = pooled[key] / rate
        print(
            f"{label.replace('_', ' ')} ({pooled['steps']}): {pooled['wall_s_per_step']:.2f} s "
            f"per step, {100 * pooled['model_share']:.0f} % in the model, "
            f"{pooled['tokens_per_s']:.0f} tokens/s = {pooled['gflops']:.1f} GFLOP/s at 2N = "
            f"{100 * pooled['fraction_of_matmul']:.1f} % of the {rate:.1f} GFLOP/s matmul "
            f"({100 * pooled['computed_fraction_of_matmul']:.1f} % counting what the batch "
            "computed)"
        )
    if react:
        print(
            f"ReAct (SmolLM2, same seed and threads): {summary['react_wall_s_per_step']:.2f} s "
            f"per step over {len(react)} steps"
        )
    result["world_model_load_s"] = load_s
    result["load_average_end"] = list(os.getloadavg())
    print("wrote", write_json(name, result))
