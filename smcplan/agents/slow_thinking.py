r"""NeSyFS slow thinking: the planner run over imagined futures with language-model components.

Each particle :class:`Imagined` holds a copy of the agent's belief graph (copy on write), the
imagined trajectory so far and its latest (predicted) observation. One planning step
:math:`t = 1..H` makes **one batched model call per role for all N particles** (DESIGN.md, "Data
flow of one NeSyFS step"):

* **proposal** — :class:`LMProposal`: :math:`a^i_t \sim q(a \mid \tau(G^i), o^i_{t-1})` over the
  admissible actions of the real current step (the imagined states' admissible sets are unknown;
  the current set is the standard approximation), by exact log-prob scoring
  (:class:`smcplan.llm.ActionProposal`), returning :math:`\log q` and the model's
  :math:`\log p_0`;
* **world model** — :class:`LMWorldModel`: :math:`o^i_t \sim p(o \mid \text{context}^i, a^i_t)`
  (:class:`smcplan.llm.ObservationModel`, free text of at most ``max_new_tokens`` tokens), then
  the triplet update of each particle's own graph,
  :math:`G^i_t = \mathrm{Update}(G^i_{t-1}, o^i_t, a^i_t)` with source ``predicted`` (rule-based
  or LLM extraction, one batched call);
* **progress / twist** — :class:`LMProgress`: :math:`P^i_t = P(\text{Yes} \mid \text{task},
  o^i_{t-1}, a^i_t, o^i_t)` from the Yes/No log-probabilities (:class:`smcplan.llm.ProgressModel`),
  :math:`\delta^i_t = [P^i_t \ge 1/2]`, :math:`\log\psi^i_t = \log P^i_t`.

The planner (:func:`smcplan.planning.tsmc`) then reweights (``weighting="nesyfs"``:
:math:`\omega \leftarrow \omega e^{\lambda\delta}`; ``"twisted"``: properly weighted twisted SMC),
resamples, and after H steps returns the first action of a surviving particle, which the agent
executes. The components obey :mod:`smcplan.planning.components`' Protocols and never mutate the
particles they receive.

Imports ``smcplan.planning``, ``smcplan.memory`` and (lazily) ``smcplan.llm``; never
``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp

from smcplan.agents.context import Context, clip_text
from smcplan.agents.extractors import Extractor
from smcplan.memory import KnowledgeGraph
from smcplan.planning import PlanResult, Proposed, Score, Transition, tsmc
from smcplan.planning.tsmc import validate_config

__all__ = ["Imagined", "LMProposal", "LMWorldModel", "LMProgress", "SlowThinker", "key_to_seed"]


def key_to_seed(key: jax.Array) -> int:
    """An int seed for a model call, drawn from a ``jax.random`` key."""
    return int(jax.random.randint(key, (), 0, 2**31 - 1))


@dataclass(frozen=True)
class Imagined:
    """One particle: the real context at the root, the particle's graph (``None`` without a KG),
    the imagined ``(action, observation)`` steps, and the observation before the latest one."""

    root: Context
    kg: KnowledgeGraph | None
    steps: tuple[tuple[str, str], ...] = ()
    previous: str = ""

    @property
    def observation(self) -> str:
        return self.steps[-1][1] if self.steps else self.root.observation

    def context(self, retrieve: Callable[[KnowledgeGraph, str], list[tuple[str, str, str]]] | None) -> Context:
        """The particle's view: root memory + its own retrieved facts + the imagined steps."""
        imagined = "\n".join(f"> {a}\n(imagined) {clip_text(o, 300)}" for a, o in self.steps)
        history = "\n".join(x for x in (self.root.history, imagined) if x)
        triplets = (
            retrieve(self.kg, self.observation)
            if self.kg is not None and retrieve is not None
            else list(self.root.triplets)
        )
        return Context(
            self.root.task, self.observation, triplets, history, self.root.belief, list(self.root.notes)
        )


class LMProposal:
    """Planner proposal: one admissible action per particle from the proposal role."""

    def __init__(self, proposer: Any, task: str, admissible: Sequence[str], retrieve: Callable | None):
        self.proposer = proposer
        self.task = task
        self.admissible = list(admissible)
        self.retrieve = retrieve

    def __call__(self, key: jax.Array, particles: list[Imagined], t: int, horizon: int) -> Proposed:
        views = [p.context(self.retrieve) for p in particles]
        n = len(particles)
        out = self.proposer(
            [self.task] * n,
            [v.triplets for v in views],
            [v.for_proposal() for v in views],
            [self.admissible] * n,
            seed=key_to_seed(key),
        )
        return Proposed(
            [p.action for p in out],
            jnp.asarray([p.logq for p in out]),
            jnp.asarray([p.logp for p in out]),
        )


class LMWorldModel:
    """Planner world model: predicted observations, then each particle's graph updated."""

    def __init__(self, observation_model: Any, extractor: Extractor | None, retrieve: Callable | None):
        self.observation_model = observation_model
        self.extractor = extractor
        self.retrieve = retrieve

    def __call__(
        self, key: jax.Array, particles: list[Imagined], actions: list[str], t: int, horizon: int
    ) -> Transition:
        k_obs, k_ext = jax.random.split(key)
        contexts = [p.context(self.retrieve).situation() for p in particles]
        samples = self.observation_model(contexts, list(actions), seed=key_to_seed(k_obs))
        observations = [str(s.value if s.value is not None else s.text).strip() for s in samples]
        graphs: list[KnowledgeGraph | None] = [p.kg for p in particles]
        if self.extractor is not None and any(g is not None for g in graphs):
            locations = [g.location_of("agent") if g is not None else None for g in graphs]
            extractions = self.extractor(
                observations, list(actions), locations, seed=key_to_seed(k_ext)
            )
            new_graphs: list[KnowledgeGraph | None] = []
            for g, ext in zip(graphs, extractions, strict=True):
                if g is None:
                    new_graphs.append(None)
                    continue
                g2 = g.copy()
                g2.update(ext, step=g.step + 1, source="predicted")
                new_graphs.append(g2)
            graphs = new_graphs
        new = [
            replace(p, kg=g, steps=(*p.steps, (a, o)), previous=p.observation)
            for p, g, a, o in zip(particles, graphs, actions, observations, strict=True)
        ]
        return Transition(
            new,
            observations,
            jnp.asarray([s.logp for s in samples]),
            jnp.asarray([s.logq for s in samples]),
        )


class LMProgress:
    """Planner twist: progress judgement of each particle's latest imagined transition."""

    def __init__(self, progress_model: Any, task: str):
        self.progress_model = progress_model
        self.task = task

    def __call__(self, key: jax.Array, particles: list[Imagined], t: int, horizon: int) -> Score:
        n = len(particles)
        judged = self.progress_model(
            [self.task] * n,
            [p.previous for p in particles],
            [p.steps[-1][0] for p in particles],
            [p.observation for p in particles],
        )
        return Score(
            jnp.asarray([float(j.delta) for j in judged]),
            jnp.asarray([j.log_twist for j in judged]),
        )


class SlowThinker:
    r"""Runs the planner from the agent's current context and returns its :class:`PlanResult`.

    ``num_particles`` N, ``horizon`` H, ``lam`` :math:`\lambda`, ``weighting``, ``resampling``,
    ``ess_threshold`` and ``choice`` are passed to :func:`smcplan.planning.tsmc`;
    ``observation_tokens`` bounds each predicted observation. Roles default to
    :class:`smcplan.llm.ActionProposal` (no thought, temperature 1: particles diversify),
    :class:`smcplan.llm.ObservationModel` and :class:`smcplan.llm.ProgressModel` on ``lm``;
    pass ``proposer``, ``observation_model`` or ``progress_model`` to replace them.
    """

    def __init__(
        self,
        lm: Any,
        *,
        num_particles: int = 4,
        horizon: int = 2,
        lam: float = 1.0,
        weighting: str = "nesyfs",
        resampling: str = "systematic",
        ess_threshold: float = 1.0,
        choice: str = "sample",
        observation_tokens: int = 32,
        proposer: Any = None,
        observation_model: Any = None,
        progress_model: Any = None,
    ) -> None:
        validate_config(num_particles, horizon, weighting, lam, choice, ess_threshold, resampling)
        self.config = dict(
            num_particles=int(num_particles),
            horizon=int(horizon),
            lam=float(lam),
            weighting=weighting,
            resampling=resampling,
            ess_threshold=float(ess_threshold),
            choice=choice,
        )
        if proposer is None or observation_model is None or progress_model is None:
            from smcplan.llm import ActionProposal, ObservationModel, ProgressModel

            proposer = proposer or ActionProposal(lm, temperature=1.0, think=False)
            observation_model = observation_model or ObservationModel(
                lm, max_new_tokens=observation_tokens
            )
            progress_model = progress_model or ProgressModel(lm)
        self.proposer = proposer
        self.observation_model = observation_model
        self.progress_model = progress_model

    def __call__(
        self,
        root: Context,
        kg: KnowledgeGraph | None,
        admissible: Sequence[str],
        seed: int,
        extractor: Extractor | None = None,
        retrieve: Callable[[KnowledgeGraph, str], list[tuple[str, str, str]]] | None = None,
    ) -> PlanResult:
        """Plan from ``root`` (the real context) and ``kg`` (the agent's graph, copied per
        particle); ``extractor``/``retrieve`` update and read the particles' graphs."""
        cfg = self.config
        particles = [Imagined(root, kg)] * cfg["num_particles"]
        return tsmc(
            particles,
            jax.random.key(seed),
            proposal=LMProposal(self.proposer, root.task, admissible, retrieve),
            world_model=LMWorldModel(self.observation_model, extractor, retrieve),
            twist=LMProgress(self.progress_model, root.task),
            horizon=cfg["horizon"],
            weighting=cfg["weighting"],
            lam=cfg["lam"],
            resampling=cfg["resampling"],
            ess_threshold=cfg["ess_threshold"],
            choice=cfg["choice"],
        )


def summarize(result: PlanResult, max_chars: int = 160) -> dict[str, Any]:
    """``result.to_dict()`` plus the imagined trajectory of the chosen particle (if one was)."""
    out = result.to_dict()
    j = result.chosen_index
    if j is not None and isinstance(result.particles, list):
        chosen = result.particles[j]
        out["imagined"] = [
            {"action": a, "observation": clip_text(o, max_chars)} for a, o in chosen.steps
        ]
    return out
