"""NeSyFS triplet extraction: observation (+ action) → knowledge-graph triplets.

The answer is constrained to ``models/roles/triplets/schema.json``: ``{"triplets": [[s, r, o],
...]}``
of non-empty strings, within a budget of ``max_new_tokens`` tokens (``role.json``); an answer cut
by the budget keeps its complete triplets. At most ``max_triplets`` triplets are kept and
triplets with an element longer than ``max_chars`` are dropped. The prompt asks for the
three NeSyFS forms: entity–relation–entity, entity–attribute–value and
entity–past-tense-verb–entity.
Triplets are returned as plain ``(subject, relation, object)`` string tuples, stripped and
de-duplicated in order; the memory layer turns them into its own ``Triplet`` type.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from smcplan.llm.roles.base import Role, check_lengths

if TYPE_CHECKING:
    from smcplan.llm.protocol import LanguageModel

_STR = r'"(?:[^"\\]|\\.)*"'
_TRIPLE = re.compile(r"\[ ?(" + _STR + r") ?, ?(" + _STR + r") ?, ?(" + _STR + r") ?\]")


def complete_triplets(text: str) -> list[list[str]]:
    """The complete ``[s, r, o]`` groups of a (possibly truncated) triplet answer."""
    return [[json.loads(g) for g in m.groups()] for m in _TRIPLE.finditer(text)]


__all__ = ["TripletExtractor"]


class TripletExtractor(Role):
    """``extractor(observations, actions=None) -> [[(s, r, o), ...] per particle]``, one batched
    call.

    ``temperature=0`` (default) decodes greedily: extraction is a deterministic reading of the
    observation.
    """

    asset_name = "triplets"

    def __init__(self, lm: LanguageModel, temperature: float = 0.0, **kwargs) -> None:
        super().__init__(lm, **kwargs)
        self.temperature = temperature

    def __call__(
        self,
        observations: Sequence[str],
        actions: Sequence[str | None] | None = None,
        seed: int | None = None,
    ) -> list[list[tuple[str, str, str]]]:
        size = check_lengths("TripletExtractor", observations=observations, actions=actions)
        if size == 0:
            return []
        acts = list(actions) if actions is not None else [None] * size
        prompts = [
            self.assets.messages(observation=o, action=a)
            for o, a in zip(observations, acts, strict=True)
        ]
        cfg = self.assets.settings
        samples = self.lm.sample(
            prompts,
            self.assets.schema,
            temperature=self.temperature,
            max_new_tokens=cfg["max_new_tokens"],
            seed=seed,
        )
        result = []
        for (sample,) in samples:
            raw = sample.value["triplets"] if sample.finished else complete_triplets(sample.text)
            seen: dict[tuple[str, str, str], None] = {}
            for triple in raw:
                s, r, o = (str(x).strip() for x in triple)
                if s and r and o and max(len(s), len(r), len(o)) <= cfg["max_chars"]:
                    seen.setdefault((s, r, o), None)
            result.append(list(seen)[: cfg["max_triplets"]])
        return result
