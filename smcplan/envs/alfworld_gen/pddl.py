"""Writing a :class:`~smcplan.envs.alfworld_gen.scene.Scene` as a PDDL problem of ALFWorld's
``alfred`` domain (``alfworld/data/alfred.pddl``), and the task sentence.

The problem follows ALFRED's ``PlannedGameState.state_to_pddl`` layout, which ALFWorld's
``initial_state.pddl`` files use:

* ``:objects``: ``agent1``; one ``<Class>Type - otype`` per ALFRED object class (movable
  receptacles such as Bowl or Mug are object classes ONLY: declaring them also as ``rtype``
  makes the translator fail with "duplicate object"); one ``<Class>Type - rtype`` per static
  receptacle class; the instances and the locations, with THOR ids mangled as ALFRED does
  (``|`` -> ``_bar_``, ``-`` -> ``_minus_``, ``+`` -> ``_plus_``, ``.`` -> ``_dot_``);
* ``:init``: ``receptacleType``, ``objectType``, ``canContain`` for every static class x
  object class pair of ``VAL_RECEPTACLE_OBJECTS`` present (without them ``PutObject`` has
  no grounding and fast-downward's translator fails with ``KeyError: 'val1'``),
  affordances (``pickupable``, ``isReceptacleObject``, ``cleanable``, ``heatable``,
  ``coolable``, ``toggleable``, ``openable``), ``isCool`` for coolable objects that start in
  a fridge (as ALFRED does), placement (``inReceptacle``, ``objectAtLocation``,
  ``receptacleAtLocation``) and ``atLocation agent1``;
* ``:goal``: ``alfworld.gen.goal_library.gdict[task]['pddl']`` with the goal classes.

Must not import textworld or anything from ``smcplan`` above ``smcplan.envs``.
"""

from __future__ import annotations

import random

from smcplan.envs.alfworld_gen import _deps
from smcplan.envs.alfworld_gen.scene import Scene

_MANGLE = {"-": "_minus_", "|": "_bar_", "+": "_plus_", ".": "_dot_", ",": "_comma_"}


def mangle(thor_id: str) -> str:
    """ALFRED's ``fix_pddl_str_chars`` for ids: ``Apple|+01.00|-00.50`` -> PDDL name."""
    return "".join(_MANGLE.get(ch, ch) for ch in thor_id)


def problem_text(scene: Scene, name: str) -> str:
    """The PDDL problem (``initial_state.pddl``) of ``scene``; deterministic in its input."""
    c = _deps.constants()
    glib = _deps.goal_library()
    fp, goal = scene.floor_plan, scene.goal
    static = sorted(set(c.RECEPTACLES) - set(c.MOVABLE_RECEPTACLES))
    otypes = sorted(set(c.OBJECTS_SET) - set(static))
    movable = set(c.MOVABLE_RECEPTACLES)
    recep_by_id = {r.object_id: r for r in fp.receptacles}
    locations = sorted({r.location for r in fp.receptacles} | {scene.agent_location})

    objects = ["agent1 - agent"]
    objects += [f"{t}Type - otype" for t in otypes]
    objects += [f"{t}Type - rtype" for t in static]
    objects += [f"{mangle(o.object_id)} - object" for o in scene.objects]
    objects += [f"{mangle(r.object_id)} - receptacle" for r in fp.receptacles]
    objects += [f"{mangle(loc)} - location" for loc in locations]

    present_otypes = sorted({o.otype for o in scene.objects})
    init = [f"(receptacleType {mangle(r.object_id)} {r.rtype}Type)" for r in fp.receptacles]
    init += [f"(objectType {mangle(o.object_id)} {o.otype}Type)" for o in scene.objects]
    for rtype in sorted(fp.receptacle_types):
        allowed = c.VAL_RECEPTACLE_OBJECTS.get(rtype, set())
        init += [f"(canContain {rtype}Type {o}Type)" for o in present_otypes if o in allowed]

    fridges = {r.object_id for r in fp.receptacles if r.rtype == "Fridge"}
    lamp_classes = set(c.VAL_ACTION_OBJECTS["Toggleable"])
    for o in scene.objects:
        n = mangle(o.object_id)
        if o.otype in lamp_classes:
            init.append(f"(toggleable {n})")
            continue
        init.append(f"(pickupable {n})")
        if o.otype in movable:
            init.append(f"(isReceptacleObject {n})")
        for affordance, predicate in (
            ("Cleanable", "cleanable"),
            ("Heatable", "heatable"),
            ("Coolable", "coolable"),
        ):
            if o.otype in c.VAL_ACTION_OBJECTS[affordance]:
                init.append(f"({predicate} {n})")
        if o.otype in c.VAL_ACTION_OBJECTS["Coolable"] and o.receptacle_id in fridges:
            init.append(f"(isCool {n})")
    init += [
        f"(openable {mangle(r.object_id)})"
        for r in fp.receptacles
        if r.rtype in c.OPENABLE_CLASS_SET
    ]
    init.append(f"(atLocation agent1 {mangle(scene.agent_location)})")
    for o in scene.objects:
        host = recep_by_id[o.receptacle_id]
        init.append(f"(inReceptacle {mangle(o.object_id)} {mangle(host.object_id)})")
        init.append(f"(objectAtLocation {mangle(o.object_id)} {mangle(host.location)})")
    init += [
        f"(receptacleAtLocation {mangle(r.object_id)} {mangle(r.location)})" for r in fp.receptacles
    ]

    goal_pddl = (
        glib.gdict[goal.task_type]["pddl"]
        .format(
            obj=goal.object_target, recep=goal.parent_target, toggle=goal.toggle_target, mrecep=""
        )
        .replace("#", "-")
    )
    # gdict's goal text also closes the enclosing "(define" form.
    sep = "\n        "
    return (
        f"(define (problem {name})\n"
        f"    (:domain alfred)\n"
        f"    (:objects{sep}{sep.join(objects)}\n    )\n"
        f"    (:init{sep}{sep.join(init)}\n    )\n"
        f"{goal_pddl.strip()}\n"
    )


def task_description(scene: Scene, rng: random.Random) -> str:
    """One of the goal's language templates (``gdict[task]['templates']``), filled as ALFWorld's
    ``get_templated_task_desc`` does (lower-cased class names), drawn with ``rng``."""
    glib = _deps.goal_library()
    g = scene.goal
    template = rng.choice(glib.gdict[g.task_type]["templates"])
    return template.format(
        obj=g.object_target.lower(),
        recep=g.parent_target.lower(),
        toggle=g.toggle_target.lower(),
        mrecep="",
    )
