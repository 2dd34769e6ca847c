r"""The language-model proposal and world model of the text planner (NeSyFS slow thinking).

NeSyFS (arXiv 2607.28942) imagines futures with the language model; each planning step makes
**one batched model call per role for all N particles** (DESIGN.md, "Data flow of one NeSyFS
step"):

* :class:`LMProposal` — :math:`a^i_t \sim q(\cdot \mid \text{task}, \tau(G^i), o^i_{t-1})` over
  the particle's admissible actions by exact log-prob scoring (:class:`smcplan.llm.ActionProposal`):
  returns :math:`\log q` and the model's own :math:`\log p_0` (its softmax over the admissible
  set at temperature 1), the two quantities a twisted weight needs;
* :class:`LMWorldModel` — :math:`o^i_t \sim p(o \mid \text{context}^i, a^i_t)`
  (:class:`smcplan.llm.ObservationModel`; :math:`\log p` and :math:`\log q` of the sampled text),
  then the reply the particle's map already fixes kept in its place, once, and the particle's map
  carried (:class:`~smcplan.planning.map_replies.MapReplies`: :math:`\tilde o^i_t`, log p and
  log q of the drawn text kept), then
  :math:`G^i_t = \mathrm{Update}(G^i_{t-1}, \mathrm{extract}(\tilde o^i_t, a^i_t))`
  (:class:`~smcplan.planning.graph_update.GraphUpdate`) and the particle's next admissible set
  (:func:`~smcplan.planning.text_particle.known_actions`).

The admissible actions of imagined states are unknown; the real current set is used (filtered
by what the particle's graph knows: the standard approximation).  The roles are passed in, so
this module never imports ``smcplan.llm``; nor agents, eval or cli.  The progress twists are in
:mod:`smcplan.planning.progress`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from smcplan.planning.components import Proposed, Transition
from smcplan.planning.config import DEFAULT_RETRIEVAL, Retrieval
from smcplan.planning.graph_update import GraphUpdate
from smcplan.planning.learned import predicted_outcome
from smcplan.planning.map_replies import MapReplies
from smcplan.planning.outcome import DONE_ACTION
from smcplan.planning.text_particle import TextParticle, key_to_seed, known_actions

__all__ = ["LMProposal", "LMWorldModel"]


class LMProposal:
    """Planner proposal from an :class:`smcplan.llm.ActionProposal`-like role:
    ``proposer(tasks, triplets, observations, admissible, seed) -> [p.action, p.logq, p.logp]``,
    each particle over its own admissible actions (the real set where it has none)."""

    def __init__(
        self,
        proposer: Any,
        task: str,
        admissible: Sequence[str],
        retrieval: Retrieval = DEFAULT_RETRIEVAL,
    ) -> None:
        self.proposer, self.task = proposer, task
        self.admissible, self.retrieval = list(admissible), retrieval

    def __call__(
        self, key: jax.Array, particles: list[TextParticle], t: int, horizon: int
    ) -> Proposed:
        n = len(particles)
        options = [
            [DONE_ACTION] if p.done else (list(p.admissible) if p.admissible else self.admissible)
            for p in particles
        ]
        out = self.proposer(
            [self.task] * n,
            [p.facts(self.task, self.retrieval) for p in particles],
            [p.observation for p in particles],
            options,
            seed=key_to_seed(key),
        )
        return Proposed(
            [p.action for p in out],
            jnp.asarray([p.logq for p in out]),
            jnp.asarray([p.logp for p in out]),
        )


class LMWorldModel:
    """Planner world model: predicted observations from an :class:`smcplan.llm.ObservationModel`-
    like role (``model(contexts, actions, seed) -> [Sample]``), then the reply each particle's map
    fixes kept and its map carried (``replies``, a :class:`MapReplies`; default: from an empty
    map with the ``auto`` home), then each particle's graph copied and updated from the kept
    reply (:class:`GraphUpdate`), and its next admissible set = the real set filtered to the
    actions whose objects its graph knows (:func:`known_actions`; the real set as fallback)."""

    def __init__(
        self,
        observation_model: Any,
        task: str,
        graphs: GraphUpdate,
        admissible: Sequence[str],
        retrieval: Retrieval = DEFAULT_RETRIEVAL,
        replies: MapReplies | None = None,
    ) -> None:
        self.observation_model, self.task, self.graphs = observation_model, task, graphs
        self.admissible, self.retrieval = list(admissible), retrieval
        self.replies = replies if replies is not None else MapReplies()

    def __call__(
        self,
        key: jax.Array,
        particles: list[TextParticle],
        actions: list[str],
        t: int,
        horizon: int,
    ) -> Transition:
        k_obs, k_ext = jax.random.split(key)
        actions = list(actions)
        contexts = [p.context(self.task, self.retrieval) for p in particles]
        samples = self.observation_model(contexts, actions, seed=key_to_seed(k_obs))
        observations = [str(s.value if s.value is not None else s.text).strip() for s in samples]
        # a particle whose episode ended (a predicted ending) stays as it is
        observations = [p.observation if p.done else o for p, o in zip(particles, observations)]
        kept = self.replies(particles, actions, observations)  # what the map fixes, once
        observations = [o for o, _ in kept]
        updated = self.graphs(particles, actions, observations, k_ext)
        new = [
            p.extend(
                a,
                o,
                kg=kg,
                triplets=triples,
                admissible=known_actions(self.admissible, kg) if kg is not None else None,
                outcome=predicted_outcome(p, s),  # None unless the model predicts reward/done
                place_map=m,
            )
            for p, a, o, s, (kg, triples), (_, m) in zip(
                particles, actions, observations, samples, updated, kept, strict=True
            )
        ]
        return Transition(
            new,
            observations,
            jnp.asarray([s.logp for s in samples]),
            jnp.asarray([s.logq for s in samples]),
        )
