"""Judging roles: NeSyFS reflection (vote over n samples) and the RLAW critic.

* :class:`Reflection`: for each proposed action, ``n`` answers ``{"thought", "answer": Yes|No}``
  are sampled in one batched call; the action is accepted iff the fraction of "Yes" is at least
  ``threshold`` (NeSyFS: n = 5, threshold 0.8, i.e. at least 4 of 5). A rejection returns the
  thought of a "No" answer, to explain the rejection to the next proposal.
* :class:`Critic`: the RLAW critic's JSON ``{logic_check: bool, safety_check: bool,
  critique_score: 0..1, reason: str}``; the score is constrained to {0, 0.1, …, 1} so that the
  JSON stays finite.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from smcplan.llm.roles.base import Role, check_lengths

__all__ = ["Reflection", "Verdict", "Critic", "Critique"]


@dataclass
class Verdict:
    """``accept`` iff ``yes_fraction`` ≥ threshold; ``votes`` per sample; ``thought`` is the first
    "No" thought (the first thought when all said Yes); ``thoughts`` all of them."""

    accept: bool
    yes_fraction: float
    votes: list[bool]
    thought: str
    thoughts: list[str]


class Reflection(Role):
    """``reflection(tasks, contexts, actions) -> [Verdict]`` (n samples per particle, one call)."""

    asset_name = "reflection"

    def __init__(
        self, lm, n: int = 5, threshold: float = 0.8, temperature: float = 1.0, **kwargs
    ) -> None:
        super().__init__(lm, **kwargs)
        if n < 1 or not 0.0 <= threshold <= 1.0:
            raise ValueError(
                f"need n >= 1 and 0 <= threshold <= 1; got n={n}, threshold={threshold}"
            )
        self.n, self.threshold, self.temperature = n, threshold, temperature

    def __call__(
        self,
        tasks: Sequence[str],
        contexts: Sequence[str],
        actions: Sequence[str],
        seed: int | None = None,
    ) -> list[Verdict]:
        if check_lengths("Reflection", tasks=tasks, contexts=contexts, actions=actions) == 0:
            return []
        prompts = [
            self.assets.messages(task=t, context=c, action=a)
            for t, c, a in zip(tasks, contexts, actions, strict=True)
        ]
        samples = self.lm.sample(
            prompts, self.assets.schema, n=self.n, temperature=self.temperature, seed=seed
        )
        out = []
        for group in samples:
            votes = [s.value["answer"] == "Yes" for s in group]
            thoughts = [s.value["thought"] for s in group]
            frac = sum(votes) / len(votes)
            noes = [z for z, v in zip(thoughts, votes, strict=True) if not v]
            out.append(
                Verdict(
                    frac >= self.threshold, frac, votes, noes[0] if noes else thoughts[0], thoughts
                )
            )
        return out


@dataclass
class Critique:
    """The RLAW critic's judgement (field names as in the RLAW paper's JSON)."""

    logic_check: bool
    safety_check: bool
    critique_score: float
    reason: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class Critic(Role):
    """``critic(tasks, contexts, thoughts, actions) -> [Critique]`` (one batched JSON call).

    ``temperature=0`` (default) decodes greedily: a deterministic judge.
    """

    asset_name = "critic"

    def __init__(self, lm, temperature: float = 0.0, **kwargs) -> None:
        super().__init__(lm, **kwargs)
        self.temperature = temperature

    def __call__(
        self,
        tasks: Sequence[str],
        contexts: Sequence[str],
        thoughts: Sequence[str],
        actions: Sequence[str],
        seed: int | None = None,
    ) -> list[Critique]:
        if (
            check_lengths(
                "Critic", tasks=tasks, contexts=contexts, thoughts=thoughts, actions=actions
            )
            == 0
        ):
            return []
        prompts = [
            self.assets.messages(task=t, context=c, thought=z, action=a)
            for t, c, z, a in zip(tasks, contexts, thoughts, actions, strict=True)
        ]
        outs = self.lm.generate(
            prompts, self.assets.schema, temperature=self.temperature, seed=seed
        )
        return [
            Critique(
                bool(o["logic_check"]),
                bool(o["safety_check"]),
                float(o["critique_score"]),
                str(o["reason"]),
            )
            for o in outs
        ]
