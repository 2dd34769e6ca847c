"""The fixed tables the split lists are built from: ALFWorld's task types, ScienceWorld's
dev/test variation ranges, and :class:`SplitEntry` (one episode).

Shared by :mod:`smcplan.envs.splits` (dev / test) and :mod:`smcplan.envs.generalisation`
(RLVMR's levels), which import it and never each other's tables.  Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from smcplan.envs.alfworld import TASK_TYPES as ALFWORLD_TASK_TYPES

__all__ = ["ALFWORLD_TASK_TYPES", "SCIENCEWORLD_VARIATIONS", "SplitEntry"]


#: task -> ((dev start, dev stop), (test start, test stop)): the simulator's variation ranges.
SCIENCEWORLD_VARIATIONS: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "boil": ((14, 21), (21, 30)),
    "melt": ((14, 21), (21, 30)),
    "freeze": ((14, 21), (21, 30)),
    "change-the-state-of-matter-of": ((14, 21), (21, 30)),
    "use-thermometer": ((270, 405), (405, 540)),
    "measure-melting-point-known-substance": ((218, 327), (327, 436)),
    "measure-melting-point-unknown-substance": ((150, 225), (225, 300)),
    "power-component": ((10, 15), (15, 20)),
    "power-component-renewable-vs-nonrenewable-energy": ((10, 15), (15, 20)),
    "test-conductivity": ((450, 675), (675, 900)),
    "test-conductivity-of-unknown-substances": ((300, 450), (450, 600)),
    "find-living-thing": ((150, 225), (225, 300)),
    "find-non-living-thing": ((150, 225), (225, 300)),
    "find-plant": ((150, 225), (225, 300)),
    "find-animal": ((150, 225), (225, 300)),
    "grow-plant": ((62, 93), (93, 126)),
    "grow-fruit": ((62, 93), (93, 126)),
    "chemistry-mix": ((16, 24), (24, 32)),
    "chemistry-mix-paint-secondary-color": ((18, 27), (27, 36)),
    "chemistry-mix-paint-tertiary-color": ((18, 27), (27, 36)),
    "lifespan-longest-lived": ((62, 93), (93, 125)),
    "lifespan-shortest-lived": ((62, 93), (93, 125)),
    "lifespan-longest-lived-then-shortest-lived": ((62, 93), (93, 125)),
    "identify-life-stages-1": ((6, 9), (9, 14)),
    "identify-life-stages-2": ((4, 6), (6, 10)),
    "inclined-plane-determine-angle": ((84, 126), (126, 168)),
    "inclined-plane-friction-named-surfaces": ((692, 1038), (1038, 1386)),
    "inclined-plane-friction-unnamed-surfaces": ((80, 120), (120, 162)),
    "mendelian-genetics-known-plant": ((60, 90), (90, 120)),
    "mendelian-genetics-unknown-plant": ((240, 360), (360, 480)),
}


@dataclass(frozen=True)
class SplitEntry:
    """One episode: ``make(env, **env_kwargs).reset(seed)``; ``task`` is a readable label."""

    env: str
    seed: int
    task: str | None = None
    env_kwargs: dict[str, Any] = field(default_factory=dict, hash=False)
