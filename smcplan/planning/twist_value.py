r"""The learned twist ``progress="learned"``: a value head's estimate of each particle's state.

With :math:`\hat V(x) \in (0, 1)` the value head's probability that the task is completed within
k steps of the state :math:`x` (:class:`smcplan.llm.roles.value_head.ValueModel`; trained by
``smcplan train value-head``), the twist is the value of the particle's latest state,

.. math:: \log\psi_t(x_{\le t}) = \log \max(\hat V(x_t), \epsilon), \qquad
   \delta_t = \log\psi_t - \log\psi_{t-1}, \quad \log\psi_0 = 0,

so the twisted incremental weight :math:`\psi_t/\psi_{t-1}` is the ratio of the values of the
new state and the one before (TSMC's learned twist, Zhao et al. 2024, arXiv 2404.17546: the
optimal twist is the probability of success from the partial path), and
:math:`\log\psi_t = \sum_{s\le t}\delta_s` as for the other twists, so sums with ``env`` and
``novelty`` add.  :math:`\epsilon = 10^{-6}` keeps a head's overconfident 0 from killing a
particle outright.  The state is rendered as the world model's context with no imagined steps:
the task, the facts the particle's graph retrieves and its latest observation
(:func:`~smcplan.planning.text_particle.render_context`), the text the head was fitted on.
A head fitted on sibling steps (``smcplan train value-siblings``, its ``info["reads"] ==
"path"``) reads the particle's path instead: the task, the real observation at the root and each
imagined step as ``> action`` and the first sentence of its reply
(:func:`~smcplan.planning.text_particle.first_sentence`; no facts, the root observation clipped
to ``info["obs_chars"]`` characters), so :math:`\hat V` is the value of the action taken from the
root (a Q-value at H = 1) read with what the world model says it did, and the same text whatever
world model imagined the reply.  Each distinct state is scored once per plan (a cache by text):
the previous state of a particle is the one scored at the step before.  Benchmark-free and
LLM-generation-free: one forward pass per new state.

Imports no ``smcplan.llm`` (the value model is handed in).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from smcplan.planning.components import PlanningError, Score
from smcplan.planning.config import DEFAULT_RETRIEVAL, Retrieval
from smcplan.planning.text_particle import OBS_CHARS, first_sentence, render_context

__all__ = ["LearnedProgress", "VALUE_FLOOR", "READS", "path_text"]

#: what a value head reads (its ``info["reads"]``; none: ``"state"``)
READS = ("state", "path")

#: :math:`\epsilon`: the smallest value a state's twist takes
VALUE_FLOOR = 1e-6


def path_text(task: str, root_observation: str, steps: Any, obs_chars: int = OBS_CHARS) -> str:
    """The text a ``reads="path"`` head reads (module docstring): ``render_context`` of the task,
    no facts, the root observation and each ``(action, reply)`` with the reply cut to its first
    sentence; the trainer (:mod:`smcplan.train.value_siblings`) renders through it too."""
    cut = tuple((a, first_sentence(o)) for a, o in steps)
    return render_context(task, (), root_observation, cut, obs_chars)


class LearnedProgress:
    r""":math:`\log\psi_t = \log\max(\hat V(x_t), \epsilon)`, :math:`\delta_t = \log\psi_t -
    \log\psi_{t-1}` (module docstring); ``value_model(contexts) -> values`` in [0, 1]."""

    __name__ = "learned"

    def __init__(
        self, value_model: Any, task: str, retrieval: Retrieval = DEFAULT_RETRIEVAL
    ) -> None:
        if value_model is None or not callable(value_model):
            raise PlanningError(
                "progress 'learned' needs a value model: value_head= the folder written by "
                "`smcplan train value-head --out DIR` (DIR/head) or a shipped value head's name"
            )
        self.value_model, self.task, self.retrieval = value_model, task, retrieval
        info = dict(getattr(getattr(value_model, "head", None), "info", None) or {})
        self.reads = str(info.get("reads", "state"))
        if self.reads not in READS:
            raise PlanningError(
                f"value head reads {self.reads!r}; known: {', '.join(READS)} (refit it with "
                "`smcplan train value-head` or `value-siblings`)"
            )
        self.obs_chars = int(info.get("obs_chars", OBS_CHARS))
        self._value: dict[str, float] = {}  # state text -> log psi
        self._state: dict[tuple, str] = {}  # a particle's steps -> its state text

    def state_text(self, particle: Any) -> str:
        """The text the head reads for ``particle``'s latest state (or its path)."""
        if self.reads == "path":
            return path_text(
                self.task, particle.root_observation, tuple(particle.steps), self.obs_chars
            )
        facts = particle.facts(self.task, self.retrieval) if hasattr(particle, "facts") else []
        return render_context(self.task, facts, particle.observation, (), OBS_CHARS)

    def log_values(self, texts: list[str]) -> list[float]:
        """:math:`\\log\\max(\\hat V, \\epsilon)` of each text (new texts in one call)."""
        new = list(dict.fromkeys(t for t in texts if t not in self._value))
        if new:
            values = [float(v) for v in self.value_model(new)]
            if len(values) != len(new):
                raise PlanningError(
                    f"value model returned {len(values)} values for {len(new)} states; "
                    "it must return one per state"
                )
            for text, v in zip(new, values, strict=True):
                if not (math.isfinite(v) and 0.0 <= v <= 1.0):
                    raise PlanningError(f"value model returned {v!r}; values must lie in [0, 1]")
                self._value[text] = math.log(max(v, VALUE_FLOOR))
        return [self._value[t] for t in texts]

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
        texts = [self.state_text(p) for p in particles]
        before = []
        for p in particles:
            steps = tuple(getattr(p, "steps", ()))
            parent = self._state.get(steps[:-1]) if len(steps) > 1 else None
            before.append(parent)
        now = self.log_values(texts)
        prev = self.log_values([b for b in before if b is not None])
        it = iter(prev)
        prev_full = [next(it) if b is not None else 0.0 for b in before]
        for p, text in zip(particles, texts, strict=True):
            self._state[tuple(getattr(p, "steps", ()))] = text
        delta = [n - b for n, b in zip(now, prev_full, strict=True)]
        return Score(jnp.asarray(delta), jnp.asarray(now))
