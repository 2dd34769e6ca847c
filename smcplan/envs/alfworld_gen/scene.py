"""Sampling one ALFWorld scene: a goal and the placement of movable objects in a floor plan.

Given a task type, a :class:`~smcplan.envs.alfworld_gen.layouts.FloorPlan` and a seeded
``random.Random``, :func:`sample_scene` draws, following ALFRED's generator
(Shridhar et al., 2020, "ALFRED", CVPR; ``alfworld.gen.constants``):

1. the goal parameters ``(object_target, parent_target, toggle_target)`` uniformly among the
   pairs the floor plan supports (see :func:`goal_candidates`), for room types allowed by
   ``constants.GOALS_VALID``;
2. the number of instances of every pickupable class of the scene:
   ``U{1..MAX_NUM_OF_OBJ_INSTANCES}``
   (``U{1..PICKUP_REPEAT_MAX}`` for the target, ``U{2..PICKUP_REPEAT_MAX}`` for
   ``pick_two_obj_and_place``);
3. each instance's receptacle uniformly among the static receptacles whose class may hold
   it (``constants.VAL_RECEPTACLE_OBJECTS``); target instances never start in a receptacle of
   the parent class, so no goal holds initially;
4. the agent's start: a reachable floor point that is no receptacle's interaction location
   (so the first observation lists the receptacles of the room, as in ALFWorld).

Lamps (``DeskLamp``, ``FloorLamp``) are in no ``VAL_RECEPTACLE_OBJECTS`` entry; one instance
of each lamp class of the scene stands at a table-like receptacle (:data:`LAMP_HOSTS`), the
receptacle that ALFWorld's ``ToggleObject`` needs it to be in.

Must not import textworld or anything from ``smcplan`` above ``smcplan.envs``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from smcplan.envs.alfworld_gen import _deps
from smcplan.envs.alfworld_gen.layouts import FloorPlan, Receptacle, grid_point
from smcplan.errors import SmcplanError

# Our short task names -> ALFWorld / ALFRED task types.
TASK_TYPES: dict[str, str] = {
    "pick_and_place": "pick_and_place_simple",
    "pick_clean_then_place": "pick_clean_then_place_in_recep",
    "pick_heat_then_place": "pick_heat_then_place_in_recep",
    "pick_cool_then_place": "pick_cool_then_place_in_recep",
    "look_at_obj_in_light": "look_at_obj_in_light",
    "pick_two_obj_and_place": "pick_two_obj_and_place",
}

LAMP_CLASSES = ("DeskLamp", "FloorLamp")
LAMP_HOSTS = ("CoffeeTable", "Desk", "DiningTable", "Dresser", "SideTable", "TVStand")

# The appliance a task needs, and that may not double as the goal's parent receptacle.
_APPLIANCE = {
    "pick_clean_then_place_in_recep": ("SinkBasin", "Cleanable"),
    "pick_heat_then_place_in_recep": ("Microwave", "Heatable"),
    "pick_cool_then_place_in_recep": ("Fridge", "Coolable"),
}


class NoValidGoal(SmcplanError, ValueError):
    """The floor plan cannot host the task type (missing appliance, object or room type)."""


@dataclass(frozen=True)
class Goal:
    """ALFRED's ``pddl_params`` for one task (class names, ``""`` when unused)."""

    task_type: str  # ALFWorld name, e.g. "pick_clean_then_place_in_recep"
    object_target: str
    parent_target: str = ""
    toggle_target: str = ""


@dataclass(frozen=True)
class SceneObject:
    """A movable object instance, its class and the receptacle it starts in."""

    object_id: str  # THOR-style "Apple|+01.25|+00.95|-02.00"
    otype: str
    receptacle_id: str


@dataclass(frozen=True)
class Scene:
    floor_plan: FloorPlan
    goal: Goal
    objects: tuple[SceneObject, ...]
    agent_location: str  # "loc|X|Z|rotation|horizon"


def alfworld_task_type(task_type: str) -> str:
    """Map our short name (or the ALFWorld name itself) to the ALFWorld task type."""
    if task_type in TASK_TYPES:
        return TASK_TYPES[task_type]
    if task_type in TASK_TYPES.values():
        return task_type
    raise ValueError(f"unknown ALFWorld task type {task_type!r}; known: {', '.join(TASK_TYPES)}")


def _containers(fp: FloorPlan) -> dict[str, list[Receptacle]]:
    """For each object class: the floor plan's receptacles that may hold it."""
    c = _deps.constants()
    out: dict[str, list[Receptacle]] = {}
    for r in fp.receptacles:
        for otype in c.VAL_RECEPTACLE_OBJECTS.get(r.rtype, ()):
            out.setdefault(otype, []).append(r)
    return out


def pickupable_classes(fp: FloorPlan) -> tuple[str, ...]:
    """Classes of ``fp`` that can be picked up and have at least one receptacle to start in."""
    c = _deps.constants()
    static = set(c.RECEPTACLES) - set(c.MOVABLE_RECEPTACLES)
    holders = _containers(fp)
    return tuple(
        o for o in fp.object_classes if o in c.OBJECTS and o not in static and o in holders
    )


def goal_candidates(task_type: str, fp: FloorPlan) -> list[Goal]:
    """All goals of ``task_type`` that ``fp`` supports, in a fixed order.

    Constraints: room type in ``GOALS_VALID``; the object class is pickupable in the scene;
    the parent class is a static receptacle of the scene that may hold the object; the
    clean/heat/cool appliance (SinkBasin / Microwave / Fridge) is present, the object has
    the matching affordance in ``VAL_ACTION_OBJECTS`` and the parent is not that appliance;
    ``look_at_obj_in_light`` needs a lamp class and a lamp host receptacle.
    """
    c = _deps.constants()
    task = alfworld_task_type(task_type)
    if fp.room_type not in c.GOALS_VALID[task]:
        return []
    objects = pickupable_classes(fp)
    rtypes = fp.receptacle_types
    if task == "look_at_obj_in_light":
        lamps = [lamp for lamp in LAMP_CLASSES if lamp in fp.object_classes]
        if not lamps or not (rtypes & set(LAMP_HOSTS)):
            return []
        return [Goal(task, o, "", lamp) for o in objects for lamp in lamps]
    appliance, affordance = _APPLIANCE.get(task, (None, None))
    if appliance is not None and appliance not in rtypes:
        return []
    holders = _containers(fp)
    goals = []
    for o in objects:
        if affordance is not None and o not in c.VAL_ACTION_OBJECTS[affordance]:
            continue
        for p in sorted(rtypes):
            if p == appliance or o not in c.VAL_RECEPTACLE_OBJECTS.get(p, ()):
                continue
            # The target must be able to start somewhere other than a parent receptacle.
            if not any(r.rtype != p for r in holders[o]):
                continue
            goals.append(Goal(task, o, p, ""))
    return goals


def _object_id(otype: str, host: Receptacle, rng: random.Random, taken: set[str]) -> str:
    parts = host.object_id.split("|")
    x, y, z = (float(v) for v in parts[1:4])
    while True:
        ox, oz = x + rng.uniform(-0.3, 0.3), z + rng.uniform(-0.3, 0.3)
        oid = f"{otype}|{ox:+06.2f}|{y + 0.02:+06.2f}|{oz:+06.2f}"
        if oid not in taken:
            taken.add(oid)
            return oid


def sample_scene(task_type: str, fp: FloorPlan, rng: random.Random) -> Scene:
    """Draw a goal and an object placement for ``task_type`` in ``fp`` (see module doc)."""
    c = _deps.constants()
    goals = goal_candidates(task_type, fp)
    if not goals:
        raise NoValidGoal(f"{fp.name} ({fp.room_type}) cannot host {task_type!r}")
    goal = rng.choice(goals)
    task = goal.task_type
    holders = _containers(fp)

    objects: list[SceneObject] = []
    taken: set[str] = set()
    for otype in pickupable_classes(fp):
        choices = holders[otype]
        if otype == goal.object_target:
            low = 2 if task == "pick_two_obj_and_place" else 1
            count = rng.randint(low, c.PICKUP_REPEAT_MAX)
            choices = [r for r in choices if r.rtype != goal.parent_target]
        else:
            count = rng.randint(1, c.MAX_NUM_OF_OBJ_INSTANCES)
        for _ in range(count):
            host = rng.choice(choices)
            objects.append(SceneObject(_object_id(otype, host, rng, taken), otype, host.object_id))

    hosts = [r for r in fp.receptacles if r.rtype in LAMP_HOSTS]
    for lamp in LAMP_CLASSES:
        if lamp in fp.object_classes and hosts:
            host = rng.choice(hosts)
            objects.append(SceneObject(_object_id(lamp, host, rng, taken), lamp, host.object_id))

    occupied = {grid_point(r.location) for r in fp.receptacles}
    free = [p for p in fp.floor_points if p not in occupied]
    gx, gz = rng.choice(free or list(fp.floor_points))
    agent_location = f"loc|{gx}|{gz}|{rng.choice((0, 90, 180, 270))}|30"
    return Scene(fp, goal, tuple(objects), agent_location)
