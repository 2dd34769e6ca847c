"""Offline generation of ALFWorld games (Shridhar et al., 2021, "ALFWorld: Aligning Text and
Embodied Environments for Interactive Learning", ICLR) from the ``alfworld`` 0.4.2 package.

``alfworld`` ships the ``alfred`` PDDL domain, its text grammar and 120 ALFRED floor plans, but
no games (``alfworld-download`` needs GitHub). This package builds games from
(task type, floor plan, seed): :mod:`.layouts` reads a floor plan, :mod:`.scene` samples a goal
and object placement, :mod:`.pddl` writes the PDDL problem, :mod:`.expert` plays it with
ALFWorld's hand-coded expert, :mod:`.generate` ties them together deterministically and
:mod:`.cache` publishes game folders atomically.

These are ALFWorld-engine games, NOT the official ALFWorld evaluation set.

Imports ``alfworld`` / ``textworld`` lazily (``MissingBenchmark`` when absent); must not import
anything from ``smcplan`` above ``smcplan.envs``.
"""

from smcplan.envs.alfworld_gen.generate import (
    MAX_ATTEMPTS,
    NOT_OFFICIAL,
    VERSION,
    GameInfo,
    UnsolvableGame,
    game_folder,
    generate_game,
    valid_layouts,
)
from smcplan.envs.alfworld_gen.scene import TASK_TYPES

__all__ = [
    "MAX_ATTEMPTS",
    "NOT_OFFICIAL",
    "TASK_TYPES",
    "VERSION",
    "GameInfo",
    "UnsolvableGame",
    "game_folder",
    "generate_game",
    "valid_layouts",
]
