r"""GRPO-MR on a policy head over the frozen model (the CPU-sized RLVMR recipe).

The paper's RLVMR fine-tunes the whole model (cold-start SFT, then GRPO-MR on LoRA; on CPU one
iteration of :math:`G = 8` episodes of 25 steps is hours: :mod:`smcplan.train.grpo_mr`).  Here
the model is frozen and only a linear-softmax head over each step's candidate (tag, action)
pairs is learned (:class:`~smcplan.llm.roles.policy_head.PolicyHead`,
:math:`\pi_w(c \mid s) \propto \exp(w^\top z(s, c))`, :math:`z` the standardised hidden state
at the end of a short prompt + ``"tag: action"``):

1. **Cold start** (``data``: gold shards): the tagged gold steps
   (:func:`smcplan.train.rlvmr.annotate` via :func:`~smcplan.train.head_episodes.gold_steps`);
   :math:`\mu, \sigma` from their candidates' features; :math:`w_0` the L2-regularised
   maximum-likelihood fit
   (:func:`~smcplan.train.head_objective.fit_max_likelihood`).  Default ``l2`` = 1e-6: the
   critic head's cross-validated C = 1 on N ≈ 1,700 examples (sklearn's ½‖v‖² + C Σ loss on
   features without the 1/√d) is :math:`\lambda = 1/(C N d) \approx 5 \cdot 10^{-7}` in this
   parametrisation at d = 1,152.  Without data: :math:`w_0 = 0` (uniform over the
   candidates).  The cold-start head is the KL reference.
2. **Iterations**: for each task seed, :math:`G` episodes sampled from :math:`\pi_w`
   (temperature 1, seeds :func:`~smcplan.train.head_episodes.episode_rng`); advantages
   :math:`A_{i,t} = \alpha \hat A^{\text{outcome}}_i + (1 - \alpha) \hat A^{\text{tag}}_{i,t}`
   (:func:`smcplan.train.grpo_mr.grpo_mr_advantages`; :math:`\alpha = 1`: vanilla GRPO); one
   update over all groups of the iteration: ``epochs`` full-batch gradient steps on the clipped
   surrogate with an exact KL to the reference
   (:func:`~smcplan.train.head_objective.policy_update`); no backpropagation through the model.
3. **Checkpoints**: after iteration :math:`k`, ``checkpoints/iter-k/`` (the head and the
   iteration's metrics, :func:`smcplan.jsonfile.write_json`), the feature cache, then
   ``state.json`` (atomic) names it.  ``resume=True`` restarts from the last checkpoint that
   ``state.json`` names; an iteration killed half-way is replayed from its start, and every
   random draw is a function of (seed, iteration, task seed, episode), so a resumed run ends
   with the same head as an uninterrupted one.  Resuming with ``iterations`` below the
   completed count ends the run at that checkpoint (its head, its log).
4. **Map notes** (``map_notes=True``, off by default): each candidate's text also says what the
   agent's place map, read from the episode's real observations, says about its action
   (:mod:`smcplan.agents.map_notes`, as for the critic head), in the cold start, the rollouts
   and the held-out evaluation; the head records ``map_notes`` in its ``info`` and the RLVMR
   agent builds the same notes at play time.  A resumed run or an ``init_head`` must agree.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from smcplan.errors import InvalidArgumentError
from smcplan.jsonfile import write_json
from smcplan.llm.roles.policy_head import PolicyHead
from smcplan.train.head_cold_start import cold_start_head, standardised
from smcplan.train.head_config import HeadGRPOConfig
from smcplan.train.head_episodes import (
    episode_metrics,
    episode_rng,
    evaluate_head,
    group_batch,
    iteration_seeds,
    play_episode,
)
from smcplan.train.head_objective import make_batch, policy_update

__all__ = [
    "HeadGRPOConfig",
    "cold_start_head",
    "standardised",
    "train_grpo_mr_head",
    "run",
]

STATE = "state.json"


def _iteration(
    cfg: HeadGRPOConfig, it: int, env: Any, head: PolicyHead, ref: PolicyHead, features: Any
) -> tuple[PolicyHead, PolicyHead, dict[str, Any]]:
    """Play, score and update once; returns the new head, the reference (standardised in
    iteration 0 when it started uniform) and the iteration's metrics."""
    t0 = time.perf_counter()
    feats, chosen, adv, groups = [], [], [], {}
    for s in iteration_seeds(cfg.seeds, cfg.seeds_per_iteration, it):
        eps = [
            play_episode(env, s, head, features, episode_rng(cfg.seed, it, s, j), cfg.max_steps,
                         cfg.recent, 1.0, notes_rules(cfg), cfg.context)
            for j in range(cfg.group_size)
        ]  # fmt: skip
        f, k, a = group_batch(eps, cfg.alpha, cfg.eps, cfg.normalize)
        feats += f
        chosen += k
        adv += a
        groups[s] = eps
    if head.info.get("standardise") == "pending":  # w = 0 so far: the rollouts did not use it
        head = ref = standardised(head, np.concatenate(feats), "iteration 0's candidates")
    batch = make_batch(
        [head.standardise(f) for f in feats],
        chosen,
        adv,
        [float(head.log_probs(f)[k]) for f, k in zip(feats, chosen, strict=True)],
        [ref.log_probs(f) for f in feats],
    )
    w, stats = policy_update(
        head.weight, batch, cfg.learning_rate, cfg.epochs, cfg.clip_eps, cfg.kl_coef,
        cfg.max_grad_norm,
    )  # fmt: skip
    every = [e for eps in groups.values() for e in eps]
    metrics = {
        "iteration": it,
        **episode_metrics(every, cfg.tags),
        "won": {str(s): sum(e["won"] for e in eps) for s, eps in groups.items()},
        "advantage_abs_mean": float(np.mean(np.abs(adv))),
        "update": stats,
        "seconds": time.perf_counter() - t0,
    }
    return head.with_weight(w, iteration=it + 1), ref, metrics


def _start(cfg: HeadGRPOConfig, out: Path, features: Any) -> tuple[PolicyHead, PolicyHead, int]:
    """The reference head, the head to continue from and the first iteration to run."""
    state = out / STATE
    if cfg.resume and state.is_file():
        import json

        saved = json.loads((out / "config.json").read_text(encoding="utf-8"))
        differ = cfg.resume_differences(saved)
        if differ:
            raise InvalidArgumentError(
                f"resume: {', '.join(differ)} differ from the run in {out} "
                f"({', '.join(f'{k}={v!r}' for k, v in differ.items())}); give the same "
                "settings (only iterations may grow) or another --out"
            )
        done = json.loads(state.read_text(encoding="utf-8"))
        cache = getattr(features, "cache", None)
        if cache is not None and (out / "features.npz").is_file():
            cache.load(out / "features.npz")
        ref = PolicyHead.load(out / "reference")
        # iterations below those completed end the run there: its head is that checkpoint's
        stop = min(int(done["completed"]), cfg.iterations)
        if stop == 0:
            return ref, ref, 0
        return ref, PolicyHead.load(out / "checkpoints" / f"iter-{stop - 1:04d}" / "head"), stop
    layers = tuple(getattr(features, "layers", ()) or ())
    if cfg.init_head is not None:
        ref = PolicyHead.load(cfg.init_head)
        for key, default, now in (("map_notes", False, cfg.map_notes),
                                  ("context", "full", cfg.context)):  # fmt: skip
            was = ref.info.get(key, default)
            if was != now:
                shown = str(was).lower() if isinstance(was, bool) else was
                raise InvalidArgumentError(
                    f"{key}={now} but init_head {str(cfg.init_head)!r} was trained with "
                    f"{key}={was}: its weights read other texts; give --opt {key}={shown} "
                    "or a head trained with the same setting"
                )
    elif cfg.data:
        ref = cold_start_head(cfg.data, features, cfg.tags, cfg.l2, cfg.recent, layers,
                              cfg.l2_folds, cfg.map_notes, cfg.context)  # fmt: skip
    else:
        ref = PolicyHead.uniform(int(features.dim), cfg.tags, layers, standardise="pending")
    ref = ref.with_weight(ref.weight, features=getattr(features, "name", None), recent=cfg.recent,
                          map_notes=cfg.map_notes, context=cfg.context)  # fmt: skip
    write_json(out / "config.json", cfg.as_json())
    ref.save(out / "reference")
    return ref, ref, 0


def train_grpo_mr_head(
    config: HeadGRPOConfig,
    *,
    env: Any = None,
    features: Any = None,
    progress: bool = True,
    eval_env: Any = None,
) -> dict[str, Any]:
    """Run the recipe (module docstring); ``env`` (default ``envs.make(config.env)``) and
    ``features`` (default :class:`~smcplan.llm.roles.policy_head.LMFeatures` on
    ``load_model(config.model)``) may be given.  Writes ``<out>/reference``,
    ``<out>/checkpoints/iter-k``, ``<out>/state.json``, ``<out>/head`` and ``<out>/train.json``
    (the manifest, returned); with ``eval_seeds``, ``<out>/heldout-start.json`` (the starting
    head on them) and ``heldout`` in the metrics of the iterations evaluated.  ``eval_env``:
    the env of the held-out seeds (default: ``env`` when ``eval_split`` is unset)."""
    from tqdm.auto import tqdm

    from smcplan.interrupts import raise_if_stopped

    cfg = config.validated()
    out = Path(cfg.out)
    if (out / STATE).is_file() and not cfg.resume:
        raise InvalidArgumentError(
            f"{out} already holds a grpo-mr-head run ({STATE}); pass resume=True (--resume) "
            "to continue it, or give another --out"
        )
    out.mkdir(parents=True, exist_ok=True)
    own_env = env is None
    if features is None:
        from smcplan.llm import load_model
        from smcplan.llm.roles.policy_head import LMFeatures

        lm = load_model(cfg.model, threads=cfg.threads, seed=cfg.seed, prefix_cache=False)
        features = LMFeatures(lm, cfg.layers, starting_cache(cfg), cfg.batch)
    t0 = time.perf_counter()
    ref, head, first = _start(cfg, out, features)
    if first == 0 and getattr(features, "cache", None) is not None:
        features.cache.save(out / "features.npz")  # the cold start's features, kept
    if own_env:
        from smcplan import envs

        env = envs.make(cfg.env, **({"split": cfg.split} if cfg.split else {}))
    own_eval = bool(cfg.eval_seeds) and eval_env is None and cfg.eval_split not in (None, cfg.split)
    if own_eval:
        from smcplan import envs

        eval_env = envs.make(cfg.env, split=cfg.eval_split)
    elif eval_env is None:
        eval_env = env

    def heldout(h: PolicyHead) -> dict[str, Any]:
        return evaluate_head(h, eval_env, cfg.eval_seeds, features, cfg.max_steps, cfg.recent,
                             notes_rules(cfg), cfg.context)  # fmt: skip

    start_file = out / "heldout-start.json"
    if cfg.eval_seeds and not start_file.is_file():
        write_json(start_file, heldout(head))
    log = [_read_json(out / "checkpoints" / f"iter-{k:04d}" / "metrics.json") for k in range(first)]
    try:
        for it in tqdm(range(first, cfg.iterations), desc="grpo-mr-head", disable=not progress):
            raise_if_stopped()
            cache = getattr(features, "cache", None)
            before = (cache.hits, cache.misses) if cache is not None else (0, 0)
            head, new_ref, metrics = _iteration(cfg, it, env, head, ref, features)
            if new_ref is not ref:
                ref = new_ref
                ref.save(out / "reference")
            if cfg.eval_seeds and ((it + 1) % cfg.eval_every == 0 or it + 1 == cfg.iterations):
                metrics["heldout"] = heldout(head)
            if cache is not None:
                metrics["feature_cache"] = {
                    "hits": cache.hits - before[0],
                    "misses": cache.misses - before[1],
                }
            folder = out / "checkpoints" / f"iter-{it:04d}"
            head.save(folder / "head")
            write_json(folder / "metrics.json", metrics)
            if cache is not None:
                cache.save(out / "features.npz")
            write_json(
                out / STATE, {"completed": it + 1, "checkpoint": f"checkpoints/iter-{it:04d}"}
            )
            log.append(metrics)
    finally:
        if own_env:
            env.close()
        if own_eval:
            eval_env.close()
    head.save(out / "head")
    manifest = {
        "trainer": "grpo-mr-head",
        "weights": str(out / "head"),
        "reference": str(out / "reference"),
        "resumed_from": first or None,
        "iterations": cfg.iterations,
        "steps": sum(m["steps"] for m in log),
        "success_rate": [m["success_rate"] for m in log],
        "heldout_start": _read_json(start_file) if start_file.is_file() else None,
        "heldout_success_rate": {
            m["iteration"] + 1: m["heldout"]["success_rate"] for m in log if "heldout" in m
        },
        "seconds": time.perf_counter() - t0,
        "config": cfg.as_json(),
        "cold_start": ref.info.get("cold_start"),
        "log": log,
    }
    write_json(out / "train.json", manifest)
    return manifest


def notes_rules(cfg: HeadGRPOConfig) -> str | None:
    """What the rollouts read the place maps with when ``cfg.map_notes``: the env's name (the
    rules :func:`smcplan.games.rules_for` resolves, as the cold start's maps read the gold
    shards' env); ``None`` without notes."""
    return cfg.env if cfg.map_notes else None


def starting_cache(cfg: HeadGRPOConfig) -> Any:
    """The feature cache a run starts with: ``cfg.feature_cache``'s entries for a new run;
    empty for a resumed one, which loads its own ``features.npz`` (so the file a run started
    from need not outlive the machine)."""
    from smcplan.llm.roles.policy_head import FeatureCache

    cache = FeatureCache(cfg.cache_entries)
    if cfg.feature_cache is not None and not (cfg.resume and (Path(cfg.out) / STATE).is_file()):
        cache.load(cfg.feature_cache)
    return cache


def _read_json(path: Path) -> dict[str, Any]:
    import json

    return json.loads(path.read_text(encoding="utf-8"))


def run(request: Any) -> dict[str, Any]:
    """``smcplan train grpo-mr-head``: the registry entry.  ``--data`` gold shards for the cold
    start (optional), ``--lr`` the step size, ``--epochs`` the gradient steps per iteration,
    ``--resume``, ``--seed``; ``--opt`` keys: ``env``, ``seeds`` (list), ``split``,
    ``init_head``, ``group_size``, ``iterations`` (0: the cold start alone),
    ``seeds_per_iteration``, ``eval_seeds`` (list), ``eval_split``, ``eval_every``,
    ``max_episode_steps``, ``alpha``,
    ``vanilla`` (true: alpha = 1), ``eps``, ``normalize``, ``clip_eps``, ``kl_coef``,
    ``max_grad_norm``, ``l2`` (a list: chosen by cross-validation), ``l2_folds``,
    ``feature_cache`` (an ``.npz`` of features to start from), ``recent``, ``layers`` (list),
    ``threads``, ``batch``, ``cache_entries``, ``map_notes`` (true: each candidate carries its
    action's map note), ``context`` (full, or task: the state text is the task alone).
    ``--max-steps``, ``--batch-size`` and ``--save-steps`` do not apply."""
    from smcplan.train.options import trainer_options
    from smcplan.train.registry import refuse_flags

    opts = trainer_options("grpo-mr-head", request.options)
    refuse_flags(
        request,
        ("--max-steps", "--batch-size", "--save-steps"),
        "grpo-mr-head checkpoints every iteration and updates on the whole iteration; drop it "
        "(--opt iterations=N sets the length of the run)",
    )
    epochs = request.epochs or 10
    if epochs != int(epochs):
        raise InvalidArgumentError(
            f"--epochs {epochs}: the gradient steps per iteration; give an integer such as 10"
        )
    cfg = HeadGRPOConfig(
        out=Path(request.out),
        env=opts.get("env", "twx:coin"),
        seeds=tuple(opts.get("seeds", [0])),
        split=opts.get("split"),
        model=request.model,
        layers=tuple(opts["layers"]) if opts.get("layers") else None,
        data=tuple(Path(p) for p in request.data),
        init_head=Path(opts["init_head"]) if opts.get("init_head") else None,
        l2=tuple(opts["l2"]) if isinstance(opts.get("l2"), list) else opts.get("l2", 1e-6),
        l2_folds=opts.get("l2_folds", 5),
        feature_cache=Path(opts["feature_cache"]) if opts.get("feature_cache") else None,
        recent=opts.get("recent", 3),
        group_size=opts.get("group_size", 8),
        iterations=opts.get("iterations", 10),
        seeds_per_iteration=opts.get("seeds_per_iteration", 0),
        eval_seeds=tuple(opts.get("eval_seeds", [])),
        eval_split=opts.get("eval_split"),
        eval_every=opts.get("eval_every", 1),
        max_steps=opts.get("max_episode_steps", 25),
        alpha=1.0 if opts.get("vanilla") else opts.get("alpha", 0.5),
        eps=opts.get("eps", 1e-6),
        normalize=opts.get("normalize", "mean_std"),
        learning_rate=request.learning_rate or 0.5,
        epochs=int(epochs),
        clip_eps=opts.get("clip_eps", 0.2),
        kl_coef=opts.get("kl_coef", 0.01),
        max_grad_norm=opts.get("max_grad_norm", 1.0),
        threads=opts.get("threads"),
        seed=request.seed,
        resume=request.resume,
        cache_entries=opts.get("cache_entries", 50_000),
        batch=opts.get("batch", 16),
        map_notes=opts.get("map_notes", False),
        context=opts.get("context", "full"),
    )
    return train_grpo_mr_head(cfg, progress=request.progress)
