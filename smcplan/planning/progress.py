r"""Progress twists of the text planner: ``progress="lm" | "env" | "rlvmr" | "novelty" |
"untried" | "task" | "learned"`` and sums.

Each twist scores the N extended particles :math:`x^i_{\le t}` of a planning step with a progress
:math:`\delta^i_t` (NeSyFS weighting :math:`\omega \leftarrow \omega e^{\lambda\delta}`) and a
log-potential :math:`\log\psi^i_t = \sum_{s\le t}\delta^i_s` (twisted weighting: the incremental
weight :math:`\psi_t/\psi_{t-1} = e^{\delta_t}`, the same pull as NeSyFS with :math:`\lambda=1`):

* ``"env"`` — :math:`\delta_t = \Delta\mathrm{score}_t + (1 + H - t)([\mathrm{won}_t] -
  [\mathrm{lost}_t])` from the environment (exact under the simulator world model; ``lost`` =
  ended without winning, not by the step limit).  An ending counts :math:`1 + H - t`: the other
  twists give at most 1 per step, so no imagined wandering after a win can outweigh it.
  With ``rollouts`` M > 0 (simulator world model only) the last step also adds a Monte Carlo
  **leaf value**, the simulation step of MCTS and of LATS (Zhou et al. 2024, arXiv 2310.04406):
  from a ``clone()`` of the particle's environment at step H, M rollouts of at most R
  (``rollout_steps``) uniformly random admissible actions estimate

  .. math:: \hat V(x_H) = \frac1M\sum_{m=1}^M \sum_{r=1}^{R_m} \gamma^{r-1}
     \big(\Delta\mathrm{score}_r + [\mathrm{won}_r] - [\mathrm{lost}_r]\big),
     \qquad \delta_H \leftarrow \delta_H + \hat V(x_H),

  an unbiased estimate of the uniform policy's discounted return from the imagined state
  (:math:`\gamma` = ``rollout_discount``; a rollout stops at the episode's end).  With
  ``rollout_policy="untried"`` a rollout draws uniformly among the actions it has not yet
  taken in the same state (observation and admissible set), and uniformly among all once every
  one was tried: a random walk that does not redo a no-op ("close door", "look around") or
  undo its last move in place, so it reaches farther in R steps; :math:`\hat V` then
  estimates that policy's return.  Where no score
  event lies within H steps (a sparse game), the plain ``env`` twist gives every particle
  :math:`\delta = 0`; the leaf value still tells particles apart whose random continuations
  reach a score event more often or sooner.  Particles that ended within H get no leaf value;
* ``"novelty"`` — a count-based exploration bonus (Strehl & Littman 2008; Bellemare et al.
  2016) over places and graph entities:

  .. math:: \delta_t = \tfrac12\Big(\frac{1}{\sqrt{1 + n(\ell_t)}}
     + [E_t \not\subseteq \mathcal E_{t-1}]\Big) \in [0, 1],

  where :math:`\ell_t` is the particle's place after step t (the ``(agent, in|at, place)``
  triplet of its observation, else its previous place), :math:`n(\ell)` the steps spent at
  :math:`\ell` in the episode (:class:`Seen`) and on the particle's own path (a new place scores
  the full half, one visited often little, so even where no new place lies within H steps the
  weights point away from the most visited ones; staying put decays too, so wasted actions lose
  to moving on), and :math:`E_t` the entities the observation names (states such as "closed"
  excluded) against those seen so far (opening a door that reveals an unseen room).  Counting
  arrivals instead of steps made the planner shuttle between two rooms (2/8 won on twx:coin
  against 4/6).  Graph entities and places, not raw text: on twx:coin a planner counting
  new observation texts won 5/10 episodes, one counting rooms 7/10 (DESIGN.md).  Steps after the
  particle's episode ended score 0;
* ``"untried"`` — a count-based bonus over (place, action) pairs, the state-action form of
  the bonus above (MBIE-EB, Strehl & Littman 2008):

  .. math:: \delta_t = \frac{1}{\sqrt{1 + m(\ell_{t-1}, a_t)}} \in (0, 1],

  where :math:`m(\ell, a)` counts how often :math:`a` was taken from place :math:`\ell` in
  the episode (:attr:`Seen.tried`, the real steps) and earlier on the particle's path, and
  :math:`\ell_{t-1}` is the place before the step (read as for ``novelty``).  ``novelty``
  scores where a step leads, as the world model imagines it; ``untried`` scores what the
  agent has already done there, which the world model does not see.  An imagined reply that
  promises a new room behind a move that has failed in reality k times still scores
  :math:`1/\sqrt{1+k}` here, and an action never taken there scores 1.  In a game whose
  observations name no place (WebShop's pages) every step has the place ``""``, so the count
  is per action over the episode.  Benchmark-free; steps after the particle's episode ended
  score 0;
* ``"rlvmr"`` — RLVMR's verifiable process rules (arXiv 2507.22844; tagged form in
  :class:`smcplan.agents.rlvmr_rewards.RLVMRTwist`), with each imagined step's tag read off what
  it does: :math:`\delta_t = 1` for a *corrective* action (the previous step failed and the
  action differs from it) or an *exploring* one (an action or a place new to the episode and the
  path), 0 for a repetition or a failed step — and 0 for the action that has just failed, done
  again, whatever the imagined observation says (with the LM world model the model may imagine a
  new place behind "That is already open."); a real step failed when the env flags it invalid
  or replies with a failure text (:func:`looks_failed`); LLM-free;
* ``"task"`` — progress toward what the task names (the object, then its receptacle, at the
  places the map read from the observations or the task puts them; the nearest unexplored place
  while they are unknown): :class:`smcplan.planning.twist_task.TaskProgress`, whose docstring
  states the math; LLM-free;
* ``"learned"`` — a value head on the model's hidden state (trained by ``smcplan train
  value-head``; ``value_head=``): :math:`\log\psi_t = \log\hat V(x_t)`, the head's probability
  of completing the task within k steps of the particle's latest state,
  :math:`\delta_t = \log\psi_t - \log\psi_{t-1}` (:class:`~smcplan.planning.twist_value.
  LearnedProgress`, whose docstring states the math); benchmark-free;
* ``"lm"`` — the model's Yes/No judge (:class:`smcplan.llm.ProgressModel`) on the previous and new
  observation, now also shown the particle's retrieved graph :math:`R(\hat G)` and the triplets
  its new observation added, as the paper specifies
  (:math:`\delta = \mathrm{LLM}(P_{prog}; \hat a, R(\hat G), \tau_{new}, \eta)`);
  :math:`\delta = [P(\mathrm{Yes}) \ge \tfrac12]`, :math:`\log\psi = \log P(\mathrm{Yes})`.

A sum (``"env+novelty"``) adds the :math:`\delta` s and the :math:`\log\psi` s; :class:`SumTwist`
keeps each part's :math:`\delta` per step in ``history`` so a record can say which part varied
across particles (which twist decided).

The twists live in :mod:`~smcplan.planning.twist_env`, :mod:`~smcplan.planning.twist_rules`,
:mod:`~smcplan.planning.twist_lm` and :mod:`~smcplan.planning.twist_task`, what an episode has
seen in :mod:`~smcplan.planning.seen`; this module sums them and builds them by name.  Never
imports agents, eval or cli.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.planning.components import Score
from smcplan.planning.config import DEFAULT_RETRIEVAL, Retrieval, parse_progress
from smcplan.planning.seen import Seen, looks_failed, place_and_entities
from smcplan.planning.twist_env import EnvProgress
from smcplan.planning.twist_lm import LMProgress
from smcplan.planning.twist_rules import NoveltyProgress, ProcessProgress, UntriedProgress
from smcplan.planning.twist_task import TaskProgress
from smcplan.planning.twist_value import LearnedProgress

__all__ = [
    "Seen",
    "EnvProgress",
    "NoveltyProgress",
    "ProcessProgress",
    "UntriedProgress",
    "LMProgress",
    "SumTwist",
    "make_progress",
    "place_and_entities",
    "looks_failed",
]


class SumTwist:
    r""":math:`\delta = \sum_k \delta^{(k)}`, :math:`\log\psi = \sum_k \log\psi^{(k)}` of named
    twists; ``history[t-1][name]`` keeps each part's :math:`\delta_t`."""

    def __init__(self, parts: Sequence[tuple[str, Any]]) -> None:
        self.parts = list(parts)
        self.__name__ = "+".join(name for name, _ in self.parts)
        self.history: list[dict[str, np.ndarray]] = []

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
        keys = jax.random.split(key, len(self.parts))
        deltas, psis, record = [], [], {}
        for k, (name, twist) in zip(keys, self.parts, strict=True):
            score = twist(k, particles, t, horizon)
            deltas.append(score.delta)
            psis.append(score.log_psi)
            record[name] = (
                None if score.delta is None else np.asarray(score.delta, dtype=np.float64)
            )
        self.history.append(record)
        delta = (
            None
            if any(d is None for d in deltas)
            else sum(jnp.asarray(d, dtype=float) for d in deltas)
        )
        log_psi = (
            None if any(p is None for p in psis) else sum(jnp.asarray(p, dtype=float) for p in psis)
        )
        return Score(delta, log_psi)

    def informative(self) -> list[str]:
        """The parts whose :math:`\\delta` differed between particles at some step."""
        out = []
        for name, _ in self.parts:
            rows = [h[name] for h in self.history if h.get(name) is not None]
            if any(r.size and float(r.max() - r.min()) > 0.0 for r in rows):
                out.append(name)
        return out


def make_progress(
    spec: str,
    *,
    task: str = "",
    seen: Seen | None = None,
    progress_model: Any = None,
    retrieval: Retrieval = DEFAULT_RETRIEVAL,
    env_kind: str = "auto",
    rollouts: int = 0,
    rollout_steps: int = 25,
    rollout_discount: float = 0.95,
    rollout_policy: str = "uniform",
    value_model: Any = None,
) -> SumTwist:
    """The twist named by ``spec`` (``"env+novelty"``), always as a :class:`SumTwist` (one part
    or more); an unknown name lists the valid ones.  ``rollouts``, ``rollout_steps`` and
    ``rollout_discount``, ``rollout_policy``: the ``env`` part's Monte Carlo leaf value
    (:class:`EnvProgress`); ``value_model``: the ``learned`` part's
    (:class:`~smcplan.planning.twist_value.LearnedProgress`)."""
    parts = []
    for name in parse_progress(spec):
        if name == "env":
            parts.append(
                (name, EnvProgress(rollouts, rollout_steps, rollout_discount, rollout_policy))
            )
        elif name == "novelty":
            parts.append((name, NoveltyProgress(seen, env_kind)))
        elif name == "untried":
            parts.append((name, UntriedProgress(seen, env_kind)))
        elif name == "rlvmr":
            parts.append((name, ProcessProgress(seen, env_kind)))
        elif name == "task":
            parts.append((name, TaskProgress(task, (seen or Seen()).layout, env_kind)))
        elif name == "learned":
            parts.append((name, LearnedProgress(value_model, task, retrieval)))
        else:
            parts.append((name, LMProgress(progress_model, task, retrieval)))
    return SumTwist(parts)
