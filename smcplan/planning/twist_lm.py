"""The language-model twist ``progress="lm"``: the model's Yes/No progress judge on each
particle's new observation, shown its retrieved graph and new triplets (the math is in
:mod:`smcplan.planning.progress`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from smcplan.planning.components import Score
from smcplan.planning.config import DEFAULT_RETRIEVAL, Retrieval

__all__ = ["LMProgress"]


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
