"""Evaluation metrics of the seed papers, with 95% confidence intervals, on logged episodes.

Pure: this module works on plain step/episode records (dicts read from a run's JSONL/JSON files)
and imports only ``numpy``. It must not import ``smcplan.envs``, ``smcplan.agents``,
``smcplan.llm`` or any backend, so it can be tested on hand-made logs.

Definitions (one *episode* = one task instance; its steps are the executed actions):

* **SR** (success rate): fraction of episodes with ``won``. 95% CI: Wilson score interval.
* **AR** (average reward): mean final ``score`` (normalised to [0, 1]) over episodes. CI: bootstrap.
* **AvgS**: mean number of steps over *successful* episodes only (RLAW, NeSyFS tables). CI:
  bootstrap.
* **Hallucination rate** (RLAW, arXiv 2607.17038): fraction of episodes with at least one action the
  environment rejected (``info["invalid"]``). CI: Wilson.
* **Invalid-action rate** (RLVMR, arXiv 2507.22844): invalid steps / all steps, pooled over the run.
  CI: cluster bootstrap over episodes (steps of one episode are not independent).
* **Repetitive-action rate** (RLVMR, ``repetitive/step``): repetitive steps / all steps, pooled,
  cluster-bootstrap CI. Step ``t`` is *repetitive* iff it is not the first step of its trial, it
  executed the same action as step ``t - 1`` (compared after lower-casing and collapsing
  whitespace) and changed neither the observation nor the score: ``o_{t+1} == o_t`` (the
  ``feedback`` of steps ``t`` and ``t - 1``, compared after stripping; ``o_t`` is step ``t - 1``'s
  feedback) and ``s_{t+1} == s_t``. This is the paper's "the same action as the previous step with
  no state change"; the observation and score are the state every backend exposes.
* **Repeated-pair rate** (``repeat (a,o)/step``; this project's loop measure, called the
  repetitive rate before the paper's definition was added): steps whose (action, observation
  received) pair already occurred at an earlier step ``s < t`` of the same trial / all steps,
  pooled, cluster-bootstrap CI. It also counts loops ("open door / close door / open door") and
  revisits that the paper's consecutive definition does not, and never a repeated "go north" that
  leads somewhere new.
* **Rejections per episode**: proposals rejected before execution — RLAW's critique rejections
  (critic score < τ) or NeSyFS's reflection rejections — summed per episode from step meta
  (``meta["rejections"]`` if an int, else ``len(meta["rejected_proposals"])``). CI: bootstrap.
* **Slow-thinking calls per episode**: steps whose ``meta["slow_thinking"]`` is truthy. CI:
  bootstrap.
* **LLM calls, tokens and wall time per step**: pooled sums / steps, cluster-bootstrap CI;
  from ``llm_calls``/``llm_tokens`` of each step record and the harness-measured ``agent_s +
  env_s``.

Episodes whose backend died (``status == "error"``) are excluded from every metric and counted in
``n_errors``; they are neither successes nor failures of the agent.

Wilson interval (Wilson 1927): with p̂ = k/n and z = Φ⁻¹(0.975),
    centre = (p̂ + z²/2n) / (1 + z²/n),  half = z/(1 + z²/n) · sqrt(p̂(1 − p̂)/n + z²/4n²).
Paired comparison of two agents on the same episodes: the exact McNemar test
(``mcnemar_exact_p``) on the episodes won by exactly one of them.
Percentile bootstrap (Efron & Tibshirani 1993): resample the n episodes with replacement B times,
recompute the statistic, report the (α/2, 1 − α/2) quantiles; seeded, so reports are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from smcplan.errors import check_int

__all__ = [
    "Estimate",
    "EpisodeStats",
    "RunMetrics",
    "wilson_interval",
    "mcnemar_exact_p",
    "bootstrap_mean_ci",
    "bootstrap_ratio_ci",
    "normalize_action",
    "repetitive_flags",
    "repeated_pair_flags",
    "step_count",
    "episode_stats",
    "upgrade_stats",
    "aggregate",
    "group_metrics",
]

Z_95 = 1.959963984540054  # Φ⁻¹(0.975)


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% interval; ``value`` is ``None`` when ``n == 0``."""

    value: float | None
    lo: float | None
    hi: float | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def wilson_interval(k: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion k/n (default 95%).

    centre = (p̂ + z²/2n)/(1 + z²/n), half-width = z/(1 + z²/n)·sqrt(p̂(1−p̂)/n + z²/4n²).
    Stays inside [0, 1] and is sensible at k = 0 or k = n, unlike the Wald interval.
    """
    if n <= 0:
        raise ValueError(f"wilson_interval needs n > 0 trials, got n={n}")
    if not 0 <= k <= n:
        raise ValueError(f"wilson_interval needs 0 <= k <= n, got k={k}, n={n}")
    p = k / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    # at k = 0 (k = n) centre == half exactly, so the bound is 0 (1); avoid rounding residue
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi


def mcnemar_exact_p(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar test of two agents on the same episodes.

    ``a_only`` (``b_only``): episodes won by A (B) alone; the episodes both or neither won carry
    no information about which is better and do not enter. Under H0 (equal success
    probabilities on every episode) each of the d = a_only + b_only discordant episodes is A's
    with probability 1/2, so p = min(1, 2 · Σ_{i ≤ min(a_only, b_only)} C(d, i) / 2^d); with no
    discordant episode p = 1. Exact for any d (the chi-square form needs d ≳ 25).
    """
    a_only = check_int(a_only, "a_only", minimum=0)
    b_only = check_int(b_only, "b_only", minimum=0)
    d = a_only + b_only
    tail = sum(math.comb(d, i) for i in range(min(a_only, b_only) + 1))
    return min(1.0, 2.0 * tail / 2**d)


def _quantiles(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    lo, hi = np.quantile(samples, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def bootstrap_mean_ci(
    values: Sequence[float],
    *,
    seed: int = 0,
    num_resamples: int = 2000,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of the mean of ``values`` (resampled with replacement).

    Deterministic in ``seed`` (``numpy.random.default_rng``). With one value the interval is that
    value (no variability can be estimated from one observation).
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("bootstrap_mean_ci needs at least one value")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(num_resamples, x.size))
    return _quantiles(x[idx].mean(axis=1), confidence)


def bootstrap_ratio_ci(
    numerators: Sequence[float],
    denominators: Sequence[float],
    *,
    seed: int = 0,
    num_resamples: int = 2000,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Cluster-bootstrap interval of the pooled ratio Σ numerators / Σ denominators.

    Clusters (episodes) are resampled with replacement, keeping each episode's numerator and
    denominator together; resamples whose denominator sums to 0 are dropped.
    """
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    if num.shape != den.shape or num.size == 0:
        raise ValueError(
            f"bootstrap_ratio_ci needs equal, non-empty arrays; got {num.shape} and {den.shape}"
        )
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, num.size, size=(num_resamples, num.size))
    n_sum, d_sum = num[idx].sum(axis=1), den[idx].sum(axis=1)
    keep = d_sum > 0
    if not keep.any():
        raise ValueError("bootstrap_ratio_ci: every resample has a zero denominator")
    return _quantiles(n_sum[keep] / d_sum[keep], confidence)


def normalize_action(action: str) -> str:
    """Lower-case and collapse whitespace: ``"  Take  Coin"`` and ``"take coin"`` are one action."""
    return " ".join(str(action).lower().split())


def repetitive_flags(steps: Sequence[Mapping[str, Any]]) -> list[bool]:
    """Per step: True iff it repeats the previous step's action of the same trial and changes
    neither the observation nor the score (RLVMR's repetitive action; module docstring).

    Uses each record's ``action``, ``feedback`` (the observation the environment returned),
    ``score`` (the normalised score after the step) and ``trial`` (default 0).
    """
    flags = []
    prev: Mapping[str, Any] | None = None
    for step in steps:
        same = (
            prev is not None
            and int(prev.get("trial", 0) or 0) == int(step.get("trial", 0) or 0)
            and normalize_action(prev["action"]) == normalize_action(step["action"])
            and str(prev.get("feedback", "")).strip() == str(step.get("feedback", "")).strip()
            and float(prev.get("score", 0.0) or 0.0) == float(step.get("score", 0.0) or 0.0)
        )
        flags.append(bool(same))
        prev = step
    return flags


def repeated_pair_flags(steps: Sequence[Mapping[str, Any]]) -> list[bool]:
    """Per step: True iff an earlier step of the same trial had the same action and observation
    received (the repeated-pair rate; module docstring).

    Uses each record's ``action``, ``feedback`` and ``trial`` (default 0).
    """
    seen: set[tuple[int, str, str]] = set()
    flags = []
    for step in steps:
        key = (
            int(step.get("trial", 0) or 0),
            normalize_action(step["action"]),
            str(step.get("feedback", "")).strip(),
        )
        flags.append(key in seen)
        seen.add(key)
    return flags


def _count(value: Any) -> float:
    """A number from a meta field: int/float as is, dict -> sum of its numbers, list -> length."""
    if value is None:
        return 0.0
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, Mapping):
        return float(sum(_count(v) for v in value.values()))
    if isinstance(value, list | tuple):
        return float(len(value))
    return 0.0


def _rejections(meta: Mapping[str, Any]) -> int:
    count = meta.get("rejections")
    if isinstance(count, int | float) and not isinstance(count, bool):
        return int(count)
    rejected = meta.get("rejected_proposals")
    return len(rejected) if isinstance(rejected, list | tuple) else 0


def step_count(step: Mapping[str, Any], key: str) -> float:
    """``llm_calls``/``llm_tokens`` of a step record: top-level field, else from ``meta``."""
    if key in step and step[key] is not None:
        return _count(step[key])
    return _count(step.get("meta", {}).get(key))


def upgrade_stats(
    data: Mapping[str, Any], steps: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """Stats written before the two repetition metrics were split, in today's fields.

    Old summaries counted repeated (action, observation) pairs as ``repetitive_steps``: that
    count becomes ``repeated_pair_steps``, and ``repetitive_steps`` (RLVMR's definition) is
    recomputed from the episode's step records when they are given, else set to 0. Current stats
    are returned unchanged (copied).
    """
    out = dict(data)
    if "repeated_pair_steps" not in out and "repetitive_steps" in out:
        out["repeated_pair_steps"] = out["repetitive_steps"]
        out["repetitive_steps"] = sum(repetitive_flags(steps)) if steps else 0
    return out


@dataclass
class EpisodeStats:
    """Everything the aggregate metrics need from one episode (computed from its step records)."""

    env: str
    status: str  # "ok" | "error"
    won: bool
    score: float
    steps: int  # executed actions in the final trial (AvgS averages this)
    total_steps: int  # executed actions in all trials (denominator of per-step rates)
    invalid_steps: int
    repetitive_steps: int  # RLVMR's definition (repetitive_flags)
    repeated_pair_steps: int  # repeated (action, observation) pairs (repeated_pair_flags)
    rejections: int
    slow_thinking_calls: int
    llm_calls: float
    llm_tokens: float
    wall_s: float
    llm_prompt_tokens: float = 0.0  # prompt tokens (from ``llm_usage``)
    llm_cached_tokens: float = 0.0  # of which served by the model's prefix cache

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EpisodeStats:
        """From :meth:`to_dict`; summaries written before ``repeated_pair_steps`` existed held
        that count under ``repetitive_steps`` and are read so (see :func:`upgrade_stats`);
        fields added later (the cache counters) get their defaults."""
        data = upgrade_stats(data)
        return cls(**{f: data[f] for f in cls.__dataclass_fields__ if f in data})


def episode_stats(
    steps: Sequence[Mapping[str, Any]],
    *,
    env: str,
    won: bool,
    score: float,
    status: str = "ok",
) -> EpisodeStats:
    """Summarise one episode's step records.

    ``won``/``score`` are the episode's final outcome (the last trial's, with several trials);
    ``steps`` counts the executed actions of the final trial (what AvgS averages), while invalid,
    repetitive, rejection, slow-thinking, LLM and wall-time counts sum over all of its steps.
    """
    if status not in ("ok", "error"):
        raise ValueError(f"unknown episode status {status!r}; known: ok, error")
    last_trial = max((int(s.get("trial", 0) or 0) for s in steps), default=0)
    return EpisodeStats(
        env=env,
        status=status,
        won=bool(won),
        score=float(score),
        steps=sum(1 for s in steps if int(s.get("trial", 0) or 0) == last_trial),
        total_steps=len(steps),
        invalid_steps=sum(1 for s in steps if s.get("invalid")),
        repetitive_steps=sum(repetitive_flags(steps)),
        repeated_pair_steps=sum(repeated_pair_flags(steps)),
        rejections=sum(_rejections(s.get("meta") or {}) for s in steps),
        slow_thinking_calls=sum(1 for s in steps if (s.get("meta") or {}).get("slow_thinking")),
        llm_calls=sum(step_count(s, "llm_calls") for s in steps),
        llm_tokens=sum(step_count(s, "llm_tokens") for s in steps),
        wall_s=sum(float(s.get("agent_s", 0.0)) + float(s.get("env_s", 0.0)) for s in steps),
        llm_prompt_tokens=sum(_usage(s, "prompt_tokens") for s in steps),
        llm_cached_tokens=sum(_usage(s, "cached_tokens") for s in steps),
    )


def _usage(step: Mapping[str, Any], key: str) -> float:
    """One ``llm_usage`` counter of a step record (top-level field, else ``meta``), 0 if absent."""
    usage = step.get("llm_usage") or (step.get("meta") or {}).get("llm_usage") or {}
    return _count(usage.get(key)) if isinstance(usage, Mapping) else 0.0


@dataclass
class RunMetrics:
    """Aggregate metrics of a set of episodes (usually one agent on one benchmark)."""

    n: int  # episodes counted (status "ok")
    n_errors: int
    total_steps: int
    success_rate: Estimate
    average_score: Estimate
    avg_steps_success: Estimate
    hallucination_rate: Estimate
    invalid_rate: Estimate
    repetitive_rate: Estimate
    repeated_pair_rate: Estimate
    rejections_per_episode: Estimate
    slow_thinking_per_episode: Estimate
    llm_calls_per_step: Estimate
    llm_tokens_per_step: Estimate
    wall_s_per_step: Estimate
    cache_hit_rate: Estimate = field(default_factory=lambda: _NONE)  # cached / prompt tokens
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_NONE = Estimate(None, None, None, 0)


def _rate(k: int, n: int) -> Estimate:
    if n == 0:
        return _NONE
    lo, hi = wilson_interval(k, n)
    return Estimate(k / n, lo, hi, n)


def _mean(values: Sequence[float], seed: int, num_resamples: int) -> Estimate:
    if len(values) == 0:
        return _NONE
    lo, hi = bootstrap_mean_ci(values, seed=seed, num_resamples=num_resamples)
    return Estimate(float(np.mean(values)), lo, hi, len(values))


def _ratio(num: Sequence[float], den: Sequence[float], seed: int, num_resamples: int) -> Estimate:
    total = float(np.sum(den)) if len(den) else 0.0
    if total <= 0:
        return _NONE
    lo, hi = bootstrap_ratio_ci(num, den, seed=seed, num_resamples=num_resamples)
    return Estimate(float(np.sum(num)) / total, lo, hi, len(num))


def aggregate(
    episodes: Iterable[EpisodeStats], *, seed: int = 0, num_resamples: int = 2000
) -> RunMetrics:
    """Aggregate episode statistics into the seed papers' metrics with 95% intervals.

    Error episodes are excluded and counted in ``n_errors``. Bootstrap intervals are seeded by
    ``seed`` (every statistic uses the same seed, so a report is reproducible bit for bit).
    """
    eps = list(episodes)
    ok = [e for e in eps if e.status == "ok"]
    n = len(ok)
    steps = [float(e.steps) for e in ok]
    pooled = [float(e.total_steps) for e in ok]  # all trials: the denominator of per-step rates
    b = num_resamples
    return RunMetrics(
        n=n,
        n_errors=len(eps) - n,
        total_steps=int(sum(pooled)),
        success_rate=_rate(sum(e.won for e in ok), n),
        average_score=_mean([e.score for e in ok], seed, b),
        avg_steps_success=_mean([s for s, e in zip(steps, ok, strict=True) if e.won], seed, b),
        hallucination_rate=_rate(sum(e.invalid_steps > 0 for e in ok), n),
        invalid_rate=_ratio([e.invalid_steps for e in ok], pooled, seed, b),
        repetitive_rate=_ratio([e.repetitive_steps for e in ok], pooled, seed, b),
        repeated_pair_rate=_ratio([e.repeated_pair_steps for e in ok], pooled, seed, b),
        rejections_per_episode=_mean([e.rejections for e in ok], seed, b),
        slow_thinking_per_episode=_mean([e.slow_thinking_calls for e in ok], seed, b),
        llm_calls_per_step=_ratio([e.llm_calls for e in ok], pooled, seed, b),
        llm_tokens_per_step=_ratio([e.llm_tokens for e in ok], pooled, seed, b),
        wall_s_per_step=_ratio([e.wall_s for e in ok], pooled, seed, b),
        cache_hit_rate=_ratio(
            [e.llm_cached_tokens for e in ok], [e.llm_prompt_tokens for e in ok], seed, b
        ),
    )


def group_metrics(
    episodes: Iterable[EpisodeStats], *, seed: int = 0, num_resamples: int = 2000
) -> dict[str, RunMetrics]:
    """:func:`aggregate` per benchmark (``EpisodeStats.env``), in first-seen order."""
    groups: dict[str, list[EpisodeStats]] = {}
    for e in episodes:
        groups.setdefault(e.env, []).append(e)
    return {
        env: aggregate(eps, seed=seed, num_resamples=num_resamples) for env, eps in groups.items()
    }
