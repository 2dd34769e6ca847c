"""World-model roles: the LLM as observation model and as progress judge (the twist).

* :class:`ObservationModel` samples the next observation ``o ~ p(o | context, action)`` as free
  text (one batched call) and scores given observations, ``log p(o | context, action)``.
* :class:`ProgressModel` judges a transition with one scoring call: with ``ℓ_yes``, ``ℓ_no`` the
  log-probabilities of answering "Yes" / "No",

      P(progress) = exp(ℓ_yes) / (exp(ℓ_yes) + exp(ℓ_no)) = σ(ℓ_yes − ℓ_no),

  and δ = 1 iff P(progress) ≥ threshold (0.5). NeSyFS weights particles by exp(λ·δ); the twisted
  planner uses ψ = P(progress) as the twist (Zhao et al. 2024, "Probabilistic inference in
  language models via twisted sequential Monte Carlo").

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles.base import Role, check_lengths
from smcplan.llm.samples import Sample
from smcplan.llm.stops import StopAt, check_stop_at

if TYPE_CHECKING:
    from smcplan.llm.protocol import LanguageModel

__all__ = ["ObservationModel", "ProgressModel", "Progress"]


class ObservationModel(Role):
    """``model(contexts, actions) -> [Sample]``: predicted next observations (``Sample.text``).

    ``Sample.logp`` is log p(o | context, action) of the sampled text under the model; sampling is
    at ``temperature`` (1 = the model's distribution) and stops at end-of-turn or
    ``max_new_tokens``, and with ``stop_at`` (``"line"``, ``"sentence"`` or a
    :class:`~smcplan.llm.stops.StopAt`; the in-process transformers backend) also at the end of
    the reply's first line or sentence, the event a twist reads (:mod:`smcplan.llm.stops`):
    a model that rambles past it then decodes a few tokens instead of ``max_new_tokens``.

    The |A| prompts of one planner step share their whole context and differ only by the
    action at its end; the backend runs that context once and the rests and all replies as one
    batch (:mod:`smcplan.llm.prefill`, :mod:`smcplan.llm.decode`).
    """

    asset_name = "observation"

    def __init__(
        self,
        lm: LanguageModel,
        temperature: float = 1.0,
        top_p: float = 1.0,
        max_new_tokens: int = 48,
        stop_at: str | StopAt | None = None,
        **kwargs,
    ) -> None:
        super().__init__(lm, **kwargs)
        self.temperature = temperature
        self.top_p = top_p
        self.max_new_tokens = max_new_tokens
        self.stop_at = check_stop_at(stop_at)
        if self.stop_at is not None and not _takes_stop_at(lm.sample):
            raise InvalidArgumentError(
                f"ObservationModel(stop_at={stop_at!r}): {type(lm).__name__}.sample cannot stop "
                "at a line or sentence; use the in-process transformers backend (load_model()) "
                "or stop_at=None"
            )

    def _prompts(
        self, contexts: Sequence[str], actions: Sequence[str]
    ) -> list[list[dict[str, str]]]:
        return [
            self.assets.messages(context=c, action=a)
            for c, a in zip(contexts, actions, strict=True)
        ]

    def __call__(
        self, contexts: Sequence[str], actions: Sequence[str], seed: int | None = None
    ) -> list[Sample]:
        if check_lengths("ObservationModel", contexts=contexts, actions=actions) == 0:
            return []
        stop = {"stop_at": self.stop_at} if self.stop_at is not None else {}
        samples = self.lm.sample(
            self._prompts(contexts, actions),
            None,
            temperature=self.temperature,
            top_p=self.top_p,
            max_new_tokens=self.max_new_tokens,
            seed=seed,
            **stop,
        )
        out = []
        for (s,) in samples:
            s.value = s.text.strip()
            out.append(s)
        return out

    def logprob(
        self, contexts: Sequence[str], actions: Sequence[str], observations: Sequence[str]
    ) -> np.ndarray:
        """``log p(observation | context, action)`` per particle (with end-of-turn)."""
        check_lengths(
            "ObservationModel", contexts=contexts, actions=actions, observations=observations
        )
        return self.lm.logprob(self._prompts(contexts, actions), list(observations), add_eos=True)


def _takes_stop_at(sample) -> bool:
    """Whether ``sample`` accepts ``stop_at=`` (or forwards keywords, as a wrapper does)."""
    params = inspect.signature(sample).parameters.values()
    return any(p.name == "stop_at" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


@dataclass
class Progress:
    """A progress judgement: ``delta`` ∈ {0, 1}, ``p_yes`` = P(Yes | Yes or No), and the raw
    answer log-probabilities ``logp_yes``, ``logp_no``."""

    delta: int
    p_yes: float
    logp_yes: float
    logp_no: float

    @property
    def log_twist(self) -> float:
        """log ψ = log P(Yes | Yes or No), for the twisted weighting."""
        return float(self.logp_yes - np.logaddexp(self.logp_yes, self.logp_no))


class ProgressModel(Role):
    """``model(tasks, previous, actions, observations) -> [Progress]`` from Yes/No log-probs."""

    asset_name = "progress"

    def __init__(self, lm: LanguageModel, threshold: float = 0.5, **kwargs) -> None:
        super().__init__(lm, **kwargs)
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [0, 1]; got {threshold}")
        self.threshold = threshold

    def __call__(
        self,
        tasks: Sequence[str],
        previous: Sequence[str],
        actions: Sequence[str],
        observations: Sequence[str],
    ) -> list[Progress]:
        size = check_lengths(
            "ProgressModel",
            tasks=tasks,
            previous=previous,
            actions=actions,
            observations=observations,
        )
        if size == 0:
            return []
        yes, no = self.assets.settings["yes"], self.assets.settings["no"]
        prompts = [
            self.assets.messages(task=t, previous=p, action=a, observation=o)
            for t, p, a, o in zip(tasks, previous, actions, observations, strict=True)
        ]
        scores = self.lm.logprob([p for p in prompts for _ in (0, 1)], [yes, no] * size)
        out = []
        for i in range(size):
            ly, ln = float(scores[2 * i]), float(scores[2 * i + 1])
            p_yes = float(1.0 / (1.0 + np.exp(ln - ly)))
            out.append(Progress(int(p_yes >= self.threshold), p_yes, ly, ln))
        return out
