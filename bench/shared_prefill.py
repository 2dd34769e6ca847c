"""Benchmark ``LanguageModel.sample(prompts, n)``: one prefill per prompt shared by its n samples,
side by side with the reference it replaced (the prompt repeated n times in the batch).

    .venv/bin/python bench/shared_prefill.py            # SmolLM2, n = 5 (reflection), ~2 min
    .venv/bin/python bench/shared_prefill.py --quick

The prompt is a NeSyFS reflection prompt on a TextWorldExpress coin observation (about 600
tokens), the answer 80 free-text tokens at T = 1, as the reflection role draws them. Both ways draw
the same tokens (tests/llm/test_lm.py), so the comparison is pure cost. Times are medians of
process CPU time (other jobs on a shared machine inflate them less than wall time); prefill and
decoding are reported separately (``max_new_tokens=1`` is the prefill alone). Writes
``bench/results/shared_prefill.json``.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from _common import median_seconds, print_table, write_json  # noqa: E402

OBSERVATION = (
    "You are in the kitchen. In one part of the room you see a stove. There is also an oven. "
    "You also see a fridge that is closed. In another part of the room you see a counter, that "
    "has nothing on it. In one part of the room you see a kitchen cupboard that is closed. There "
    "is also a dishwasher that is closed. In another part of the room you see a trash can that is "
    "closed. To the North you see a closed sliding patio door. To the South you see the living "
    "room. To the East you see a closed frosted-glass door. To the West you see the pantry. "
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=80)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 2 if args.quick else 5

    from smcplan.llm import load_model

    lm = load_model()
    history = "\n".join(f"> move {d}\n{OBSERVATION}" for d in ("north", "south", "east"))
    prompt = [
        {
            "role": "system",
            "content": "You check an action before it is taken. Think, then answer Yes or No.",
        },
        {
            "role": "user",
            "content": f"Task: find the coin.\nWhat happened so far:\n{history}\n"
            f"Current observation: {OBSERVATION}\nProposed action: open door to north\n"
            "Will this action help? Think step by step.",
        },
    ]
    prompt_tokens = len(lm.encode_prompt(prompt))
    rows, result = [], {"n": args.n, "prompt_tokens": prompt_tokens, "new_tokens": args.new_tokens}
    for label, new in (("prefill only", 1), ("prefill + decode", args.new_tokens)):
        def shared():
            lm.sample([prompt], n=args.n, max_new_tokens=new, seed=0, temperature=1.0)

        def repeated():
            lm.sample([prompt] * args.n, n=1, max_new_tokens=new, seed=0, temperature=1.0)

        t_shared = median_seconds(shared, repeats, warmup=1, clock=time.process_time)
        t_repeated = median_seconds(repeated, repeats, warmup=1, clock=time.process_time)
        result[label] = {
            "shared_s": t_shared,
            "repeated_s": t_repeated,
            "speedup": t_repeated / t_shared,
        }
        rows.append(
            [label, f"{t_shared:.2f}", f"{t_repeated:.2f}", f"{t_repeated / t_shared:.2f}x"]
        )
    print(
        f"SmolLM2-135M, {prompt_tokens}-token prompt, n = {args.n}, CPU seconds (median of "
        f"{repeats})"
    )
    print_table(
        ["call", "shared prefill (smcplan)", "prompt repeated n times (reference)", "speed-up"],
        rows,
    )
    print("wrote", write_json("shared_prefill", result))


if __name__ == "__main__":
    main()
