"""NeSyFS triplet extraction: observation (+ action) → knowledge-graph triplets.

The answer is constrained to ``models/roles/triplets/schema.json``: ``{"triplets": [[s, r, o], ...]}``
with at most 8 triplets of non-empty strings of at most 24 characters. The prompt asks for the
three NeSyFS forms: entity–relation–entity, entity–attribute–value and entity–past-tense-verb–entity.
Triplets are returned as plain ``(subject, relation, object)`` string tuples, stripped and
de-duplicated in order; the memory layer turns them into its own ``Triplet`` type.

Must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

from collections.abc import Sequence

from smcplan.llm.roles.base import Role, check_lengths

__all__ = ["TripletExtractor"]


class TripletExtractor(Role):
    """``extractor(observations, actions=None) -> [[(s, r, o), ...] per particle]``, one batched call.

    ``temperature=0`` (default) decodes greedily: extraction is a deterministic reading of the
    observation.
    """

    asset_name = "triplets"

    def __init__(self, lm, temperature: float = 0.0, **kwargs) -> None:
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
        outputs = self.lm.generate(
            prompts, self.assets.schema, temperature=self.temperature, seed=seed
        )
        result = []
        for out in outputs:
            seen: dict[tuple[str, str, str], None] = {}
            for triple in out["triplets"]:
                s, r, o = (str(x).strip() for x in triple)
                if s and r and o:
                    seen.setdefault((s, r, o), None)
            result.append(list(seen))
        return result
