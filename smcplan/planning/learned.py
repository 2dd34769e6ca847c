"""The learned world model's language model: loaded once per folder, shared by all planners.

``world_model="learned"`` with ``world_model_path=PATH`` (:class:`~smcplan.planning.PlannerConfig`)
predicts observations with the model trained by ``smcplan train world-model``
(:mod:`smcplan.train.world_model`), through the same :class:`smcplan.llm.ObservationModel` role
and prompt as the LM world model.  ``PATH`` is a PEFT adapter folder (loaded onto the base model
its config records, then merged), a transformers folder (a merged or fully fine-tuned model), or
the name of a shipped artifact (``"twx-coin-world-model"``, :mod:`smcplan.llm.artifacts`).

Imports ``smcplan.llm`` lazily.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from smcplan.planning.components import PlanningError

__all__ = ["learned_lm", "learned_observation_model"]


@functools.lru_cache(maxsize=4)
def _load(path: str, threads: int | None) -> Any:
    from smcplan.llm import load_model
    from smcplan.llm.finetune.lora import adapter_base, is_adapter

    if is_adapter(path):
        return load_model(adapter_base(path), adapter=path, threads=threads)
    if os.path.isdir(path):
        return load_model(path, threads=threads)
    raise PlanningError(
        f"world_model_path {path!r} is neither an adapter folder (adapter_config.json) nor a "
        "model folder; pass DIR/adapter of `smcplan train world-model --out DIR`"
    )


def learned_lm(path: str, threads: int | None = None) -> Any:
    """The :class:`smcplan.llm.LanguageModel` of the learned world model at ``path`` (a folder or
    a shipped artifact's name; cached)."""
    from smcplan.llm.artifacts import resolve_artifact

    folder = resolve_artifact(path, "world_model_path")
    return _load(os.path.abspath(folder), threads)


def learned_observation_model(
    path: str, max_new_tokens: int, like: Any = None, temperature: float = 1.0
) -> Any:
    """An :class:`smcplan.llm.ObservationModel` on the learned model sampling at
    ``temperature`` (``like``: the agent's model, whose CPU thread setting it copies)."""
    from smcplan.llm import ObservationModel

    lm = learned_lm(path, getattr(like, "threads", None))
    return ObservationModel(lm, temperature=float(temperature), max_new_tokens=max_new_tokens)
