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

**Map notes** (``map_notes``, an option of the trainer): each candidate's text also carries what
the agent's place map says about its action (:func:`smcplan.agents.map_notes.action_note`; the
critic's precedent).  A rollout reads the map from the episode's real observations
(:class:`~smcplan.agents.map_notes.MapNotes`, read with the rules of ``map_notes``, an env name
or a :class:`~smcplan.games.GameRules`), as the RLVMR agent does at play time; the gold steps
use the maps of :func:`smcplan.agents.map_notes.episode_maps` (the critic's noted data).
Without it, ``features(state, pairs)`` is called as before and no note is computed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from smcplan.agents.rlvmr_rewards import TAGS, TaggedStep, trajectory_rewards
from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles.policy_head import PolicyHead, candidate_pairs, sample_index, state_text

__all__ = [
    "episode_rng",
    "play_episode",
    "group_batch",
    "gold_steps",
    "iteration_seeds",
    "episode_metrics",
    "evaluate_head",
]

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
    map_notes: Any = None,
    context: str = "full",
) -> dict[str, Any]:
    """One episode of ``env`` (reset to ``task_seed``) played by ``head`` (module docstring);
    ``map_notes`` (an env name or rules; ``None``: none): each candidate carries its note;
    ``context``: what the state text holds (:func:`~smcplan.llm.roles.policy_head.state_text`).

    Returns ``{"won", "score", "steps", "tags", "actions", "rewards", "features" (one (n_t, d)
    array per step), "chosen" (the index in each step's candidates), "explore_new", "invalid"
    (whether the env called each step invalid)}``."""
    obs, info = env.reset(task_seed)
    info = dict(info or {})
    task = str(env.task)
    history: list[tuple[str, str, str]] = []
    tagged: list[TaggedStep] = []
    feats, chosen, invalid = [], [], []
    won, score = False, 0.0
    notes = None
    if map_notes is not None:
        from smcplan.agents.map_notes import MapNotes

        notes = MapNotes(map_notes)
        notes.reset(str(obs))
    for _ in range(max_steps):
        if tagged:
            prev = tagged[-1]
            tagged[-1] = TaggedStep(prev.tag, prev.action, True, not bool(info.get("invalid")))
        pairs = candidate_pairs(head.tags, list(info.get("admissible_actions") or []))
        state = state_text(task, history, obs, recent, context=context)
        if notes is None:
            phi = features(state, pairs)
        else:
            phi = features(state, pairs, notes.notes([a for _, a in pairs]))
        k = sample_index(head.log_probs(phi), rng, temperature)
        tag, action = pairs[k]
        feats.append(phi)
        chosen.append(k)
        obs, _, done, info = env.step(action)
        info = dict(info or {})
        invalid.append(bool(info.get("invalid")))
        history.append((tag, action, str(obs)))
        if notes is not None:
            notes.update(action, str(obs))
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
        "invalid": invalid,
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
    transitions: Iterable[dict[str, Any]],
    tags: Sequence[str] = TAGS,
    recent: int = 3,
    maps: dict[tuple[str, int], Any] | None = None,
    context: str = "full",
) -> list[dict[str, Any]]:
    """``{"episode", "t", "state", "pairs", "gold"}`` for every step of the *won* episodes
    among shard ``transitions``: the state text the head reads, the candidates (the shard's
    admissible list, the gold action added when missing) and the index of the annotated
    (tag, gold action) among them; with ``maps`` (:func:`smcplan.agents.map_notes.episode_maps`
    of the whole shard) also ``"notes"``, each candidate's map note."""
    from smcplan.agents.map_notes import action_note
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
            step = {
                "episode": episode,
                "t": int(r["t"]),
                "state": state_text(r["task"], history, r["observation"], recent, context=context),
                "pairs": pairs,
                "gold": pairs.index((tag, r["action"])),
            }
            if maps is not None:
                m = maps[(str(episode), int(r["t"]))]
                step["notes"] = [action_note(m, a, first_step=int(r["t"]) == 0) for _, a in pairs]
            out.append(step)
            history.append((tag, r["action"], str(r["next_observation"])))
    return out


def iteration_seeds(seeds: Any, per_iteration: int, it: int) -> list[int]:
    """The task seeds iteration ``it`` plays: all ``seeds`` (``per_iteration`` 0 or at least
    their number), else the ``per_iteration`` seeds from position ``it * per_iteration`` on,
    cyclically."""
    seeds = list(seeds)
    if per_iteration <= 0 or per_iteration >= len(seeds):
        return seeds
    return [seeds[(it * per_iteration + j) % len(seeds)] for j in range(per_iteration)]


def episode_metrics(episodes: Any, tags: Any) -> dict[str, Any]:
    """Success rate, steps, repetition and invalid actions per step, the tag counts, the rate
    of explore steps on a new action and the mean process return of ``episodes``."""
    steps = sum(e["steps"] for e in episodes)
    chosen_tags = [t for e in episodes for t in e["tags"]]
    new = [x for e in episodes for x in e["explore_new"]]
    repeats = sum(a in e["actions"][:i] for e in episodes for i, a in enumerate(e["actions"]))
    invalid = sum(sum(e.get("invalid", ())) for e in episodes)
    return {
        "success_rate": sum(e["won"] for e in episodes) / max(1, len(episodes)),
        "episodes": len(episodes),
        "steps": steps,
        "repeat_rate": repeats / max(1, steps),
        "invalid_rate": invalid / max(1, steps),
        "tags": {g: chosen_tags.count(g) for g in tags},
        "explore_new_rate": (sum(new) / len(new)) if new else None,
        "process_return_mean": float(np.mean([sum(e["rewards"]) for e in episodes]))
        if episodes
        else 0.0,
    }


def evaluate_head(
    head: PolicyHead, env: Any, seeds: Any, features: Any, max_steps: int, recent: int,
    map_notes: Any = None, context: str = "full",
) -> dict[str, Any]:  # fmt: skip
    """The greedy head (the argmax candidate at every step) on each of ``seeds``: the metrics
    of :func:`episode_metrics` and ``won`` per seed (a pure function of the head: no draw);
    ``map_notes`` and ``context`` as in :func:`play_episode`."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)  # unused at temperature 0
    eps = {int(s): play_episode(env, s, head, features, rng, max_steps, recent, 0.0, map_notes,
                                context) for s in seeds}  # fmt: skip
    out = episode_metrics(list(eps.values()), head.tags)
    out["won"] = {str(s): bool(e["won"]) for s, e in eps.items()}
    out["actions"] = {str(s): e["actions"] for s, e in eps.items()}
    out["seconds"] = time.perf_counter() - t0
    return out
