"""Fixed evaluation splits: which (env, task, seed) episodes make up ``dev``, ``test`` and RLVMR's
generalisation levels.

``dev`` is for development (tuning prompts, hyper-parameters); ``test`` is for reporting.  Both
are drawn only from the benchmarks' own held-out folds, never from training data, and are fixed
lists (this module is their definition; ``docs/envs.md`` prints them):

==============  ==========================================  ===================================
benchmark       dev                                         test
==============  ==========================================  ===================================
TextWorldExp.   8 games x dev-fold seeds 10000-10004 (40)   8 games x test-fold seeds
                                                            20000-20009 (80)
ScienceWorld    30 tasks x 2 dev variations (60)            30 tasks x 5 test variations (149)
ALFWorld        6 task types x seeds 100-102 on ALFRED's    6 task types x seeds 0-9 on the
                training scenes, ``split="train"`` (18)     held-out scenes, ``split="test"``
                                                            (60)
WebShop         synthetic catalog goals 50-74 (25)          synthetic catalog goals 0-49 (50)
==============  ==========================================  ===================================

ScienceWorld variations are spread evenly over each task's dev/test list (the lists order
variations by their parameters, e.g. the substance, so the first few would all be alike):
pick ``k`` of ``n`` variations as ``list[floor(i n / k)]`` for ``i < k``; a task whose test list
is shorter than 5 (identify-life-stages-2: 4) contributes all of it.  The variation ranges
below are the simulator's (scienceworld 1.2.3), checked against it in the tests.

ALFWorld games are generated offline by ``smcplan.envs.alfworld_gen`` (ALFWorld-engine games,
NOT the official ALFWorld evaluation set).  WebShop goals index the shipped SYNTHETIC catalog
(``smcplan.envs.webshop.catalog.SYNTHETIC_SPLITS``; not WebShop's data); with the real files
the WebShop baselines' split is goals 0-499 test, 500-1499 dev (``WebShopEnv(split=...)``).

The generalisation splits follow RLVMR (Zhang et al. 2025, arXiv 2507.22844; its code, the
``RLVMR/`` folder of Tencent's DigitalHuman repository) and are defined in
:mod:`smcplan.envs.generalisation` (``alfworld-l0``, ``alfworld-l1``, ``alfworld-l2``,
``scienceworld-unseen``).

Each entry is a ``SplitEntry(env, seed, task, env_kwargs)``: the harness builds
``smcplan.envs.make(env, **env_kwargs)`` and calls ``reset(seed)``.

Pure Python; imports only the adapters' name tables (no benchmark package, no JVM).
"""

from __future__ import annotations

from smcplan.envs.base import unknown_choice
from smcplan.envs.generalisation import generalisation_split
from smcplan.envs.scienceworld import TASKS as SCIENCEWORLD_TASKS
from smcplan.envs.split_tables import (
    ALFWORLD_TASK_TYPES,
    SCIENCEWORLD_VARIATIONS,
    SplitEntry,
)
from smcplan.envs.textworld_express import FOLDS as TWX_FOLDS
from smcplan.envs.textworld_express import GAMES as TWX_GAMES

__all__ = [
    "SplitEntry",
    "SPLITS",
    "get_split",
    "split_summary",
    "SCIENCEWORLD_VARIATIONS",
    "spread",
]

#: The dev/test splits (defined here) and RLVMR's generalisation splits
#: (:mod:`smcplan.envs.generalisation`).
SPLITS = ("dev", "test", "alfworld-l0", "alfworld-l1", "alfworld-l2", "scienceworld-unseen")

#: episodes per game / task / task type and split
TWX_PER_GAME = {"dev": 5, "test": 10}
SCIENCEWORLD_PER_TASK = {"dev": 2, "test": 5}
ALFWORLD_SEEDS = {"dev": range(100, 103), "test": range(0, 10)}
ALFWORLD_SCENES = {"dev": "train", "test": "test"}
WEBSHOP_GOALS = {"dev": range(50, 75), "test": range(0, 50)}


def spread(values: list[int] | range, k: int) -> list[int]:
    """``k`` values spread evenly over ``values``: ``values[floor(i n / k)]``, ``i < k``."""
    values = list(values)
    k = min(k, len(values))
    return [values[(i * len(values)) // k] for i in range(k)]


def _twx(split: str) -> list[SplitEntry]:
    start = TWX_FOLDS[split].start
    return [
        SplitEntry(f"twx:{game}", start + i, game)
        for game in TWX_GAMES
        for i in range(TWX_PER_GAME[split])
    ]


def _scienceworld(split: str) -> list[SplitEntry]:
    entries = []
    for task in SCIENCEWORLD_TASKS:
        dev, test = SCIENCEWORLD_VARIATIONS[task]
        lo, hi = dev if split == "dev" else test
        for variation in spread(range(lo, hi), SCIENCEWORLD_PER_TASK[split]):
            entries.append(SplitEntry(f"scienceworld:{task}", variation, task))
    return entries


def _alfworld(split: str) -> list[SplitEntry]:
    return [
        SplitEntry(f"alfworld:{t}", seed, t, {"split": ALFWORLD_SCENES[split]})
        for t in ALFWORLD_TASK_TYPES
        for seed in ALFWORLD_SEEDS[split]
    ]


def _webshop(split: str) -> list[SplitEntry]:
    return [SplitEntry("webshop", goal, "synthetic catalog") for goal in WEBSHOP_GOALS[split]]


def get_split(name: str) -> list[SplitEntry]:
    """All entries of split ``name`` (one of :data:`SPLITS`), grouped by benchmark."""
    if name not in SPLITS:
        raise unknown_choice("split", name, SPLITS)
    if name not in ("dev", "test"):
        return generalisation_split(name)
    return _twx(name) + _scienceworld(name) + _alfworld(name) + _webshop(name)


def split_summary(name: str) -> dict[str, int]:
    """Number of episodes per benchmark in split ``name``."""
    counts: dict[str, int] = {}
    for entry in get_split(name):
        family = entry.env.split(":", 1)[0]
        counts[family] = counts.get(family, 0) + 1
    return counts
