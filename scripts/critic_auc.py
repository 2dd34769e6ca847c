"""Critic AUC on held-out gold-path actions: the prompted critic vs a trained adapter.

    python scripts/critic_auc.py --data runs/critic/gold-test.jsonl --states 25 \
        --adapter runs/critic/lora/adapter --out runs/critic/auc.json

Samples ``--states`` states of the held-out shard (seeded), labels *every* admissible action of
each (smcplan.train.critic: 1 iff it is the gold action), scores them with the base model's
critic prompt and, with ``--adapter``, with the trained critic; prints AUC with a bootstrap
interval over states and writes everything to ``--out``.

``--rule`` adds a reference that no model is needed for: the action's kind, seen from the
observation alone (``take coin`` 1, ``look around`` at the first step 0.9, ``open door to X``
0.8, ``move X`` 0.6, anything else 0; TextWorldExpress coin's actions).  Every move or door of a
state ties, so it shows how far a critic gets without knowing the hidden map.  It also scores
``rule+map``: the same, but a move or door that leads (by the place map read from the episode's
earlier gold steps, ``smcplan.planning.places``) into a room already visited scores 0.3 / 0.5
instead of 0.6 / 0.8: what the history adds.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def rule_score(example: dict) -> float:
    """The ``--rule`` score of one labelled example (module docstring)."""
    a = str(example["action"]).strip().lower()
    if a == "take coin":
        return 1.0
    if a == "look around":
        return 0.9 if example["t"] == 0 else 0.0
    if a.startswith("open door to "):
        return 0.8
    return 0.6 if a.startswith("move ") else 0.0


def rule_map_scores(transitions: list, examples: list) -> list[float]:
    """The ``rule+map`` score of each labelled example (module docstring)."""
    from smcplan.planning.places import PlaceMap, known_exit, read_step

    episodes: dict = {}
    for tr in transitions:
        episodes.setdefault(tr["episode"], []).append(tr)
    maps = {}
    for name, steps in episodes.items():
        steps.sort(key=lambda tr: tr["t"])
        m = read_step(PlaceMap(), None, steps[0]["observation"], "twx")
        for tr in steps:
            maps[(name, tr["t"])] = m
            m = read_step(m, tr["action"], tr["next_observation"], "twx")
    out = []
    for ex in examples:
        m = maps[(ex["episode"], ex["t"])]
        a = str(ex["action"]).strip().lower()
        walks = a.startswith(("move ", "open door to "))
        back = walks and known_exit(m, m.place, a) in m.visited
        out.append(rule_score(ex) - (0.3 if back else 0.0))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--states", type=int, default=25)
    ap.add_argument("--model", default=None)
    ap.add_argument("--adapter", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--skip-prompted", action="store_true", help="score the adapter only")
    ap.add_argument("--rule", action="store_true", help="also score the action-kind rule")
    args = ap.parse_args()

    from smcplan.llm import load_model
    from smcplan.train.critic import (
        critic_examples,
        critic_labels,
        evaluate_critic,
        summarise_scores,
    )
    from smcplan.train.data import read_shard

    shard = read_shard(args.data).transitions
    rows = random.Random(args.seed).sample(shard, min(args.states, len(shard)))
    examples = critic_examples(critic_labels(rows), negatives_per_state=None)
    result = {"data": str(args.data), "states": len(rows), "n": len(examples)}
    rules = (
        {
            "rule": [rule_score(ex) for ex in examples],
            "rule+map": rule_map_scores(shard, examples),
        }
        if args.rule
        else {}
    )
    for name, scores in rules.items():
        score = summarise_scores(scores, examples, seed=args.seed)
        lo, hi = score.auc_ci
        print(f"{name}: n={score.n} AUC={score.auc:.3f} [{lo:.3f}, {hi:.3f}]", flush=True)
        result[name] = {**score.to_dict(), "scores": scores}
    critics = [] if args.skip_prompted else [("prompted", None)]
    critics += [("trained", args.adapter)] if args.adapter else []
    for name, adapter in critics:
        lm = load_model(args.model, adapter=adapter, threads=1)
        score, scores = evaluate_critic(lm, examples, seed=args.seed)
        lo, hi = score.auc_ci
        print(
            f"{name}: n={score.n} ({score.positives} positive, {score.states} states) "
            f"AUC={score.auc:.3f} [{lo:.3f}, {hi:.3f}] mean score +{score.mean_positive:.3f} "
            f"-{score.mean_negative:.3f} ({score.seconds:.0f} s)",
            flush=True,
        )
        result[name] = {
            **score.to_dict(),
            "adapter": str(adapter) if adapter else None,
            "scores": scores,
        }
        del lm
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
