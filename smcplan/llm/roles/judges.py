"""Judging roles: NeSyFS reflection (vote over n samples) and the RLAW critic.

* :class:`Reflection`: for each proposed action, ``n`` answers ``{"thought", "answer": Yes|No}``
  are sampled in one batched call; the action is accepted iff the fraction of "Yes" is at least
  ``threshold`` (NeSyFS: n = 5, threshold 0.8, i.e. at least 4 of 5). A rejection returns the
  thought of a "No" answer, to explain the rejection to the next proposal. A thought cut by the
  token budget is closed and its answer drawn from P(Yes | thought) ∝ p('Yes"}' | ·) vs
  p('No"}' | ·) at the role's temperature, in one extra scoring call for all cut samples.
* :class:`Critic`: the RLAW critic's JSON ``{logic_check: bool, safety_check: bool,
  critique_score: 0..1, reason: str}``; the score is constrained to {0, 0.1, …, 1}; the budget
  always leaves room for the fields before ``reason``, and a reason cut by it is closed.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from smcplan.llm.roles.base import Role, check_lengths, close_string, token_budget
from smcplan.llm.settings import ReflectionConfig

_THOUGHT = re.compile(r'^\{ ?"thought" ?: ?"((?:[^"\\]|\\.)*)')

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
        self,
        lm,
        n: int = ReflectionConfig.samples,
        threshold: float = ReflectionConfig.threshold,
        temperature: float = ReflectionConfig.temperature,
        **kwargs,
    ) -> None:
        super().__init__(lm, **kwargs)
        # the checks and the defaults are ReflectionConfig's (one home for each)
        ReflectionConfig(samples=n, threshold=threshold, temperature=temperature)
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
        cfg = self.assets.settings
        seed = self.lm.derive_seed(seed)
        budget = token_budget(self.assets.schema, cfg["max_new_tokens"])
        samples = self.lm.sample(
            prompts,
            self.assets.schema,
            n=self.n,
            temperature=self.temperature,
            max_new_tokens=budget,
            seed=seed,
        )
        answers: dict[tuple[int, int], tuple[str, bool]] = {}
        cut: list[tuple[int, int, str]] = []
        for i, group in enumerate(samples):
            for j, s in enumerate(group):
                if s.finished:
                    answers[i, j] = (s.value["thought"], s.value["answer"] == cfg["yes"])
                else:
                    m = _THOUGHT.match(s.text)
                    cut.append((i, j, close_string(m.group(1)) if m else ""))
        if cut:
            rows_p, rows_a, rows_c = [], [], []
            for i, _, raw in cut:
                prefix = '{"thought": "' + raw + '", "answer": "'
                for word in (cfg["yes"], cfg["no"]):
                    rows_p.append(prompts[i])
                    rows_a.append(prefix)
                    rows_c.append(word + '"}')
            scores = self.lm.logprob(rows_p, rows_c, add_eos=True, assistant_prefix=rows_a)
            rng = np.random.default_rng(seed + 1)
            for k, (i, j, raw) in enumerate(cut):
                ly, ln = scores[2 * k], scores[2 * k + 1]
                if self.temperature == 0:
                    yes = bool(ly >= ln)
                else:
                    yes = bool(rng.random() < 1.0 / (1.0 + np.exp((ln - ly) / self.temperature)))
                answers[i, j] = (json.loads('"' + raw + '"'), yes)
        out = []
        for i, group in enumerate(samples):
            votes = [answers[i, j][1] for j in range(len(group))]
            thoughts = [answers[i, j][0] for j in range(len(group))]
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
    """``critic(tasks, contexts, thoughts, actions, notes=None) -> [Critique]`` (one batched
    JSON call).

    ``temperature=0`` (default) decodes greedily: a deterministic judge.  ``notes`` (one per
    action, or None) add a line of what the agent's place map says about each action
    (:mod:`smcplan.agents.map_notes`; a critic trained with them must be given them); an empty
    note adds nothing, so the prompt is then the one without notes.
    """

    asset_name = "critic"

    def __init__(self, lm, temperature: float = 0.0, **kwargs) -> None:
        super().__init__(lm, **kwargs)
        self.temperature = temperature

    def prompts(
        self,
        tasks: Sequence[str],
        contexts: Sequence[str],
        thoughts: Sequence[str],
        actions: Sequence[str],
        notes: Sequence[str] | None = None,
    ) -> list[list[dict[str, str]]]:
        """The critic role's chat prompt of each (task, context, thought, action, note)."""
        check_lengths(
            type(self).__name__,
            tasks=tasks,
            contexts=contexts,
            thoughts=thoughts,
            actions=actions,
            notes=notes,
        )
        notes = [""] * len(actions) if notes is None else list(notes)
        return [
            self.assets.messages(task=t, context=c, thought=z, action=a, note=n)
            for t, c, z, a, n in zip(tasks, contexts, thoughts, actions, notes, strict=True)
        ]

    def __call__(
        self,
        tasks: Sequence[str],
        contexts: Sequence[str],
        thoughts: Sequence[str],
        actions: Sequence[str],
        seed: int | None = None,
        notes: Sequence[str] | None = None,
    ) -> list[Critique]:
        prompts = self.prompts(tasks, contexts, thoughts, actions, notes)
        if not prompts:
            return []
        budget = token_budget(self.assets.schema, self.assets.settings["max_new_tokens"])
        samples = self.lm.sample(
            prompts,
            self.assets.schema,
            temperature=self.temperature,
            max_new_tokens=budget,
            seed=seed,
        )
        outs = [
            s.value if s.finished else json.loads(close_string(s.text) + '"}') for (s,) in samples
        ]
        return [
            Critique(
                bool(o["logic_check"]),
                bool(o["safety_check"]),
                float(o["critique_score"]),
                str(o["reason"]),
            )
            for o in outs
        ]
