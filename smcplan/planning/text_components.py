r"""Language-model planner components, and ``plan(task, memory, admissible_actions, lm=...)``.

NeSyFS slow thinking (arXiv 2607.28942) imagines futures with the language model.  A particle
(:class:`TextParticle`) holds its own copy of the agent's knowledge graph (copy on write,
:meth:`smcplan.memory.KnowledgeGraph.copy`), the imagined (action, observation) steps and its
latest observation.  Each planning step makes **one batched model call per role for all N
particles** (DESIGN.md, "Data flow of one NeSyFS step"):

* :class:`LMProposal` — :math:`a^i_t \sim q(\cdot \mid \text{task}, \tau(G^i), o^i_{t-1})` over
  the admissible actions by exact log-prob scoring (:class:`smcplan.llm.ActionProposal`):
  returns :math:`\log q` and the model's own :math:`\log p_0` (its softmax over the admissible
  set at temperature 1), the two quantities a twisted weight needs;
* :class:`LMWorldModel` — :math:`o^i_t \sim p(o \mid \text{context}^i, a^i_t)`
  (:class:`smcplan.llm.ObservationModel`; :math:`\log p` and :math:`\log q` of the sampled text),
  then :math:`G^i_t = \mathrm{Update}(G^i_{t-1}, \mathrm{extract}(o^i_t, a^i_t))` on a copy of
  the particle's graph with source ``predicted`` — triplets from
  :class:`smcplan.llm.TripletExtractor` (one more batched call), the rule-based
  :func:`smcplan.memory.extract_triplets`, or any callable;
* :class:`LMProgress` — :math:`P^i_t = P(\text{Yes} \mid \text{task}, o^i_{t-1}, a^i_t, o^i_t)`
  from the Yes/No log-probabilities (:class:`smcplan.llm.ProgressModel`):
  :math:`\delta^i_t = [P^i_t \ge 1/2]` and :math:`\log\psi^i_t = \log P^i_t`.

The admissible actions of imagined states are unknown; the real current set is used at every
step (the standard approximation).  :func:`plan_text` assembles the components and runs
:func:`smcplan.planning.tsmc.tsmc` (``weighting="nesyfs"`` by default, the paper's rule).

Imports ``smcplan.memory`` and, lazily (only when the default roles are built),
``smcplan.llm``; never agents, eval or cli.  The toy POMDP path never imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from smcplan.memory import KnowledgeGraph, extract_triplets
from smcplan.planning.components import PlanningError, Proposed, Score, Transition, Twist
from smcplan.planning.result import PlanResult
from smcplan.planning.tsmc import tsmc, validate_config

__all__ = [
    "TextParticle",
    "LMProposal",
    "LMWorldModel",
    "LMProgress",
    "plan_text",
    "key_to_seed",
    "EXTRACTORS",
]

EXTRACTORS = ("llm", "rule", "none")
Triple = tuple[str, str, str]


def key_to_seed(key: jax.Array) -> int:
    """An int seed for one model call, drawn from a ``jax.random`` key (same key, same seed)."""
    return int(jax.random.randint(key, (), 0, 2**31 - 1))


def _clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class TextParticle:
    """One imagined future: the particle's graph (``None`` without a KG), the real observation at
    the root and the imagined ``(action, observation)`` steps.  Immutable; the world model returns
    new particles with copied graphs."""

    kg: KnowledgeGraph | None
    root_observation: str
    steps: tuple[tuple[str, str], ...] = ()

    @property
    def observation(self) -> str:
        """The latest observation (imagined after step 1)."""
        return self.steps[-1][1] if self.steps else self.root_observation

    @property
    def previous(self) -> str:
        """The observation before the latest one ("" at the root)."""
        if not self.steps:
            return ""
        return self.steps[-2][1] if len(self.steps) >= 2 else self.root_observation

    def facts(self, task: str, k: int = 2, limit: int = 20) -> list[Triple]:
        r""":math:`\tau = R(G, \text{task})` as ``(s, p, o)`` tuples (empty without a graph)."""
        if self.kg is None:
            return []
        return [t.as_tuple() for t in self.kg.retrieve(task, k, last_observation=self.observation, limit=limit)]

    def context(self, task: str, k: int = 2, limit: int = 20, obs_chars: int = 300) -> str:
        """The text the observation model continues: task, retrieved facts, the root observation
        and the imagined steps (each observation clipped to ``obs_chars`` characters)."""
        lines = [f"Task: {task}"]
        facts = self.facts(task, k, limit)
        if facts:
            lines.append("Known facts:")
            lines += [f"- {s} {p} {o}" for s, p, o in facts]
        lines.append(f"Observation: {_clip(self.root_observation, obs_chars)}")
        for a, o in self.steps:
            lines += [f"> {a}", _clip(o, obs_chars)]
        return "\n".join(lines)


class LMProposal:
    """Planner proposal from an :class:`smcplan.llm.ActionProposal`-like role:
    ``proposer(tasks, triplets, observations, admissible, seed) -> [p.action, p.logq, p.logp]``."""

    def __init__(self, proposer: Any, task: str, admissible: Sequence[str], k: int = 2, limit: int = 20) -> None:
        self.proposer, self.task, self.admissible, self.k, self.limit = proposer, task, list(admissible), k, limit

    def __call__(self, key: jax.Array, particles: list[TextParticle], t: int, horizon: int) -> Proposed:
        n = len(particles)
        out = self.proposer(
            [self.task] * n,
            [p.facts(self.task, self.k, self.limit) for p in particles],
            [p.observation for p in particles],
            [self.admissible] * n,
            seed=key_to_seed(key),
        )
        return Proposed([p.action for p in out], jnp.asarray([p.logq for p in out]), jnp.asarray([p.logp for p in out]))


class LMWorldModel:
    """Planner world model: predicted observations from an :class:`smcplan.llm.ObservationModel`-
    like role (``model(contexts, actions, seed) -> [Sample]``), then each particle's graph copied
    and updated with the predicted observation's triplets (source ``predicted``).

    ``extractor``: ``"llm"`` (``llm_extractor(observations, actions, seed)``, one batched call),
    ``"rule"`` (:func:`smcplan.memory.extract_triplets` with ``env_kind``), ``"none"``, or a
    callable ``(observations, actions, locations, seed) -> [triplets or Extraction]``.
    """

    def __init__(
        self,
        observation_model: Any,
        task: str,
        extractor: str | Callable = "none",
        llm_extractor: Any = None,
        env_kind: str = "auto",
        k: int = 2,
        limit: int = 20,
    ) -> None:
        if isinstance(extractor, str) and extractor not in EXTRACTORS:
            raise PlanningError(f"unknown extractor {extractor!r}; known: {', '.join(EXTRACTORS)}, or a callable")
        if extractor == "llm" and llm_extractor is None:
            raise PlanningError("extractor='llm' needs an llm_extractor (smcplan.llm.TripletExtractor) or lm=")
        self.observation_model, self.task = observation_model, task
        self.extractor, self.llm_extractor, self.env_kind = extractor, llm_extractor, env_kind
        self.k, self.limit = k, limit

    def _extract(self, key: jax.Array, particles: list[TextParticle], actions: list[str], observations: list[str]) -> list[Any]:
        n = len(particles)
        if self.extractor == "none":
            return [()] * n
        locations = [p.kg.location_of("agent") if p.kg is not None else None for p in particles]
        if self.extractor == "llm":
            return self.llm_extractor(observations, actions, seed=key_to_seed(key))
        if self.extractor == "rule":
            return [
                extract_triplets(o, a, env_kind=self.env_kind, location=loc)
                for o, a, loc in zip(observations, actions, locations, strict=True)
            ]
        return self.extractor(observations, actions, locations, seed=key_to_seed(key))

    def __call__(self, key: jax.Array, particles: list[TextParticle], actions: list[str], t: int, horizon: int) -> Transition:
        k_obs, k_ext = jax.random.split(key)
        actions = list(actions)
        contexts = [p.context(self.task, self.k, self.limit) for p in particles]
        samples = self.observation_model(contexts, actions, seed=key_to_seed(k_obs))
        observations = [str(s.value if s.value is not None else s.text).strip() for s in samples]
        extracted = self._extract(k_ext, particles, actions, observations) if any(p.kg is not None for p in particles) else [()] * len(particles)
        new = []
        for p, a, o, triples in zip(particles, actions, observations, extracted, strict=True):
            kg = p.kg
            if kg is not None:
                kg = kg.copy()  # copy on write: O(1), the parent's graph is never touched
                kg.update(triples, step=kg.step + 1, source="predicted", strict=False)
            new.append(TextParticle(kg=kg, root_observation=p.root_observation, steps=(*p.steps, (a, o))))
        return Transition(new, observations, jnp.asarray([s.logp for s in samples]), jnp.asarray([s.logq for s in samples]))


class LMProgress:
    """Planner twist from a :class:`smcplan.llm.ProgressModel`-like role:
    ``model(tasks, previous, actions, observations) -> [j.delta, j.log_twist]``."""

    def __init__(self, progress_model: Any, task: str) -> None:
        self.progress_model, self.task = progress_model, task

    def __call__(self, key: jax.Array, particles: list[TextParticle], t: int, horizon: int) -> Score:
        n = len(particles)
        judged = self.progress_model(
            [self.task] * n, [p.previous for p in particles], [p.steps[-1][0] for p in particles], [p.observation for p in particles]
        )
        return Score(jnp.asarray([float(j.delta) for j in judged]), jnp.asarray([j.log_twist for j in judged]))


def plan_text(
    task: str,
    memory: KnowledgeGraph | None,
    admissible_actions: Sequence[str],
    lm: Any = None,
    *,
    observation: str = "",
    key: Any = 0,
    num_particles: int = 8,
    horizon: int = 2,
    weighting: str = "nesyfs",
    lam: float = 1.0,
    resampling: str | Callable = "systematic",
    ess_threshold: float = 1.0,
    choice: str = "sample",
    extractor: str | Callable = "llm",
    env_kind: str = "auto",
    retrieve_k: int = 2,
    retrieve_limit: int = 20,
    observation_tokens: int = 32,
    proposer: Any = None,
    observation_model: Any = None,
    progress_model: Any = None,
    llm_extractor: Any = None,
    twist: Twist | None = None,
) -> PlanResult:
    r"""Plan the next action of a text agent by imagining N futures H steps ahead.

    ``task``: the task text; ``memory``: the agent's :class:`~smcplan.memory.KnowledgeGraph`
    (never modified: each particle works on a copy) or ``None``; ``admissible_actions``: the
    current valid actions (the result's ``action`` is one of them); ``lm``: a
    :class:`smcplan.llm.LanguageModel` from which the default roles are built
    (:class:`~smcplan.llm.ActionProposal` at temperature 1, :class:`~smcplan.llm.ObservationModel`
    with ``observation_tokens`` new tokens, :class:`~smcplan.llm.ProgressModel`,
    :class:`~smcplan.llm.TripletExtractor`); pass ``proposer``, ``observation_model``,
    ``progress_model`` or ``llm_extractor`` to replace any of them, or ``twist`` (any
    :class:`~smcplan.planning.components.Twist`, e.g. a rule-based progress) instead of the progress
    model.  ``observation``: the current real observation.  The planner settings are those of
    :func:`smcplan.planning.tsmc.tsmc`; ``lam`` = :math:`\lambda` of the NeSyFS weighting.
    """
    if not isinstance(task, str):
        raise PlanningError(f"task must be a string; got {type(task).__name__}")
    if isinstance(admissible_actions, str):
        raise PlanningError("admissible_actions must be a list of strings, not one string")
    admissible = [str(a) for a in admissible_actions]
    if not admissible:
        raise PlanningError("the admissible action set is empty; the planner needs at least one action to choose from")
    if memory is not None and not isinstance(memory, KnowledgeGraph):
        raise PlanningError(f"memory must be a smcplan.memory.KnowledgeGraph or None; got {type(memory).__name__}")
    validate_config(num_particles, horizon, weighting, lam, choice, ess_threshold, resampling)
    if isinstance(extractor, str) and extractor not in EXTRACTORS:
        raise PlanningError(f"unknown extractor {extractor!r}; known: {', '.join(EXTRACTORS)}, or a callable")
    needs_lm = (
        proposer is None or observation_model is None or (progress_model is None and twist is None)
        or (extractor == "llm" and llm_extractor is None and memory is not None)
    )
    if needs_lm:
        if lm is None:
            raise PlanningError("plan(task, memory, admissible_actions) needs lm= (a smcplan.llm.LanguageModel) or all roles given")
        from smcplan.llm import ActionProposal, ObservationModel, ProgressModel, TripletExtractor

        proposer = proposer or ActionProposal(lm, temperature=1.0, think=False)
        observation_model = observation_model or ObservationModel(lm, max_new_tokens=observation_tokens)
        if twist is None:
            progress_model = progress_model or ProgressModel(lm)
        if extractor == "llm" and memory is not None:
            llm_extractor = llm_extractor or TripletExtractor(lm)
    from smcplan.planning.batch import as_key

    key = as_key(key)
    root = TextParticle(kg=memory, root_observation=str(observation))
    return tsmc(
        [root] * int(num_particles),
        key,
        proposal=LMProposal(proposer, task, admissible, retrieve_k, retrieve_limit),
        world_model=LMWorldModel(observation_model, task, extractor if memory is not None else "none", llm_extractor, env_kind, retrieve_k, retrieve_limit),
        twist=twist if twist is not None else LMProgress(progress_model, task),
        horizon=int(horizon),
        weighting=weighting,
        lam=lam,
        resampling=resampling,
        ess_threshold=ess_threshold,
        choice=choice,
    )

