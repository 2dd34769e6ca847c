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
instead of 0.6 / 0.8: what the history adds.  And ``ceiling``, which reads the labels
(:func:`ceiling_scores`): an upper estimate of what a critic that sees only the table critic's
features can reach on these labels.  ``--features TRAIN_SHARD`` learns a table critic from
another gold shard (:func:`feature_scores`: the share of gold actions per action kind, door
state and "a closed door is left in the room") and scores it: what a learner can reach.
``--head DIR`` scores a score-head critic (``smcplan train critic-head``; give
``--map-notes`` when it was fitted with them, as by default).  ``--map-notes`` gives the
language-model critics each action's map note (the prompts of a
critic trained with ``smcplan train critic --opt map_notes=true``).
"""

from __future__ import annotations

import argparse
import json
import random
import time
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


def _maps(transitions: list) -> dict:
    """The place map before each gold step, ``{(episode, t): PlaceMap}``, read from the
    episode's earlier real observations."""
    from smcplan.planning.places import PlaceMap, read_step

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
    return maps


def _walks_back(m, action: str) -> bool:
    from smcplan.games.twx import known_exit

    a = str(action).strip().lower()
    return a.startswith(("move ", "open door to ")) and known_exit(m, m.place, a) in m.visited


def rule_map_scores(transitions: list, examples: list) -> list[float]:
    """The ``rule+map`` score of each labelled example (module docstring)."""
    maps = _maps(transitions)
    return [
        rule_score(ex) - (0.3 if _walks_back(maps[(ex["episode"], ex["t"])], ex["action"]) else 0)
        for ex in examples
    ]


def ceiling_scores(transitions: list, examples: list) -> list[float]:
    """``ceiling``: ``1/k`` for each of the ``k`` actions of a state that look like its gold
    action (the same :func:`action_feature`), 0 for the rest: the posterior that an action is
    the gold one when look-alikes are exchangeable.  It reads the labels, so it is no critic: it
    is the AUC of a critic that knows which feature value is gold in each state and cannot tell
    actions with the same value apart (the gold move ties with the other moves into unvisited
    rooms), ranking a state's look-alikes by how few they are (1/k orders them better than a
    flat 1: a state with fewer look-alikes costs fewer ties): an upper estimate for critics that
    see what the features see."""
    maps = _maps(transitions)

    def looks(ex: dict) -> tuple:
        return action_feature(maps[(ex["episode"], ex["t"])], ex)

    gold = {(ex["episode"], ex["t"]): looks(ex) for ex in examples if ex["label"]}
    alike = [looks(ex) == gold[(ex["episode"], ex["t"])] for ex in examples]
    size: dict = {}
    for ex, same in zip(examples, alike, strict=True):
        size[(ex["episode"], ex["t"])] = size.get((ex["episode"], ex["t"]), 0) + same
    return [
        1.0 / size[(ex["episode"], ex["t"])] if same else 0.0
        for ex, same in zip(examples, alike, strict=True)
    ]


def action_feature(m, example: dict) -> tuple[str, bool]:
    """``--features``: what the observation and the history say about one action, ``(kind,
    closed_door_left)``: kind is ``take``, ``look0`` (the first step) / ``look``,
    ``open_closed`` / ``open_open`` / ``open_unknown`` (the door's state by the place map),
    ``close``, ``move_closed`` (into a closed door), ``move_back`` (into a visited room),
    ``move_new``, or the action itself; ``closed_door_left``: the room has a closed door."""
    a = str(example["action"]).strip().lower()
    doors = {d: state for (p, d), state in m.doors.items() if p == m.place}
    closed_left = "closed" in doors.values()
    if a == "take coin":
        kind = "take"
    elif a == "look around":
        kind = "look0" if example["t"] == 0 else "look"
    elif a.startswith("open door to "):
        kind = "open_" + doors.get(a.split()[-1], "unknown")
    elif a.startswith("close door to "):
        kind = "close"
    elif a.startswith("move "):
        if doors.get(a.split()[-1]) == "closed":
            kind = "move_closed"
        else:
            kind = "move_back" if _walks_back(m, a) else "move_new"
    else:
        kind = a
    return kind, closed_left


def feature_scores(train: list, transitions: list, examples: list) -> tuple[list[float], dict]:
    """``--features``: a table critic learned from the ``train`` gold transitions, the share of
    gold actions among the training actions with each :func:`action_feature` value (add-1/2
    smoothed; an unseen value scores 0); returns the scores of ``examples`` and the table."""
    from smcplan.train.critic import critic_examples, critic_labels

    train_maps = _maps(train)
    counts: dict = {}
    for ex in critic_examples(critic_labels(train), negatives_per_state=None):
        f = action_feature(train_maps[(ex["episode"], ex["t"])], ex)
        gold, seen = counts.get(f, (0, 0))
        counts[f] = (gold + ex["label"], seen + 1)
    maps = _maps(transitions)
    scores = []
    for ex in examples:
        f = action_feature(maps[(ex["episode"], ex["t"])], ex)
        gold, seen = counts.get(f, (0, -1))
        scores.append((gold + 0.5) / (seen + 1) if seen >= 0 else 0.0)
    table = {f"{k} closed_left={c}": v for (k, c), v in sorted(counts.items())}
    return scores, table


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
    ap.add_argument(
        "--head",
        type=Path,
        help="also score a score-head critic (smcplan train critic-head: its <out>/head folder)",
    )
    ap.add_argument(
        "--map-notes",
        action="store_true",
        help="give the critics each action's map note (smcplan.agents.map_notes), as a critic "
        "trained with --opt map_notes=true saw them",
    )
    ap.add_argument(
        "--features",
        type=Path,
        metavar="TRAIN_SHARD",
        help="also score a table critic learned from this gold shard (feature_scores)",
    )
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
    maps = None
    if args.map_notes:
        from smcplan.agents.map_notes import episode_maps

        maps = episode_maps(shard, read_shard(args.data).header.get("env") or "auto")
    examples = critic_examples(critic_labels(rows, maps), negatives_per_state=None)
    result = {
        "data": str(args.data),
        "states": len(rows),
        "n": len(examples),
        "map_notes": args.map_notes,
    }
    rules = (
        {
            "rule": [rule_score(ex) for ex in examples],
            "rule+map": rule_map_scores(shard, examples),
            "ceiling": ceiling_scores(shard, examples),
        }
        if args.rule
        else {}
    )
    for name, scores in rules.items():
        score = summarise_scores(scores, examples, seed=args.seed)
        lo, hi = score.auc_ci
        print(f"{name}: n={score.n} AUC={score.auc:.3f} [{lo:.3f}, {hi:.3f}]", flush=True)
        result[name] = {**score.to_dict(), "scores": scores}
    if args.features:
        scores, table = feature_scores(read_shard(args.features).transitions, shard, examples)
        score = summarise_scores(scores, examples, seed=args.seed)
        lo, hi = score.auc_ci
        print(f"features: n={score.n} AUC={score.auc:.3f} [{lo:.3f}, {hi:.3f}]", flush=True)
        result["features"] = {
            **score.to_dict(),
            "train": str(args.features),
            "table": table,
            "scores": scores,
        }
    if args.head:
        from smcplan.llm.roles.score_head import ScoreCritic, ScoreHead

        head = ScoreHead.load(args.head)
        lm = load_model(args.model or head.info.get("model"), adapter=head.info.get("adapter"))
        t0 = time.perf_counter()
        scores = ScoreCritic(lm, head).scores([ex["prompt"] for ex in examples])
        score = summarise_scores(scores, examples, seed=args.seed, seconds=time.perf_counter() - t0)
        lo, hi = score.auc_ci
        print(
            f"head: n={score.n} ({score.positives} positive, {score.states} states) "
            f"AUC={score.auc:.3f} [{lo:.3f}, {hi:.3f}] mean score +{score.mean_positive:.3f} "
            f"-{score.mean_negative:.3f} ({score.seconds:.0f} s)",
            flush=True,
        )
        result["head"] = {**score.to_dict(), "head": str(args.head), "scores": scores}
        del lm
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
    if "head" in result:
        from smcplan.train.critic import auc_difference

        paired = {}
        for name in ("features", "rule+map", "trained", "prompted"):
            if name in result:
                d, (lo, hi) = auc_difference(
                    result["head"]["scores"], result[name]["scores"], examples, seed=args.seed
                )
                paired[name] = {"difference": d, "ci": [lo, hi]}
                print(f"head - {name}: {d:+.3f} [{lo:+.3f}, {hi:+.3f}] (paired over states)")
        result["head"]["paired"] = paired
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
