r"""RLAW's critic with a score head: gold-path labels, a logistic head on the model's hidden state.

The generative LoRA critic (:mod:`smcplan.train.critic`) learns the answer's format in ~40 steps
and then predicts the base rate for every action (docs/train_rlaw_rlvmr.md): it does not fit
its own training examples.  A linear probe says the information is there: the frozen model's
hidden state at the position where the critic writes its score separates gold from other
actions.  This trainer fits that head (:class:`smcplan.llm.roles.score_head.ScoreHead`):

1. **Examples**: the critic's labelled prompts, exactly as
   :func:`~smcplan.train.critic.critic_examples` builds them for the SFT critic (gold shard,
   y = [a = g_t], ``negatives_per_state`` negatives per state, optionally the map notes).
2. **Features**: the hidden states of the last token of prompt + :data:`CRITIC_PREFIX` at the
   last layer and at the middle one, one forward pass per example, cached in
   ``<out>/features.npz`` as they are computed (a run stopped by Ctrl-C or SIGKILL resumes with
   ``resume=True`` from the examples already done).
3. **Head**: L2-regularised logistic regression (scikit-learn's ``LogisticRegression``, lbfgs:
   the unique optimum of a convex loss, no schedule to tune) on standardised features,

   .. math::
      \min_{w,b}\; \tfrac{1}{2}\lVert w\rVert^2
      + C \sum_i \log\big(1 + e^{-(2y_i-1)(w^\top z_i + b)}\big).

   :math:`C` and the layer set (last layer alone, or last and middle) are chosen by
   ``folds``-fold cross-validation **grouped by episode** (no episode's states on both sides),
   by the pooled out-of-fold AUC; ties go to the smaller :math:`C` and the fewer layers.  The
   chosen head is refitted on all examples and saved to ``<out>/head``; ``<out>/train.json``
   holds the cross-validation table.

The model's weights are not trained here: the head reads the packaged model (or ``model`` with
``adapter`` merged).  Use it with ``agents.make("rlaw", lm=lm, critic_path="<out>/head")``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smcplan.errors import InvalidArgumentError, check_int
from smcplan.jsonfile import write_json
from smcplan.train.critic import _maps, _read, auc, critic_examples, critic_labels
from smcplan.train.data import subsample_and_save

__all__ = ["DEFAULT_CS", "cross_validate", "fit_head", "train_critic_head", "run"]

#: the inverse regularisation strengths the cross-validation tries
DEFAULT_CS = (1e-3, 1e-2, 1e-1, 1.0)
_CHUNK = 16  # examples per cache write


def _logistic(features: np.ndarray, labels: np.ndarray, c: float, seed: int) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(features)
    scaler.scale_ = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    clf = LogisticRegression(C=c, max_iter=10000, random_state=seed)
    clf.fit(scaler.transform(features), labels)
    return scaler, clf


def cross_validate(
    features: np.ndarray,
    labels: Sequence[int],
    groups: Sequence[str],
    blocks: Sequence[Sequence[int]],
    cs: Sequence[float] = DEFAULT_CS,
    folds: int = 5,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The pooled out-of-fold AUC of each (column ``block`` set, ``C``) pair: ``folds``-fold
    cross-validation grouped by ``groups`` (episodes), ``blocks[k]`` the feature columns of
    candidate ``k``.  Rows ``{"block": k, "C": c, "auc": ...}``, in the order tried."""
    from sklearn.model_selection import GroupKFold

    y = np.asarray(labels, dtype=int)
    check_int(folds, "folds", minimum=2)
    if len(set(groups)) < folds:
        raise InvalidArgumentError(
            f"folds={folds}: only {len(set(groups))} episodes to split; lower folds or "
            "collect more episodes"
        )
    splits = list(GroupKFold(n_splits=folds).split(features, y, groups))
    rows = []
    for k, cols in enumerate(blocks):
        x = features[:, list(cols)]
        for c in cs:
            oof = np.zeros(len(y))
            for train, test in splits:
                if len(set(y[train])) < 2:
                    raise InvalidArgumentError(
                        "cross-validation: a training fold holds one class only; collect more "
                        "episodes or lower folds"
                    )
                scaler, clf = _logistic(x[train], y[train], c, seed)
                oof[test] = clf.decision_function(scaler.transform(x[test]))
            rows.append({"block": k, "C": float(c), "auc": auc(oof.tolist(), y.tolist())})
    return rows


def fit_head(
    features: np.ndarray,
    labels: Sequence[int],
    layers: Sequence[int],
    c: float,
    seed: int = 0,
    info: dict[str, Any] | None = None,
) -> Any:
    """The :class:`~smcplan.llm.roles.score_head.ScoreHead` of the logistic regression with
    inverse regularisation ``c`` fitted on all ``features`` (columns: the hidden states of
    ``layers``, concatenated)."""
    from smcplan.llm.roles.score_head import ScoreHead

    y = np.asarray(labels, dtype=int)
    if len(set(y.tolist())) < 2:
        raise InvalidArgumentError(
            f"labels: one class only ({int(y.sum())} positives of {len(y)}); the head needs both"
        )
    scaler, clf = _logistic(features, y, c, seed)
    return ScoreHead(
        tuple(layers),
        scaler.mean_,
        scaler.scale_,
        clf.coef_[0],
        float(clf.intercept_[0]),
        dict(info or {}),
    )


def load_feature_cache(
    cache: Path, layers: Sequence[int], n: int, resume: bool, unit: str = "examples"
) -> np.ndarray:
    """The rows cached in ``cache`` for a run of ``n`` ``unit`` read at ``layers`` (none
    without ``resume`` or a file); a cache made for other layers or another ``n`` is refused."""
    if not (resume and cache.is_file()):
        return np.zeros((0, 0))
    with np.load(cache) as z:
        if list(z["layers"]) != list(layers) or int(z["n"]) != n:
            raise InvalidArgumentError(
                f"{cache}: cached for layers {list(z['layers'])} and {int(z['n'])} {unit}, "
                f"not {list(layers)} and {n}: start without resume"
            )
        return z["features"]


def save_feature_cache(cache: Path, rows: np.ndarray, layers: Sequence[int], n: int) -> None:
    """Write the rows so far to ``cache`` atomically (a temporary file, then a rename), so a
    kill leaves the last whole write."""
    tmp = cache.with_suffix(".tmp.npz")
    np.savez(tmp, features=rows, layers=np.asarray(layers), n=n)
    os.replace(tmp, cache)


def _features(
    lm: Any,
    examples: list[dict[str, Any]],
    layers: tuple[int, ...],
    cache: Path,
    resume: bool,
    batch: int,
    progress: bool,
    prefix: str | None = None,
    desc: str = "critic-head features",
) -> tuple[np.ndarray, int]:
    """The features of every example, cached in ``cache`` every :data:`_CHUNK` examples;
    returns them and how many came from the cache.  ``prefix``: the answer's opening the
    features are read after (default :data:`~smcplan.llm.roles.score_head.CRITIC_PREFIX`)."""
    from smcplan.interrupts import raise_if_stopped
    from smcplan.llm.roles.score_head import CRITIC_PREFIX, hidden_features

    done = load_feature_cache(cache, layers, len(examples), resume, "examples")
    cached = len(done)
    rows = [done] if cached else []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(examples), initial=cached, desc=desc, unit="ex")
    for i in range(cached, len(examples), _CHUNK):
        raise_if_stopped()
        chunk = examples[i : i + _CHUNK]
        prompts = [ex["prompt"] for ex in chunk]
        rows.append(hidden_features(lm, prompts, layers, prefix or CRITIC_PREFIX, batch=batch))
        save_feature_cache(cache, np.concatenate(rows, axis=0), layers, len(examples))
        if bar is not None:
            bar.update(len(chunk))
    if bar is not None:
        bar.close()
    return np.concatenate(rows, axis=0), cached


def train_critic_head(
    shards: Sequence[str | Path],
    out: str | Path,
    *,
    model: str | None = None,
    adapter: str | None = None,
    map_notes: bool = True,
    negatives_per_state: int | None = 2,
    max_examples: int | None = None,
    cs: Sequence[float] = DEFAULT_CS,
    folds: int = 5,
    batch: int = 4,
    threads: int | None = None,
    resume: bool = False,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Label, extract features, cross-validate and fit the critic's score head (module
    docstring); writes ``<out>/examples.jsonl``, ``<out>/features.npz``, ``<out>/head`` and
    ``<out>/train.json``, and returns the manifest."""
    from smcplan.llm import load_model

    if not shards:
        raise InvalidArgumentError(
            "critic-head needs --data SHARD (a gold shard: collect --source gold)"
        )
    if not isinstance(map_notes, bool):
        raise InvalidArgumentError(f"map_notes={map_notes!r}: give true or false")
    if not cs or any(
        not isinstance(c, (int, float)) or isinstance(c, bool) or not c > 0 for c in cs
    ):
        raise InvalidArgumentError(
            f"C={list(cs)!r}: give a list of positive numbers, e.g. [0.01, 0.1]"
        )
    t0 = time.perf_counter()
    transitions, headers = _read(shards)
    maps = _maps(transitions, headers) if map_notes else None
    examples = critic_examples(critic_labels(transitions, maps), negatives_per_state, seed)
    examples, out = subsample_and_save(examples, max_examples, seed, out)
    labels = [int(ex["label"]) for ex in examples]
    if len(set(labels)) < 2:
        raise InvalidArgumentError(
            f"{len(examples)} examples with {sum(labels)} positives: the head needs both classes"
        )
    lm = load_model(model, adapter=adapter, threads=threads)
    depth = int(lm.model.config.num_hidden_layers)
    layers = (-1, depth // 2)
    width = int(lm.model.config.hidden_size)
    feats, cached = _features(lm, examples, layers, out / "features.npz", resume, batch, progress)
    t_feat = time.perf_counter() - t0
    blocks = [list(range(width)), list(range(2 * width))]
    groups = [str(ex["episode"]) for ex in examples]
    table = cross_validate(feats, labels, groups, blocks, cs, folds, seed)
    best = max(table, key=lambda r: (round(r["auc"], 12), -r["C"], -r["block"]))
    chosen_layers = layers[: best["block"] + 1]
    info = {
        "model": model or "smollm2-135m",
        "model_name": getattr(lm, "name", None),
        "adapter": adapter,
        "map_notes": map_notes,
        "C": best["C"],
        "cv_auc": best["auc"],
        "folds": folds,
    }
    head = fit_head(feats[:, blocks[best["block"]]], labels, chosen_layers, best["C"], seed, info)
    head.save(out / "head")
    manifest = {
        "trainer": "critic-head",
        "model": info["model"],
        "adapter": adapter,
        "weights": str(out / "head"),
        "examples": len(examples),
        "positives": sum(labels),
        "map_notes": map_notes,
        "negatives_per_state": negatives_per_state,
        "layers": list(chosen_layers),
        "C": best["C"],
        "cv_auc": best["auc"],
        "cv": [{**r, "layers": list(layers[: r["block"] + 1])} for r in table],
        "features_cached": cached,
        "seconds_features": t_feat,
        "seconds": time.perf_counter() - t0,
        "seed": seed,
        "shards": headers,
    }
    write_json(out / "train.json", manifest)
    return manifest


def run(request: Any) -> dict[str, Any]:
    """``smcplan train critic-head``: the registry entry; ``--opt`` keys ``map_notes`` (default
    true), ``negatives_per_state`` (2), ``max_examples``, ``adapter`` (a LoRA adapter merged into
    the model first), ``C`` (a list: the grid the cross-validation tries), ``folds`` (5),
    ``batch`` (4 prompts a forward pass), ``threads``.  ``--max-steps``, ``--epochs``, ``--lr``,
    ``--batch-size`` and ``--save-steps`` do not apply (the fit is a convex optimum; features
    are cached every 16 examples): giving one is an error."""
    from smcplan.train.options import trainer_options
    from smcplan.train.registry import refuse_flags

    opts = trainer_options("critic-head", request.options)
    refuse_flags(
        request,
        ("--max-steps", "--epochs", "--lr", "--batch-size", "--save-steps"),
        "critic-head fits a logistic head (no optimizer steps); drop it, and use --opt C=[...] "
        "for the regularisation grid",
    )
    cs = opts.get("C", DEFAULT_CS)
    cs = [cs] if isinstance(cs, (int, float)) and not isinstance(cs, bool) else cs
    if not isinstance(cs, (list, tuple)):
        raise InvalidArgumentError(f"--opt C={cs!r}: give a number or a list, e.g. C=[0.01,0.1]")
    return train_critic_head(
        request.data,
        request.out,
        model=request.model,
        adapter=opts.get("adapter"),
        map_notes=opts.get("map_notes", True),
        negatives_per_state=opts.get("negatives_per_state", 2),
        max_examples=opts.get("max_examples"),
        cs=cs,
        folds=opts.get("folds", 5),
        batch=opts.get("batch", 4),
        threads=opts.get("threads"),
        resume=request.resume,
        seed=request.seed,
        progress=request.progress,
    )
