r"""Each particle's graph after an imagined observation: the text planner's graph update.

After the world model produces :math:`o^i_t` for action :math:`a^i_t`, particle i's graph is

.. math:: G^i_t = \mathrm{Update}\big(G^i_{t-1}, \mathrm{extract}(o^i_t, a^i_t)\big),

computed on a copy of :math:`G^i_{t-1}` (copy on write: the parent's graph, and the agent's
memory at the root, are never touched), with the triplets marked ``source="predicted"``.  The
extractor (:data:`EXTRACTORS`) is ``"llm"`` (:class:`smcplan.llm.TripletExtractor`, one batched
call for all N particles), ``"rule"`` (:func:`smcplan.memory.extract_triplets`), ``"none"`` (the
graph is carried over unchanged), or any callable; ``"rule"`` reads with the game's home
(:meth:`smcplan.games.GameRules.triplets`).  Imports ``smcplan.games``; never ``smcplan.llm``,
agents, eval or cli.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax

from smcplan.games import GameRules, rules_for
from smcplan.planning.components import PlanningError
from smcplan.planning.text_particle import TextParticle, key_to_seed

__all__ = ["GraphUpdate", "EXTRACTORS"]

EXTRACTORS = ("llm", "rule", "none")


class GraphUpdate:
    """Each particle's graph after an imagined observation: copied, then updated with the
    observation's triplets (source ``predicted``).  ``extractor``: ``"llm"``
    (``llm_extractor(observations, actions, seed)``, one batched call), ``"rule"``
    (:func:`smcplan.memory.extract_triplets` by the game's home ``env_kind``, a
    :class:`~smcplan.games.GameRules` or the env name that resolves it), ``"none"``, or a callable
    ``(observations, actions, locations, seed) -> [triplets or Extraction]``.  Returns
    ``[(graph, triplets)]``."""

    def __init__(
        self,
        extractor: str | Callable = "none",
        llm_extractor: Any = None,
        env_kind: GameRules | str = "auto",
    ) -> None:
        if isinstance(extractor, str) and extractor not in EXTRACTORS:
            raise PlanningError(
                f"unknown extractor {extractor!r}; known: {', '.join(EXTRACTORS)}, or a callable"
            )
        if extractor == "llm" and llm_extractor is None:
            raise PlanningError(
                "extractor='llm' needs an llm_extractor (smcplan.llm.TripletExtractor) or lm="
            )
        self.extractor, self.llm_extractor, self.env_kind = extractor, llm_extractor, env_kind
        self.rules = rules_for(env_kind)

    def __call__(
        self,
        particles: list[TextParticle],
        actions: list[str],
        observations: list[str],
        key: jax.Array,
    ) -> list[tuple[Any, tuple]]:
        n = len(particles)
        if self.extractor == "none" or not any(p.kg is not None for p in particles):
            return [(p.kg, ()) for p in particles]
        locations = [p.kg.location_of("agent") if p.kg is not None else None for p in particles]
        if self.extractor == "llm":
            extracted = self.llm_extractor(observations, actions, seed=key_to_seed(key))
        elif self.extractor == "rule":
            extracted = [
                self.rules.triplets(o, a, location=loc)
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
