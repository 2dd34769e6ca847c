"""Language-model layer: model loading, batched constrained generation, log-prob scoring, roles.

Public API (resolved lazily so that ``import smcplan.llm`` imports no torch):

* :class:`LanguageModel`: the protocol every backend satisfies (``sample``, ``generate``,
  ``logprob``, prompt rendering and token ids; :mod:`smcplan.llm.protocol`);
* :func:`load_model` → a :class:`TransformersLanguageModel` (in this process), or for
  ``"openai:<base_url>#<model>"`` a :class:`RemoteLanguageModel` served by vLLM, SGLang or a
  llama.cpp server, or for ``"llamacpp:<name>"`` a llama.cpp model in this process: the
  transports of :mod:`smcplan.llm.backends`;
* roles, each batched over particles: :class:`TripletExtractor`, :class:`ActionProposal`,
  :class:`ObservationModel`, :class:`ProgressModel`, :class:`Reflection`, :class:`Critic`,
  :class:`ScoreCritic` (the critic's score read off a :class:`ScoreHead` on the hidden state),
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
    "TransformersLanguageModel",
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
    "ReflectionConfig",
    "Critic",
    "ScoreCritic",
    "ScoreHead",
    "RLAWActor",
    "Proposal",
    "Progress",
    "Verdict",
    "Critique",
    "ActorOutput",
]

_WHERE = {
    "load_model": "smcplan.llm.loading",
    "LanguageModel": "smcplan.llm.protocol",
    "TransformersLanguageModel": "smcplan.llm.backends.hf",
    "Sample": "smcplan.llm.samples",
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
    "ReflectionConfig": "smcplan.llm.settings",
    "Critic": "smcplan.llm.roles",
    "ScoreCritic": "smcplan.llm.roles.score_head",
    "ScoreHead": "smcplan.llm.roles.score_head",
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
