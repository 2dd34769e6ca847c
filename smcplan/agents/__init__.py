"""Agents: one protocol (``smcplan.agents.base.Agent``), one registry (``make``).

Agents sit above planning, memory, llm and envs; they never import ``smcplan.eval``/``cli``.
Registry entries are imported lazily so that ``make("random")`` needs no torch.
"""

from __future__ import annotations

import importlib
from typing import Any

from smcplan.agents.base import Agent, Step

__all__ = ["Agent", "Step", "make", "AGENTS"]

# name -> "module:factory"; each factory takes (lm=None, **config) and returns an Agent.
AGENTS: dict[str, str] = {
    "random": "smcplan.agents.random_agent:RandomAgent",
}


def make(name: str, lm: Any = None, **config: Any) -> Agent:
    """Build the agent registered under ``name`` (e.g. ``"random"``, ``"react"``, ``"nesyfs"``)."""
    if name not in AGENTS:
        raise ValueError(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))}")
    module_name, factory_name = AGENTS[name].split(":")
    factory = getattr(importlib.import_module(module_name), factory_name)
    if lm is not None:
        config["lm"] = lm
    return factory(**config)
