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
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import jax.numpy as jnp

from smcplan.memory import KnowledgeGraph, extract_triplets
from smcplan.planning.components import PlanningError, Proposed, Transition, Twist
from smcplan.planning.config import DEFAULT_RETRIEVAL, PlannerConfig, Retrieval, parse_progress
from smcplan.planning.outcome import DONE_ACTION, Outcome
from smcplan.planning.progress import Seen
from smcplan.planning.result import PlanResult
from smcplan.planning.tsmc import tsmc

__all__ = [
    "TextParticle",
    "Outcome",
    "GraphUpdate",
    "known_actions",
    "LMProposal",
    "LMWorldModel",
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
    the root and the imagined ``(action, observation)`` steps, with per step the
    :class:`Outcome` and the triplets read from the observation; ``admissible``: the particle's
    own admissible actions for its next proposal (``None``: the real set); ``env``: its own copy
    of the environment (simulator world model; ``None`` at the root and for the LM world model).
    Immutable apart from ``env``, which only the simulator world model steps (copy on write)."""

    kg: KnowledgeGraph | None
    root_observation: str
    steps: tuple[tuple[str, str], ...] = ()
    outcomes: tuple[Outcome, ...] = ()
    triplets: tuple[tuple[Triple, ...], ...] = ()
    admissible: tuple[str, ...] | None = None
    env: Any = field(default=None, compare=False, repr=False)
    root_score: float = 0.0

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

    @property
    def score(self) -> float:
        return self.outcomes[-1].score if self.outcomes else self.root_score

    @property
    def done(self) -> bool:
        return any(o.done for o in self.outcomes)

    def extend(
        self, action: str, observation: str, *, kg: Any = None, env: Any = None, outcome: Outcome | None = None,
        admissible: Sequence[str] | None = None, triplets: Sequence[Any] = (),
    ) -> TextParticle:
        """A new particle one imagined step further (this one is left as it is)."""
        kg_triples = tuple(tuple(t.as_tuple()) if hasattr(t, "as_tuple") else tuple(t) for t in triplets)
        return replace(
            self,
            kg=self.kg if kg is None else kg,
            steps=(*self.steps, (action, observation)),
            outcomes=(*self.outcomes, outcome if outcome is not None else Outcome(score=self.score)),
            triplets=(*self.triplets, kg_triples),
            admissible=None if admissible is None else tuple(admissible),
            env=env,
        )

    def facts(self, task: str, retrieval: Retrieval = DEFAULT_RETRIEVAL) -> list[Triple]:
        r""":math:`\tau = R(G, \text{task})` as ``(s, p, o)`` tuples (empty without a graph)."""
        if self.kg is None:
            return []
        return [t.as_tuple() for t in self.kg.retrieve(task, retrieval.hops, last_observation=self.observation, limit=retrieval.limit)]

    def context(self, task: str, retrieval: Retrieval = DEFAULT_RETRIEVAL, obs_chars: int = 300) -> str:
        """The text the observation model continues: task, retrieved facts, the root observation
        and the imagined steps (each observation clipped to ``obs_chars`` characters)."""
        lines = [f"Task: {task}"]
        facts = self.facts(task, retrieval)
        if facts:
            lines.append("Known facts:")
            lines += [f"- {s} {p} {o}" for s, p, o in facts]
        lines.append(f"Observation: {_clip(self.root_observation, obs_chars)}")
        for a, o in self.steps:
            lines += [f"> {a}", _clip(o, obs_chars)]
        return "\n".join(lines)


def known_actions(admissible: Sequence[str], kg: KnowledgeGraph | None) -> list[str]:
    """The admissible actions whose objects the graph knows: an action is kept when it names no
    object (one word, e.g. ``look``) or some entity of ``kg`` occurs in it; the whole set when
    nothing is left or there is no graph (the LM world model's per-particle admissible set)."""
    if kg is None:
        return list(admissible)
    names = [e for e in kg.entities() if len(e) > 2 and e not in ("agent", "you")]
    kept = [a for a in admissible if len(a.split()) == 1 or any(e in a.lower() for e in names)]
    return kept or list(admissible)


class GraphUpdate:
    """Each particle's graph after an imagined observation: copied, then updated with the
    observation's triplets (source ``predicted``).  ``extractor``: ``"llm"``
    (``llm_extractor(observations, actions, seed)``, one batched call), ``"rule"``
    (:func:`smcplan.memory.extract_triplets` with ``env_kind``), ``"none"``, or a callable
    ``(observations, actions, locations, seed) -> [triplets or Extraction]``.  Returns
    ``[(graph, triplets)]``."""

    def __init__(self, extractor: str | Callable = "none", llm_extractor: Any = None, env_kind: str = "auto") -> None:
        if isinstance(extractor, str) and extractor not in EXTRACTORS:
            raise PlanningError(f"unknown extractor {extractor!r}; known: {', '.join(EXTRACTORS)}, or a callable")
        if extractor == "llm" and llm_extractor is None:
            raise PlanningError("extractor='llm' needs an llm_extractor (smcplan.llm.TripletExtractor) or lm=")
        self.extractor, self.llm_extractor, self.env_kind = extractor, llm_extractor, env_kind

    def __call__(self, particles: list[TextParticle], actions: list[str], observations: list[str], key: jax.Array) -> list[tuple[Any, tuple]]:
        n = len(particles)
        if self.extractor == "none" or not any(p.kg is not None for p in particles):
            return [(p.kg, ()) for p in particles]
        locations = [p.kg.location_of("agent") if p.kg is not None else None for p in particles]
        if self.extractor == "llm":
            extracted = self.llm_extractor(observations, actions, seed=key_to_seed(key))
        elif self.extractor == "rule":
            extracted = [
                extract_triplets(o, a, env_kind=self.env_kind, location=loc)
                for o, a, loc in zip(observations, actions, locations, strict=True)
            ]
        else:
            extracted = self.extractor(observations, actions, locations, seed=key_to_seed(key))
        out = []
        for p, triples in zip(particles, list(extracted)[:n], strict=True):
            kg = p.kg
            if kg is not None:
                kg = kg.copy()  # copy on write: O(1), the parent's graph is never touched
                kg.update(triples, step=kg.step + 1, source="predicted", strict=False)
            out.append((kg, tuple(triples)))
        return out


class LMProposal:
    """Planner proposal from an :class:`smcplan.llm.ActionProposal`-like role:
    ``proposer(tasks, triplets, observations, admissible, seed) -> [p.action, p.logq, p.logp]``,
    each particle over its own admissible actions (the real set where it has none)."""

    def __init__(self, proposer: Any, task: str, admissible: Sequence[str], retrieval: Retrieval = DEFAULT_RETRIEVAL) -> None:
        self.proposer, self.task, self.admissible, self.retrieval = proposer, task, list(admissible), retrieval

    def __call__(self, key: jax.Array, particles: list[TextParticle], t: int, horizon: int) -> Proposed:
        n = len(particles)
        options = [[DONE_ACTION] if p.done else (list(p.admissible) if p.admissible else self.admissible) for p in particles]
        out = self.proposer(
            [self.task] * n,
            [p.facts(self.task, self.retrieval) for p in particles],
            [p.observation for p in particles],
            options,
            seed=key_to_seed(key),
        )
        return Proposed([p.action for p in out], jnp.asarray([p.logq for p in out]), jnp.asarray([p.logp for p in out]))


class LMWorldModel:
    """Planner world model: predicted observations from an :class:`smcplan.llm.ObservationModel`-
    like role (``model(contexts, actions, seed) -> [Sample]``), then each particle's graph copied
    and updated (:class:`GraphUpdate`), and its next admissible set = the real set filtered to the
    actions whose objects its graph knows (:func:`known_actions`; the real set as fallback)."""

    def __init__(
        self,
        observation_model: Any,
        task: str,
        graphs: GraphUpdate,
        admissible: Sequence[str],
        retrieval: Retrieval = DEFAULT_RETRIEVAL,
    ) -> None:
        self.observation_model, self.task, self.graphs = observation_model, task, graphs
        self.admissible, self.retrieval = list(admissible), retrieval

    def __call__(self, key: jax.Array, particles: list[TextParticle], actions: list[str], t: int, horizon: int) -> Transition:
        k_obs, k_ext = jax.random.split(key)
        actions = list(actions)
        contexts = [p.context(self.task, self.retrieval) for p in particles]
        samples = self.observation_model(contexts, actions, seed=key_to_seed(k_obs))
        observations = [str(s.value if s.value is not None else s.text).strip() for s in samples]
        updated = self.graphs(particles, actions, observations, k_ext)
        new = [
            p.extend(a, o, kg=kg, triplets=triples, admissible=known_actions(self.admissible, kg) if kg is not None else None)
            for p, a, o, (kg, triples) in zip(particles, actions, observations, updated, strict=True)
        ]
        return Transition(new, observations, jnp.asarray([s.logp for s in samples]), jnp.asarray([s.logq for s in samples]))


def plan_text(
    task: str,
    memory: KnowledgeGraph | None,
    admissible_actions: Sequence[str],
    lm: Any = None,
    *,
    observation: str = "",
    key: Any = 0,
    config: PlannerConfig | None = None,
    retrieval: Retrieval | None = None,
    simulator: Any = None,
    seen: Seen | None = None,
    extractor: str | Callable = "llm",
    env_kind: str = "auto",
    shortlist: Callable[[list[str]], list[str]] | None = None,
    proposer: Any = None,
    observation_model: Any = None,
    progress_model: Any = None,
    llm_extractor: Any = None,
    twist: Twist | None = None,
    **options: Any,
) -> PlanResult:
    r"""Plan the next action of a text agent by imagining N futures H steps ahead.

    ``task``: the task text; ``memory``: the agent's :class:`~smcplan.memory.KnowledgeGraph`
    (never modified: each particle works on a copy) or ``None``; ``admissible_actions``: the
    current valid actions (the result's ``action`` is one of them); ``observation``: the current
    real observation.  ``config``: a :class:`~smcplan.planning.config.PlannerConfig` (N, H,
    :math:`\lambda`, weighting, resampling, ESS threshold, choice, tie-break, ``world_model``,
    ``progress``, ``proposal``); its fields may also be given as keywords (``num_particles=8``),
    which override ``config``.  ``retrieval``: the particles' graph retrieval
    (:class:`~smcplan.planning.config.Retrieval`).

    * ``world_model="lm"``: observations predicted by the model (``observation_model``);
      ``"learned"``: by the fine-tuned model at ``world_model_path`` (same role and prompt;
      :mod:`smcplan.planning.learned`);
      ``"simulator"``: each particle steps its own copy made by ``simulator`` (a clone factory,
      e.g. ``env.clone``; an **oracle**, :mod:`smcplan.planning.simulator`).
    * ``progress``: ``"lm"`` (the model's Yes/No judge, seeing the particle's retrieved graph and
      new triplets), ``"env"`` (score gain, won, lost; simulator only), ``"rlvmr"`` (RLVMR's
      verifiable rules), ``"novelty"`` (new places and entities), or a ``+``-sum
      (:mod:`smcplan.planning.progress`); ``twist`` (any Twist) replaces it.  ``rollouts=M``
      adds to ``env`` a Monte Carlo leaf value at step H (M uniform rollouts of at most
      ``rollout_steps`` on clones of each particle's environment, discounted by
      ``rollout_discount``; ``rollout_policy="untried"``: no action twice in the same state while
      others are untried; simulator only).  ``seen``: what
      the episode has already seen (places, entities, actions), for novelty and rlvmr.
    * ``proposal``: ``"lm"`` (``proposer``, default :class:`~smcplan.llm.ActionProposal` at
      temperature 1) or ``"uniform"`` (LLM-free); each particle proposes over its own admissible
      actions (``shortlist`` cuts a simulator particle's set as the agent's own shortlist does).

    ``lm``: the :class:`smcplan.llm.LanguageModel` the default roles are built on; ``extractor``
    reads each imagined observation into the particle's graph copy (:class:`GraphUpdate`).
    """
    from smcplan.planning.progress import make_progress
    from smcplan.planning.simulator import (
        SimulatorWorldModel,
        UniformTextProposal,
        check_clone_factory,
    )

    if not isinstance(task, str):
        raise PlanningError(f"task must be a string; got {type(task).__name__}")
    if isinstance(admissible_actions, str):
        raise PlanningError("admissible_actions must be a list of strings, not one string")
    admissible = [str(a) for a in admissible_actions]
    if not admissible:
        raise PlanningError("the admissible action set is empty; the planner needs at least one action to choose from")
    if memory is not None and not isinstance(memory, KnowledgeGraph):
        raise PlanningError(f"memory must be a smcplan.memory.KnowledgeGraph or None; got {type(memory).__name__}")
    if config is not None and not isinstance(config, PlannerConfig):
        raise PlanningError(f"config must be a smcplan.planning.PlannerConfig; got {type(config).__name__}")
    unknown = sorted(set(options) - set(PlannerConfig._fields))
    if unknown:
        raise PlanningError(
            f"unknown plan() option(s) {', '.join(map(repr, unknown))}; planner options: {', '.join(PlannerConfig._fields)}"
        )
    cfg = (config or PlannerConfig())._replace(**options).validated()
    retrieval = (retrieval or Retrieval()).validated()
    if isinstance(extractor, str) and extractor not in EXTRACTORS:
        raise PlanningError(f"unknown extractor {extractor!r}; known: {', '.join(EXTRACTORS)}, or a callable")
    simulated = cfg.world_model == "simulator"
    if simulated:
        if simulator is None:
            raise PlanningError("world_model='simulator' needs simulator= a clone factory (e.g. env.clone of the real environment)")
        check_clone_factory(simulator)
    names = parse_progress(cfg.progress)
    if twist is not None and cfg.rollouts:
        raise PlanningError(f"rollouts={cfg.rollouts} is the built-in 'env' twist's leaf value; twist= replaces that twist (set rollouts=0)")
    if twist is None and "env" in names and not simulated:
        raise PlanningError("progress 'env' reads the score from the simulator; it needs world_model='simulator'")
    wants_lm_progress = twist is None and "lm" in names
    if cfg.world_model == "learned" and observation_model is None:
        from smcplan.planning.learned import learned_observation_model

        observation_model = learned_observation_model(cfg.world_model_path, cfg.observation_tokens, like=lm)
    needs_lm = (
        (cfg.proposal == "lm" and proposer is None) or (not simulated and observation_model is None)
        or (wants_lm_progress and progress_model is None)
        or (extractor == "llm" and llm_extractor is None and memory is not None)
    )
    if needs_lm:
        if lm is None:
            raise PlanningError("plan(task, memory, admissible_actions) needs lm= (a smcplan.llm.LanguageModel) or all roles given")
        from smcplan.llm import ActionProposal, ObservationModel, ProgressModel, TripletExtractor

        if cfg.proposal == "lm":
            proposer = proposer or ActionProposal(lm, temperature=1.0, think=False)
        if not simulated:
            observation_model = observation_model or ObservationModel(lm, max_new_tokens=cfg.observation_tokens)
        if wants_lm_progress:
            progress_model = progress_model or ProgressModel(lm)
        if extractor == "llm" and memory is not None:
            llm_extractor = llm_extractor or TripletExtractor(lm)
    graphs = GraphUpdate(extractor if memory is not None else "none", llm_extractor, env_kind)
    from smcplan.planning.batch import as_key

    key = as_key(key)
    if twist is None:
        twist = make_progress(cfg.progress, task=task, seen=seen, progress_model=progress_model, retrieval=retrieval, env_kind=env_kind,
                              rollouts=cfg.rollouts, rollout_steps=cfg.rollout_steps, rollout_discount=cfg.rollout_discount,
                              rollout_policy=cfg.rollout_policy)
    world = (
        SimulatorWorldModel(simulator, update_graphs=graphs, shortlist=shortlist)
        if simulated
        else LMWorldModel(observation_model, task, graphs, admissible, retrieval)
    )
    proposal = LMProposal(proposer, task, admissible, retrieval) if cfg.proposal == "lm" else UniformTextProposal(admissible)
    root = TextParticle(kg=memory, root_observation=str(observation), root_score=float(seen.score) if seen is not None else 0.0)
    try:
        result = tsmc([root] * cfg.num_particles, key, proposal=proposal, world_model=world, twist=twist, **cfg.tsmc_kwargs())
    finally:
        if simulated:
            world.close()
    result.config.update({"world_model_kind": cfg.world_model, "progress": cfg.progress, "proposal_kind": cfg.proposal,
                          "oracle": simulated})
    if cfg.world_model_path is not None:
        result.config["world_model_path"] = cfg.world_model_path
    if simulated:
        result.config["clones"] = world.clones
    if cfg.rollouts:
        result.config.update({"rollouts": cfg.rollouts, "rollout_steps": cfg.rollout_steps,
                              "rollout_discount": cfg.rollout_discount,
                              "rollout_policy": cfg.rollout_policy})
        env_part = dict(getattr(twist, "parts", ())).get("env")
        if env_part is not None:
            result.config["rollout_env_steps"] = env_part.rollout_env_steps
    if hasattr(twist, "informative"):
        result.config["informative"] = "+".join(twist.informative())
    return result
