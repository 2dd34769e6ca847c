"""Agents: one protocol (``smcplan.agents.base.Agent``), one registry (``make``).

=============  ===================================================================================
``random``     uniformly random admissible action (the floor)
``react``      ReAct (Yao et al. 2023): thought, then an admissible action; history in context
``nesyfs``     NeSyFS (arXiv 2607.28942): KG belief, fast action + reflection, slow thinking (TSMC)
``reflexion``  Reflexion (Shinn et al. 2023): ReAct + reflections carried across trials
``zeroshot``   RLAW's Base-LLM baseline: the whole action sequence in one pass, open loop
``rlaw``       RLAW (arXiv 2607.17038): actor JSON + critic with threshold and regenerations
``rlvmr``      RLVMR (arXiv 2507.22844): meta-reasoning tags + verifiable process rewards
=============  ===================================================================================

The language-model agents share :class:`~smcplan.agents.llm_agent.LLMAgent` (step loop, context,
proposal, judging loop, per-step record; schema in :mod:`smcplan.agents.record`).

Agents sit above planning, memory, llm and envs; they never import ``smcplan.eval``/``cli``.
Registry entries are imported lazily so that ``make("random")`` needs no torch.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from smcplan.agents.base import Agent, Step
from smcplan.errors import UnknownNameError, check_options, keyword_names

__all__ = ["Agent", "Step", "make", "AGENTS", "available", "agent_options", "uses_model"]

# name -> "module:factory"; each factory takes (lm=None, **config) and returns an Agent.
AGENTS: dict[str, str] = {
    "random": "smcplan.agents.random_agent:RandomAgent",
    "react": "smcplan.agents.react:ReactAgent",
    "nesyfs": "smcplan.agents.nesyfs:NeSyFSAgent",
    "reflexion": "smcplan.agents.reflexion:ReflexionAgent",
    "zeroshot": "smcplan.agents.zeroshot:ZeroShotAgent",
    "rlaw": "smcplan.agents.rlaw:RLAWAgent",
    "rlvmr": "smcplan.agents.rlvmr:RLVMRAgent",
}


def _factory(name: str) -> Any:
    module_name, factory_name = AGENTS[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise NotImplementedError(
            f"agent {name!r} is registered but its module {module_name} is not there yet; "
            f"available: {', '.join(available())}"
        ) from None
    try:
        return getattr(module, factory_name)
    except AttributeError:
        raise NotImplementedError(
            f"agent {name!r}: {module_name} defines no {factory_name}"
        ) from None


def available() -> list[str]:
    """The registered agents whose modules are present (sorted)."""
    out = []
    for name, target in AGENTS.items():
        if importlib.util.find_spec(target.split(":")[0]) is not None:
            out.append(name)
    return sorted(out)


def agent_options(name: str) -> list[str]:
    """The options ``make(name, ...)`` accepts (sorted, ``lm`` excluded), e.g. for ``--agent-arg``."""
    if name not in AGENTS:
        raise UnknownNameError(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))}")
    accepted = keyword_names(_factory(name))
    return sorted((accepted or frozenset()) - {"lm"})


def uses_model(name: str) -> bool:
    """True iff the registered agent takes a language model (``lm``)."""
    accepted = keyword_names(_factory(name))
    return accepted is None or "lm" in accepted


def make(name: str, lm: Any = None, **config: Any) -> Agent:
    """Build the agent registered under ``name`` (e.g. ``"random"``, ``"react"``, ``"nesyfs"``).

    ``lm`` is the :class:`smcplan.llm.LanguageModel` of the LLM agents (ignored by agents that
    take none, such as ``random``); ``config`` goes to the agent's constructor (see each agent
    class).  An unknown name, or an option the agent does not take, raises
    :class:`~smcplan.errors.UnknownNameError` (a ``ValueError``) listing the valid ones.
    """
    if not isinstance(name, str) or name not in AGENTS:
        raise UnknownNameError(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))}")
    factory = _factory(name)
    check_options(f"agent {name!r}", config, agent_options(name) + (["lm"] if uses_model(name) else []))
    if lm is not None and uses_model(name):
        config["lm"] = lm
    return factory(**config)
