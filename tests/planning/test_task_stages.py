"""The task twist's stages for every ALFWorld task type: the goal each template names (a
treatment's tool and state, a lamp, two objects), the stages read from the engine's own replies
along the expert's path, and the exact progress of hand-made steps."""

from __future__ import annotations

import pytest

from smcplan.games import TaskGoal, rules_for
from smcplan.planning.places import PlaceMap, cost_to_go, final_stage, read_step, stage
from smcplan.planning.twist_task import step_progress

pytest.importorskip("alfworld")
pytest.importorskip("textworld")
pytest.importorskip("fast_downward")

from smcplan.envs import make  # noqa: E402
from smcplan.envs.alfworld import TASK_TYPES  # noqa: E402
from smcplan.envs.alfworld_gen.expert import EXPERT_MAX_STEPS  # noqa: E402

ALFWORLD = rules_for("alfworld")

#: what each task type's goal carries beyond the object and the receptacle
EXPECTED = {
    "pick_and_place": (None, None, 1, True),
    "pick_clean_then_place": ("sinkbasin", "clean", 1, True),
    "pick_heat_then_place": ("microwave", "hot", 1, True),
    "pick_cool_then_place": ("fridge", "cold", 1, True),
    "look_at_obj_in_light": ("lamp", "on", 1, False),
    "pick_two_obj_and_place": (None, None, 2, True),
}


def test_every_template_phrasing_names_its_goal():
    parse = ALFWORLD.parse_goal
    assert parse("put some pillow on sofa") == TaskGoal("pillow", None, "sofa")
    assert parse("Your task is to: put a clean pot in cabinet.") == TaskGoal(
        "pot", None, "cabinet", None, "sinkbasin", "clean"
    )
    assert parse("clean some pot and put it in cabinet.") == parse("put a clean pot in cabinet")
    assert parse("heat some egg and put it in diningtable") == TaskGoal(
        "egg", None, "diningtable", None, "microwave", "hot"
    )
    assert parse("put a hot egg in diningtable") == parse("heat some egg and put it in diningtable")
    assert parse("put a cool bowl in microwave") == TaskGoal(
        "bowl", None, "microwave", None, "fridge", "cold"
    )
    assert parse("cool some bowl and put it in microwave") == parse("put a cool bowl in microwave")
    assert parse("look at keychain under the floorlamp.") == TaskGoal(
        "keychain", None, None, None, "floorlamp", "on"
    )
    assert parse("examine the pencil with the desklamp") == TaskGoal(
        "pencil", None, None, None, "desklamp", "on"
    )
    assert parse("put two cd in dresser") == TaskGoal("cd", None, "dresser", count=2)
    assert parse("find two tissuebox and put them in drawer.") == TaskGoal(
        "tissuebox", None, "drawer", count=2
    )
    assert parse("boil water") is None


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_the_stages_read_on_the_expert_path_reach_the_last_exactly_when_the_game_is_won(task_type):
    """On the engine's own replies along the expert's plan, the stage never goes back and reaches
    :func:`final_stage` at the action that wins, not before; every stage is passed."""
    env = make(f"alfworld:{task_type}", split="train", max_steps=EXPERT_MAX_STEPS)
    try:
        for seed in (0, 1, 2):
            observation, _ = env.reset(seed)
            goal = ALFWORLD.parse_goal(str(env.task))
            tool, treated, count, has_receptacle = EXPECTED[task_type]
            assert goal is not None and goal.count == count and goal.treated == treated
            assert (goal.receptacle is not None) == has_receptacle
            assert goal.tool == tool or (tool == "lamp" and goal.tool.endswith("lamp"))
            m = read_step(PlaceMap(), None, observation, ALFWORLD)
            stages, won = [stage(m, goal)], []
            for action in env.gold_actions():
                result = env.step(action)
                m = read_step(m, action, result.observation, ALFWORLD)
                stages.append(stage(m, goal))
                won.append(bool(result.info["won"]))
            assert stages == sorted(stages) and set(stages) == set(range(final_stage(goal) + 1))
            assert won[-1] and not any(won[:-1])
            assert stages.index(final_stage(goal)) == len(stages) - 1
    finally:
        env.close()


ROOM = (
    "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, "
    "a countertop 1, a shelf 1, a sidetable 1, and a sinkbasin 1."
)


def walk(task: str, steps: list[tuple[str, str]]) -> tuple[list[int], list[float]]:
    """The stages and the task twist's deltas of a hand-made path (from :data:`ROOM`)."""
    goal = ALFWORLD.parse_goal(task)
    m = read_step(PlaceMap(), None, ROOM, ALFWORLD)
    stages, deltas = [], []
    for action, reply in steps:
        after = read_step(m, action, reply, ALFWORLD)
        deltas.append(step_progress(m, after, goal, ALFWORLD))
        stages.append(stage(after, goal))
        m = after
    return stages, deltas


CLEAN_POT = "clean some pot and put it in cabinet."
#: find the pot, take it, carry it to the sink (stages 0, 1, 1)
TO_THE_SINK = [
    ("go to countertop 1", "You arrive at countertop 1. On the countertop 1, you see a pot 1."),
    ("take pot 1 from countertop 1", "You pick up the pot 1 from the countertop 1."),
    ("go to sinkbasin 1", "You arrive at sinkbasin 1. On the sinkbasin 1, you see nothing."),
]


def test_a_treatment_is_a_stage_of_its_own_and_a_closed_receptacle_costs_half_a_step():
    stages, deltas = walk(
        CLEAN_POT,
        [
            *TO_THE_SINK,
            ("clean pot 1 with sinkbasin 1", "You clean the pot 1 using the sinkbasin 1."),
            ("go to cabinet 1", "You arrive at cabinet 1. The cabinet 1 is closed."),
            (
                "open cabinet 1",
                "You open the cabinet 1. The cabinet 1 is open. In it, you see nothing.",
            ),
            ("move pot 1 to cabinet 1", "You move the pot 1 to the cabinet 1."),
        ],
    )
    assert stages == [0, 1, 1, 2, 2, 2, 3]
    # found the pot: 1/2 (1 - 0) + 1 (explored while searching) + 1 (its place became known);
    # took it: +1; to the sink: 1/2 (1 - 0); cleaned it: +1; to the closed cabinet, read on the
    # map after the step (the only cabinet is closed): 1/2 (3/2 - 1/2); opened it: 1/2 (1/2 - 0);
    # put the clean pot: +1
    assert deltas == [2.5, 1.0, 0.5, 1.0, 0.5, 0.25, 1.0]


def test_putting_the_object_down_and_taking_it_back_gains_nothing():
    stages, deltas = walk(
        CLEAN_POT,
        [
            *TO_THE_SINK,
            ("move pot 1 to sinkbasin 1", "You move the pot 1 to the sinkbasin 1."),
            ("take pot 1 from sinkbasin 1", "You pick up the pot 1 from the sinkbasin 1."),
        ],
    )
    assert stages == [0, 1, 1, 0, 1]
    assert deltas[3] == -1.0 and deltas[4] == 1.0  # the stage term telescopes


def test_looking_under_a_lamp_ends_when_the_lamp_is_on_with_the_object_held():
    stages, deltas = walk(
        "look at keychain under the desklamp.",
        [
            ("go to shelf 1", "You arrive at shelf 1. On the shelf 1, you see a keychain 3."),
            ("take keychain 3 from shelf 1", "You pick up the keychain 3 from the shelf 1."),
            (
                "go to sidetable 1",
                "You arrive at sidetable 1. On the sidetable 1, you see a desklamp 1.",
            ),
            ("use desklamp 1", "You turn on the desklamp 1."),
        ],
    )
    assert stages == [0, 1, 1, 2]
    # the lamp is unseen while the keychain is held: reaching it pays as the first find did
    # (1/2 (1 - 0) on the map after the step + 1 explored + 1 its place became known); turning it
    # on ends the goal: +1
    assert deltas == [2.5, 1.0, 2.5, 1.0]
    goal = ALFWORLD.parse_goal("look at keychain under the desklamp.")
    assert final_stage(goal) == 2


def test_two_objects_pass_the_stages_twice_and_the_second_search_skips_the_first():
    goal = ALFWORLD.parse_goal("put two cd in dresser.")
    room = (
        "You are in the middle of a room. Looking quickly around you, you see a shelf 1, "
        "a dresser 1."
    )
    m = read_step(PlaceMap(), None, room, ALFWORLD)
    path = [
        ("go to shelf 1", "You arrive at shelf 1. On the shelf 1, you see a cd 1, and a cd 2."),
        ("take cd 1 from shelf 1", "You pick up the cd 1 from the shelf 1."),
        ("go to dresser 1", "You arrive at dresser 1. On the dresser 1, you see nothing."),
        ("move cd 1 to dresser 1", "You move the cd 1 to the dresser 1."),
    ]
    stages = []
    for action, reply in path:
        m = read_step(m, action, reply, ALFWORLD)
        stages.append(stage(m, goal))
    assert stages == [0, 1, 1, 2] and final_stage(goal) == 4
    # the cd already put is not a target: the next one is on the shelf, one step away
    assert cost_to_go(m, goal, m.place) == (1.0, True)
