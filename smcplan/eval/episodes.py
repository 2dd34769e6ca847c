"""Which episodes a sweep runs: explicit seeds, or a named split of ``smcplan.envs.splits``.

An episode is one ``(env name, task label, seed, env kwargs)``: the harness builds the
environment with ``smcplan.envs.make(env, **env_kwargs)`` and calls ``reset(seed)``. Its id is
derived from those values (not from its position), so a rerun with more episodes or other seeds
keeps every finished episode and its per-episode agent seed.

Imports ``smcplan.envs.splits`` lazily (only to resolve a named split); nothing else.
"""

from __future__ import annotations

import importlib
import json
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from smcplan.eval.records import slug
from smcplan.options import seed_list as checked_seeds

__all__ = ["EpisodeSpec", "resolve_episodes", "split_entries", "episode_seed"]


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of a sweep."""

    env: str
    seed: int
    task: str | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)

    @property
    def id(self) -> str:
        """File-name-safe id, e.g. ``twx_coin-s17`` or ``scienceworld_boil-var3-s3``."""
        parts = [slug(self.env)]
        if (
            self.task and self.task != self.env.split(":", 1)[-1]
        ):  # twx:coin's task "coin" is implied
            parts.append(slug(self.task))
        parts.append(f"s{self.seed}")
        if self.env_kwargs:
            blob = json.dumps(self.env_kwargs, sort_keys=True, default=str)
            parts.append(f"k{zlib.crc32(blob.encode()):08x}")
        return "-".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "task": self.task,
            "seed": self.seed,
            "env_kwargs": dict(self.env_kwargs),
        }


def episode_seed(run_seed: int, episode_id: str) -> int:
    """The per-episode seed for agent and global RNGs: a hash of (run seed, episode id).

    Independent of the episode's position and of which episodes ran before, so a resumed sweep
    makes the same choices as an uninterrupted one.
    """
    ss = np.random.SeedSequence([int(run_seed) & 0xFFFFFFFF, zlib.crc32(episode_id.encode())])
    return int(ss.generate_state(1)[0] & 0x7FFFFFFF)


def _coerce_entry(entry: Any) -> EpisodeSpec:
    """Accept an ``EpisodeSpec``-like object, a mapping, or an ``(env, task, seed)`` tuple."""
    if isinstance(entry, EpisodeSpec):
        return entry
    if isinstance(entry, dict):
        data = dict(entry)
    elif isinstance(entry, tuple | list) and len(entry) in (3, 4):
        data = dict(zip(("env", "task", "seed", "env_kwargs"), entry, strict=False))
    else:
        data = {
            k: getattr(entry, k)
            for k in ("env", "task", "seed", "variation", "env_kwargs", "kwargs")
            if hasattr(entry, k)
        }
    if "seed" not in data and "variation" in data:
        data["seed"] = data.pop("variation")
    kwargs = data.get("env_kwargs") or data.get("kwargs") or {}
    if "env" not in data or "seed" not in data:
        raise ValueError(f"split entry {entry!r} has no env or seed")
    task = data.get("task")
    return EpisodeSpec(
        env=str(data["env"]),
        seed=int(data["seed"]),
        task=None if task is None else str(task),
        env_kwargs=dict(kwargs),
    )


def split_entries(split: str) -> list[EpisodeSpec]:
    """All entries of the named split from ``smcplan.envs.splits`` (``get_split(name)``)."""
    try:
        splits = importlib.import_module("smcplan.envs.splits")
    except ModuleNotFoundError as exc:
        if exc.name not in ("smcplan.envs.splits", "smcplan.envs"):
            raise
        raise ValueError(
            f"split {split!r} needs smcplan.envs.splits, which is not available; "
            "pass explicit seeds instead (--seeds 0,1,2)"
        ) from exc
    return [_coerce_entry(e) for e in splits.get_split(split)]


def _matches(pattern: str, env: str) -> bool:
    """``twx:coin`` matches itself; ``twx`` (no colon) matches every ``twx:*`` env."""
    return env == pattern or (":" not in pattern and env.split(":", 1)[0] == pattern)


def resolve_episodes(
    envs: Sequence[str],
    *,
    split: str | None = None,
    seeds: Iterable[int] | None = None,
    episodes: int | None = None,
    env_kwargs: dict[str, Any] | None = None,
    entries: Sequence[Any] | None = None,
) -> list[EpisodeSpec]:
    """The sweep: per env, explicit ``seeds`` or the split's entries, the first ``episodes`` of
    each.

    With ``seeds`` every env in ``envs`` is paired with every seed. With ``split`` the split's
    entries whose env matches one of ``envs`` (a bare prefix such as ``twx`` matches all its games)
    are taken in split order. ``env_kwargs`` are added to every episode's kwargs; one that conflicts
    with a split entry's own kwargs raises. ``entries`` replaces the split lookup (tests).
    """
    if not envs:
        raise ValueError("no env given; e.g. --env twx:coin")
    if episodes is not None and episodes <= 0:
        raise ValueError(f"episodes must be positive, got {episodes}")
    extra = dict(env_kwargs or {})
    specs: list[EpisodeSpec] = []
    if seeds is not None:
        seed_list = checked_seeds(seeds, "seeds")  # counted before expanded; ints <= MAX_SEED
        if not seed_list:
            raise ValueError("empty seed list")
        for env in envs:
            chosen = seed_list[:episodes] if episodes else seed_list
            specs.extend(EpisodeSpec(env=env, seed=s, env_kwargs=extra) for s in chosen)
    else:
        if split is None:
            raise ValueError("give a split (--split dev) or explicit seeds (--seeds 0,1,2)")
        all_entries = (
            [_coerce_entry(e) for e in entries] if entries is not None else split_entries(split)
        )
        for env in envs:
            picked = [e for e in all_entries if _matches(env, e.env)]
            if not picked:
                known = sorted({e.env for e in all_entries})
                raise ValueError(
                    f"no entry for env {env!r} in split {split!r}; known: {', '.join(known)}"
                )
            if episodes:  # at most `episodes` per env (a prefix covers several envs)
                taken: Counter[str] = Counter()
                kept = []
                for e in picked:
                    if taken[e.env] < episodes:
                        kept.append(e)
                        taken[e.env] += 1
                picked = kept
            for e in picked:
                clash = {k for k in extra if k in e.env_kwargs and e.env_kwargs[k] != extra[k]}
                if clash:
                    raise ValueError(
                        f"env kwargs {sorted(clash)} conflict with split {split!r} entry {e.id}"
                    )
                specs.append(EpisodeSpec(e.env, e.seed, e.task, {**e.env_kwargs, **extra}))
    counts = Counter(s.id for s in specs)
    dupes = sorted(i for i, c in counts.items() if c > 1)
    if dupes:
        raise ValueError(f"duplicate episodes in the sweep: {', '.join(dupes)}")
    return specs
