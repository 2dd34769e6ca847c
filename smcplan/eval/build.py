"""Building what a sweep runs: agents (from their registry declarations), the language model,
environments (one live instance per name and options), and the global seeds.

What an agent needs is read from its :class:`smcplan.agents.AgentSpec` (``lm``, ``seed``,
``simulator``), never from its constructor's signature.

Layering: imports ``smcplan.agents``, ``smcplan.envs`` and ``smcplan.llm`` lazily, only when a
sweep needs them (the random agent loads no language model).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from smcplan.eval.episodes import EpisodeSpec

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = [
    "EnvPool",
    "agent_needs_lm",
    "check_agent",
    "default_load_lm",
    "default_make_agent",
    "default_make_env",
    "reseed_lm",
    "seed_everything",
]


def check_agent(name: str) -> None:
    """Raise ``ValueError`` naming the known agents unless ``name`` is registered."""
    from smcplan import agents

    agents.spec(name)


def agent_needs_lm(name: str) -> bool:
    """Whether the registered agent declares ``lm`` (unregistered names, supplied through
    ``make_agent``, need none)."""
    from smcplan import agents

    return name in agents.AGENTS and agents.AGENTS[name].lm


def default_make_agent(
    name: str, lm: LanguageModel | None, seed: int, config: dict[str, Any]
) -> Any:
    """``smcplan.agents.make(name, lm=lm, seed=seed, **config)``; ``seed`` only if the agent
    declares it (all agents are also reproducible through the reseeded global generators)."""
    from smcplan import agents

    kwargs = dict(config)
    if "seed" not in kwargs and agents.spec(name).seed:
        kwargs["seed"] = seed
    return agents.make(name, lm=lm, **kwargs)


def attach_simulator(agent: Any, env: Any) -> None:
    """Hand ``agent`` a clone factory of ``env`` (``env.clone``) if it asks for one
    (``agent.needs_simulator``: the simulator world model, an oracle); the agent raises a clear
    error when ``env`` cannot be cloned."""
    if getattr(agent, "needs_simulator", False):
        agent.attach_simulator(getattr(env, "clone", None), env)


def default_make_env(name: str, **kwargs: Any) -> Any:
    """``smcplan.envs.make(name, **kwargs)``."""
    from smcplan import envs

    return envs.make(name, **kwargs)


def default_load_lm(model: str | None, quantization: str | None) -> Any:
    """``smcplan.llm.load_model(model[, quantization=...])``."""
    from smcplan import llm

    if quantization is None:
        return llm.load_model(model)
    return llm.load_model(model, quantization=quantization)


def seed_everything(seed: int) -> None:
    """Seed ``random``, ``numpy`` and (only if already imported) ``torch`` global generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def reseed_lm(lm: LanguageModel | None, seed: int) -> bool:
    """Restart the model's own stream of per-call seeds (``lm.reseed(seed)``) if it has one."""
    reseed = getattr(lm, "reseed", None)
    if callable(reseed):
        reseed(seed)
        return True
    return False


class EnvPool:
    """One live environment per (name, kwargs), reused across episodes; dropped when it fails.

    ``defaults`` (the harness's ``max_steps``) are passed to the adapter unless the episode's own
    kwargs set them; an adapter that does not take one of them is built without it.
    """

    def __init__(
        self, make_env: Callable[..., Any], defaults: dict[str, Any] | None = None
    ) -> None:
        self._make = make_env
        self._defaults = dict(defaults or {})
        self._envs: dict[str, Any] = {}

    @staticmethod
    def _key(spec: EpisodeSpec) -> str:
        return f"{spec.env}|{sorted(spec.env_kwargs.items())!r}"

    def get(self, spec: EpisodeSpec) -> Any:
        key = self._key(spec)
        if key not in self._envs:
            extra = {k: v for k, v in self._defaults.items() if k not in spec.env_kwargs}
            try:
                env = self._make(spec.env, **extra, **spec.env_kwargs)
            except (TypeError, KeyError) as exc:  # KeyError: smcplan's UnknownNameError
                if not any(repr(k) in str(exc) for k in extra):
                    raise
                env = self._make(spec.env, **spec.env_kwargs)
            self._envs[key] = env
        return self._envs[key]

    def discard(self, spec: EpisodeSpec) -> None:
        env = self._envs.pop(self._key(spec), None)
        if env is not None:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - the backend is already broken
                pass

    def close(self) -> None:
        for key in list(self._envs):
            env = self._envs.pop(key)
            try:
                env.close()
            except Exception:  # noqa: BLE001 - best effort at shutdown
                pass
