r"""GRPO-MR (RLVMR, arXiv 2507.22844): step-level advantages from outcomes and meta-reasoning.

A group is :math:`G` trajectories of the same task (same environment seed), trajectory
:math:`i` with outcome :math:`R_i` (1 if won, else 0) and steps :math:`t` with tag
:math:`g_{i,t}` and process reward :math:`r_{i,t}` (:mod:`smcplan.agents.rlvmr_rewards`:
planning/explore/reflection rules and the format penalty).  The advantage of step
:math:`(i, t)` is

.. math::

    A_{i,t} = \alpha\,\frac{R_i - \mu_R}{\sigma_R + \varepsilon}
            + (1-\alpha)\,\frac{r_{i,t} - \mu_{g_{i,t}}}{\sigma_{g_{i,t}} + \varepsilon},

with :math:`\mu_R, \sigma_R` the mean and standard deviation of the :math:`G` outcomes, and
:math:`\mu_g, \sigma_g` those of the process rewards of *all steps of the group tagged g*
(malformed steps form the group ``"none"``).  Conventions follow the authors' released code,
``rlvmr/core_rlvmr.py`` (``compute_rlvmr_outcome_advantage``, ``episode_norm_reward``,
``step_norm_reward_by_tag``, read through the code search): :math:`\sigma` is the unbiased
(:math:`n-1`) standard deviation (``torch.std``); a group of one has :math:`\mu = 0,
\sigma = 1` (its value passes through); ``normalize="mean"`` drops the division by
:math:`\sigma` (the released ``mode="mean_norm"``), ``"mean_std"`` (default) keeps it
(``"mean_std_norm"``, the paper's equations).  One difference: the released code adds the
terms as ``A_traj + w * A_MR``; the paper and this module mix them convexly with
:math:`\alpha` (``w = (1 - alpha) / alpha`` up to an overall scale).  :math:`\alpha = 1` is
vanilla GRPO (the ablation: outcome only, the process rewards ignored).

The loop (:func:`train_grpo_mr`): for each iteration and task seed, play :math:`G` episodes with
the RLVMR agent on the current policy (tags and actions sampled at temperature 1), compute the
advantages, and update the LoRA policy with the clipped, KL-regularised objective of
:mod:`smcplan.llm.finetune.grpo` (reference: the cold-start adapter).  The rollouts of one group
are :func:`_play_group`, its update :func:`_update_group` (``bench/grpo_iteration.py`` times
the two apart).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smcplan.errors import InvalidArgumentError, SmcplanError, check_float, check_int
from smcplan.jsonfile import jsonl_line, write_json

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = [
    "NORMALIZATIONS",
    "check_alpha",
    "check_group_size",
    "group_normalize",
    "grpo_advantages",
    "grpo_mr_advantages",
    "GRPOMRConfig",
    "train_grpo_mr",
    "run",
]

NORMALIZATIONS = ("mean_std", "mean")
NO_TAG = "none"


def check_alpha(alpha: Any) -> float:
    """``alpha`` as a float in [0, 1], or a typed error naming it, its value and the fix."""
    try:
        return check_float(alpha, "alpha", minimum=0.0, maximum=1.0)
    except SmcplanError as exc:
        raise type(exc)(
            f"{exc}: alpha mixes the outcome term (weight alpha) with the tag-normalised process "
            "term (weight 1 - alpha); give a number in [0, 1], e.g. 0.5 (1 is vanilla GRPO)"
        ) from None


def check_group_size(group_size: Any) -> int:
    """``group_size`` as an int >= 2, or a typed error naming it, its value and the fix."""
    try:
        return check_int(group_size, "group_size", minimum=2)
    except SmcplanError as exc:
        raise type(exc)(
            f"{exc}: GRPO normalises each episode's outcome against the other episodes of its "
            "group (of the same task seed), and a group of one has none; give group_size >= 2, "
            "e.g. 8 (the paper's)"
        ) from None


def group_normalize(
    values: Sequence[float], eps: float = 1e-6, normalize: str = "mean_std"
) -> list[float]:
    r""":math:`(v - \mu)/(\sigma + \varepsilon)` over ``values`` (unbiased :math:`\sigma`; a
    single value has :math:`\mu = 0, \sigma = 1`); ``normalize="mean"``: :math:`v - \mu`."""
    if normalize not in NORMALIZATIONS:
        raise InvalidArgumentError(
            f"normalize must be one of {', '.join(NORMALIZATIONS)}; got {normalize!r}"
        )
    check_float(eps, "eps", minimum=0.0, min_inclusive=False)
    xs = [check_float(v, "reward") for v in values]
    n = len(xs)
    if n == 0:
        return []
    if n == 1:
        mean, sd = 0.0, 1.0
    else:
        mean = math.fsum(xs) / n
        sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    if normalize == "mean":
        return [x - mean for x in xs]
    return [(x - mean) / (sd + eps) for x in xs]


def grpo_advantages(
    outcomes: Sequence[float], eps: float = 1e-6, normalize: str = "mean_std"
) -> list[float]:
    r"""Vanilla GRPO: :math:`(R_i - \mu_R)/(\sigma_R + \varepsilon)` per trajectory."""
    if isinstance(outcomes, str) or not isinstance(outcomes, Sequence) or not outcomes:
        raise InvalidArgumentError(
            f"outcomes must be a non-empty list of numbers; got {outcomes!r}"
        )
    return group_normalize(outcomes, eps, normalize)


def grpo_mr_advantages(
    outcomes: Sequence[float],
    step_rewards: Sequence[Sequence[float]],
    step_tags: Sequence[Sequence[str | None]],
    alpha: float = 0.5,
    eps: float = 1e-6,
    normalize: str = "mean_std",
) -> list[list[float]]:
    """:math:`A_{i,t}` of the module docstring, one list per trajectory of the group.

    ``step_tags[i][t]`` is the step's meta-reasoning tag (``None``: malformed, group
    ``"none"``); ``alpha = 1`` gives :func:`grpo_advantages` broadcast to every step.
    """
    alpha = check_alpha(alpha)
    outcome_adv = grpo_advantages(outcomes, eps, normalize)
    g = len(outcomes)
    if len(step_rewards) != g or len(step_tags) != g:
        raise InvalidArgumentError(
            f"need one step list per trajectory: {g} outcomes, {len(step_rewards)} step_rewards, "
            f"{len(step_tags)} step_tags"
        )
    groups: dict[str, list[tuple[int, int]]] = {}
    for i, (rs, tags) in enumerate(zip(step_rewards, step_tags, strict=True)):
        if len(rs) != len(tags):
            raise InvalidArgumentError(
                f"trajectory {i}: {len(rs)} step rewards but {len(tags)} tags"
            )
        for t, tag in enumerate(tags):
            groups.setdefault(tag if tag is not None else NO_TAG, []).append((i, t))
    process: list[list[float]] = [[0.0] * len(rs) for rs in step_rewards]
    for members in groups.values():
        normed = group_normalize([step_rewards[i][t] for i, t in members], eps, normalize)
        for (i, t), v in zip(members, normed, strict=True):
            process[i][t] = v
    return [[alpha * outcome_adv[i] + (1.0 - alpha) * v for v in process[i]] for i in range(g)]


# ------------------------------------------------------------------------------ the loop
@dataclass(frozen=True)
class GRPOMRConfig:
    """One GRPO-MR run: ``seeds`` of ``env`` (each a task; ``group_size`` episodes of at most
    ``max_steps`` steps per seed and iteration), ``iterations`` passes, ``alpha`` (1: vanilla
    GRPO), ``eps``, ``normalize``; the policy: ``model`` (base) + ``adapter`` (the cold-start
    adapter, also the KL reference; ``None``: a fresh LoRA with the base as reference);
    update settings ``learning_rate``, ``clip_eps``, ``kl_coef``, ``epochs``,
    ``minibatch_size``; ``threads``, ``seed``."""

    out: Path
    env: str = "twx:coin"
    seeds: tuple[int, ...] = (0,)
    split: str | None = None
    model: str | None = None
    adapter: Path | None = None
    group_size: int = 4
    iterations: int = 1
    max_steps: int = 10
    alpha: float = 0.5
    eps: float = 1e-6
    normalize: str = "mean_std"
    learning_rate: float = 1e-5
    clip_eps: float = 0.2
    kl_coef: float = 0.01
    epochs: int = 1
    minibatch_size: int = 8
    threads: int | None = 1
    seed: int = 0
    agent_config: dict[str, Any] = field(default_factory=dict)

    def validated(self) -> GRPOMRConfig:
        check_group_size(self.group_size)
        check_int(self.iterations, "iterations", minimum=1)
        check_int(self.max_steps, "max_steps", minimum=1)
        check_alpha(self.alpha)
        check_float(self.eps, "eps", minimum=0.0, min_inclusive=False)
        if self.normalize not in NORMALIZATIONS:
            raise InvalidArgumentError(
                f"normalize must be one of {', '.join(NORMALIZATIONS)}; got {self.normalize!r}"
            )
        if not self.seeds:
            raise InvalidArgumentError("seeds is empty; give at least one task seed")
        for s in self.seeds:
            check_int(s, "seed", minimum=0)
        check_int(self.seed, "seed", minimum=0)
        return self


def _play_group(env: Any, lm: LanguageModel, seed: int, cfg: GRPOMRConfig, it: int) -> list[dict]:
    """``group_size`` episodes of task ``seed``: per step the prompt, answer, tag and reward."""
    from smcplan.agents.rlvmr import RLVMRAgent

    opts = {"tag_temperature": 1.0, "action_temperature": 1.0, **cfg.agent_config}
    out = []
    for j in range(cfg.group_size):
        agent = RLVMRAgent(lm, seed=cfg.seed + 1000 * it + 97 * j + seed, **opts)
        obs, info = env.reset(seed)
        info = dict(info or {})
        agent.reset(str(env.task), obs, list(info.get("admissible_actions") or []))
        prompts, responses, won, score = [], [], False, 0.0
        for _ in range(cfg.max_steps):
            step = agent.act(obs, list(info.get("admissible_actions") or []), info)
            prompts.append(agent.last_prompt)
            responses.append(step.meta["rlvmr_response"])
            obs, _, done, info = env.step(step.action)
            info = dict(info or {})
            won, score = bool(info.get("won", False)), float(info.get("score", 0.0) or 0.0)
            if done:
                break
        agent.end_episode(won, score)
        rewards = agent.episode_rewards
        out.append(
            {
                "won": won,
                "prompts": prompts,
                "responses": responses,
                "tags": [r.tag for r in rewards],
                "rewards": [r.total for r in rewards],
                "actions": [s.action for s in agent.trajectory],
            }
        )
    return out


def _policy(lm: LanguageModel, cfg: GRPOMRConfig) -> Any:
    """The run's trainable LoRA policy on ``lm``
    (:class:`~smcplan.llm.finetune.grpo.PolicyOptimizer`): ``cfg.adapter`` trained, and loaded
    a second time frozen as the KL reference (``None``: a fresh LoRA, the base model the
    reference), with the update settings of ``cfg``."""
    from smcplan.llm.finetune.grpo import PolicyOptimizer, PolicySettings

    return PolicyOptimizer(
        lm,
        cfg.adapter,
        PolicySettings(
            learning_rate=cfg.learning_rate,
            clip_eps=cfg.clip_eps,
            kl_coef=cfg.kl_coef,
            epochs=cfg.epochs,
            minibatch_size=cfg.minibatch_size,
            seed=cfg.seed,
        ),
    )


def _update_group(policy: Any, group: list[dict], cfg: GRPOMRConfig) -> tuple[list[float], Any]:
    r"""The update on one played group (:func:`_play_group`): :math:`A_{i,t}`
    (:func:`grpo_mr_advantages` with ``cfg``'s ``alpha``, ``eps``, ``normalize``), flattened
    trajectory-major, then ``policy.update`` on every step's (prompt, answer) with its
    advantage.  Returns the flat advantages and the update's statistics."""
    adv = grpo_mr_advantages(
        [float(g["won"]) for g in group],
        [g["rewards"] for g in group],
        [g["tags"] for g in group],
        cfg.alpha,
        cfg.eps,
        cfg.normalize,
    )
    prompts = [p for g in group for p in g["prompts"]]
    answers = [r for g in group for r in g["responses"]]
    flat = [a for row in adv for a in row]
    return flat, policy.update(prompts, answers, flat)


def train_grpo_mr(config: GRPOMRConfig, progress: bool = True) -> dict[str, Any]:
    """Run GRPO-MR (module docstring); writes ``<out>/adapter``, ``<out>/log.jsonl`` (one line
    per iteration and seed: wins, mean return, advantages, update stats) and
    ``<out>/train.json``."""
    from tqdm import tqdm

    from smcplan import envs
    from smcplan.llm import load_model

    cfg = config.validated()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    lm = load_model(cfg.model, threads=cfg.threads, seed=cfg.seed)  # cache cleared per update
    policy = _policy(lm, cfg)
    env = envs.make(cfg.env, **({"split": cfg.split} if cfg.split else {}))
    t0, log = time.perf_counter(), []
    try:
        jobs = [(it, s) for it in range(cfg.iterations) for s in cfg.seeds]
        for it, seed in tqdm(jobs, desc="grpo-mr", disable=not progress):
            group = _play_group(env, lm, seed, cfg, it)
            flat, stats = _update_group(policy, group, cfg)
            actions = [a for g in group for a in g["actions"]]
            repeats = sum(a in g["actions"][:k] for g in group for k, a in enumerate(g["actions"]))
            line = {
                "iteration": it,
                "seed": seed,
                "won": sum(g["won"] for g in group),
                "group_size": len(group),
                "steps": len(actions),
                "repeated_actions": repeats,
                "mean_process_return": sum(sum(g["rewards"]) for g in group) / len(group),
                "tags": [t for g in group for t in g["tags"]],
                "advantage_abs_mean": sum(abs(a) for a in flat) / max(1, len(flat)),
                "update": stats.to_dict(),
            }
            log.append(line)
            with open(out / "log.jsonl", "a", encoding="utf-8") as handle:
                handle.write(jsonl_line(line))
    finally:
        env.close()
    weights = policy.save(out / "adapter")
    manifest = {
        "trainer": "grpo-mr",
        "weights": weights,
        "steps": sum(x["steps"] for x in log),
        "seconds": time.perf_counter() - t0,
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()},
        "log": log,
    }
    write_json(out / "train.json", manifest)
    return manifest


def run(request: Any) -> dict[str, Any]:
    """``smcplan train grpo-mr``: the registry entry (:class:`~smcplan.train.registry.
    TrainRequest`); ``--opt`` keys: ``env``, ``seeds`` (list), ``split``, ``adapter`` (the
    cold-start adapter), ``group_size``, ``iterations``, ``alpha``, ``vanilla`` (true: alpha=1),
    ``eps``, ``normalize``, ``clip_eps``, ``kl_coef``, ``minibatch_size``, ``threads``,
    ``max_episode_steps``; ``--epochs`` is the update epochs per batch, ``--lr`` the rate."""
    from smcplan.train.options import trainer_options

    opts = trainer_options("grpo-mr", request.options)  # typed: seeds a list of ints
    seeds = opts.get("seeds", [0])
    epochs = request.epochs or 1
    if epochs != int(epochs):
        raise InvalidArgumentError(
            f"--epochs {epochs}: grpo-mr runs whole update epochs per batch; give an integer "
            "such as 1"
        )
    alpha = 1.0 if opts.get("vanilla") else opts.get("alpha", 0.5)
    cfg = GRPOMRConfig(
        out=Path(request.out),
        env=opts.get("env", "twx:coin"),
        seeds=tuple(seeds),
        split=opts.get("split"),
        model=request.model,
        adapter=Path(opts["adapter"]) if opts.get("adapter") else None,
        group_size=opts.get("group_size", 4),
        iterations=opts.get("iterations", 1),
        max_steps=opts.get("max_episode_steps", 10),
        alpha=alpha,
        eps=opts.get("eps", 1e-6),
        normalize=opts.get("normalize", "mean_std"),
        learning_rate=request.learning_rate or 1e-5,
        clip_eps=opts.get("clip_eps", 0.2),
        kl_coef=opts.get("kl_coef", 0.01),
        epochs=int(epochs),
        minibatch_size=opts.get("minibatch_size", 8),
        threads=opts.get("threads", 1),
        seed=request.seed,
    )
    return train_grpo_mr(cfg, progress=request.progress)
