"""LLM layer on CPU: role throughput (fp32 vs NF4), load time, and KV-cached vs naive scoring.

    TORCH_COMPILE_DISABLE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \\
        .venv/bin/python bench/llm_roles.py [--batches 1 8 32] [--precisions fp32 nf4] [--roles ...]

Three parts, one run, written to bench/results/llm_roles.json:

1. load: the packaged SmolLM2 loaded in a fresh process with an empty cache (GGUF de-quantisation
   + save) against a second fresh process that finds the converted folder (time of the
   ``load_model`` call itself, imports excluded);
2. scoring: 16 admissible actions after a ~300-token prompt: ``logprob`` with prompt-KV reuse
   against the naive padded batch (one forward pass over prompt + action per row), in the same
   run, with the cost of one prompt pass for reference (targets: >= 6x faster than naive, <= 2x
   one prompt pass) and the largest score difference;
3. roles: calls/s and tokens/s of each role at each batch size and precision (each role called
   once to warm up, then timed over ``--repeats`` calls); "tokens" = prompt + generated + scored
   tokens the model processed (``LanguageModel.usage``), "gen tok/s" = generated tokens only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json  # noqa: E402

OBS = (
    "-= Kitchen =-\nYou are in a kitchen. A standard one. You see a closed fridge, an oven and a "
    "table. On the table you see a coin, an apple and a knife. There is an open wooden door "
    "leading "
    "north and a closed screen door leading west."
)
TASK = "Find the coin and put it in the box in the living room."
ADMISSIBLE = [
    "take coin from table",
    "take apple from table",
    "take knife from table",
    "open fridge",
    "open screen door",
    "go north",
    "go west",
    "examine table",
    "examine coin",
    "look",
    "inventory",
    "open oven",
    "close wooden door",
    "eat apple",
    "take coin",
    "wait",
]
LOAD_SNIPPET = (
    "import time; t = time.perf_counter(); from smcplan.llm import load_model; "
    "import torch, transformers; t0 = time.perf_counter(); load_model(); "
    "print(time.perf_counter() - t0)"
)


def bench_load() -> dict[str, float]:
    env = {
        **os.environ,
        "TORCH_COMPILE_DISABLE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    with tempfile.TemporaryDirectory() as cache:
        env["SMCPLAN_CACHE"] = cache
        out = {}
        for label in ("first_load_s", "cached_load_s"):
            res = subprocess.run(
                [sys.executable, "-c", LOAD_SNIPPET],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            out[label] = float(res.stdout.strip().splitlines()[-1])
    return out


def bench_scoring(lm, repeats: int) -> dict[str, float]:
    import numpy as np

    context = (
        " ".join([OBS] * 4)
        + f"\nTask: {TASK}\nAdmissible actions: {', '.join(ADMISSIBLE)}\nNext action?"
    )
    prompt_tokens = len(lm.encode_prompt(context))
    prompts = [context] * len(ADMISSIBLE)

    def timed(fn):
        fn()
        best = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            value = fn()
            best.append(time.perf_counter() - t0)
        return float(np.median(best)), value

    t_cached, cached = timed(lambda: lm.logprob(prompts, ADMISSIBLE, add_eos=True))
    t_naive, naive = timed(lambda: lm.logprob(prompts, ADMISSIBLE, add_eos=True, reuse_cache=False))
    t_prompt, _ = timed(lambda: lm.logprob([context], ["x"]))  # one token: the prompt pass only
    return {
        "prompt_tokens": prompt_tokens,
        "actions": len(ADMISSIBLE),
        "cached_s": t_cached,
        "naive_s": t_naive,
        "one_prompt_pass_s": t_prompt,
        "speedup_vs_naive": t_naive / t_cached,
        "cost_in_prompt_passes": t_cached / t_prompt,
        "max_abs_score_diff": float(np.max(np.abs(cached - naive))),
    }


def role_calls(lm, batch: int):
    from smcplan.llm.roles import (
        ActionProposal,
        Critic,
        ObservationModel,
        ProgressModel,
        Reflection,
        RLAWActor,
        TripletExtractor,
    )

    obs = [OBS] * batch
    tasks = [TASK] * batch
    adm = [ADMISSIBLE[:8]] * batch
    acts = ["take coin from table"] * batch
    roles = {
        "triplets": lambda s: TripletExtractor(lm)(obs, acts, seed=s),
        "proposal": lambda s: ActionProposal(lm)(
            tasks, [[("coin", "on", "table")]] * batch, obs, adm, seed=s
        ),
        "observation": lambda s: ObservationModel(lm, max_new_tokens=32)(obs, acts, seed=s),
        "progress": lambda s: ProgressModel(lm)(tasks, obs, acts, ["You take the coin."] * batch),
        "reflection": lambda s: Reflection(lm, n=5)(tasks, obs, acts, seed=s),
        "critic": lambda s: Critic(lm)(
            tasks, obs, ["The coin is on the table."] * batch, acts, seed=s
        ),
        "rlaw_actor": lambda s: RLAWActor(lm)(tasks, obs, adm, seed=s),
    }
    return roles


def bench_roles(
    lm, precision: str, batches: list[int], names: list[str], repeats: int, progress=None
) -> list[dict]:
    records = []
    for batch in batches:
        calls = role_calls(lm, batch)
        for name in names:
            calls[name](0)  # warm-up: compiles the role's token automaton once
            before = lm.usage.as_dict()
            t0 = time.perf_counter()
            for r in range(repeats):
                calls[name](r + 1)
            elapsed = time.perf_counter() - t0
            after = lm.usage.as_dict()
            gen = after["generated_tokens"] - before["generated_tokens"]
            total = gen + sum(after[k] - before[k] for k in ("prompt_tokens", "scored_tokens"))
            records.append(
                {
                    "precision": precision,
                    "batch": batch,
                    "role": name,
                    "seconds_per_call": elapsed / repeats,
                    "calls_per_s": repeats / elapsed,
                    "items_per_s": batch * repeats / elapsed,
                    "tokens_per_s": total / elapsed,
                    "generated_tokens_per_s": gen / elapsed,
                }
            )
            print(json.dumps(records[-1]), flush=True)
            if progress is not None:
                progress(records)
    return records


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--precisions", nargs="+", default=["fp32", "nf4"], choices=["fp32", "nf4"])
    ap.add_argument(
        "--roles",
        nargs="+",
        default=[
            "triplets",
            "proposal",
            "observation",
            "progress",
            "reflection",
            "critic",
            "rlaw_actor",
        ],
    )
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument(
        "--out", default="llm_roles", help="results file name (bench/results/<out>.json)"
    )
    ap.add_argument("--skip-load", action="store_true", help="skip the fresh-process load timing")
    args = ap.parse_args()

    import torch

    from smcplan.llm import load_model

    payload: dict = {"torch_threads": torch.get_num_threads(), "args": vars(args)}
    if not args.skip_load:
        payload["load"] = bench_load()
        print_table(
            ["first load (convert) s", "cached load s"],
            [[f"{payload['load']['first_load_s']:.1f}", f"{payload['load']['cached_load_s']:.1f}"]],
        )

    records = []
    for precision in args.precisions:
        lm = load_model(quantization=None if precision == "fp32" else "nf4", device="cpu")
        payload[f"footprint_mb_{precision}"] = lm.model.get_memory_footprint() / 1e6
        sc = bench_scoring(lm, repeats=3)
        payload[f"scoring_{precision}"] = sc
        print_table(
            [
                "precision",
                "prompt tok",
                "actions",
                "cached s",
                "naive s",
                "1 prompt pass s",
                "speedup",
                "x prompt pass",
                "max |diff|",
            ],
            [
                [
                    precision,
                    sc["prompt_tokens"],
                    sc["actions"],
                    f"{sc['cached_s']:.3f}",
                    f"{sc['naive_s']:.3f}",
                    f"{sc['one_prompt_pass_s']:.3f}",
                    f"{sc['speedup_vs_naive']:.1f}x",
                    f"{sc['cost_in_prompt_passes']:.2f}",
                    f"{sc['max_abs_score_diff']:.1e}",
                ]
            ],
        )
        done = list(records)

        def save(
            new: list[dict], done: list[dict] = done
        ) -> None:  # partial results survive a stop
            write_json(args.out, {**payload, "roles": done + new, "partial": True})

        records += bench_roles(lm, precision, args.batches, args.roles, args.repeats, progress=save)
        del lm
    payload["roles"] = records
    print_table(
        ["precision", "batch", "role", "s/call", "calls/s", "items/s", "tok/s", "gen tok/s"],
        [
            [
                r["precision"],
                r["batch"],
                r["role"],
                f"{r['seconds_per_call']:.2f}",
                f"{r['calls_per_s']:.3f}",
                f"{r['items_per_s']:.2f}",
                f"{r['tokens_per_s']:.0f}",
                f"{r['generated_tokens_per_s']:.1f}",
            ]
            for r in records
        ],
    )
    print(f"wrote {write_json(args.out, payload)}")


if __name__ == "__main__":
    main()
