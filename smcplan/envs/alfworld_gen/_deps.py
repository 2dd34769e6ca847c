"""Lazy access to the ``alfworld`` / ``textworld`` / ``fast_downward`` packages.

Every other module of :mod:`smcplan.envs.alfworld_gen` reaches the benchmark packages only
through these functions, so that ``import smcplan.envs.alfworld`` works without them and a
missing package surfaces as :class:`~smcplan.envs.base.MissingBenchmark` with the fix.

Must not import anything from ``smcplan`` above :mod:`smcplan.envs.base`.
"""

from __future__ import annotations

import os
from types import ModuleType

from smcplan.envs.base import MissingBenchmark

_HINT = (
    "ALFWorld games need the 'alfworld' (0.4.2, with fast-downward-textworld) and 'textworld' "
    "packages: pip install 'smcplan[bench]'"
)


def _missing(exc: ImportError) -> MissingBenchmark:
    return MissingBenchmark(f"{_HINT} (import failed: {exc})")


def constants() -> ModuleType:
    """``alfworld.gen.constants``: object classes, receptacle classes and their affordances."""
    try:
        import alfworld.gen.constants as mod
    except ImportError as exc:  # pragma: no cover - exercised only without the package
        raise _missing(exc) from exc
    return mod


def goal_library() -> ModuleType:
    """``alfworld.gen.goal_library``: the PDDL goal and language templates per task type."""
    try:
        import alfworld.gen.goal_library as mod
    except ImportError as exc:  # pragma: no cover
        raise _missing(exc) from exc
    return mod


def layouts_dir() -> str:
    """The folder of the 120 bundled floor plans (``FloorPlan<N>-{objects,openable}.json``)."""
    return os.path.join(os.path.dirname(constants().__file__), "layouts")


def logic_paths() -> tuple[str, str]:
    """Paths of the bundled ``alfred.pddl`` domain and ``alfred.twl2`` text grammar."""
    try:
        from alfworld.info import ALFRED_PDDL_PATH, ALFRED_TWL2_PATH
    except ImportError as exc:  # pragma: no cover
        raise _missing(exc) from exc
    return ALFRED_PDDL_PATH, ALFRED_TWL2_PATH


def alfworld_version() -> str:
    """The installed ``alfworld`` version string."""
    try:
        from alfworld.info import __version__
    except ImportError as exc:  # pragma: no cover
        raise _missing(exc) from exc
    return __version__


def tw_modules() -> tuple[ModuleType, type, type, type, type]:
    """``(textworld, PddlEnv, AlfredDemangler, AlfredInfos, AlfredExpert)``.

    Imported only when a game is played or solved (takes ~0.7 s and needs fast-downward).
    """
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import (
            AlfredDemangler,
            AlfredExpert,
            AlfredInfos,
        )
        from textworld.envs.pddl import PddlEnv
        from textworld.envs.pddl import pddl as _pddl_mod
    except ImportError as exc:
        raise _missing(exc) from exc
    if _pddl_mod.fast_downward_missing:
        raise MissingBenchmark(f"{_HINT} (fast_downward is not importable)")
    return textworld, PddlEnv, AlfredDemangler, AlfredInfos, AlfredExpert
