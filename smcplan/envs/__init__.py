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
from smcplan.envs.textworld_express import FOLDS as _TWX_FOLDS
from smcplan.envs.textworld_express import GAMES as TWX_GAMES
from smcplan.envs.textworld_express import fold_of_seed as _twx_fold
from smcplan.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    UnknownNameError,
    check_options,
    keyword_names,
)
from smcplan.options import coerce_keywords, seed_list

__all__ = [
    "make",
    "check_seeds",
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


def check_seeds(name: str, seeds: Any, **kwargs: Any) -> list[int]:
    """``seeds`` as a checked list of ints env ``name`` accepts, found without building the env
    (no JVM): at most :data:`~smcplan.options.MAX_SEEDS` of them, each in ``[0, MAX_SEED]``,
    and for TextWorldExpress in a fold (and in ``kwargs["split"]``'s when given).  The first
    bad seed raises :class:`~smcplan.errors.InvalidArgumentError` naming the valid ones."""
    checked = seed_list(seeds, f"seeds of {name}")
    if name.partition(":")[0] == "twx":
        split = kwargs.get("split")
        for seed in checked:
            try:
                fold = _twx_fold(seed)
            except ValueError as exc:
                raise InvalidArgumentError(f"{name}: {exc}") from None
            if split in _TWX_FOLDS and fold != split:
                r = _TWX_FOLDS[split]
                raise InvalidArgumentError(
                    f"{name}: seed {seed} is in fold {fold!r}, not in split {split!r} (seeds "
                    f"{r.start}-{r.stop - 1})"
                )
    return checked


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
    # keywords annotated bool / int are converted strictly ("no" is False, 1.5 is refused)
    kwargs.update(coerce_keywords(f"env {name!r}", factory, public))
    return factory(*args, **kwargs)
