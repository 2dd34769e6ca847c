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
from smcplan.errors import ArgumentTypeError, UnknownNameError, check_options, keyword_names

__all__ = [
    "make",
    "env_names",
    "env_options",
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


def _unknown_env(name: str) -> UnknownNameError:
    close = difflib.get_close_matches(name, env_names(), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return UnknownNameError(f"unknown env {name!r}{hint}; known: {', '.join(env_names())}")


def _adapter(name: str) -> tuple[Any, tuple[Any, ...]]:
    """The constructor behind ``name`` and the positional arguments the registry gives it."""
    if not isinstance(name, str):
        raise ArgumentTypeError(
            f"env name must be a str, got {type(name).__name__}; see smcplan.envs.env_names()"
        )
    family, _, item = name.partition(":")
    if family == "twx" and item in TWX_GAMES:
        from smcplan.envs.textworld_express import TextWorldExpressEnv

        return TextWorldExpressEnv, (item,)
    if family == "scienceworld" and (item in SCIENCEWORLD_TASKS or item in _SCIENCEWORLD_IDS):
        from smcplan.envs.scienceworld import ScienceWorldEnv

        return ScienceWorldEnv, (item,)
    if family == "alfworld" and item in ALFWORLD_TASK_TYPES:
        from smcplan.envs.alfworld import make as make_alfworld

        return make_alfworld, (item,)
    if name == "webshop":
        from smcplan.envs.webshop import WebShopEnv

        return WebShopEnv, ()
    if family == "toy" and item in TOY_DOMAINS:
        from smcplan.envs.toy import make_toy

        return make_toy, (item,)
    raise _unknown_env(name)


def env_options(name: str) -> list[str]:
    """The keyword arguments ``make(name, ...)`` accepts (sorted), e.g. for ``--env-arg``."""
    family = name.partition(":")[0] if isinstance(name, str) else ""
    factory, _ = _adapter(name)
    if family == "alfworld":
        return ["cache_dir", "clone_by", "layout", "max_steps", "seed", "split"]
    if family == "toy":
        from smcplan.envs.toy import ToyPOMDPEnv
        from smcplan.pomdp import domains

        own = keyword_names(ToyPOMDPEnv) or frozenset()
        domain = keyword_names(getattr(domains, name.partition(":")[2])) or frozenset()
        return sorted((own | domain) - {"domain"})
    return sorted((keyword_names(factory) or frozenset()) - {"task", "game"})


def make(name: str, **kwargs: Any) -> TextEnv:
    """Build the environment registered under ``name``; ``kwargs`` go to its adapter.

    Examples: ``make("twx:coin", split="test")``, ``make("scienceworld:boil")``,
    ``make("alfworld:pick_and_place")``, ``make("webshop")``, ``make("toy:household")``.
    Unknown names raise :class:`~smcplan.errors.UnknownNameError` (a ``ValueError``) listing the
    known ones, unknown keyword arguments one listing :func:`env_options`; a missing benchmark
    package raises ``MissingBenchmark``.  Private keywords (``_share``: an adapter's JVM shared
    by the library's own clones and tests) are not public options and go to the adapter as
    they are.
    """
    factory, args = _adapter(name)
    public = {k: v for k, v in kwargs.items() if not k.startswith("_")}
    check_options(f"env {name!r}", public, env_options(name))
    return factory(*args, **kwargs)
