r"""Monte Carlo labels for every step of a shard: how often random rollouts from its successor win.

A value head read at H = 1 compares *siblings*, the states each admissible action leads to from
one state; a head fitted on whole episodes labelled by their outcome never sees that choice
(docs/train.md, "ALFWorld-engine pick_and_place: the value head and the planner").  A shard
collected with ``--branches`` holds the siblings, but nobody played on from a branch, so it has
no label.  This module gives every transition and branch of a shard one, from the simulator:

.. math:: \hat v(s, a) = \frac{1}{M} \sum_{m=1}^{M}
   [\text{rollout } m \text{ from } s' \text{ wins}], \qquad s' = \mathrm{step}(s, a),

the share of ``rollouts`` M rollouts of at most ``rollout_steps`` R steps that win, each from its
own ``clone()`` of the successor :math:`s'`, with the ``untried`` policy of the ``env`` twist's
rollouts (:class:`smcplan.planning.twist_env.EnvProgress`: a uniform draw among the actions not
yet tried at that page in this rollout) or ``uniform``.  A step that ends the episode is
labelled exactly: 1 when it wins, 0 when it ends otherwise.  :math:`\hat v` is an unbiased
estimate of the rollout policy's probability of success from :math:`s'`, TSMC's optimal twist
for that policy (Zhao et al. 2024); its standard error is at most :math:`1/(2\sqrt M)`.

The shard's episodes are **replayed** (reset with the episode's seed, the recorded actions
stepped in order), so the environment must be deterministic given the seed: every replayed
observation is compared with the shard's, and a difference is refused
(:class:`~smcplan.train.collect.CollectError`) rather than labelled.  The labels are written to
``out`` (JSONL, one row per step: ``episode``, ``t``, ``kind``, ``action``, ``value``, ``wins``,
``rollouts``), one episode at a time, so ``resume=True`` skips the episodes already there.
Benchmark-free: any environment with ``reset(seed)``, ``step`` and ``clone()``.

``smcplan train rollout-labels --data SHARD ... --out DIR`` labels each shard into
``DIR/<shard name>.labels.jsonl`` (:func:`labels_path`) with the env and settings of its header;
``--resume`` goes on after a kill.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smcplan.errors import InvalidArgumentError, check_int
from smcplan.jsonfile import jsonl_line
from smcplan.planning.config import ROLLOUT_POLICIES
from smcplan.train.collect import CollectError
from smcplan.train.data import read_shard

__all__ = ["rollout_win", "label_shard", "read_labels", "labels_path", "run"]


def rollout_win(
    env: Any, observation: str, actions: Sequence[str], rng: random.Random, steps: int,
    policy: str = "untried",
) -> bool:  # fmt: skip
    """Whether one rollout of at most ``steps`` steps on ``env`` (consumed) wins, starting at
    ``observation`` with admissible ``actions`` (module docstring's policies)."""
    tried: dict[tuple[str, tuple[str, ...]], set[str]] = {}
    actions = list(actions)
    for _ in range(steps):
        if not actions:
            actions = list(env.admissible_actions())
        if not actions:
            return False
        pool = actions
        if policy == "untried":
            here = tried.setdefault((observation, tuple(actions)), set())
            pool = [a for a in actions if a not in here] or actions
            action = pool[rng.randrange(len(pool))]
            here.add(action)
        else:
            action = pool[rng.randrange(len(pool))]
        observation, _reward, done, info = env.step(action)
        info = dict(info or {})
        if done:
            return bool(info.get("won", False))
        actions = list(info.get("admissible_actions") or ())
    return False


def _successor_value(
    twin: Any, result: Any, rollouts: int, steps: int, policy: str, rng: random.Random
) -> tuple[float, int]:
    nxt, _reward, done, info = result
    info = dict(info or {})
    if done:
        return float(bool(info.get("won", False))), 0
    actions = list(info.get("admissible_actions") or twin.admissible_actions())
    wins = 0
    for _ in range(rollouts):
        copy = twin.clone()
        try:
            wins += rollout_win(copy, nxt, actions, rng, steps, policy)
        finally:
            copy.close()
    return wins / rollouts, wins


def label_shard(
    shard: str | os.PathLike[str],
    env: str,
    out: str | os.PathLike[str],
    *,
    env_kwargs: dict[str, Any] | None = None,
    rollouts: int = 32,
    rollout_steps: int = 10,
    policy: str = "untried",
    seed: int = 0,
    resume: bool = False,
) -> dict[str, Any]:
    """Label every transition and branch of ``shard`` (module docstring) and append the rows to
    ``out``; returns ``{"episodes", "skipped", "rows", "seconds"}``."""
    from smcplan import envs

    rollouts = check_int(rollouts, "rollouts", minimum=1)
    rollout_steps = check_int(rollout_steps, "rollout_steps", minimum=1)
    if policy not in ROLLOUT_POLICIES:
        raise InvalidArgumentError(
            f"policy={policy!r}: the rollout policy is one of {', '.join(ROLLOUT_POLICIES)}"
        )
    read = read_shard(shard)
    kwargs = dict(env_kwargs or {})
    if not kwargs and read.header.get("env_kwargs"):
        kwargs = dict(read.header["env_kwargs"])
    path = Path(out)
    done_ids = set(read_labels(path)) if resume and path.is_file() else set()
    if path.exists() and not resume:
        raise InvalidArgumentError(f"out={str(path)!r} exists; pass resume=True or remove it")
    episodes: dict[str, list[dict[str, Any]]] = {}
    for tr in read.transitions:
        episodes.setdefault(tr["episode"], []).append(tr)
    branches: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for br in read.branches:
        branches.setdefault((br["episode"], int(br["t"])), []).append(br)
    handle_env = envs.make(env, **kwargs)
    if not callable(getattr(handle_env, "clone", None)):
        handle_env.close()
        raise InvalidArgumentError(f"env={env!r} cannot clone itself; rollouts need clone()")
    t0, rows, played = time.perf_counter(), 0, 0
    try:
        with open(path, "a", encoding="utf-8") as handle:
            for episode, transitions in episodes.items():
                if episode in done_ids:
                    continue
                transitions.sort(key=lambda r: int(r["t"]))
                lines: list[str] = []
                ep_seed = int(transitions[0]["seed"])
                rng = random.Random(seed * 1_000_003 + ep_seed)
                obs, _info = handle_env.reset(ep_seed)
                for tr in transitions:
                    if obs != tr["observation"]:
                        raise CollectError(
                            f"{episode} t={tr['t']}: the replayed observation differs from the "
                            f"shard's; {env!r} is not deterministic given the seed (or the shard "
                            "was collected with other env settings): it cannot be labelled"
                        )
                    for rec in [tr, *branches.get((episode, int(tr["t"])), [])]:
                        twin = handle_env.clone()
                        try:
                            result = twin.step(rec["action"])
                            if result[0] != rec["next_observation"]:
                                raise CollectError(
                                    f"{episode} t={tr['t']} {rec['action']!r}: the replayed "
                                    "reply differs from the shard's; the env is not deterministic"
                                )
                            value, wins = _successor_value(
                                twin, result, rollouts, rollout_steps, policy, rng
                            )
                        finally:
                            twin.close()
                        lines.append(
                            jsonl_line(
                                {
                                    "episode": episode,
                                    "t": int(tr["t"]),
                                    "kind": rec["kind"],
                                    "action": rec["action"],
                                    "value": value,
                                    "wins": wins,
                                    "rollouts": 0 if result[2] else rollouts,
                                }
                            )
                        )
                    obs = handle_env.step(tr["action"])[0]
                rows, played = rows + len(lines), played + 1
                lines.append(jsonl_line({"episode": episode, "end": True}))
                handle.write("".join(lines))  # one episode at a time: a kill loses one at most
                handle.flush()
    finally:
        handle_env.close()
    return {
        "episodes": played,
        "skipped": len(done_ids & set(episodes)),
        "rows": rows,
        "seconds": time.perf_counter() - t0,
    }


def read_labels(path: str | os.PathLike[str]) -> dict[str, dict[tuple[int, str], float]]:
    """``{episode: {(t, action): value}}`` of the finished episodes of a labels file (each ends
    with an ``{"episode", "end": true}`` row; an episode torn by a kill is left out and
    relabelled on resume)."""
    rows: dict[str, dict[tuple[int, str], float]] = {}
    finished: set[str] = set()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line
            if row.get("end"):
                finished.add(row["episode"])
            else:
                key = (int(row["t"]), row["action"])
                rows.setdefault(row["episode"], {})[key] = float(row["value"])
    return {ep: rows.get(ep, {}) for ep in finished}


def labels_path(out: str | os.PathLike[str], shard: str | os.PathLike[str]) -> Path:
    """Where ``smcplan train rollout-labels --out OUT`` writes the labels of ``shard``."""
    return Path(out) / (Path(shard).name.removesuffix(".jsonl") + ".labels.jsonl")


def run(request: Any) -> dict[str, Any]:
    """``smcplan train rollout-labels``: every ``--data`` shard labelled into
    :func:`labels_path`; ``--opt`` keys ``rollouts`` (M, 32), ``rollout_steps`` (R, 10),
    ``policy`` (``untried``), ``env`` (default: the shard header's).  ``--seed`` seeds the
    rollouts; the optimizer flags do not apply."""
    from smcplan.jsonfile import write_json
    from smcplan.train.options import trainer_options
    from smcplan.train.registry import refuse_flags

    opts = trainer_options("rollout-labels", request.options)
    refuse_flags(
        request,
        ("--max-steps", "--epochs", "--lr", "--batch-size", "--save-steps"),
        "rollout-labels plays rollouts (no training); drop it, and use --opt rollouts=M",
    )
    if not request.data:
        raise InvalidArgumentError(
            "rollout-labels needs --data SHARD (collected with --branches: `smcplan train "
            "collect ... --branches all`)"
        )
    names = [Path(p).name for p in request.data]
    if len(set(names)) < len(names):
        raise InvalidArgumentError(
            f"--data: two shards share a file name ({', '.join(names)}); their labels would "
            "share DIR/<name>.labels.jsonl: rename one"
        )
    out = Path(request.out)
    out.mkdir(parents=True, exist_ok=True)
    t0, rows = time.perf_counter(), []
    for shard in request.data:
        env = opts.get("env") or read_shard(shard).header.get("env")
        if not env:
            raise InvalidArgumentError(f"{shard}: the header names no env; pass --opt env=NAME")
        target = labels_path(out, shard)
        result = label_shard(
            shard, env, target, rollouts=opts.get("rollouts", 32),
            rollout_steps=opts.get("rollout_steps", 10), policy=opts.get("policy", "untried"),
            seed=request.seed, resume=request.resume or not target.exists(),
        )  # fmt: skip
        rows.append({"shard": str(shard), "labels": str(target), "env": env, **result})
    manifest = {
        "trainer": "rollout-labels",
        "rollouts": opts.get("rollouts", 32),
        "rollout_steps": opts.get("rollout_steps", 10),
        "policy": opts.get("policy", "untried"),
        "seed": request.seed,
        "shards": rows,
        "seconds": time.perf_counter() - t0,
        "summary": f"{sum(r['rows'] for r in rows)} steps labelled in {len(rows)} shard(s)",
    }
    write_json(out / "train.json", manifest)
    return manifest
