"""Diagnostics of a sibling value head (``smcplan train value-siblings``) on its cached features.

    # each run's head read on each run's held-out features (e.g. real against imagined replies)
    python scripts/sibling_diagnostics.py cross --run runs/vr/sib1 --run runs/vr/sibwm \\
        --labels runs/vr128/gold-test.labels.jsonl --labels runs/vr128/random-test.labels.jsonl
    # a second labelling (independent rollouts, or more of them) scored as if it were a head,
    # and with --run the head against that labelling, over the first labelling's states
    L=runs/coin/lab; S=runs/coin/lab64h
    python scripts/sibling_diagnostics.py relabel --run runs/coin/sibwm \\
        --labels $L/oracle-held.labels.jsonl --labels $L/random-held.labels.jsonl \\
        --against $S/oracle-held.labels.jsonl --against $S/random-held.labels.jsonl
    # the plain soft-logistic fit against two fits that compare siblings directly
    python scripts/sibling_diagnostics.py fits --run runs/coin/sibwm \\
        --labels $L/oracle-held.labels.jsonl --labels $L/random-held.labels.jsonl

Every number is :func:`smcplan.train.value_siblings.choice_metrics` over the held-out states
whose siblings' labels differ (``--labels``: the run's held-out label files, one per held-out
shard recorded in ``RUN/train.json``, in the same order).  ``fits`` refits on the run's cached
training features with folds grouped by episode (``--folds``, 5):

* ``plain``: the trainer's soft-label logistic regression;
* ``centred``: the same on features minus their state's mean (at H = 1 such a head ranks the
  siblings of a state as it would the uncentred ones, so it plans the same way);
* ``softmax``: a per-state softmax (conditional logit) :math:`\\min_w \\sum_s -\\sum_i t_{si}
  \\log \\mathrm{softmax}_i(w^\\top z_{si}) + \\lambda \\lVert w\\rVert^2/2`, with targets
  :math:`t_{s\\cdot} = \\mathrm{softmax}(\\hat v_{s\\cdot} / 0.05)` on ``k`` principal components.

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from smcplan.train.value_siblings import choice_metrics, fit_soft, sibling_steps

TARGET_TEMPERATURE = 0.05


def _heldout_steps(run: Path, labels: list[str], informative: bool = True) -> list[dict]:
    from smcplan.train.data import read_shard
    from smcplan.train.rollout_labels import read_labels

    shards = json.loads((run / "train.json").read_text(encoding="utf-8"))["heldout"]["shards"]
    if len(shards) != len(labels):
        raise SystemExit(
            f"--labels: {len(labels)} files for the run's {len(shards)} held-out shards"
        )
    return sibling_steps(
        [read_shard(p) for p in shards], [read_labels(p) for p in labels], informative=informative
    )


def _features(path: Path) -> np.ndarray:
    with np.load(path) as z:
        return z["features"]


def _head_scores(run: Path, features: np.ndarray) -> np.ndarray:
    from smcplan.llm.roles.score_head import ScoreHead

    head = ScoreHead.load(run / "head")
    width = features.shape[1] // 2  # the trainer caches the last and the middle layer
    return head.logits(features[:, : width * len(head.layers)])


def cross(runs: list[Path], labels: list[str]) -> dict[str, Any]:
    steps = _heldout_steps(runs[0], labels)
    values, states = [s["value"] for s in steps], [s["state"] for s in steps]
    out = {}
    for head_run in runs:
        for text_run in runs:
            feats = _features(text_run / "heldout_features.npz")
            scores = _head_scores(head_run, feats).tolist()
            out[f"head {head_run} on {text_run}"] = choice_metrics(scores, values, states)
    return out


def relabel(run: Path | None, shards_run: Path, labels: list[str], against: list[str]) -> dict:
    first = _heldout_steps(shards_run, labels)
    second = {(s["state"], s["action"]): s["value"]
              for s in _heldout_steps(shards_run, against, informative=False)}  # fmt: skip
    states = [s["state"] for s in first]
    truth = [second[(s["state"], s["action"])] for s in first]
    first_values = [s["value"] for s in first]
    out = {
        "first labelling as the head": choice_metrics(first_values, truth, states),
        "label correlation": float(np.corrcoef(first_values, truth)[0, 1]),
    }
    if run is not None:
        scores = _head_scores(run, _features(run / "heldout_features.npz")).tolist()
        out["the head"] = choice_metrics(scores, truth, states)
    return out


def _groups(states: list[str]) -> list[np.ndarray]:
    idx: dict[str, list[int]] = {}
    for i, s in enumerate(states):
        idx.setdefault(s, []).append(i)
    return [np.asarray(r) for r in idx.values()]


def _centre(x: np.ndarray, states: list[str]) -> np.ndarray:
    x = x.copy()
    for rows in _groups(states):
        x[rows] -= x[rows].mean(axis=0)
    return x


def _fit_softmax(x: np.ndarray, values: np.ndarray, states: list[str], lam: float) -> np.ndarray:
    from scipy.optimize import minimize

    groups = _groups(states)
    targets = []
    for rows in groups:
        e = np.exp((values[rows] - values[rows].max()) / TARGET_TEMPERATURE)
        targets.append(e / e.sum())

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = 0.5 * lam * w @ w, lam * w
        for rows, t in zip(groups, targets, strict=True):
            z = x[rows] @ w
            p = np.exp(z - z.max())
            p /= p.sum()
            total -= float(t @ np.log(p + 1e-300))
            grad = grad + x[rows].T @ (p - t)
        return total, grad

    return minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x


def _scorer(kind: str, x: np.ndarray, values: np.ndarray, states: list[str], param: float,
            k: int) -> Any:  # fmt: skip
    if kind in ("plain", "centred"):
        scaler, clf = fit_soft(x, values, param)
        return lambda z: clf.decision_function(scaler.transform(z))
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    pca = PCA(min(k, x.shape[0], x.shape[1]), random_state=0).fit(scaler.transform(x))
    w = _fit_softmax(pca.transform(scaler.transform(x)), values, states, param)
    return lambda z: pca.transform(scaler.transform(z)) @ w


def fits(run: Path, labels: list[str], k: int = 32, folds: int = 5) -> dict[str, Any]:
    from sklearn.model_selection import GroupKFold

    rows = [json.loads(line) for line in (run / "examples.jsonl").open(encoding="utf-8")]
    x, hx = _features(run / "features.npz"), _features(run / "heldout_features.npz")
    values = np.asarray([r["value"] for r in rows])
    states, episodes = [r["state"] for r in rows], [r["episode"] for r in rows]
    test = _heldout_steps(run, labels)
    tv, ts = [s["value"] for s in test], [s["state"] for s in test]
    splits = list(GroupKFold(n_splits=folds).split(x, values, episodes))
    out = {}
    grid = {"plain": (0.001, 0.01, 0.1, 1.0), "centred": (0.001, 0.01, 0.1, 1.0),
            "softmax": (1.0, 10.0, 100.0)}  # fmt: skip
    for kind, params in grid.items():
        xx = _centre(x, states) if kind == "centred" else x
        hh = _centre(hx, ts) if kind == "centred" else hx
        for param in params:
            oof = np.zeros(len(values))
            for train, held in splits:
                sub = [states[i] for i in train]
                oof[held] = _scorer(kind, xx[train], values[train], sub, param, k)(xx[held])
            score = _scorer(kind, xx, values, states, param, k)
            out[f"{kind} {param}"] = {
                "cv": choice_metrics(oof.tolist(), values.tolist(), states),
                "heldout": choice_metrics(score(hh).tolist(), tv, ts),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("cross")
    c.add_argument("--run", type=Path, action="append", required=True)
    c.add_argument("--labels", action="append", required=True)
    r = sub.add_parser("relabel")
    r.add_argument("--run", type=Path, required=True)
    r.add_argument("--labels", action="append", required=True)
    r.add_argument("--against", action="append", required=True)
    r.add_argument("--no-head", action="store_true", help="score the labelling only")
    f = sub.add_parser("fits")
    f.add_argument("--run", type=Path, required=True)
    f.add_argument("--labels", action="append", required=True)
    f.add_argument("--components", type=int, default=32)
    f.add_argument("--folds", type=int, default=5)
    args = parser.parse_args(argv)
    if args.command == "cross":
        out = cross(args.run, args.labels)
    elif args.command == "relabel":
        head_run = None if args.no_head else args.run
        out = relabel(head_run, args.run, args.labels, args.against)
    else:
        out = fits(args.run, args.labels, args.components, args.folds)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
