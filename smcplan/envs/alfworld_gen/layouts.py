"""The ALFRED floor plans bundled with ``alfworld`` 0.4.2, read as static scene skeletons.

Each of the 120 AI2-THOR floor plans ships three files in ``alfworld/gen/layouts``:

* ``FloorPlan<N>-objects.json``: the object classes present in the scene;
* ``FloorPlan<N>-openable.json``: receptacle instances ``"Class|x|y|z"`` (or
  ``"Sink|x|y|z|SinkBasin"``) with the agent pose ``[x, z, rotation, horizon]`` from which
  ALFRED interacts with them;
* ``FloorPlan<N>-layout.npy``: the reachable floor points ``(x, z)`` on the 0.25 m grid.

A :class:`FloorPlan` keeps the static receptacles (ALFRED's ``RECEPTACLES`` minus the
``MOVABLE_RECEPTACLES``, which are objects here) with their interaction locations
``loc|X|Z|rotation|horizon`` (``X = x / 0.25``, ALFRED's own location naming). Receptacle
classes listed in ``objects.json`` but without a pose in ``openable.json`` (garbage cans,
coffee machines, stove burners, toilets, towel holders, ...) get exactly one instance whose
location is a free reachable floor point drawn by a generator seeded with the floor plan and
the class only, so a floor plan's geometry never depends on the game seed. Every receptacle
gets its own location: 15% of ALFRED's poses are shared by several receptacles (stacked
drawers), which makes "go to drawer 2" inadmissible while standing at drawer 1 and derails
ALFWorld's hand-coded expert; a shared pose gets numbered variants ``loc|...|2``.

Must not import textworld or anything from ``smcplan`` above ``smcplan.envs``.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import random
import re
from dataclasses import dataclass

from smcplan.envs.alfworld_gen import _deps

AGENT_STEP_SIZE = 0.25  # ALFRED's navigation grid (constants.AGENT_STEP_SIZE)
ROOM_TYPES = ("Kitchen", "LivingRoom", "Bedroom", "Bathroom")
SPLITS = ("all", "train", "test")


@dataclass(frozen=True)
class Receptacle:
    """A static receptacle instance: THOR id, ALFRED class and interaction location id."""

    object_id: str  # e.g. "Sink|-01.90|+00.97|-01.50|SinkBasin"
    rtype: str  # e.g. "SinkBasin"
    location: str  # e.g. "loc|-5|-6|270|30"
    synthetic: bool = False  # True when the pose was drawn (class absent from openable.json)


@dataclass(frozen=True)
class FloorPlan:
    """The static part of one ALFRED scene."""

    number: int
    room_type: str
    receptacles: tuple[Receptacle, ...]
    object_classes: tuple[str, ...]  # classes listed in objects.json, sorted
    floor_points: tuple[tuple[int, int], ...]  # reachable grid points (X, Z), sorted

    @property
    def name(self) -> str:
        return f"FloorPlan{self.number}"

    @property
    def receptacle_types(self) -> frozenset[str]:
        return frozenset(r.rtype for r in self.receptacles)

    def receptacles_of(self, rtype: str) -> tuple[Receptacle, ...]:
        return tuple(r for r in self.receptacles if r.rtype == rtype)


def _receptacle_class(object_id: str) -> str:
    parts = object_id.split("|")
    # "Sink|x|y|z|SinkBasin" names the basin sub-object; plain ids are "Class|x|y|z".
    return parts[4] if len(parts) == 5 else parts[0]


def _loc(x: float, z: float, rotation: float, horizon: float) -> str:
    gx, gz = round(x / AGENT_STEP_SIZE), round(z / AGENT_STEP_SIZE)
    return f"loc|{gx}|{gz}|{round(rotation)}|{round(horizon)}"


def grid_point(location: str) -> tuple[int, int]:
    """The floor grid point ``(X, Z)`` of a location id ``loc|X|Z|rotation|horizon[|k]``."""
    _, gx, gz = location.split("|")[:3]
    return int(gx), int(gz)


def room_type(number: int) -> str:
    """ALFRED's scene type of floor plan ``number`` (``constants.SCENE_TYPE``)."""
    for name, numbers in _deps.constants().SCENE_TYPE.items():
        if number in numbers:
            return name
    raise ValueError(f"floor plan {number} has no ALFRED scene type")


@functools.cache
def floor_plan_numbers(split: str = "all") -> tuple[int, ...]:
    """Floor plans with bundled layout files; ``split`` is ALFRED's scene split.

    ``"train"``: ``constants.TRAIN_SCENE_NUMBERS`` (7-30, 207-230, 307-330, 407-430);
    ``"test"``: ``constants.TEST_SCENE_NUMBERS`` (1-6, 201-206, 301-306, 401-406), the
    scenes ALFRED holds out of training; ``"all"``: both.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    found = set()
    for path in glob.glob(os.path.join(_deps.layouts_dir(), "FloorPlan*-openable.json")):
        match = re.search(r"FloorPlan(\d+)-openable\.json$", path)
        if match:
            found.add(int(match.group(1)))
    c = _deps.constants()
    if split == "train":
        found &= set(c.TRAIN_SCENE_NUMBERS)
    elif split == "test":
        found &= set(c.TEST_SCENE_NUMBERS)
    return tuple(sorted(found))


@functools.cache
def load_floor_plan(number: int) -> FloorPlan:
    """Read floor plan ``number`` from the ``alfworld`` package (cached per process)."""
    import numpy as np

    known = floor_plan_numbers("all")
    if number not in known:
        raise ValueError(f"unknown floor plan {number!r}; known: {', '.join(map(str, known))}")
    c = _deps.constants()
    base = os.path.join(_deps.layouts_dir(), f"FloorPlan{number}")
    with open(base + "-objects.json") as f:
        object_classes = tuple(sorted(set(json.load(f))))
    with open(base + "-openable.json") as f:
        poses = json.load(f)
    points = np.load(base + "-layout.npy")
    floor_points = tuple(
        sorted({(round(x / AGENT_STEP_SIZE), round(z / AGENT_STEP_SIZE)) for x, z in points})
    )

    static = set(c.RECEPTACLES) - set(c.MOVABLE_RECEPTACLES)
    posed: list[tuple[str, str, str]] = []  # (object_id, class, pose location)
    for object_id in sorted(poses):
        rtype = _receptacle_class(object_id)
        if rtype in static:
            posed.append((object_id, rtype, _loc(*poses[object_id])))

    # Receptacle classes named by objects.json (Sink/Bathtub stand for their basins) but
    # without an interaction pose: one instance at a free floor point fixed by (plan, class).
    named = {
        ("SinkBasin" if o == "Sink" else "BathtubBasin" if o == "Bathtub" else o)
        for o in object_classes
    }
    occupied = {grid_point(loc) for _, _, loc in posed}
    drawn: list[tuple[str, str, str]] = []
    for rtype in sorted((named & static) - {t for _, t, _ in posed}):
        rng = random.Random(f"smcplan/alfworld/floorplan/{number}/{rtype}")
        free = [p for p in floor_points if p not in occupied] or list(floor_points)
        gx, gz = rng.choice(free)
        occupied.add((gx, gz))
        rotation = rng.choice((0, 90, 180, 270))
        x, z = gx * AGENT_STEP_SIZE, gz * AGENT_STEP_SIZE
        drawn.append((f"{rtype}|{x:+06.2f}|+00.00|{z:+06.2f}", rtype, _loc(x, z, rotation, 30)))

    # One location per receptacle: ALFRED poses shared by several receptacles (stacked drawers,
    # a shelf above a cabinet) get a numbered variant, so "go to <receptacle>" always moves.
    receptacles: list[Receptacle] = []
    used: set[str] = set()
    synthetic = {object_id for object_id, _, _ in drawn}
    for object_id, rtype, loc in sorted(posed + drawn):
        unique, k = loc, 1
        while unique in used:
            k += 1
            unique = f"{loc}|{k}"
        used.add(unique)
        receptacles.append(Receptacle(object_id, rtype, unique, object_id in synthetic))

    return FloorPlan(
        number=number,
        room_type=room_type(number),
        receptacles=tuple(receptacles),
        object_classes=object_classes,
        floor_points=floor_points,
    )
