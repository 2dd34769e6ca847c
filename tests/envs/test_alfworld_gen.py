"""ALFWorld game synthesis without the engine: floor plans, goals, placements, PDDL text."""

from __future__ import annotations

import random
import re

import pytest

pytest.importorskip("alfworld.gen.constants")

import alfworld.gen.constants as C  # noqa: E402

from smcplan.envs.alfworld import TASK_TYPES  # noqa: E402
from smcplan.envs.alfworld_gen import TASK_TYPES as GEN_TASK_TYPES  # noqa: E402
from smcplan.envs.alfworld_gen import valid_layouts  # noqa: E402
from smcplan.envs.alfworld_gen.layouts import (  # noqa: E402
    floor_plan_numbers,
    load_floor_plan,
)
from smcplan.envs.alfworld_gen.pddl import mangle, problem_text, task_description  # noqa: E402
from smcplan.envs.alfworld_gen.scene import (  # noqa: E402
    LAMP_CLASSES,
    LAMP_HOSTS,
    NoValidGoal,
    goal_candidates,
    sample_scene,
)

STATIC = set(C.RECEPTACLES) - set(C.MOVABLE_RECEPTACLES)


def test_the_six_task_types_map_to_alfworlds_names():
    assert tuple(GEN_TASK_TYPES) == TASK_TYPES
    assert set(GEN_TASK_TYPES.values()) == {
        "pick_and_place_simple",
        "pick_clean_then_place_in_recep",
        "pick_heat_then_place_in_recep",
        "pick_cool_then_place_in_recep",
        "look_at_obj_in_light",
        "pick_two_obj_and_place",
    }


def test_all_120_floor_plans_load_with_unique_static_receptacles():
    numbers = floor_plan_numbers("all")
    assert len(numbers) == 120
    assert set(floor_plan_numbers("train")) | set(floor_plan_numbers("test")) == set(numbers)
    assert set(floor_plan_numbers("test")) == set(C.TEST_SCENE_NUMBERS)
    for n in numbers:
        fp = load_floor_plan(n)
        ids = [r.object_id for r in fp.receptacles]
        assert len(ids) == len(set(ids)), n
        assert fp.receptacles, n
        for r in fp.receptacles:
            assert r.rtype in STATIC, (n, r)
            assert re.fullmatch(r"loc(\|-?\d+){4}(\|\d+)?", r.location), r.location
        assert len({r.location for r in fp.receptacles}) == len(ids), n  # one location each
        assert fp.room_type == next(k for k, v in C.SCENE_TYPE.items() if n in v)


def test_unknown_floor_plan_and_split_name_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown floor plan 99; known: 1, 2, 3"):
        load_floor_plan(99)
    with pytest.raises(ValueError, match="known: all, train, test"):
        floor_plan_numbers("valid_seen")


def test_task_types_are_hosted_only_by_the_room_types_alfred_allows():
    for task, alf in GEN_TASK_TYPES.items():
        layouts = valid_layouts(task)
        assert layouts, task
        rooms = {load_floor_plan(n).room_type for n in layouts}
        assert rooms <= C.GOALS_VALID[alf], (task, rooms)
    # heat and cool need a microwave / fridge: kitchens only, and every kitchen has both
    assert valid_layouts("pick_heat_then_place") == tuple(range(1, 31))
    assert valid_layouts("pick_cool_then_place") == tuple(range(1, 31))


@pytest.mark.parametrize(
    "task, appliance, affordance",
    [
        ("pick_clean_then_place", "SinkBasin", "Cleanable"),
        ("pick_heat_then_place", "Microwave", "Heatable"),
        ("pick_cool_then_place", "Fridge", "Coolable"),
    ],
)
def test_state_change_goals_need_the_appliance_and_the_affordance(task, appliance, affordance):
    for n in valid_layouts(task):
        fp = load_floor_plan(n)
        assert appliance in fp.receptacle_types
        for g in goal_candidates(task, fp):
            assert g.object_target in C.VAL_ACTION_OBJECTS[affordance]
            assert g.parent_target != appliance
            assert g.object_target in C.VAL_RECEPTACLE_OBJECTS[g.parent_target]


def test_a_bedroom_cannot_host_a_heat_task():
    with pytest.raises(NoValidGoal, match="FloorPlan301"):
        sample_scene("pick_heat_then_place", load_floor_plan(301), random.Random(0))


@pytest.mark.parametrize("task", TASK_TYPES)
def test_sampled_scenes_respect_alfreds_constraints(task):
    for seed in range(4):
        rng = random.Random(seed)
        fp = load_floor_plan(rng.choice(valid_layouts(task)))
        scene = sample_scene(task, fp, rng)
        goal = scene.goal
        hosts = {r.object_id: r for r in fp.receptacles}
        targets = [o for o in scene.objects if o.otype == goal.object_target]
        assert targets
        if task == "pick_two_obj_and_place":
            assert len(targets) >= 2
        assert len(targets) <= C.PICKUP_REPEAT_MAX
        for o in scene.objects:
            host = hosts[o.receptacle_id]
            if o.otype in LAMP_CLASSES:
                assert host.rtype in LAMP_HOSTS
            else:
                assert o.otype in C.VAL_RECEPTACLE_OBJECTS[host.rtype], (o, host)
        # no goal holds initially: no target starts in a receptacle of the parent class
        assert all(hosts[o.receptacle_id].rtype != goal.parent_target for o in targets)
        if task == "look_at_obj_in_light":
            assert goal.toggle_target in {o.otype for o in scene.objects}
        ids = [o.object_id for o in scene.objects]
        assert len(ids) == len(set(ids))
        # the agent starts away from every receptacle (the first "look" lists the room)
        assert scene.agent_location not in {r.location for r in fp.receptacles}


def test_scene_sampling_is_a_function_of_the_rng_stream():
    fp = load_floor_plan(12)
    a = sample_scene("pick_clean_then_place", fp, random.Random("s"))
    b = sample_scene("pick_clean_then_place", fp, random.Random("s"))
    assert a == b
    assert problem_text(a, "p") == problem_text(b, "p")


def test_pddl_declares_movable_receptacles_as_object_types_only_and_has_cancontain():
    fp = load_floor_plan(1)
    scene = sample_scene("pick_heat_then_place", fp, random.Random(3))
    text = problem_text(scene, "p")
    for movable in C.MOVABLE_RECEPTACLES:
        assert f"{movable}Type - otype" in text
        assert f"{movable}Type - rtype" not in text
    # every placed object class is containable by every receptacle class that may hold it
    for o in scene.objects:
        host = next(r for r in fp.receptacles if r.object_id == o.receptacle_id)
        if o.otype not in LAMP_CLASSES:
            assert f"(canContain {host.rtype}Type {o.otype}Type)" in text
        assert f"(inReceptacle {mangle(o.object_id)} {mangle(host.object_id)})" in text
    assert "(:domain alfred)" in text
    assert text.count("(") == text.count(")")
    assert "#" not in text and "|" not in text


def test_task_sentence_uses_an_alfworld_template():
    fp = load_floor_plan(1)
    scene = sample_scene("pick_cool_then_place", fp, random.Random(5))
    sentence = task_description(scene, random.Random(0))
    obj, recep = scene.goal.object_target.lower(), scene.goal.parent_target.lower()
    assert sentence in {f"put a cool {obj} in {recep}", f"cool some {obj} and put it in {recep}"}


def test_the_expert_is_told_move_commands_in_alfworlds_pre_040_put_spelling():
    from smcplan.envs.alfworld_gen.expert import pre_040_spelling

    assert pre_040_spelling("move cloth 3 to countertop 1") == "put cloth 3 in/on countertop 1"
    # the expert's bookkeeping keys on these substrings (update_state_tracking)
    assert "put" in pre_040_spelling("move mug 1 to coffeemachine 1")
    for other in ("go to shelf 1", "take apple 2 from fridge 1", "open drawer 3", "look"):
        assert pre_040_spelling(other) == other
