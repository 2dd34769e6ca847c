"""Benchmark the value head's features of one state's siblings: the shared leading tokens run
once (``hidden_features(..., share_prefix=True)``, what the trainer and the planner's value model
use), side by side with the reference it replaced (each sibling's whole prompt in the batch).

    .venv/bin/python bench/sibling_features.py            # SmolLM2, 4 WebShop states, ~3 min
    .venv/bin/python bench/sibling_features.py --quick

The states are WebShop pages of the synthetic catalog (a results page of 10 products and an item
page with its options, goal 20 of the test split, as ``smcplan train value-siblings`` reads
them: the task, the page, ``> action`` and the first sentence of each sibling's reply), every
admissible action a sibling.  Both ways read the same hidden states (to float rounding; the
largest difference is reported).  Times are medians of process CPU time.  Writes
``bench/results/sibling_features.json``.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from _common import median_seconds, print_table, write_json  # noqa: E402


def sibling_sets(goal: int, states: int) -> list[list[str]]:
    """The path texts of every sibling of the first ``states`` states of ``goal``'s gold path."""
    from smcplan.envs import make
    from smcplan.planning.twist_value import path_text
    from smcplan.train.value_siblings import DEFAULT_OBS_CHARS

    env = make("webshop", split="test")
    obs, info = env.reset(goal)
    sets = []
    for action in env.gold_actions():
        actions = list(info.get("admissible_actions") or env.admissible_actions())
        if len(actions) > 1:
            texts = []
            for other in actions:
                twin = env.clone()
                reply = twin.step(other)[0]
                twin.close()
                texts.append(path_text(env.task, obs, [(other, reply)], DEFAULT_OBS_CHARS))
            sets.append(texts)
        if len(sets) == states:
            break
        obs, _r, done, info = env.step(action)
        if done:
            break
    env.close()
    return sets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--states", type=int, default=4)
    parser.add_argument("--goal", type=int, default=20)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 1 if args.quick else 3
    states = 2 if args.quick else args.states

    import numpy as np

    from smcplan.llm import load_model
    from smcplan.llm.roles.score_head import hidden_features
    from smcplan.llm.roles.value_head import VALUE_PREFIX, value_prompts

    lm = load_model()
    sets = [value_prompts(texts) for texts in sibling_sets(args.goal, states)]
    layers = (-1, 15)

    def shared():
        return [
            hidden_features(lm, p, layers, VALUE_PREFIX, len(p), share_prefix=True) for p in sets
        ]

    def whole():
        return [hidden_features(lm, p, layers, VALUE_PREFIX, len(p)) for p in sets]

    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(shared(), whole(), strict=True))
    scale = max(float(np.max(np.abs(b))) for b in whole())
    t_shared = median_seconds(shared, repeats, warmup=0, clock=time.process_time)
    t_whole = median_seconds(whole, repeats, warmup=0, clock=time.process_time)
    tokens = [[len(lm.encode_prompt(q, assistant_prefix=VALUE_PREFIX)) for q in p] for p in sets]
    result = {
        "goal": args.goal,
        "states": len(sets),
        "siblings": [len(p) for p in sets],
        "prompt_tokens": tokens,
        "shared_s": t_shared,
        "whole_s": t_whole,
        "speedup": t_whole / t_shared,
        "max_abs_difference": diff,
        "max_abs_feature": scale,
    }
    print(
        f"SmolLM2-135M, {len(sets)} WebShop states, {sum(result['siblings'])} siblings, "
        f"CPU seconds (median of {repeats}); largest feature difference {diff:.1e} of {scale:.0f}"
    )
    print_table(
        ["features", "shared prefix (smcplan)", "whole prompts (reference)", "speed-up"],
        [["all siblings", f"{t_shared:.2f}", f"{t_whole:.2f}", f"{t_whole / t_shared:.2f}x"]],
    )
    print("wrote", write_json("sibling_features", result))


if __name__ == "__main__":
    main()
