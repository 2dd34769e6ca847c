"""Agents: one protocol (``smcplan.agents.base.Agent``), one registry (``AGENTS``, ``make``).

===============  =================================================================================
``random``       uniformly random admissible action (the floor)
``react``        ReAct (Yao et al. 2023): thought, then an admissible action; history in context
``nesyfs``       NeSyFS (arXiv 2607.28942): KG belief, fast action + reflection, slow thinking
(TSMC)
``reflexion``    Reflexion (Shinn et al. 2023): ReAct + reflections carried across trials
``zeroshot``     RLAW's Base-LLM baseline: the whole action sequence in one pass, open loop
``rlaw``         RLAW (arXiv 2607.17038): actor JSON + critic with threshold and regenerations
``rlvmr``        RLVMR (arXiv 2507.22844): meta-reasoning tags; process rewards recorded (paper)
``rlvmr+guide``  RLVMR with its process rewards as an inference-time guide (an extension)
===============  =================================================================================

Every LLM agent takes ``action_mode="admissible"`` (choose from the admissible set, the default)
or ``"free"`` (write the command; the environment may reject it), see
:class:`~smcplan.agents.llm_agent.LLMAgent`.

Each registry entry is an :class:`AgentSpec`: where the factory lives and what the agent needs
from whoever builds it (a language model, a seed, a simulator). The harness reads these
declarations; it never inspects constructor signatures.

The language-model agents share :class:`~smcplan.agents.llm_agent.LLMAgent` (step loop, context,
proposal, judging loop, per-step record; schema in :mod:`smcplan.agents.record`).

Agents sit above planning, memory, llm and envs; they never import ``smcplan.eval``/``cli``.
Registry entries are imported lazily so that ``make("random")`` needs no torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, NamedTuple

from smcplan.agents.base import Agent, Step
from smcplan.errors import UnknownNameError, check_options, keyword_names
from smcplan.options import coerce_keywords

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = [
    "Agent",
    "AgentSpec",
    "Step",
    "make",
    "spec",
    "AGENTS",
    "agent_options",
    "check_agent_options",
    "check_settings",
    "uses_model",
]


class AgentSpec(NamedTuple):
    """A registered agent: its factory and what it needs from the builder.

    ``factory``: ``"module:callable"``, imported on first use; called with keyword arguments
    only. ``lm``: the factory needs ``lm=`` (a :class:`smcplan.llm.LanguageModel`); the harness
    loads one only for such agents. ``seed``: the factory takes ``seed=`` (an int; the harness
    passes ``episode_seed(run seed, episode id)``). ``simulator``: the factory takes
    ``simulator=``, a zero-argument callable returning a fresh ``clone()`` of the episode's
    environment (an oracle world model for planning); no registered agent asks for one yet.
    """

    factory: str
    lm: bool = True
    seed: bool = True
    simulator: bool = False

    def load(self) -> Any:
        """The factory callable (imports its module)."""
        module_name, attr = self.factory.split(":")
        return getattr(importlib.import_module(module_name), attr)


#: The registry: agent name -> :class:`AgentSpec` (the names of this module's table).
AGENTS: dict[str, AgentSpec] = {
    "random": AgentSpec("smcplan.agents.random_agent:RandomAgent", lm=False),
    "react": AgentSpec("smcplan.agents.react:ReactAgent"),
    "nesyfs": AgentSpec("smcplan.agents.nesyfs:NeSyFSAgent"),
    "reflexion": AgentSpec("smcplan.agents.reflexion:ReflexionAgent"),
    "zeroshot": AgentSpec("smcplan.agents.zeroshot:ZeroShotAgent"),
    "rlaw": AgentSpec("smcplan.agents.rlaw:RLAWAgent"),
    "rlvmr": AgentSpec("smcplan.agents.rlvmr:RLVMRAgent"),
    "rlvmr+guide": AgentSpec("smcplan.agents.rlvmr:RLVMRGuidedAgent"),
}


def spec(name: str) -> AgentSpec:
    """The registry entry of ``name``; ``ValueError`` naming the known agents if there is none."""
    if not isinstance(name, str) or name not in AGENTS:
        raise UnknownNameError(f"unknown agent {name!r}; known: {', '.join(sorted(AGENTS))}")
    return AGENTS[name]


def _accepted(factory: Any, dotted: bool = False) -> frozenset[str] | None:
    """The keys ``factory`` takes (``lm`` excluded): its constructor's names and, for an agent
    with groups of settings, their shorthands (and with ``dotted`` every ``GROUP.FIELD``);
    ``None``: any key."""
    from smcplan.agents.settings import settings_option_names

    accepted = keyword_names(factory)
    if accepted is None:
        return None
    return (accepted | set(settings_option_names(factory, dotted))) - {"lm"}


def check_agent_options(name: str, options: dict[str, Any], kind: str | None = None) -> None:
    """Raise :class:`~smcplan.errors.UnknownNameError` for a key agent ``name`` does not take,
    listing the valid ones.  A dotted key of one of the agent's groups of settings
    (``planner.horizon``) is left to that group, whose error lists its own fields."""
    factory = spec(name).load()
    groups = getattr(factory, "settings_groups", {})
    top = {k: v for k, v in options.items() if k.partition(".")[0] not in groups or "." not in k}
    check_options(kind or f"agent {name!r}", top, _accepted(factory))
    coerce_keywords(kind or f"agent {name!r}", factory, top)  # a bad bool / int fails here


def agent_options(name: str, dotted: bool = False) -> list[str]:
    """The options ``make(name, ...)`` accepts (sorted, ``lm`` excluded), e.g. for
    ``--agent-arg``: constructor keywords and settings shorthands (``world_model``); with
    ``dotted=True`` also every field of its groups of settings (``planner.num_particles``)."""
    return sorted(_accepted(spec(name).load(), dotted) or ())


def check_settings(name: str, options: dict[str, Any]) -> None:
    """Build the agent's groups of settings from ``options`` (e.g. ``--agent-arg`` values)
    without building the agent, so a bad value fails before a model loads: the settings'
    own checks raise (a ``PlanningError`` naming the field, the value and the valid ones).
    Agents without groups of settings accept anything here."""
    from smcplan.agents.settings import resolve_settings

    factory = spec(name).load()
    if getattr(factory, "settings_groups", None):
        resolve_settings(factory, {}, options)


def uses_model(name: str) -> bool:
    """True iff the registered agent takes a language model (``lm``)."""
    return spec(name).lm


def make(name: str, lm: LanguageModel | None = None, **config: Any) -> Agent:
    """Build the agent registered under ``name`` (e.g. ``"random"``, ``"react"``, ``"nesyfs"``).

    ``lm`` is the :class:`smcplan.llm.LanguageModel` of the LLM agents (ignored by agents that
    take none, such as ``random``); ``config`` goes to the agent's constructor (see each agent
    class).  An unknown name, or an option the agent does not take, raises
    :class:`~smcplan.errors.UnknownNameError` (a ``ValueError``) listing the valid ones.
    """
    factory = spec(name).load()
    check_agent_options(name, config)
    # keywords annotated bool / int are converted strictly: loop_guard="no" is False (a loose
    # bool("no") is True), "nah" and 1.5 are refused naming the option
    config = coerce_keywords(f"agent {name!r}", factory, config)
    if lm is not None and uses_model(name):
        config["lm"] = lm
    return factory(**config)
