"""Benchmark environments behind one protocol (``TextEnv``) and one registry (``make``).

Names (``env_names()`` lists them all):

* ``twx:<game>`` — TextWorldExpress: cookingworld, twc, coin, arithmetic, mapreader, sorting,
  simonsays, peckingorder;
* ``scienceworld:<task>`` — the 30 ScienceWorld tasks (paper ids such as ``scienceworld:1-1``
  are accepted as aliases);
* ``alfworld:<task_type>`` — ALFWorld-engine games generated offline (``smcplan.envs.alfworld``);
* ``webshop`` — the WebShop protocol on a synthetic catalog, or on the real product files;
* ``toy:<domain>`` — a text view of a discrete POMDP of ``smcplan.pomdp.domains``.

``envs`` sits beside ``llm`` and ``memory`` and above ``pomdp``: it may import ``smcplan.pomdp``
(for the toy wrapper) but never ``smcplan.llm``, ``smcplan.memory``, ``planning`` or higher.
Benchmark packages are imported lazily by each adapter, with a ``MissingBenchmark`` error that
says how to install them; ``import smcplan.envs`` starts no JVM and imports no benchmark.
"""

from __future__ import annotations

import difflib
from typing import Any

from smcplan.envs.alfworld import TASK_TYPES as ALFWORLD_TASK_TYPES
from smcplan.envs.base import (
    BackendTimeout,
    BaseTextEnv,
    EnvError,
    MissingBenchmark,
    StepResult,
    TextEnv,
)
from smcplan.envs.scienceworld import TASK_IDS as _SCIENCEWORLD_IDS
from smcplan.envs.scienceworld import TASKS as SCIENCEWORLD_TASKS
from smcplan.envs.textworld_express import GAMES as TWX_GAMES

__all__ = [
    "make",
    "env_names",
    "TextEnv",
    "StepResult",
    "BaseTextEnv",
    "EnvError",
    "BackendTimeout",
    "MissingBenchmark",
    "TWX_GAMES",
    "SCIENCEWORLD_TASKS",
    "ALFWORLD_TASK_TYPES",
    "TOY_DOMAINS",
]

#: Toy POMDP domains with a text view (``smcplan.envs.toy``).
TOY_DOMAINS = ("household", "tiger")


def env_names() -> list[str]:
    """Every registered environment name, grouped by benchmark."""
    return (
        [f"twx:{g}" for g in TWX_GAMES]
        + [f"scienceworld:{t}" for t in SCIENCEWORLD_TASKS]
        + [f"alfworld:{t}" for t in ALFWORLD_TASK_TYPES]
        + ["webshop"]
        + [f"toy:{d}" for d in TOY_DOMAINS]
    )


def _unknown_env(name: str) -> ValueError:
    close = difflib.get_close_matches(name, env_names(), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return ValueError(f"unknown env {name!r}{hint}; known: {', '.join(env_names())}")


def make(name: str, **kwargs: Any) -> TextEnv:
    """Build the environment registered under ``name``; ``kwargs`` go to its adapter.

    Examples: ``make("twx:coin", split="test")``, ``make("scienceworld:boil")``,
    ``make("alfworld:pick_and_place")``, ``make("webshop")``, ``make("toy:household")``.
    Unknown names raise ``ValueError`` listing the known ones; a missing benchmark package
    raises ``MissingBenchmark``.
    """
    if not isinstance(name, str):
        raise TypeError(f"env name must be a str, got {type(name).__name__}")
    family, _, item = name.partition(":")
    if family == "twx" and item in TWX_GAMES:
        from smcplan.envs.textworld_express import TextWorldExpressEnv

        return TextWorldExpressEnv(item, **kwargs)
    if family == "scienceworld" and (item in SCIENCEWORLD_TASKS or item in _SCIENCEWORLD_IDS):
        from smcplan.envs.scienceworld import ScienceWorldEnv

        return ScienceWorldEnv(item, **kwargs)
    if family == "alfworld" and item in ALFWORLD_TASK_TYPES:
        from smcplan.envs.alfworld import make as make_alfworld

        return make_alfworld(item, **kwargs)
    if name == "webshop":
        from smcplan.envs.webshop import WebShopEnv

        return WebShopEnv(**kwargs)
    if family == "toy" and item in TOY_DOMAINS:
        from smcplan.envs.toy import make_toy

        return make_toy(item, **kwargs)
    raise _unknown_env(name)

