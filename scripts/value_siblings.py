"""Do value heads choose the expert's step among its siblings?  And a head fitted to.

    python scripts/value_siblings.py --train runs/i53/alf/pick_and_place-gold-train.jsonl \\
        --heldout runs/i53/alf/pick_and_place-gold-test.jsonl \\
        --head models/checkpoints/alfworld-pick-value-head/head --out runs/i53/alf/siblings

A planner with N = |A| and H = 1 compares *siblings*: the states that each action leads to from
one state.  A value head fitted on the states of whole episodes never sees that choice.  For each
state of a gold shard (collected with ``--branches K``) that has branches, this script renders
the gold successor and up to ``--siblings`` branch successors as the planner renders a
particle's latest state (task, the state's retrieved facts, the successor's observation) and
reads their hidden states (last and middle layer, the value heads' features, cached in
``--out``), and with ``--text-features`` the three task-overlap columns of
:mod:`smcplan.llm.roles.text_features` after them.  A stopped run resumes its features from
``<cache>.partial.npz``.  Reported for each ``--head`` and for the pairwise head fitted here,
on the held-out shard:

* **choice accuracy**: the share of states where the gold successor scores highest (a tie of
  ``m`` counts ``1/m``); chance is the mean of ``1/(1 + siblings)``;
* **mean rank** of the gold successor (1 = first).

The pairwise head is a logistic regression without intercept on standardised feature
differences, :math:`P(a \\succ b) = \\sigma(w^\\top(z_a - z_b))`, each gold successor against
each of its siblings (both orders), its ``C`` chosen by choice accuracy in folds grouped by
episode.  :math:`\\sigma(w^\\top z)` orders states as the pairwise model does, so it is saved as
a value head (``--out/head``, ``info["pairwise"] = true``) the planner can read; its values are
an order, not a calibrated probability.  Writes ``--out/report.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np

LAYERS = (-1, 15)
CS = (0.001, 0.01, 0.1, 1.0)


def sibling_sets(path: Path, siblings: int, max_states: int | None, seed: int) -> list[dict]:
    """One dict a state with branches: ``episode``, ``contexts`` (gold successor first)."""
    from smcplan.planning.text_particle import render_context
    from smcplan.train.data import read_shard

    shard = read_shard(path)
    branches: dict[tuple[str, int], list[dict]] = {}
    for br in shard.branches:
        branches.setdefault((br["episode"], int(br["t"])), []).append(br)
    rng = random.Random(seed)
    sets = []
    for tr in shard.transitions:
        sibs = branches.get((tr["episode"], int(tr["t"])), [])
        if not sibs:
            continue
        sibs = rng.sample(sibs, min(siblings, len(sibs)))
        steps = [tr, *sibs]
        contexts = [render_context(tr["task"], tr["facts"], s["next_observation"]) for s in steps]
        sets.append({"episode": tr["episode"], "contexts": contexts})
    if max_states is not None and len(sets) > max_states:
        sets = rng.sample(sets, max_states)
    return sets


def _digest(contexts: list[str]) -> str:
    import hashlib

    return hashlib.sha256("\x00".join(contexts).encode()).hexdigest()


def features(lm, sets: list[dict], cache: Path, every: int = 10) -> list[np.ndarray]:
    """The hidden features of every context, one ``(1 + k, dim)`` array a set (cached).

    While it runs, the rows so far are written every ``every`` batches to
    ``<cache>.partial.npz`` with a digest of the contexts they belong to, so a run that is
    stopped resumes from there (a partial file for other contexts is ignored)."""
    from smcplan.llm.roles.score_head import hidden_features
    from smcplan.llm.roles.value_head import VALUE_PREFIX, value_prompts

    flat = [c for s in sets for c in s["contexts"]]
    partial = cache.with_name(cache.stem + ".partial.npz")
    if cache.is_file():
        with np.load(cache) as z:
            feats = z["features"]
        if len(feats) != len(flat):
            raise SystemExit(f"{cache}: {len(feats)} rows cached for {len(flat)} states")
    else:
        rows: list[np.ndarray] = []
        if partial.is_file():
            with np.load(partial) as z:
                done = z["features"]
                if len(done) <= len(flat) and str(z["digest"]) == _digest(flat[: len(done)]):
                    rows = [done]
        start = sum(len(r) for r in rows)
        for b, i in enumerate(range(start, len(flat), 16)):
            rows.append(hidden_features(lm, value_prompts(flat[i : i + 16]), LAYERS, VALUE_PREFIX))
            n = min(i + 16, len(flat))
            print(f"  features {n}/{len(flat)}", file=sys.stderr)
            if (b + 1) % every == 0 and n < len(flat):
                np.savez(partial, features=np.concatenate(rows), digest=_digest(flat[:n]))
        feats = np.concatenate(rows)
        np.savez(cache, features=feats)
        partial.unlink(missing_ok=True)
    out, i = [], 0
    for s in sets:
        out.append(feats[i : i + len(s["contexts"])])
        i += len(s["contexts"])
    return out


def choice(scores: list[np.ndarray]) -> dict:
    """Choice accuracy (ties shared), mean rank of the gold (row 0), chance."""
    acc, ranks, chance = [], [], []
    for s in scores:
        best = s.max()
        acc.append(float(s[0] == best) / int((s == best).sum()))
        ranks.append(1 + int((s > s[0]).sum()))
        chance.append(1.0 / len(s))
    return {
        "states": len(scores),
        "choice_accuracy": float(np.mean(acc)),
        "mean_rank": float(np.mean(ranks)),
        "chance": float(np.mean(chance)),
    }


def head_scores(head, feats: list[np.ndarray], sets: list[dict]) -> list[np.ndarray]:
    from smcplan.llm.roles.text_features import text_features

    out = []
    for f, s in zip(feats, sets, strict=True):
        x = f[:, : head.dim] if not head.info.get("text_features") else None
        if x is None:
            width = head.dim - 3
            x = np.hstack([f[:, :width], text_features(s["contexts"])])
        out.append(head.logits(x))
    return out


def with_text(feats: list[np.ndarray], sets: list[dict]) -> list[np.ndarray]:
    """Each set's features with the text-feature columns appended (after the hidden ones)."""
    from smcplan.llm.roles.text_features import text_features

    return [np.hstack([f, text_features(s["contexts"])]) for f, s in zip(feats, sets, strict=True)]


def fit_pairwise(feats: list[np.ndarray], c: float, seed: int):
    """Standardiser (mean, scale) over every state and the no-intercept pairwise weights."""
    from sklearn.linear_model import LogisticRegression

    allx = np.concatenate(feats)
    mean, scale = allx.mean(0), allx.std(0)
    scale = np.where(scale > 0, scale, 1.0)
    diffs = []
    for f in feats:
        z = (f - mean) / scale
        diffs += [z[0] - z[j] for j in range(1, len(z))]
    d = np.asarray(diffs)
    x, y = np.vstack([d, -d]), np.r_[np.ones(len(d)), np.zeros(len(d))]
    clf = LogisticRegression(C=c, fit_intercept=False, max_iter=10000, random_state=seed)
    clf.fit(x, y)
    return mean, scale, clf.coef_.reshape(-1)


def pairwise_scores(model, feats: list[np.ndarray]) -> list[np.ndarray]:
    mean, scale, w = model
    return [((f - mean) / scale) @ w for f in feats]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", action="append", required=True, type=Path)
    parser.add_argument("--heldout", required=True, type=Path)
    parser.add_argument("--head", action="append", default=[], help="a value head to score")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--siblings", type=int, default=4)
    parser.add_argument("--max-states", type=int, default=120, help="train states (sampled)")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--text-features",
        action="store_true",
        help="the pairwise head also reads the benchmark-free task-overlap columns "
        "(smcplan.llm.roles.text_features), recorded in its info as the value heads do",
    )
    args = parser.parse_args(argv)
    if args.siblings < 1 or args.max_states < 2 or args.folds < 2:
        print("value_siblings: --siblings >= 1, --max-states >= 2, --folds >= 2", file=sys.stderr)
        return 2

    from sklearn.model_selection import GroupKFold

    from smcplan.llm import load_model
    from smcplan.llm.roles.score_head import ScoreHead
    from smcplan.llm.roles.value_head import VALUE_ROLE, load_value_head

    heads = {h: load_value_head(h) for h in args.head}
    args.out.mkdir(parents=True, exist_ok=True)
    train = [
        s
        for i, p in enumerate(args.train)
        for s in sibling_sets(p, args.siblings, None, args.seed + i)
    ]
    train = random.Random(args.seed).sample(train, min(args.max_states, len(train)))
    held = sibling_sets(args.heldout, args.siblings, None, args.seed)
    lm = load_model(None)
    ftrain = features(lm, train, args.out / "train_features.npz")
    fheld = features(lm, held, args.out / "heldout_features.npz")
    if args.text_features:  # after the cache: the cached hidden columns stay valid
        ftrain = with_text(ftrain, train)
        fheld = with_text(fheld, held)

    groups = [s["episode"] for s in train]
    cv = []
    for c in CS:
        scores: list[np.ndarray] = [np.zeros(0)] * len(train)
        for tr, te in GroupKFold(n_splits=args.folds).split(train, groups=groups):
            model = fit_pairwise([ftrain[i] for i in tr], c, args.seed)
            for i, s in zip(te, pairwise_scores(model, [ftrain[i] for i in te]), strict=True):
                scores[i] = s
        cv.append({"C": c, **choice(scores)})
    best = max(cv, key=lambda r: (r["choice_accuracy"], -r["C"]))
    model = fit_pairwise(ftrain, best["C"], args.seed)
    mean, scale, w = model
    info = {"role": VALUE_ROLE, "model": "smollm2-135m", "pairwise": True, "C": best["C"]}
    if args.text_features:
        from smcplan.llm.roles.text_features import VERSION

        info["text_features"] = VERSION
    ScoreHead(LAYERS, mean, scale, w, 0.0, info).save(args.out / "head")
    report = {
        "train": [str(p) for p in args.train],
        "heldout": str(args.heldout),
        "siblings": args.siblings,
        "text_features": args.text_features,
        "train_states": len(train),
        "cv": cv,
        "heldout_choice": {
            "pairwise head": choice(pairwise_scores(model, fheld)),
            **{h: choice(head_scores(heads[h], fheld, held)) for h in heads},
        },
    }
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["heldout_choice"], indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
