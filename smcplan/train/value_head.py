r"""The learned twist's value head: states of oracle and gold trajectories, labelled by how soon
they lead to success, and a logistic head on the frozen model's hidden state.

1. **States and labels.**  Per finished episode of the shards (any source: ``gold``,
   ``oracle``, an agent's), with :math:`T` real steps, the state :math:`x_t` before step
   :math:`t` is the task, the facts retrieved before the step and the observation
   (rendered as the world model's context, :func:`~smcplan.planning.text_particle.
   render_context`).  Its **steps to success** under the collecting policy are
   :math:`d_t = T - t` when the episode was won, :math:`\infty` otherwise.  Terminal states are
   exact: a state the episode (or a counterfactual branch) was won in has :math:`d = 0`, a state
   it was lost in (ended, not won, not by the step limit) has :math:`d = \infty` (a dead end).
   A branch that did not end the episode leads to a state whose value the shard does not say
   (no one played on from it): it is left out.  The labels are

   .. math:: y = [d \le k] \in \{0, 1\}, \qquad v = \gamma^{d} \quad (\gamma^\infty = 0),

   with :math:`k` = ``within`` and :math:`\gamma` = ``discount``.  **Why a binary target**:
   :math:`P(y = 1 \mid x)`, the probability of success within :math:`k` steps, is the twist TSMC
   asks for (the optimal twist is the probability of the target event from the partial path,
   Zhao et al. 2024), it lies in (0, 1) so :math:`\log\psi` exists, and it is fitted by the
   critic head's logistic regression — convex, a unique optimum, no schedule to tune —
   where a regression of :math:`v` could go below 0 (no logarithm).  :math:`v` is the
   discounted Monte Carlo return of the collecting policy (a lower bound of the optimal
   policy's): the head's scores are also ranked against it (Spearman).
2. **Features**: the hidden states of the last token of the ``value`` role's prompt plus
   :data:`~smcplan.llm.roles.value_head.VALUE_PREFIX`, last and middle layer, cached in
   ``<out>/features.npz`` every 16 states (``resume=True`` continues after a kill), as the
   critic head's (:mod:`smcplan.train.critic_head`).  With ``text_features=True`` the three
   benchmark-free columns of :mod:`smcplan.llm.roles.text_features` (the task's words in the
   observation and in the facts, the observation's length) follow them in every block.
3. **Head**: the critic head's grouped cross-validation (by episode) over C and the layer set,
   by out-of-fold AUC; the chosen head is refitted on all states and saved to ``<out>/head``
   (``info["role"] = "value"``).  Reported: the out-of-fold AUC of :math:`y` and Spearman's
   :math:`\rho` with :math:`v`, and the same on the ``heldout`` shard's states (test seeds;
   features cached in ``<out>/heldout_features.npz``), beside the same metrics of the
   benchmark-free twist ``env+novelty`` on those states and the paired bootstrap interval of
   the AUC difference over episodes (:mod:`smcplan.train.value_baseline`).

Benchmark-free: it reads the shards' texts and flags only.  Use it with
``plan(..., progress="learned+novelty", value_head="<out>/head")``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smcplan.errors import InvalidArgumentError, check_float, check_int
from smcplan.jsonfile import write_json
from smcplan.train.critic import auc
from smcplan.train.critic_head import DEFAULT_CS, _features, cross_validate, fit_head
from smcplan.train.data import read_shard, subsample_and_save
from smcplan.train.value_baseline import compare_auc, twist_log_psi

__all__ = ["value_states", "rank_metrics", "spearman", "train_value_head", "run"]

#: the benchmark-free twist the head is compared with on the held-out states
#: (:mod:`smcplan.train.value_baseline`)
BASELINE_TWIST = "env+novelty"


def value_states(
    shards: Sequence[Any], within: int = 5, discount: float = 0.9, history: bool = False
) -> list[dict[str, Any]]:
    """The labelled states of read ``shards`` (:class:`~smcplan.train.data.Shard`), module
    docstring: ``{"prompt", "context", "label" y, "value" v, "steps" d (None: never),
    "episode", "t", "kind"}`` with ``kind`` ``"path"``, ``"won"`` or ``"dead_end"``; with
    ``history`` also ``"root"`` (the episode's first observation) and ``"history"`` (the real
    steps that led to the state, :func:`smcplan.train.value_baseline.twist_log_psi`)."""
    from smcplan.llm.roles.value_head import value_prompts
    from smcplan.planning.text_particle import render_context

    check_int(within, "within", minimum=0)
    gamma = check_float(discount, "discount", minimum=0.0, maximum=1.0)
    rows: list[tuple[dict[str, Any], str, int | None, str]] = []
    paths: list[tuple[str, list[dict[str, Any]]]] = []
    for shard in shards:
        by_episode: dict[str, list[dict[str, Any]]] = {}
        for tr in shard.transitions:
            by_episode.setdefault(tr["episode"], []).append(tr)
        branches: dict[str, list[dict[str, Any]]] = {}
        for br in shard.branches:
            branches.setdefault(br["episode"], []).append(br)
        for episode, path in by_episode.items():
            path.sort(key=lambda r: r["t"])
            won = bool(shard.episodes.get(episode, {}).get("won", path[-1]["won"]))
            n = len(path)
            for i, tr in enumerate(path):
                rows.append((tr, tr["observation"], n - i if won else None, "path"))
                paths.append((path[0]["observation"], path[:i]))
            index = {tr["t"]: i for i, tr in enumerate(path)}
            for step in [path[-1], *branches.get(episode, [])]:
                ended = step["won"] or (step["done"] and not step.get("truncated", False))
                if ended:
                    d, kind = (0, "won") if step["won"] else (None, "dead_end")
                    rows.append((step, step["next_observation"], d, kind))
                    paths.append((path[0]["observation"], [*path[: index[step["t"]]], step]))
    contexts = [render_context(tr["task"], tr["facts"], obs) for tr, obs, _, _ in rows]
    prompts = value_prompts(contexts)
    states = [
        {
            "prompt": prompt,
            "context": context,
            "label": int(d is not None and d <= within),
            "value": 0.0 if d is None else gamma**d,
            "steps": d,
            "episode": str(tr["episode"]),
            "t": int(tr["t"]),
            "kind": kind,
        }
        for (tr, _, d, kind), context, prompt in zip(rows, contexts, prompts, strict=True)
    ]
    if history:
        for state, (root, steps) in zip(states, paths, strict=True):
            state["root"] = root
            state["history"] = [_real_step(s) for s in steps]
    return states


def _real_step(step: dict[str, Any]) -> tuple[str, str, float, bool, bool, bool]:
    """``(action, observation, reward, won, lost, done)`` of a shard's transition or branch;
    lost: ended without winning, not by the step limit."""
    won, done = bool(step["won"]), bool(step["done"])
    lost = done and not won and not bool(step.get("truncated", False))
    return step["action"], step["next_observation"], float(step["reward"]), won, lost, done


def spearman(scores: Sequence[float], values: Sequence[float]) -> float:
    r"""Spearman's :math:`\rho`: the Pearson correlation of the ranks (ties share their mean
    rank); NaN when either side is constant or there are fewer than 2 points."""
    from scipy.stats import rankdata

    a, b = np.asarray(scores, dtype=float), np.asarray(values, dtype=float)
    if a.shape != b.shape:
        raise InvalidArgumentError(f"spearman: {a.size} scores for {b.size} values; one each")
    if a.size < 2:
        return float("nan")
    ra, rb = rankdata(a) - (a.size + 1) / 2, rankdata(b) - (b.size + 1) / 2
    den = math.sqrt(float(ra @ ra) * float(rb @ rb))
    return float(ra @ rb) / den if den > 0 else float("nan")


def rank_metrics(
    scores: Sequence[float], labels: Sequence[int], values: Sequence[float]
) -> dict[str, Any]:
    """``{"n", "positives", "auc", "spearman"}`` of scores against the binary labels (AUC;
    NaN with one class only) and the values (:func:`spearman`)."""
    labels = [int(y) for y in labels]
    both = 0 < sum(labels) < len(labels)
    return {
        "n": len(labels),
        "positives": sum(labels),
        "auc": auc(list(scores), labels) if both else float("nan"),
        "spearman": spearman(scores, values),
    }


def _out_of_fold(
    x: np.ndarray, y: np.ndarray, groups: list[str], c: float, folds: int, seed: int
) -> np.ndarray:
    """The out-of-fold logits of the logistic head with ``c`` (the cross-validation's folds)."""
    from sklearn.model_selection import GroupKFold

    from smcplan.train.critic_head import _logistic

    oof = np.zeros(len(y))
    for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
        scaler, clf = _logistic(x[train], y[train], c, seed)
        oof[test] = clf.decision_function(scaler.transform(x[test]))
    return oof


def train_value_head(
    shards: Sequence[str | Path],
    out: str | Path,
    *,
    model: str | None = None,
    adapter: str | None = None,
    within: int = 5,
    discount: float = 0.9,
    heldout: Sequence[str | Path] = (),
    max_examples: int | None = None,
    cs: Sequence[float] = DEFAULT_CS,
    folds: int = 5,
    batch: int = 4,
    threads: int | None = None,
    resume: bool = False,
    seed: int = 0,
    progress: bool = True,
    text_features: bool = False,
) -> dict[str, Any]:
    """Label, extract features, cross-validate and fit the value head (module docstring);
    ``text_features``: the head also reads :mod:`smcplan.llm.roles.text_features`' three
    benchmark-free columns after the hidden state's (every block of the cross-validation);
    writes ``<out>/examples.jsonl``, ``<out>/features.npz``, ``<out>/head`` and
    ``<out>/train.json`` and returns the manifest."""
    from smcplan.llm import load_model
    from smcplan.llm.roles.text_features import VERSION as TEXT_FEATURES
    from smcplan.llm.roles.text_features import text_features as _text_features
    from smcplan.llm.roles.value_head import VALUE_PREFIX, VALUE_ROLE

    if not shards:
        raise InvalidArgumentError(
            "value-head needs --data SHARD (a shard of finished episodes: `smcplan train "
            "collect --source oracle` or `--source gold`, with --branches for dead ends)"
        )
    if not cs or any(
        not isinstance(c, (int, float)) or isinstance(c, bool) or not c > 0 for c in cs
    ):
        raise InvalidArgumentError(
            f"C={list(cs)!r}: give a list of positive numbers, e.g. [0.01, 0.1]"
        )
    check_int(folds, "folds", minimum=2)
    t0 = time.perf_counter()
    read = [read_shard(p) for p in shards]
    examples = value_states(read, within, discount)
    examples, out = subsample_and_save(examples, max_examples, seed, out)
    labels = [ex["label"] for ex in examples]
    if len(set(labels)) < 2:
        raise InvalidArgumentError(
            f"{len(examples)} states with {sum(labels)} within {within} steps of success: the "
            "head needs both kinds; change within= or collect episodes that are won and lost"
        )
    lm = load_model(model, adapter=adapter, threads=threads)
    depth, width = int(lm.model.config.num_hidden_layers), int(lm.model.config.hidden_size)
    layers = (-1, depth // 2)
    feats, cached = _features(
        lm, examples, layers, out / "features.npz", resume, batch, progress,
        VALUE_PREFIX, "value-head features",
    )  # fmt: skip
    t_feat = time.perf_counter() - t0
    extra: list[int] = []
    if text_features:  # appended after the cache: the cached hidden features stay valid
        feats = np.hstack([feats, _text_features([ex["context"] for ex in examples])])
        extra = list(range(2 * width, feats.shape[1]))
    blocks = [list(range(width)) + extra, list(range(2 * width)) + extra]
    groups = [ex["episode"] for ex in examples]
    table = cross_validate(feats, labels, groups, blocks, cs, folds, seed)
    best = max(table, key=lambda r: (round(r["auc"], 12), -r["C"], -r["block"]))
    cols, chosen = blocks[best["block"]], layers[: best["block"] + 1]
    y = np.asarray(labels, dtype=int)
    oof = _out_of_fold(feats[:, cols], y, groups, best["C"], folds, seed)
    info = {
        "role": VALUE_ROLE,
        "model": model or "smollm2-135m",
        "adapter": adapter,
        "within": within,
        "discount": discount,
        "C": best["C"],
        "cv_auc": best["auc"],
        "folds": folds,
        **({"text_features": TEXT_FEATURES} if text_features else {}),
    }
    head = fit_head(feats[:, cols], labels, chosen, best["C"], seed, info)
    head.save(out / "head")
    held: dict[str, Any] | None = None
    if heldout:
        test = value_states([read_shard(p) for p in heldout], within, discount, history=True)
        hf, _ = _features(
            lm, test, layers, out / "heldout_features.npz", resume, batch, progress,
            VALUE_PREFIX, "value-head held-out features",
        )  # fmt: skip
        if text_features:
            hf = np.hstack([hf, _text_features([ex["context"] for ex in test])])
        scores = head.logits(hf[:, cols]).tolist()
        labels_t, values_t = [ex["label"] for ex in test], [ex["value"] for ex in test]
        rule = twist_log_psi(test, BASELINE_TWIST, env_kind="generic")
        held = {
            "shards": [str(p) for p in heldout],
            **rank_metrics(scores, labels_t, values_t),
            "baseline": {"twist": BASELINE_TWIST, **rank_metrics(rule, labels_t, values_t)},
            "against_baseline": compare_auc(scores, rule, test, seed=seed)
            if 0 < sum(labels_t) < len(labels_t)
            else None,
        }
    manifest = {
        "trainer": "value-head",
        "model": info["model"],
        "adapter": adapter,
        "weights": str(out / "head"),
        "examples": len(examples),
        "positives": sum(labels),
        "kinds": {k: sum(ex["kind"] == k for ex in examples) for k in ("path", "won", "dead_end")},
        "within": within,
        "discount": discount,
        "layers": list(chosen),
        "text_features": TEXT_FEATURES if text_features else None,
        "C": best["C"],
        "cv_auc": best["auc"],
        "cv_spearman": spearman(oof.tolist(), [ex["value"] for ex in examples]),
        "cv": [{**r, "layers": list(layers[: r["block"] + 1])} for r in table],
        "heldout": held,
        "features_cached": cached,
        "seconds_features": t_feat,
        "seconds": time.perf_counter() - t0,
        "seed": seed,
        "shards": [{"path": str(p), **r.header} for p, r in zip(shards, read, strict=True)],
    }
    write_json(out / "train.json", manifest)
    return manifest


def run(request: Any) -> dict[str, Any]:
    """``smcplan train value-head``: the registry entry; ``--opt`` keys ``within`` (k, default
    5), ``discount`` (:math:`\\gamma`, 0.9), ``heldout`` (a held-out shard, or a list),
    ``max_examples``,
    ``adapter``, ``C`` (the grid), ``folds`` (5), ``batch`` (4), ``threads``,
    ``text_features`` (bool, default false).  ``--max-steps``,
    ``--epochs``, ``--lr``, ``--batch-size`` and ``--save-steps`` do not apply (a convex fit;
    features are cached every 16 states): giving one is an error."""
    from smcplan.train.options import trainer_options
    from smcplan.train.registry import refuse_flags

    opts = trainer_options("value-head", request.options)
    refuse_flags(
        request,
        ("--max-steps", "--epochs", "--lr", "--batch-size", "--save-steps"),
        "value-head fits a logistic head (no optimizer steps); drop it, and use --opt C=[...] "
        "for the regularisation grid",
    )
    cs = opts.get("C", DEFAULT_CS)
    cs = [cs] if isinstance(cs, (int, float)) else cs
    heldout = opts.get("heldout") or []  # a list (trainer_options' text_list)
    return train_value_head(
        request.data,
        request.out,
        model=request.model,
        adapter=opts.get("adapter"),
        within=opts.get("within", 5),
        discount=opts.get("discount", 0.9),
        heldout=heldout,
        max_examples=opts.get("max_examples"),
        cs=cs,
        folds=opts.get("folds", 5),
        batch=opts.get("batch", 4),
        threads=opts.get("threads"),
        resume=request.resume,
        seed=request.seed,
        progress=request.progress,
        text_features=opts.get("text_features", False),
    )
