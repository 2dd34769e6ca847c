r"""Progress twists of the text planner: ``progress="lm" | "env" | "rlvmr" | "novelty" | "task"``
and sums.

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
  while they are unknown): :class:`smcplan.planning.places.TaskProgress`, whose docstring states
  the math; LLM-free;
* ``"lm"`` — the model's Yes/No judge (:class:`smcplan.llm.ProgressModel`) on the previous and new
  observation, now also shown the particle's retrieved graph :math:`R(\hat G)` and the triplets
  its new observation added, as the paper specifies
  (:math:`\delta = \mathrm{LLM}(P_{prog}; \hat a, R(\hat G), \tau_{new}, \eta)`);
  :math:`\delta = [P(\mathrm{Yes}) \ge \tfrac12]`, :math:`\log\psi = \log P(\mathrm{Yes})`.

A sum (``"env+novelty"``) adds the :math:`\delta` s and the :math:`\log\psi` s; :class:`SumTwist`
keeps each part's :math:`\delta` per step in ``history`` so a record can say which part varied
across particles (which twist decided).

Imports ``smcplan.memory`` (rule extraction) and the planner's component types; never agents,
eval or cli.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.memory import extract_triplets
from smcplan.planning.components import PlanningError, Score
from smcplan.planning.config import (
    DEFAULT_RETRIEVAL,
    ROLLOUT_POLICIES,
    Retrieval,
    parse_progress,
)
from smcplan.planning.outcome import DONE_ACTION
from smcplan.planning.places import PlaceMap, TaskProgress, read_step

__all__ = [
    "Seen",
    "EnvProgress",
    "NoveltyProgress",
    "ProcessProgress",
    "LMProgress",
    "SumTwist",
    "make_progress",
    "place_and_entities",
    "looks_failed",
]

_PLACE_PREDICATES = ("in", "at")
_SELF = ("agent", "you", "inventory", "open", "closed", "locked", "empty", "nothing")


class Seen(NamedTuple):
    """What the episode has seen so far (for ``novelty``, ``rlvmr`` and ``task``): the places
    visited, the entities named, the actions executed, whether the last real action failed (the
    env's ``invalid`` flag or a failure reply, :func:`looks_failed`), the
    current score, the current place, the steps spent at each place (``visits``: ``(place, n)``)
    and the place map read from every observation (``layout``, :mod:`smcplan.planning.places`)."""

    places: frozenset[str] = frozenset()
    entities: frozenset[str] = frozenset()
    actions: tuple[str, ...] = ()
    last_failed: bool = False
    score: float = 0.0
    place: str | None = None
    visits: tuple[tuple[str, int], ...] = ()
    layout: PlaceMap = PlaceMap()

    def after(
        self, observation: str, action: str | None, info: dict[str, Any], env_kind: str = "auto"
    ) -> Seen:
        """What has been seen once ``observation`` (the result of ``action``) arrived."""
        place, names = place_and_entities(observation, action, env_kind)
        place = place or self.place
        visits = dict(self.visits)
        if place is not None:
            visits[place] = visits.get(place, 0) + 1
        return Seen(
            places=self.places | ({place} if place else set()),
            entities=self.entities | names,
            actions=(*self.actions, action) if action else self.actions,
            last_failed=bool(info.get("invalid", False)) or looks_failed(observation),
            score=float(info.get("score", self.score) or 0.0),
            place=place,
            visits=tuple(sorted(visits.items())),
            layout=read_step(self.layout, action, observation, env_kind),
        )


def place_and_entities(
    observation: str,
    action: str | None = None,
    env_kind: str = "auto",
    triplets: Iterable[Any] | None = None,
) -> tuple[str | None, set[str]]:
    """The agent's place after ``observation`` (``None`` if it names none) and the entities it
    names, read from its rule-based triplets (or from ``triplets`` when given)."""
    if triplets is None:
        triplets = extract_triplets(str(observation), action, env_kind=env_kind)
    place, names = None, set()
    for t in triplets:
        s, p, o = t.as_tuple() if hasattr(t, "as_tuple") else tuple(t)
        if s == "agent" and p in _PLACE_PREDICATES:
            place = o
        if p == "is":  # a state ("fridge is closed"), not a new thing
            continue
        for e in (s, o):
            if e not in _SELF:
                names.add(e)
    return place, names


def _steps_read(particle: Any, env_kind: str) -> list[tuple[str | None, set[str]]]:
    out = []
    for i, (a, o) in enumerate(particle.steps):
        known = (
            particle.triplets[i]
            if i < len(getattr(particle, "triplets", ())) and particle.triplets[i]
            else None
        )
        place, names = place_and_entities(o, a, env_kind, triplets=known)
        if place is None and known is not None:  # the agent's own extractor may not mark places
            place, _ = place_and_entities(o, a, env_kind)
        out.append((place, names))
    return out


class _Cumulative:
    """log psi_t = sum of the particle's deltas so far (computed from its whole path)."""

    def deltas(self, particle: Any) -> list[float]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
        per = [self.deltas(p) for p in particles]
        return Score(jnp.asarray([d[-1] for d in per]), jnp.asarray([float(sum(d)) for d in per]))


class EnvProgress(_Cumulative):
    r""":math:`\delta_t = \Delta\mathrm{score}_t + (1 + H - t)([\mathrm{won}_t] -
    [\mathrm{lost}_t])`, plus at t = H the Monte Carlo leaf value :math:`\hat V(x_H)` of
    ``rollouts`` M uniform rollouts of at most ``rollout_steps`` R steps, discounted by
    ``discount`` :math:`\gamma` (module docstring; M = 0: no leaf value).  ``horizon`` H is set
    by the planner at each call; ``rollout_env_steps`` counts the environment steps the
    rollouts took."""

    __name__ = "env"

    def __init__(
        self,
        rollouts: int = 0,
        rollout_steps: int = 25,
        discount: float = 0.95,
        policy: str = "uniform",
    ) -> None:
        if policy not in ROLLOUT_POLICIES:
            raise PlanningError(
                f"rollout_policy must be one of {', '.join(ROLLOUT_POLICIES)}; got {policy!r}"
            )
        self.horizon = 1
        self.policy = policy
        self.rollouts = int(rollouts)
        self.rollout_steps = int(rollout_steps)
        self.discount = float(discount)
        self.rollout_env_steps = 0

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
        self.horizon = int(horizon)
        per = [self.deltas(p) for p in particles]
        if self.rollouts > 0 and t == self.horizon:
            keys = jax.random.split(key, len(particles))
            for i, (p, k) in enumerate(zip(particles, keys, strict=True)):
                per[i][-1] += self.leaf_value(k, p)
        return Score(jnp.asarray([d[-1] for d in per]), jnp.asarray([float(sum(d)) for d in per]))

    def deltas(self, particle: Any) -> list[float]:
        out, done = [], False
        for t, oc in enumerate(particle.outcomes, start=1):
            end = (1 + self.horizon - t) * (float(oc.won) - float(oc.lost))
            out.append(0.0 if done else float(oc.gain) + end)
            done = done or oc.done
        return out

    def leaf_value(self, key: jax.Array, particle: Any) -> float:
        r""":math:`\hat V(x_H)`: the mean discounted return of M uniform rollouts, each from its
        own ``clone()`` of the particle's environment, the first action drawn from the
        particle's own admissible actions (0 for a particle that has ended)."""
        if particle.done:
            return 0.0
        env = getattr(particle, "env", None)
        if env is None:
            raise PlanningError(
                "progress 'env' with rollouts > 0 rolls out the particle's own copy of the "
                "environment; it needs world_model='simulator'"
            )
        rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
        total = 0.0
        for _ in range(self.rollouts):
            total += self._rollout(env.clone(), particle, rng)
        return total / self.rollouts

    def _rollout(self, env: Any, particle: Any, rng: np.random.Generator) -> float:
        ret, weight, score = 0.0, 1.0, float(particle.score)
        actions = list(particle.admissible or ())
        obs = particle.observation
        tried: dict[tuple[str, tuple[str, ...]], set[str]] = {}
        try:
            for _ in range(self.rollout_steps):
                if not actions:
                    actions = list(env.admissible_actions())
                if not actions:
                    break
                pool = actions
                if self.policy == "untried":
                    here = tried.setdefault((obs, tuple(actions)), set())
                    pool = [a for a in actions if a not in here] or actions
                action = pool[int(rng.integers(len(pool)))]
                if self.policy == "untried":
                    here.add(action)
                obs, _reward, done, info = env.step(action)
                self.rollout_env_steps += 1
                new = float(info.get("score", score) or 0.0)
                won = bool(info.get("won", False))
                lost = bool(done and not won and not info.get("truncated", False))
                ret += weight * (new - score + float(won) - float(lost))
                score, weight = new, weight * self.discount
                if done:
                    break
                actions = list(info.get("admissible_actions") or ())
        finally:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - best effort: a rollout copy is being discarded
                pass
        return ret


class NoveltyProgress(_Cumulative):
    r""":math:`\delta_t = \tfrac12(1/\sqrt{1 + n(\ell_t)} + [\text{a new entity}])` (module
    docstring)."""

    __name__ = "novelty"

    def __init__(self, seen: Seen | None = None, env_kind: str = "auto") -> None:
        self.seen = seen or Seen()
        self.env_kind = env_kind

    def deltas(self, particle: Any) -> list[float]:
        visits, entities, place = dict(self.seen.visits), set(self.seen.entities), self.seen.place
        out = []
        for (a, _), (read, names) in zip(
            particle.steps, _steps_read(particle, self.env_kind), strict=True
        ):
            if a == DONE_ACTION:
                out.append(0.0)
                continue
            place = read or place
            count = 0.0
            if place is not None:
                n = visits.get(place, 0)
                count = 1.0 / float(np.sqrt(1.0 + n))
                visits[place] = n + 1
            out.append(0.5 * (count + float(bool(names - entities))))
            entities |= names
        return out


class ProcessProgress(_Cumulative):
    r"""RLVMR's explore and reflection rules on imagined steps (module docstring)."""

    __name__ = "rlvmr"

    def __init__(self, seen: Seen | None = None, env_kind: str = "auto") -> None:
        self.seen = seen or Seen()
        self.env_kind = env_kind

    def deltas(self, particle: Any) -> list[float]:
        actions, places = set(self.seen.actions), set(self.seen.places)
        prev_failed = self.seen.last_failed
        prev_action = self.seen.actions[-1] if self.seen.actions else None
        out = []
        reads = _steps_read(particle, self.env_kind)
        outcomes = getattr(particle, "outcomes", ())
        for i, (a, o) in enumerate(particle.steps):
            failed = (
                bool(outcomes[i].invalid)
                if i < len(outcomes) and outcomes[i].invalid
                else looks_failed(o)
            )
            place = reads[i][0]
            if a == DONE_ACTION or failed:
                d = 0.0
            elif prev_failed and a != prev_action:
                d = 1.0  # reflection: a different action right after a failure
            elif prev_failed and a == prev_action:
                d = 0.0  # repetition: the action that has just failed, again
            elif a not in actions or (place is not None and place not in places):
                d = 1.0  # explore: a new action or a new place
            else:
                d = 0.0  # repetition
            out.append(d)
            actions.add(a)
            if place is not None:
                places.add(place)
            prev_failed, prev_action = failed, a
        return out


_FAILED = (
    "Unknown action",
    "No known action matches that input",
    "Nothing happens",
    "nothing happens",
    "That is already",
    "You can't",
    "I'm not sure",
)


def looks_failed(observation: str) -> bool:
    """True when the observation is one of the text games' failure or no-op replies ("That is
    already open", "Nothing happens", "You can't ...")."""
    text = str(observation).strip()
    return any(text.startswith(m) for m in _FAILED)


class LMProgress:
    """Planner twist from a :class:`smcplan.llm.ProgressModel`-like role
    ``model(tasks, previous, actions, observations) -> [j.delta, j.log_twist]``; the "previous"
    text carries the particle's retrieved facts and the triplets its new observation added."""

    __name__ = "lm"

    def __init__(
        self, progress_model: Any, task: str, retrieval: Retrieval = DEFAULT_RETRIEVAL
    ) -> None:
        self.progress_model, self.task, self.retrieval = progress_model, task, retrieval

    def _before(self, p: Any) -> str:
        lines = []
        facts = p.facts(self.task, self.retrieval) if hasattr(p, "facts") else []
        if facts:
            lines.append("Known facts: " + "; ".join(" ".join(f) for f in facts))
        new = p.triplets[-1] if getattr(p, "triplets", ()) else ()
        if new:
            lines.append("New facts: " + "; ".join(" ".join(map(str, f)) for f in new))
        lines.append(p.previous)
        return "\n".join(lines)

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
        n = len(particles)
        judged = self.progress_model(
            [self.task] * n,
            [self._before(p) for p in particles],
            [p.steps[-1][0] for p in particles],
            [p.observation for p in particles],
        )
        return Score(
            jnp.asarray([float(j.delta) for j in judged]),
            jnp.asarray([j.log_twist for j in judged]),
        )


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
) -> SumTwist:
    """The twist named by ``spec`` (``"env+novelty"``), always as a :class:`SumTwist` (one part
    or more); an unknown name lists the valid ones.  ``rollouts``, ``rollout_steps`` and
    ``rollout_discount``, ``rollout_policy``: the ``env`` part's Monte Carlo leaf value
    (:class:`EnvProgress`)."""
    parts = []
    for name in parse_progress(spec):
        if name == "env":
            parts.append(
                (name, EnvProgress(rollouts, rollout_steps, rollout_discount, rollout_policy))
            )
        elif name == "novelty":
            parts.append((name, NoveltyProgress(seen, env_kind)))
        elif name == "rlvmr":
            parts.append((name, ProcessProgress(seen, env_kind)))
        elif name == "task":
            parts.append((name, TaskProgress(task, (seen or Seen()).layout, env_kind)))
        else:
            parts.append((name, LMProgress(progress_model, task, retrieval)))
    return SumTwist(parts)
