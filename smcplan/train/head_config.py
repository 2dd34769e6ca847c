"""The settings of one ``smcplan train grpo-mr-head`` run (:mod:`smcplan.train.grpo_mr_head`):
:class:`HeadGRPOConfig`, its checks, and which settings a resumed run may change."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from smcplan.agents.rlvmr_rewards import TAGS
from smcplan.errors import InvalidArgumentError, check_float, check_int
from smcplan.llm.roles.policy_head import CONTEXTS
from smcplan.train.grpo_mr import NORMALIZATIONS, check_alpha, check_group_size

__all__ = ["HeadGRPOConfig", "RESUMABLE"]

#: config keys a resumed run may change
RESUMABLE = ("iterations", "resume", "eval_every", "feature_cache")


@dataclass(frozen=True)
class HeadGRPOConfig:
    """One run (:mod:`smcplan.train.grpo_mr_head`).  Rollouts: ``seeds`` of ``env``
    (``split``), ``group_size`` episodes of at most ``max_steps`` steps per seed and iteration,
    ``iterations``; the head: ``model`` (frozen), ``layers`` (default: the last and the middle
    one), ``data`` (gold shards for the cold start, ``l2`` its regulariser) or ``init_head`` (a
    saved head, also the reference), ``recent`` (steps shown in the state text), ``tags``;
    GRPO-MR: ``alpha``, ``eps``, ``normalize``; the update: ``learning_rate``, ``epochs``
    (gradient steps per iteration), ``clip_eps``, ``kl_coef``, ``max_grad_norm``; ``threads``,
    ``seed``, ``resume``, ``cache_entries`` (features kept).  ``seeds_per_iteration`` (0:
    all): iteration :math:`k` plays the ``seeds_per_iteration`` seeds that follow those of
    iteration :math:`k - 1` in ``seeds``, cyclically.  ``eval_seeds`` (of ``eval_split``,
    default ``split``): the held-out seeds the greedy head (the argmax) plays before training
    and after every ``eval_every`` iterations and the last one; ``iterations = 0``: the cold
    start alone, evaluated.  ``map_notes``: each candidate's text carries what the agent's
    place map says about its action (cold start, rollouts, held-out evaluation; recorded in
    the head, so that the RLVMR agent builds the same notes); a resumed run keeps it.
    ``context``: what the state text holds, ``"full"`` or ``"task"`` (the task alone: the
    features of a candidate depend on its text only, so with ``map_notes`` the state reaches
    the head through the notes; recorded in the head like ``map_notes``)."""

    out: Path
    env: str = "twx:coin"
    seeds: tuple[int, ...] = (0,)
    split: str | None = None
    model: str | None = None
    layers: tuple[int, ...] | None = None
    data: tuple[Path, ...] = ()
    init_head: Path | None = None
    l2: float | tuple[float, ...] = 1e-6
    l2_folds: int = 5
    feature_cache: Path | None = None
    recent: int = 3
    tags: tuple[str, ...] = TAGS
    group_size: int = 8
    iterations: int = 10
    seeds_per_iteration: int = 0
    eval_seeds: tuple[int, ...] = ()
    eval_split: str | None = None
    eval_every: int = 1
    max_steps: int = 25
    alpha: float = 0.5
    eps: float = 1e-6
    normalize: str = "mean_std"
    learning_rate: float = 0.5
    epochs: int = 10
    clip_eps: float = 0.2
    kl_coef: float = 0.01
    max_grad_norm: float = 1.0
    threads: int | None = None
    seed: int = 0
    resume: bool = False
    cache_entries: int = 50_000
    batch: int = 16
    map_notes: bool = False
    context: str = "full"

    def validated(self) -> HeadGRPOConfig:
        if not isinstance(self.map_notes, bool):
            raise InvalidArgumentError(
                f"map_notes={self.map_notes!r}: give true or false (a bool), e.g. map_notes=true"
            )
        if self.context not in CONTEXTS:
            raise InvalidArgumentError(
                f"context={self.context!r}: give one of {', '.join(CONTEXTS)}, e.g. context=task"
            )
        check_group_size(self.group_size)
        check_alpha(self.alpha)
        check_int(self.iterations, "iterations", minimum=0)
        check_int(self.seeds_per_iteration, "seeds_per_iteration", minimum=0)
        check_int(self.eval_every, "eval_every", minimum=1)
        check_int(self.max_steps, "max_steps", minimum=1)
        check_int(self.epochs, "epochs", minimum=1)
        check_int(self.recent, "recent", minimum=0)
        check_int(self.seed, "seed", minimum=0)
        for name in ("learning_rate", "clip_eps", "max_grad_norm", "eps"):
            check_float(getattr(self, name), name, minimum=0.0, min_inclusive=False)
        for value in self.l2 if isinstance(self.l2, tuple) else (self.l2,):
            check_float(value, "l2", minimum=0.0, min_inclusive=False)
        if isinstance(self.l2, tuple) and not self.l2:
            raise InvalidArgumentError("l2=[]: give one value or a grid such as [1e-4,1e-2]")
        check_int(self.l2_folds, "l2_folds", minimum=2)
        check_float(self.kl_coef, "kl_coef", minimum=0.0)
        if self.normalize not in NORMALIZATIONS:
            raise InvalidArgumentError(
                f"normalize={self.normalize!r}: give one of {', '.join(NORMALIZATIONS)}"
            )
        if not self.seeds:
            raise InvalidArgumentError("seeds is empty; give at least one task seed, e.g. [0]")
        bad = [t for t in self.tags if t not in TAGS]
        if bad or not self.tags:
            raise InvalidArgumentError(f"tags={list(self.tags)!r}: give a subset of {list(TAGS)}")
        if self.data and self.init_head is not None:
            raise InvalidArgumentError(
                "data and init_head both given: the cold start fits a head from data, "
                "init_head loads one; give one of them"
            )
        return self

    def as_json(self) -> dict[str, Any]:
        def plain(v: Any) -> Any:
            if isinstance(v, Path):
                return str(v)
            if isinstance(v, tuple):
                return [plain(x) for x in v]
            return v

        return {k: plain(v) for k, v in asdict(self).items()}

    def resume_differences(self, saved: dict[str, Any]) -> dict[str, Any]:
        """The settings that differ from ``saved`` (the ``config.json`` of the run to resume),
        other than those a resumed run may change (:data:`RESUMABLE`), each with its saved
        value.  A setting ``saved`` lacks (a run made before the setting existed) counts as its
        default, which is how that run behaved."""
        now = self.as_json()
        old = {**HeadGRPOConfig(out=self.out).as_json(), **saved}
        return {k: old[k] for k in sorted(now) if k not in RESUMABLE and old[k] != now[k]}
