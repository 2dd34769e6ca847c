r"""A value head fitted on the choice the planner makes: sibling steps, labelled by rollouts.

``smcplan train value-siblings --data SHARD ... --opt labels=[LABELS ...]``.  With N = |A| and
H = 1 the planner compares the steps that each admissible action takes from one state, its
*siblings*, and keeps the one its twist values most.  A value head fitted on whole episodes
(:mod:`smcplan.train.value_head`) never sees that choice, and planned with it chose badly on
ALFWorld and WebShop (docs/train.md).  This trainer fits it on the choice itself:

1. **Steps and labels.**  Every transition and branch of the shards (``--branches`` shards),
   each labelled by :mod:`smcplan.train.rollout_labels` with :math:`\hat v(s, a)`, the share of
   M rollouts from its successor that win (1 / 0 exactly for a step that ends the episode).
2. **Text**: the step as the planner's ``learned`` twist reads it with such a head
   (:func:`smcplan.planning.twist_value.path_text`): the task, the real observation before the
   step (``obs_chars`` characters), ``> action`` and the first sentence of the reply: the
   real one, or with ``world_model`` the reply that learned world model imagines, the text the
   planner reads with it (:mod:`smcplan.train.imagined_replies`).
3. **Features**: the value heads' (last-token hidden state of the ``value`` prompt, last and
   middle layer; cached in ``<out>/features.npz``, ``--resume`` after a kill).
4. **Head**: a logistic regression on soft labels, :math:`\min_w \sum_i [\hat v_i \log
   \sigma(z_i) + (1 - \hat v_i) \log(1 - \sigma(z_i))] + \lVert w\rVert^2 / 2C` (each step is
   a positive weighted :math:`\hat v` and a negative weighted :math:`1 - \hat v`), ``C`` and the
   layer set chosen by grouped cross-validation (by episode) on **choice accuracy**: over the
   states whose siblings' labels differ, the share where the head's highest sibling has the
   highest label.  Reported beside it: chance (the share of highest-labelled siblings), the
   mean within-state Spearman :math:`\rho`, and the same on the ``heldout`` shards.

The head is saved with ``info["reads"] = "path"``: the planner's ``learned`` twist then renders
each particle's path, not its latest state.  Benchmark-free: any environment whose shards carry
branches and whose episodes replay.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from smcplan.errors import InvalidArgumentError, check_int
from smcplan.jsonfile import jsonl_line, write_json
from smcplan.train.critic_head import DEFAULT_CS, load_feature_cache, save_feature_cache
from smcplan.train.data import read_shard
from smcplan.train.imagined_replies import DEFAULT_REPLY_TOKENS, imagined_steps, state_groups
from smcplan.train.rollout_labels import read_labels

__all__ = ["sibling_steps", "choice_metrics", "fit_soft", "train_value_siblings", "run"]

#: characters of the root observation the head reads (a WebShop results page is ~870)
DEFAULT_OBS_CHARS = 1000


def sibling_steps(
    shards: Sequence[Any],
    labels: Sequence[dict],
    obs_chars: int = DEFAULT_OBS_CHARS,
    informative: bool = True,
    max_siblings: int | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """``{"context", "prompt", "value", "episode", "state", "action", "kind"}`` for every step
    of the read ``shards`` that its labels (:func:`~smcplan.train.rollout_labels.read_labels`,
    one dict per shard) label, grouped by ``state`` (the state the siblings share), the real
    step first.  ``informative``: only the states whose siblings' labels differ (the others
    say nothing about the choice, and :func:`choice_metrics` skips them; a state is named by
    its shard, episode and step, as two shards may play one episode seed); ``max_siblings``:
    at most that many steps a state, the real one and a seeded draw of the others."""
    from smcplan.llm.roles.value_head import value_prompts
    from smcplan.planning.twist_value import path_text

    if len(shards) != len(labels):
        raise InvalidArgumentError(
            f"labels: {len(labels)} label files for {len(shards)} shards; give one per --data "
            "shard, in the same order (`smcplan.train.rollout_labels.label_shard`)"
        )
    steps = []
    for k, (shard, lab) in enumerate(zip(shards, labels, strict=True)):
        for rec in [*shard.transitions, *shard.branches]:
            value = lab.get(rec["episode"], {}).get((int(rec["t"]), rec["action"]))
            if value is None:
                continue
            steps.append(
                {
                    "context": path_text(
                        rec["task"],
                        rec["observation"],
                        [(rec["action"], rec["next_observation"])],
                        obs_chars,
                    ),
                    "value": float(value),
                    "episode": str(rec["episode"]),
                    "state": f"{k}:{rec['episode']}@{int(rec['t'])}",
                    "action": rec["action"],
                    "kind": rec["kind"],
                    "task": rec["task"],
                    "facts": rec.get("facts") or [],
                    "observation": rec["observation"],
                }
            )
    if not steps:
        raise InvalidArgumentError(
            "no labelled step: the label files name none of the shards' episodes; label the "
            "same shards (smcplan.train.rollout_labels.label_shard)"
        )
    steps.sort(key=lambda s: (s["state"], s["kind"] != "transition", s["action"]))
    if informative or max_siblings is not None:
        steps = _select(steps, informative, max_siblings, seed)
    for step, prompt in zip(steps, value_prompts([s["context"] for s in steps]), strict=True):
        step["prompt"] = prompt
    return steps


def _select(
    steps: list[dict[str, Any]], informative: bool, max_siblings: int | None, seed: int
) -> list[dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for step in steps:
        groups.setdefault(step["state"], []).append(step)
    rng = random.Random(seed)
    out = []
    for group in groups.values():
        values = [s["value"] for s in group]
        if informative and max(values) - min(values) <= 1e-12:
            continue
        if max_siblings is not None and len(group) > max_siblings:
            group = [group[0], *rng.sample(group[1:], max_siblings - 1)]
        out += group
    return out


def sibling_features(
    lm: Any, steps: list[dict[str, Any]], layers: tuple[int, ...], cache: Path, resume: bool,
    progress: bool = True, every: int = 20,
) -> tuple[np.ndarray, int]:  # fmt: skip
    """The value heads' features of every step, the siblings of one state in one pass over
    their shared prefix (:func:`~smcplan.llm.roles.score_head.hidden_features` with
    ``share_prefix``); ``steps`` grouped by state (as :func:`sibling_steps` orders them).
    Written to ``cache`` every ``every`` states; ``resume`` continues a cache of the same
    steps.  Returns the features and how many rows came from the cache."""
    from smcplan.interrupts import raise_if_stopped
    from smcplan.llm.roles.score_head import hidden_features
    from smcplan.llm.roles.value_head import VALUE_PREFIX

    done = load_feature_cache(cache, layers, len(steps), resume, "steps")
    cached = len(done)
    groups = state_groups(steps)
    rows = [done] if cached else []
    n = cached
    todo = [g for g in groups if g[0] >= cached]
    if any(g[0] < cached < g[-1] + 1 for g in groups):
        raise InvalidArgumentError(f"{cache}: the cache ends inside a state; start without resume")
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(steps), initial=cached, desc="value-siblings features", unit="ex")
    for k, g in enumerate(todo):
        raise_if_stopped()
        prompts = [steps[i]["prompt"] for i in g]
        rows.append(hidden_features(lm, prompts, layers, VALUE_PREFIX, len(g), share_prefix=True))
        n += len(g)
        if (k + 1) % every == 0 or k == len(todo) - 1:
            save_feature_cache(cache, np.concatenate(rows), layers, len(steps))
        if bar is not None:
            bar.update(len(g))
    if bar is not None:
        bar.close()
    feats = np.concatenate(rows) if rows else np.zeros((0, 0))
    return feats, cached


def choice_metrics(
    scores: Sequence[float], values: Sequence[float], states: Sequence[str]
) -> dict[str, Any]:
    """Over the states whose siblings' labels differ: ``choice_accuracy`` (the head's highest
    sibling has the highest label; a tie of m siblings at the head's top counts the share of
    them that do), ``chance`` (the mean share of highest-labelled siblings), ``regret`` (the
    mean of the best label minus the chosen one), ``spearman`` (the mean within-state
    :math:`\\rho`); ``states`` counts them."""
    from smcplan.train.value_head import spearman

    groups: dict[str, list[int]] = {}
    for i, s in enumerate(states):
        groups.setdefault(s, []).append(i)
    acc, chance, regret, rho = [], [], [], []
    for idx in groups.values():
        v = np.asarray([values[i] for i in idx])
        z = np.asarray([scores[i] for i in idx])
        if len(idx) < 2 or v.max() - v.min() <= 1e-12:
            continue
        best = np.isclose(v, v.max(), rtol=0.0, atol=1e-12)
        top = np.isclose(z, z.max(), rtol=0.0, atol=1e-12)
        acc.append(float(best[top].mean()))
        chance.append(float(best.mean()))
        regret.append(float(v.max() - v[top].mean()))
        r = spearman(z.tolist(), v.tolist())
        if np.isfinite(r):
            rho.append(r)
    mean = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731
    return {
        "states": len(acc),
        "choice_accuracy": mean(acc),
        "chance": mean(chance),
        "regret": mean(regret),
        "spearman": mean(rho),
    }


def fit_soft(x: np.ndarray, values: np.ndarray, c: float, seed: int = 0) -> tuple[Any, Any]:
    """The standardiser and the logistic regression fitted on soft labels ``values`` in [0, 1]
    (module docstring, step 4)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    v = np.clip(np.asarray(values, dtype=float), 0.0, 1.0)
    scaler = StandardScaler().fit(x)
    scaler.scale_ = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    z = scaler.transform(x)
    xx = np.vstack([z, z])
    yy = np.concatenate([np.ones(len(v)), np.zeros(len(v))])
    ww = np.concatenate([v, 1.0 - v])
    keep = ww > 0
    if len(set(yy[keep].tolist())) < 2:
        raise InvalidArgumentError(
            "labels: every step is valued 0 (or every one 1); the head needs both: label more "
            "rollouts or collect episodes that are won"
        )
    clf = LogisticRegression(C=c, max_iter=10000, random_state=seed)
    clf.fit(xx[keep], yy[keep], sample_weight=ww[keep])
    return scaler, clf


def _cv(
    feats: np.ndarray, steps: list[dict], blocks: list[list[int]], cs: Sequence[float],
    folds: int, seed: int,
) -> list[dict[str, Any]]:  # fmt: skip
    from sklearn.model_selection import GroupKFold

    values = np.asarray([s["value"] for s in steps])
    groups = [s["episode"] for s in steps]
    states = [s["state"] for s in steps]
    if len(set(groups)) < folds:
        raise InvalidArgumentError(
            f"folds={folds}: only {len(set(groups))} episodes; lower folds or collect more"
        )
    splits = list(GroupKFold(n_splits=folds).split(feats, values, groups))
    rows = []
    for k, cols in enumerate(blocks):
        x = feats[:, cols]
        for c in cs:
            oof = np.zeros(len(values))
            for train, test in splits:
                scaler, clf = fit_soft(x[train], values[train], c, seed)
                oof[test] = clf.decision_function(scaler.transform(x[test]))
            rows.append({"block": k, "C": float(c), **choice_metrics(oof, values, states)})
    return rows


def train_value_siblings(
    shards: Sequence[str | Path],
    labels: Sequence[str | Path],
    out: str | Path,
    *,
    model: str | None = None,
    adapter: str | None = None,
    heldout: Sequence[str | Path] = (),
    heldout_labels: Sequence[str | Path] = (),
    obs_chars: int = DEFAULT_OBS_CHARS,
    max_states: int | None = None,
    max_siblings: int | None = None,
    world_model: str | None = None,
    world_model_tokens: int = DEFAULT_REPLY_TOKENS,
    cs: Sequence[float] = DEFAULT_CS,
    folds: int = 5,
    threads: int | None = None,
    resume: bool = False,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Label-read, featurise, cross-validate and fit (module docstring); writes
    ``<out>/examples.jsonl``, ``<out>/features.npz``, ``<out>/head``, ``<out>/train.json``."""
    from smcplan.llm import load_model
    from smcplan.llm.roles.score_head import ScoreHead
    from smcplan.llm.roles.value_head import VALUE_ROLE

    if not shards:
        raise InvalidArgumentError(
            "value-siblings needs --data SHARD (collected with --branches) and --opt labels=[...]"
        )
    obs_chars = check_int(obs_chars, "obs_chars", minimum=20)
    check_int(folds, "folds", minimum=2)
    if len(heldout) != len(heldout_labels):
        raise InvalidArgumentError(
            f"heldout_labels: {len(heldout_labels)} files for {len(heldout)} heldout shards; "
            "give one per shard, in the same order"
        )
    t0 = time.perf_counter()
    read = [read_shard(p) for p in shards]
    for name, files in (("labels", labels), ("heldout_labels", heldout_labels)):
        for p in files:
            if not Path(p).is_file():
                raise InvalidArgumentError(
                    f"{name}: {str(p)!r} is not a file; write it with "
                    "smcplan.train.rollout_labels.label_shard"
                )
    if max_siblings is not None:
        check_int(max_siblings, "max_siblings", minimum=2)
    if world_model is not None:  # refused before any work, not after the labels are read
        from smcplan.llm.artifacts import resolve_artifact

        resolve_artifact(world_model, "world_model")
        check_int(world_model_tokens, "world_model_tokens", minimum=1)
    steps = sibling_steps(
        read, [read_labels(p) for p in labels], obs_chars, True, max_siblings, seed
    )
    if max_states is not None:
        names = sorted({s["state"] for s in steps})
        check_int(max_states, "max_states", minimum=1)
        if len(names) > max_states:
            kept = set(random.Random(seed).sample(names, max_states))
            steps = [s for s in steps if s["state"] in kept]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if world_model is not None:  # the text the planner reads with a learned world model
        steps = imagined_steps(steps, world_model, out / "replies.jsonl", world_model_tokens,
                               threads, resume, progress, obs_chars)  # fmt: skip
    with open(out / "examples.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(jsonl_line(s) for s in steps)
    lm = load_model(model, adapter=adapter, threads=threads)
    depth, width = int(lm.model.config.num_hidden_layers), int(lm.model.config.hidden_size)
    layers = (-1, depth // 2)
    feats, cached = sibling_features(lm, steps, layers, out / "features.npz", resume, progress)
    t_feat = time.perf_counter() - t0
    blocks = [list(range(width)), list(range(2 * width))]
    table = _cv(feats, steps, blocks, cs, folds, seed)
    best = max(table, key=lambda r: (round(r["choice_accuracy"], 12), -r["C"], -r["block"]))
    cols, chosen = blocks[best["block"]], layers[: best["block"] + 1]
    values = np.asarray([s["value"] for s in steps])
    scaler, clf = fit_soft(feats[:, cols], values, best["C"], seed)
    info = {
        "role": VALUE_ROLE,
        "reads": "path",
        "obs_chars": obs_chars,
        "labels": "rollouts",
        "replies": world_model or "real",
        "model": model or "smollm2-135m",
        "adapter": adapter,
        "C": best["C"],
        "cv_choice_accuracy": best["choice_accuracy"],
        "folds": folds,
    }
    head = ScoreHead(
        tuple(chosen), scaler.mean_, scaler.scale_, clf.coef_[0], float(clf.intercept_[0]), info
    )
    head.save(out / "head")
    held = None
    if heldout:
        test = sibling_steps(
            [read_shard(p) for p in heldout], [read_labels(p) for p in heldout_labels], obs_chars,
            True, None, seed,
        )  # fmt: skip
        if world_model is not None:
            test = imagined_steps(
                test, world_model, out / "heldout_replies.jsonl", world_model_tokens, threads,
                resume, progress, obs_chars,
            )  # fmt: skip
        hf, _ = sibling_features(lm, test, layers, out / "heldout_features.npz", resume, progress)
        scores = head.logits(hf[:, cols]).tolist()
        held = {
            "shards": [str(p) for p in heldout],
            "steps": len(test),
            **choice_metrics(scores, [s["value"] for s in test], [s["state"] for s in test]),
        }
    manifest = {
        "trainer": "value-siblings",
        "model": info["model"],
        "adapter": adapter,
        "weights": str(out / "head"),
        "examples": len(steps),
        "states": len({s["state"] for s in steps}),
        "mean_value": float(values.mean()),
        "layers": list(chosen),
        "C": best["C"],
        "cv": [{**r, "layers": list(layers[: r["block"] + 1])} for r in table],
        "heldout": held,
        "obs_chars": obs_chars,
        "replies": world_model or "real",
        "features_cached": cached,
        "seconds_features": t_feat,
        "seconds": time.perf_counter() - t0,
        "seed": seed,
        "shards": [{"path": str(p), **r.header} for p, r in zip(shards, read, strict=True)],
        "labels": [str(p) for p in labels],
        "summary": f"{len(steps)} examples, cross-validated choice accuracy "
        f"{best['choice_accuracy']:.3f} (chance {best['chance']:.3f})",
    }
    write_json(out / "train.json", manifest)
    return manifest


def run(request: Any) -> dict[str, Any]:
    """``smcplan train value-siblings``: ``--opt`` keys ``labels`` (one label file per --data
    shard), ``heldout`` and ``heldout_labels`` (likewise), ``obs_chars`` (1000),
    ``max_states`` (a seeded draw of states, each with all its siblings), ``max_siblings``
    (at most that many steps a training state: the real one and a seeded draw), ``world_model``
    (fit on that learned world model's greedy replies, :mod:`smcplan.train.imagined_replies`)
    and ``world_model_tokens`` (32), ``adapter``, ``C``
    (the grid), ``folds`` (5), ``threads``.  The optimizer flags do not apply (a convex fit):
    giving one is an error."""
    from smcplan.train.options import trainer_options
    from smcplan.train.registry import refuse_flags

    opts = trainer_options("value-siblings", request.options)
    refuse_flags(
        request,
        ("--max-steps", "--epochs", "--lr", "--batch-size", "--save-steps"),
        "value-siblings fits a logistic head (no optimizer steps); drop it, and use "
        "--opt C=[...] for the regularisation grid",
    )
    cs = opts.get("C", DEFAULT_CS)
    cs = [cs] if isinstance(cs, (int, float)) else cs
    return train_value_siblings(
        request.data,
        opts.get("labels") or [],
        request.out,
        model=request.model,
        adapter=opts.get("adapter"),
        heldout=opts.get("heldout") or [],
        heldout_labels=opts.get("heldout_labels") or [],
        obs_chars=opts.get("obs_chars", DEFAULT_OBS_CHARS),
        max_states=opts.get("max_states"),
        max_siblings=opts.get("max_siblings"),
        world_model=opts.get("world_model"),
        world_model_tokens=opts.get("world_model_tokens", DEFAULT_REPLY_TOKENS),
        cs=cs,
        folds=opts.get("folds", 5),
        threads=opts.get("threads"),
        resume=request.resume,
        seed=request.seed,
        progress=request.progress,
    )
