"""Language-model layer: model loading, batched constrained generation, log-prob scoring, roles.

Public API (resolved lazily so that ``import smcplan.llm`` imports no torch):

* :func:`load_model` → :class:`LanguageModel` (``generate``, ``sample``, ``logprob``), or for
  ``"openai:<base_url>#<model>"`` a :class:`RemoteLanguageModel` with the same methods served by
  vLLM, SGLang or a llama.cpp server (:mod:`smcplan.llm.backends.remote.client`);
* roles, each batched over particles: :class:`TripletExtractor`, :class:`ActionProposal`,
  :class:`ObservationModel`, :class:`ProgressModel`, :class:`Reflection`, :class:`Critic`,
  :class:`RLAWActor`;
* :mod:`smcplan.llm.testing`: a tiny random-weight Llama for fast tests.

This is the only layer that imports transformers, outlines or bitsandbytes. It must not import
``smcplan.memory``, ``smcplan.envs``, ``smcplan.planning``, ``smcplan.agents`` or higher layers.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "load_model",
    "LanguageModel",
    "Sample",
    "GenerationError",
    "ModelNotAvailable",
    "known_models",
    "RemoteLanguageModel",
    "RemoteLMError",
    "ServerUnavailable",
    "EngineLacksFeature",
    "TripletExtractor",
    "ActionProposal",
    "ObservationModel",
    "ProgressModel",
    "Reflection",
    "Critic",
    "RLAWActor",
    "Proposal",
    "Progress",
    "Verdict",
    "Critique",
    "ActorOutput",
]

_WHERE = {
    "load_model": "smcplan.llm.loading",
    "LanguageModel": "smcplan.llm.backends.hf",
    "Sample": "smcplan.llm.backends.hf",
    "GenerationError": "smcplan.llm.constrained",
    "ModelNotAvailable": "smcplan.llm.registry",
    "known_models": "smcplan.llm.registry",
    "RemoteLanguageModel": "smcplan.llm.backends.remote.client",
    "RemoteLMError": "smcplan.llm.backends.remote.http",
    "ServerUnavailable": "smcplan.llm.backends.remote.http",
    "EngineLacksFeature": "smcplan.llm.backends.remote.http",
    "TripletExtractor": "smcplan.llm.roles",
    "ActionProposal": "smcplan.llm.roles",
    "ObservationModel": "smcplan.llm.roles",
    "ProgressModel": "smcplan.llm.roles",
    "Reflection": "smcplan.llm.roles",
    "Critic": "smcplan.llm.roles",
    "RLAWActor": "smcplan.llm.roles",
    "Proposal": "smcplan.llm.roles",
    "Progress": "smcplan.llm.roles",
    "Verdict": "smcplan.llm.roles",
    "Critique": "smcplan.llm.roles",
    "ActorOutput": "smcplan.llm.roles",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'smcplan.llm' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
