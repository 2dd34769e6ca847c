r"""Episodes of the policy head: rollouts, GRPO-MR groups and the cold start's gold steps.

**A rollout** (:func:`play_episode`): at step :math:`t` the state text :math:`s_t`
(:func:`~smcplan.llm.roles.policy_head.state_text`), the candidates :math:`C_t = G \times
A_t`, their features :math:`\phi(s_t, c)` from ``features(state, pairs)`` (any callable with a
``dim``; :class:`~smcplan.llm.roles.policy_head.LMFeatures` on a language model), and
:math:`c_t \sim \pi_w(\cdot \mid s_t)` drawn with ``rng`` (a ``numpy.random.Generator`` the
caller seeds: :func:`episode_rng`).  The step's tag is the candidate's; its process reward is
RLVMR's rule (:mod:`smcplan.agents.rlvmr_rewards`, the same :class:`TaggedStep` bookkeeping as
:class:`~smcplan.agents.rlvmr.RLVMRAgent`: a step's validity is known from the next step's
``info["invalid"]``; planning rewards settle with the outcome).  Every answer is well formed
(the candidates are written, not generated), so no format penalty arises.

**A group** (:func:`group_batch`): the :math:`G` episodes of one task seed give the advantages
:math:`A_{i,t}` of :func:`smcplan.train.grpo_mr.grpo_mr_advantages` (:math:`\alpha = 1`:
vanilla GRPO); each step becomes one row of the update's
:class:`~smcplan.train.head_objective.StepBatch`.

**Gold steps** (:func:`gold_steps`): the won episodes of a shard, tagged by the cold start's
rules (:func:`smcplan.train.rlvmr.annotate`), each step with its state text, candidates and the
index of the gold (tag, action).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from smcplan.agents.rlvmr_rewards import TAGS, TaggedStep, trajectory_rewards
from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles.policy_head import PolicyHead, candidate_pairs, sample_index, state_text

__all__ = ["episode_rng", "play_episode", "group_batch", "gold_steps"]

Features = Callable[[str, Sequence[tuple[str, str]]], np.ndarray]


def episode_rng(seed: int, iteration: int, task_seed: int, episode: int) -> np.random.Generator:
    """The generator of one episode, a pure function of the run's ``seed``, the
    ``iteration``, the ``task_seed`` and the ``episode`` index in its group."""
    return np.random.default_rng([int(seed), int(iteration), int(task_seed), int(episode)])


def play_episode(
    env: Any,
    task_seed: int,
    head: PolicyHead,
    features: Features,
    rng: np.random.Generator,
    max_steps: int,
    recent: int = 3,
    temperature: float = 1.0,
) -> dict[str, Any]:
    """One episode of ``env`` (reset to ``task_seed``) played by ``head`` (module docstring).

    Returns ``{"won", "score", "steps", "tags", "actions", "rewards", "features" (one (n_t, d)
    array per step), "chosen" (the index in each step's candidates), "explore_new"}``."""
    obs, info = env.reset(task_seed)
    info = dict(info or {})
    task = str(env.task)
    history: list[tuple[str, str, str]] = []
    tagged: list[TaggedStep] = []
    feats, chosen = [], []
    won, score = False, 0.0
    for _ in range(max_steps):
        if tagged:
            prev = tagged[-1]
            tagged[-1] = TaggedStep(prev.tag, prev.action, True, not bool(info.get("invalid")))
        pairs = candidate_pairs(head.tags, list(info.get("admissible_actions") or []))
        phi = features(state_text(task, history, obs, recent), pairs)
        k = sample_index(head.log_probs(phi), rng, temperature)
        tag, action = pairs[k]
        feats.append(phi)
        chosen.append(k)
        obs, _, done, info = env.step(action)
        info = dict(info or {})
        history.append((tag, action, str(obs)))
        tagged.append(TaggedStep(tag, action, True, True))
        won, score = bool(info.get("won", False)), float(info.get("score", 0.0) or 0.0)
        if done:
            break
    rewards = trajectory_rewards(tagged, won)
    seen: set[str] = set()
    explore_new = []
    for step in tagged:
        if step.tag == "explore":
            explore_new.append(step.action not in seen)
        seen.add(str(step.action))
    return {
        "won": won,
        "score": score,
        "steps": len(tagged),
        "tags": [s.tag for s in tagged],
        "actions": [s.action for s in tagged],
        "rewards": [r.total for r in rewards],
        "features": feats,
        "chosen": chosen,
        "explore_new": explore_new,
    }


def group_batch(
    episodes: Sequence[dict[str, Any]],
    alpha: float,
    eps: float = 1e-6,
    normalize: str = "mean_std",
) -> tuple[list[np.ndarray], list[int], list[float]]:
    """The steps of one group (the :math:`G` episodes of one task seed) as parallel lists:
    features, chosen indices and the GRPO-MR advantage :math:`A_{i,t}` of each step."""
    from smcplan.train.grpo_mr import grpo_mr_advantages

    adv = grpo_mr_advantages(
        [float(e["won"]) for e in episodes],
        [e["rewards"] for e in episodes],
        [e["tags"] for e in episodes],
        alpha,
        eps,
        normalize,
    )
    feats = [f for e in episodes for f in e["features"]]
    chosen = [k for e in episodes for k in e["chosen"]]
    return feats, chosen, [a for row in adv for a in row]


def gold_steps(
    transitions: Iterable[dict[str, Any]], tags: Sequence[str] = TAGS, recent: int = 3
) -> list[dict[str, Any]]:
    """``{"episode", "t", "state", "pairs", "gold"}`` for every step of the *won* episodes
    among shard ``transitions``: the state text the head reads, the candidates (the shard's
    admissible list, the gold action added when missing) and the index of the annotated
    (tag, gold action) among them."""
    from smcplan.train.rlvmr import annotated_wins

    out = []
    for episode, rows, annotated in annotated_wins(transitions):
        history: list[tuple[str, str, str]] = []
        for r, (tag, _) in zip(rows, annotated, strict=True):
            if tag not in tags:
                raise InvalidArgumentError(
                    f"tags={list(tags)!r} lacks {tag!r}, a tag the cold start annotates; keep "
                    "all four tags"
                )
            admissible = list(r.get("admissible") or [])
            if r["action"] not in admissible:
                admissible.append(r["action"])
            pairs = candidate_pairs(tags, admissible)
            out.append(
                {
                    "episode": episode,
                    "t": int(r["t"]),
                    "state": state_text(r["task"], history, r["observation"], recent),
                    "pairs": pairs,
                    "gold": pairs.index((tag, r["action"])),
                }
            )
            history.append((tag, r["action"], str(r["next_observation"])))
    return out
