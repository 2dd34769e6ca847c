"""The task-aware twist (``progress="task"``): the place map, the goal parser and the exact
progress values of hand-made steps (TextWorldExpress and ALFWorld sentence templates)."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import numpy as np
import pytest

from smcplan.games import TaskGoal, parse_goal
from smcplan.games.twx import (
    ALREADY_CLOSED,
    ALREADY_OPEN,
    BLOCKED_REPLY,
    blocked_move,
    door_state_after,
    hides_only,
    imagined_reply,
    impossible_reveal,
    known_exit,
    known_reply,
    stays_put,
)
from smcplan.planning import PlanningError
from smcplan.planning.config import parse_progress
from smcplan.planning.outcome import Outcome
from smcplan.planning.places import (
    PlaceMap,
    cost_to_go,
    distances,
    explored,
    frontier,
    frontier_distance,
    read_step,
    stage,
    wasted,
)
from smcplan.planning.progress import Seen, make_progress
from smcplan.planning.seen import steps_read
from smcplan.planning.twist_task import TaskProgress, step_progress
from tests.tolerance import gamma

COIN_TASK = (
    "Your task is to search the environment and find the coin.  Once you find the coin, take it."
)
MAP_TASK = (
    "Your task is to take the coin that is located in the washroom, and put it into the box "
    "found in the vault. A map is provided, that you may find helpful."
)
KITCHEN = (
    "You are in the kitchen. In one part of the room you see a stove. \n"
    "To the North you see a closed patio door. To the West you see the living room. "
)
LIVING = "You are in the living room. You see a sofa. \nTo the East you see the kitchen. "
LIVING_COIN = (
    "You are in the living room. In one part of the room you see a coin. \n"
    "To the East you see the kitchen. "
)
VAULT = "You are in the vault. You also see a box, that is empty. \nTo the South you see the hall. "
MAP = (
    "The map reads:\n  The vault connects to the hall.\n  The hall connects to the washroom and "
    "vault.\n  The washroom connects to the hall.\n"
)


def test_the_goal_of_each_known_task_template_and_none_for_others():
    assert parse_goal(COIN_TASK) == TaskGoal("coin")
    assert parse_goal(MAP_TASK) == TaskGoal("coin", "washroom", "box", "vault")
    assert parse_goal("Your task is to: put a kettle in countertop.") == TaskGoal(
        "kettle", None, "countertop", None
    )
    assert parse_goal("put some spraybottle on toilet") == TaskGoal("spraybottle", None, "toilet")
    assert parse_goal("heat some egg and put it in diningtable.") == TaskGoal(
        "egg", None, "diningtable"
    )
    assert parse_goal("Your task is to boil water.") is None


def test_the_map_reads_places_links_doors_revealed_rooms_and_sightings():
    m = read_step(PlaceMap(), None, KITCHEN, "twx")
    assert m.place == "kitchen" and m.visited == {"kitchen"}
    assert m.links == {frozenset(("kitchen", "living room"))}
    assert m.doors == {("kitchen", "north"): "closed"}
    assert m.places == {"kitchen", "living room"}
    # unvisited living room (cost 0 beyond the path) and the closed north door (open + move)
    assert frontier(m) == [("living room", 0.0), ("kitchen", 2.0)]
    assert frontier_distance(m, "kitchen") == 1.0
    m2 = read_step(m, "open door to north", "You open the patio door, revealing the backyard. ")
    assert m2.exits[("kitchen", "north")] == "backyard" and m2.doors[("kitchen", "north")] == "open"
    assert frontier(m2) == [("backyard", 0.0), ("living room", 0.0)]
    m3 = read_step(m2, "move west", LIVING_COIN, "twx")
    assert m3.place == "living room" and m3.where["coin"] == "living room"
    assert distances(m3, "living room") == {"living room": 0.0, "kitchen": 1.0, "backyard": 2.0}
    m4 = read_step(m3, "take coin", "You take the coin.", "twx")
    assert m4.held() == {"coin"}


def test_a_door_last_seen_closed_costs_one_more_step():
    m = read_step(PlaceMap(), None, KITCHEN, "twx")
    m = read_step(m, "open door to north", "You open the patio door, revealing the backyard. ")
    assert distances(m, "kitchen")["backyard"] == 1.0
    shut = read_step(
        m,
        "close door to north",
        "You are in the kitchen. \nTo the North you see a closed patio door. ",
    )
    assert distances(shut, "kitchen")["backyard"] == 2.0


@pytest.mark.parametrize(
    ("action", "reply", "state"),
    [
        ("close door to north", "You close the plain door to the pantry. ", ("north", "closed")),
        ("close door to east", "That is already closed. ", ("east", "closed")),
        ("open door to south", "That is already open. ", ("south", "open")),
        ("move west", "You can't move there, the door is closed. ", ("west", "closed")),
        ("Move  West", "You can't move there, the door is closed.", ("west", "closed")),
        ("open door to north", "You open the plain door, revealing the pantry. ", None),
        ("close door to north", "You can't see any such thing. ", None),
        ("move west", "You are in the living room. ", None),
        ("look around", "You can't move there, the door is closed. ", None),
        (None, "You close the plain door to the pantry. ", None),
    ],
)
def test_the_door_state_a_reply_states(action, reply, state):
    assert door_state_after(action, reply) == state


def test_a_closed_door_and_a_move_into_it_close_the_door_on_the_map():
    """Regression (twx:coin test seed 20000, an RLAW run): the agent closed the north door and
    then moved north 14 times; the map still had the door open."""
    m = read_step(PlaceMap(), None, KITCHEN, "twx")
    m = read_step(m, "open door to north", "You open the patio door, revealing the backyard. ")
    assert m.doors[("kitchen", "north")] == "open"
    shut = read_step(m, "close door to north", "You close the patio door to the backyard. ", "twx")
    assert shut.doors[("kitchen", "north")] == "closed"
    assert shut.exits[("kitchen", "north")] == "backyard"  # where it leads is still known
    assert distances(shut, "kitchen")["backyard"] == 2.0  # open, then move
    again = read_step(shut, "open door to north", "That is already open. ", "twx")
    assert again.doors[("kitchen", "north")] == "open"
    bumped = read_step(m, "move north", "You can't move there, the door is closed. ", "twx")
    assert bumped.place == "kitchen" and bumped.doors[("kitchen", "north")] == "closed"


def test_exact_progress_of_hand_made_coin_steps():
    goal = parse_goal(COIN_TASK)
    m = read_step(PlaceMap(), None, KITCHEN, "twx")
    # a wasted step: nothing moves, nothing learned
    look = read_step(m, "inventory", "Your inventory is currently empty.", "twx")
    assert wasted(m, look) and step_progress(m, look, goal) == -0.25
    # entering the unexplored living room while searching: D(kitchen) on the new map is 2
    # (the north door), D(living room) = 3, so 1/2 (2 - 3) + 1 (new place)
    living = read_step(m, "move west", LIVING, "twx")
    assert cost_to_go(living, goal, "kitchen") == (2.0, False)
    assert cost_to_go(living, goal, "living room") == (3.0, False)
    assert step_progress(m, living, goal) == pytest.approx(0.5)
    # going back toward the frontier: 1/2 (3 - 2)
    back = read_step(living, "move east", KITCHEN, "twx")
    assert step_progress(living, back, goal) == pytest.approx(0.5)
    # the coin is seen on entering: 1/2 (1 - 0) + 1 (new place) + 1 (target connected)
    found = read_step(m, "move west", LIVING_COIN, "twx")
    assert cost_to_go(found, goal, "living room") == (0.0, True)
    assert step_progress(m, found, goal) == pytest.approx(2.5)
    # taking it: the stage advances (no shaping: the target changed)
    took = read_step(found, "take coin", "You take the coin.", "twx")
    assert stage(found, goal) == 0 and stage(took, goal) == 1
    assert step_progress(found, took, goal) == 1.0


def test_reading_the_map_connects_the_task_named_places():
    goal = parse_goal(MAP_TASK)
    m = read_step(PlaceMap(), None, VAULT, "twx")
    assert cost_to_go(m, goal, "vault") == (1.0, False)  # the hall, unexplored
    read = read_step(m, "read map", MAP, "twx")
    assert cost_to_go(read, goal, "vault") == (2.0, True)
    # 1/2 (1 - 2) + 1 (the washroom is now connected)
    assert step_progress(m, read, goal) == pytest.approx(0.5)
    # holding the coin, the target is the box's place (the vault)
    held = read_step(read, "take coin", "You take the coin.", "twx")
    held = read_step(held, "move north", "You are in the hall. \nTo the North you see the vault. ")
    assert stage(held, goal) == 1 and cost_to_go(held, goal, "hall") == (1.0, True)
    put = read_step(
        read_step(held, "move north", VAULT, "twx"),
        "put coin in box",
        "You put the coin in the box.",
    )
    assert stage(put, goal) == 2


def test_alfworld_receptacles_are_one_step_apart_and_closed_ones_are_frontier():
    goal = parse_goal("put a kettle in countertop")
    start = (
        "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, "
        "a countertop 1, and a fridge 1.\n\nYour task is to: put a kettle in countertop."
    )
    m = read_step(PlaceMap(), None, start, "alfworld")
    assert m.complete and m.places == {"cabinet 1", "countertop 1", "fridge 1"}
    at = read_step(
        m, "go to cabinet 1", "You arrive at cabinet 1. The cabinet 1 is closed.", "alfworld"
    )
    # arriving at a closed receptacle explores nothing yet: 1/2 (1 - 1) + 0
    assert not explored(m, at) and step_progress(m, at, goal) == 0.0
    assert ("cabinet 1", 1.0) in frontier(at)
    opened = read_step(
        at,
        "open cabinet 1",
        "You open the cabinet 1. The cabinet 1 is open. In it, you see a kettle 1.",
        "alfworld",
    )
    assert cost_to_go(opened, goal, "cabinet 1") == (0.0, True)
    # 1/2 (1 - 0) + 1 (explored: opened the closed receptacle) + 1 (the kettle's place is known)
    assert explored(at, opened)
    assert step_progress(at, opened, goal) == pytest.approx(2.5)
    empty = read_step(
        at,
        "open cabinet 1",
        "You open the cabinet 1. The cabinet 1 is open. In it, you see nothing.",
        "alfworld",
    )
    # still searching: 1/2 (1 - 1) (the next unvisited receptacle is one step away) + 1
    assert step_progress(at, empty, goal) == pytest.approx(1.0)
    took = read_step(
        opened,
        "take kettle 1 from cabinet 1",
        "You pick up the kettle 1 from the cabinet 1.",
        "alfworld",
    )
    assert stage(took, goal) == 1 and cost_to_go(took, goal, "cabinet 1") == (1.0, True)
    placed = read_step(
        took,
        "move kettle 1 to countertop 1",
        "You move the kettle 1 to the countertop 1.",
        "alfworld",
    )
    assert stage(placed, goal) == 2


def _particle(steps, done_at=None):
    outcomes = [Outcome(done=(i == done_at)) for i in range(len(steps))]
    return SimpleNamespace(steps=steps, outcomes=outcomes)


def test_the_twist_sums_its_deltas_from_the_episode_map_and_stops_after_the_end():
    seen = Seen().after(KITCHEN, None, {}, "twx")
    twist = TaskProgress(COIN_TASK, seen.layout, "twx")
    a = _particle([("move west", LIVING_COIN), ("take coin", "You take the coin.")], done_at=1)
    b = _particle([("inventory", "Your inventory is currently empty."), ("move west", LIVING)])
    assert twist.deltas(a) == pytest.approx([2.5, 1.0])
    assert twist.deltas(b) == pytest.approx([-0.25, 0.5])
    score = twist(jax.random.key(0), [a, b], 2, 3)
    np.testing.assert_allclose(np.asarray(score.delta), [1.0, 0.5])
    np.testing.assert_allclose(np.asarray(score.log_psi), [3.5, 0.25])
    done = _particle([("take coin", "You take the coin."), ("look around", KITCHEN)], done_at=0)
    assert twist.deltas(done)[1] == 0.0


def test_task_is_a_progress_name_and_sums_with_the_others():
    assert parse_progress("env+task") == ("env", "task")
    twist = make_progress("env+task", task=COIN_TASK, seen=Seen().after(KITCHEN, None, {}, "twx"))
    assert twist.__name__ == "env+task"
    with pytest.raises(
        PlanningError, match="valid: lm, env, rlvmr, novelty, untried, task, learned"
    ):
        parse_progress("goal")


def test_carrying_a_thing_the_task_does_not_name_is_wasted_and_the_goal_object_is_not():
    goal = parse_goal(MAP_TASK)
    m = read_step(
        PlaceMap(),
        None,
        VAULT,
        "twx",
        triplets=[("agent", "in", "vault"), ("shoes", "in", "vault"), ("coin", "in", "vault")],
    )
    shoes = read_step(m, "take shoes", "You take the shoes.", "twx")
    assert shoes.where["shoes"] == "inventory" and wasted(m, shoes, goal)
    assert step_progress(m, shoes, goal) == -0.75  # wasted, and a detour (hands full)
    coin = read_step(m, "take coin", "You take the coin.", "twx")
    assert not wasted(m, coin, goal) and step_progress(m, coin, goal) == 1.0
    # a thing seen for the first time is not wasted
    seen = read_step(
        m,
        "look around",
        "You are in the vault.",
        "twx",
        triplets=[("agent", "in", "vault"), ("pen", "in", "vault")],
    )
    assert not wasted(m, seen, goal)


@pytest.mark.parametrize(
    ("action", "stays"),
    [
        ("look around", True),
        ("look", True),
        ("inventory", True),
        ("examine fridge 1", True),
        ("open door to north", True),
        ("Close door to south ", True),
        ("move west", False),
        ("go to fridge 1", False),
        ("take coin", False),
        (None, False),
    ],
)
def test_only_the_actions_that_never_move_stay_put(action, stays):
    assert stays_put(action) is stays


def test_an_imagined_reply_to_look_around_naming_another_place_moves_nobody():
    """A world model's slip ("You are in the living room." after ``look around`` in the
    kitchen) keeps the agent in the kitchen, on the map and in Seen, and earns no novelty; the
    same reply to a move does move it."""
    seen = Seen().after(KITCHEN, None, {}, "twx")
    for action, place in (("look around", "kitchen"), ("move west", "living room")):
        m = read_step(seen.layout, action, LIVING, "twx")
        after = seen.after(LIVING, action, {}, "twx")
        assert m.place == place and after.place == place
        assert (place in m.visited) and (("living room" in after.places) is (place != "kitchen"))
    novelty = make_progress("novelty", seen=seen, env_kind="twx")
    look = SimpleNamespace(steps=(("look around", LIVING),), outcomes=())
    move = SimpleNamespace(steps=(("move west", LIVING),), outcomes=())
    score = novelty(jax.random.key(0), [look, move], 1, 1)
    assert float(score.delta[0]) < float(score.delta[1])


def test_closing_a_door_names_nothing_new_and_opening_one_does():
    seen = Seen().after(KITCHEN, None, {}, "twx")
    novelty = make_progress("novelty", seen=seen, env_kind="twx")
    close = SimpleNamespace(
        steps=(("close door to north", "You close the patio door to the backyard. "),),
        outcomes=(),
    )
    opened = SimpleNamespace(
        steps=(("open door to north", "You open the patio door, revealing the backyard. "),),
        outcomes=(),
    )
    assert hides_only("close door to north") and not hides_only("open door to north")
    delta = np.asarray(novelty(jax.random.key(0), [close, opened], 1, 1).delta)
    stay = 0.5 / np.sqrt(2.0)  # the count term of one more step in the kitchen, no new entity
    # float32 deltas: a sqrt, a division, a product and an add, each rounded once
    np.testing.assert_allclose(delta, [stay, stay + 0.5], rtol=gamma(4))


def test_the_map_overrides_an_imagined_room_behind_a_known_exit():
    """Living room, then kitchen (whose West is the living room): an imagined "You are in the
    corridor." after ``move west`` reads as the living room, visited once, on the map, in the
    twists' reads and in novelty; the same reply behind the door to the North, which the map
    does not know (open here: a closed one fails, the next test), stays a new place.  Opening a
    door onto a known room names only that room."""
    kitchen = KITCHEN.replace("closed patio door", "open patio door")
    seen = Seen().after(LIVING, None, {}, "twx").after(kitchen, "move east", {}, "twx")
    assert seen.layout.doors[("kitchen", "north")] == "open"
    corridor = "You are in the corridor. "
    assert known_exit(seen.layout, "kitchen", "move west") == "living room"
    assert known_exit(seen.layout, "kitchen", "move north") is None
    assert known_exit(seen.layout, None, "move west") is None
    assert read_step(seen.layout, "move west", corridor, "twx").place == "living room"
    assert read_step(seen.layout, "move north", corridor, "twx").place == "corridor"
    west = SimpleNamespace(steps=(("move west", corridor),), outcomes=())
    north = SimpleNamespace(steps=(("move north", corridor),), outcomes=())
    assert steps_read(west, "twx", seen.layout, seen.place) == [("living room", {"living room"})]
    assert steps_read(west, "twx") == [("corridor", {"corridor"})]
    door = SimpleNamespace(
        steps=(("open door to west", "You open the door, revealing the backyard. "),), outcomes=()
    )
    assert steps_read(door, "twx", seen.layout, seen.place) == [(None, {"door", "living room"})]
    novelty = make_progress("novelty", seen=seen, env_kind="twx")
    delta = np.asarray(novelty(jax.random.key(0), [west, north], 1, 1).delta)
    # west: the living room, one step there, no new entity; north: a new place and entity
    # (float32: a sqrt, a division, a product and an add, each rounded once)
    np.testing.assert_allclose(delta, [0.5 / np.sqrt(2.0), 1.0], rtol=gamma(4))


def test_an_imagined_move_into_a_door_the_map_knows_closed_fails():
    """The kitchen's North is a closed patio door: an imagined "You are in the backyard." after
    ``move north`` reads as the game's failure reply (the agent stays, the step is wasted:
    exactly -1/4) in the task twist and in the twists' reads, while a real reply is read as it
    is; once the particle itself opened the door the move goes through."""
    seen = Seen().after(KITCHEN, None, {}, "twx")
    assert seen.layout.doors[("kitchen", "north")] == "closed"
    assert blocked_move(seen.layout, "kitchen", "move north")
    assert blocked_move(seen.layout, "kitchen", "Go  North")
    assert not blocked_move(seen.layout, "kitchen", "move west")  # no door
    assert not blocked_move(seen.layout, None, "move north")
    assert not blocked_move(seen.layout, "kitchen", "open door to north")
    backyard = "You are in the backyard. "
    imagined = read_step(seen.layout, "move north", backyard, "twx", imagined=True)
    assert imagined == read_step(seen.layout, "move north", BLOCKED_REPLY, "twx")
    assert imagined.place == "kitchen" and "backyard" not in imagined.places
    assert read_step(seen.layout, "move north", backyard, "twx").place == "backyard"
    bump = SimpleNamespace(steps=(("move north", backyard),), outcomes=())
    assert steps_read(bump, "twx", seen.layout, "kitchen") == [
        steps_read(SimpleNamespace(steps=(("move north", BLOCKED_REPLY),)), "twx")[0]
    ]
    assert steps_read(bump, "twx")[0][0] == "backyard"  # no map, no rule
    opened = "You open the patio door, revealing the backyard. "
    through = SimpleNamespace(
        steps=(("open door to north", opened), ("move north", backyard)), outcomes=()
    )
    assert steps_read(through, "twx", seen.layout, "kitchen")[1][0] == "backyard"
    twist = TaskProgress(COIN_TASK, seen.layout, "twx")
    # the same place, nothing learned: wasted (-1/4), no cost change, no exploring
    assert twist.deltas(bump) == [-0.25]
    assert twist.deltas(through)[1] > 0.0  # entering the unvisited backyard explores


def test_an_open_door_whose_other_side_is_unknown_is_frontier_one_step_away():
    """A world model's "That is already open." for the kitchen's closed patio door (the real
    reply names the backyard) leaves the door open and its other side unknown: one step from
    the frontier, so the task twist scores the imagined open like the real one (+1/2: cost 2
    to 1) and not as losing the only door left."""
    kitchen = Seen().after(LIVING, None, {}, "twx").after(KITCHEN, "move east", {}, "twx").layout
    assert frontier(kitchen) == [("kitchen", 2.0)]  # the living room is visited
    slip = read_step(kitchen, "open door to north", "That is already open. ", "twx")
    assert slip.doors[("kitchen", "north")] == "open" and ("kitchen", "north") not in slip.exits
    assert frontier(slip) == [("kitchen", 1.0)]
    real = read_step(kitchen, "open door to north", "You open the patio door, revealing the yard. ")
    assert frontier(real) == [("yard", 0.0)]
    assert frontier_distance(slip, "kitchen") == frontier_distance(real, "kitchen") == 1.0
    goal = parse_goal(COIN_TASK)
    assert step_progress(kitchen, slip, goal) == step_progress(kitchen, real, goal) == 0.5


def _kitchen_door_opened() -> Seen:
    """The living room, then the kitchen, whose closed patio door to the North the agent opened
    onto the backyard (real replies)."""
    seen = Seen().after(LIVING, None, {}, "twx").after(KITCHEN, "move east", {}, "twx")
    return seen.after("You open the patio door, revealing the backyard. ", "open door to north", {})


def test_the_reply_the_map_decides_for_moves_and_doors():
    kitchen = Seen().after(KITCHEN, None, {}, "twx").layout
    opened = _kitchen_door_opened().layout
    assert known_reply(kitchen.doors, kitchen.exits, "kitchen", "move north") == BLOCKED_REPLY
    assert known_reply(kitchen.doors, kitchen.exits, "kitchen", "Move  West") == (
        "You are in the living room."
    )
    assert known_reply(kitchen.doors, kitchen.exits, "kitchen", "move south") is None  # no exit
    assert known_reply(kitchen.doors, kitchen.exits, "kitchen", "open door to north") is None
    assert known_reply(kitchen.doors, kitchen.exits, "kitchen", "close door to north") == (
        ALREADY_CLOSED
    )
    assert known_reply(opened.doors, opened.exits, "kitchen", "move north") == (
        "You are in the backyard."
    )
    assert known_reply(opened.doors, opened.exits, "kitchen", "open door to north") == ALREADY_OPEN
    assert known_reply(opened.doors, opened.exits, "kitchen", "close door to north") == (
        "You close the door to the backyard."
    )
    closed = read_step(opened, "close door to north", "You close the patio door to the backyard.")
    assert closed.doors[("kitchen", "north")] == "closed"
    assert known_reply(closed.doors, closed.exits, "kitchen", "open door to north") == (
        "You open the door, revealing the backyard."
    )
    for action in ("look around", "inventory", "take coin"):
        assert known_reply(opened.doors, opened.exits, "kitchen", action) is None
    assert known_reply(opened.doors, opened.exits, None, "move north") is None


def test_an_imagined_reply_that_tells_another_event_than_the_map_reads_as_the_map_s():
    """Read on lost twx:coin dev episodes: "You are in the corridor." for a move out of the
    corridor through a known exit (read as staying: a wasted step, tied with every other move),
    and "You open the wood door to the laundry room." for a door already open (read as
    opening it: the agent opened open doors again)."""
    m = _kitchen_door_opened().layout
    d, e = m.doors, m.exits
    stay = "You are in the kitchen. "
    backyard = "You are in the backyard."
    assert imagined_reply(d, e, "kitchen", "move north", stay) == backyard
    assert imagined_reply(d, e, "kitchen", "move north", BLOCKED_REPLY) == backyard
    # a reply that already moves the agent is kept, with what else it says
    there = "You are in the garden. In one part of the room you see a coin. "
    assert imagined_reply(d, e, "kitchen", "move north", there) == there
    again = "You open the wood door to the laundry room. "
    assert imagined_reply(d, e, "kitchen", "open door to north", again) == ALREADY_OPEN
    shut = "You close the patio door to the backyard. "
    assert imagined_reply(d, e, "kitchen", "close door to north", shut) == shut
    assert imagined_reply(d, e, "kitchen", "close door to north", ALREADY_CLOSED) == (
        "You close the door to the backyard."
    )
    assert imagined_reply(d, e, "kitchen", "look around", stay) == stay  # the map decides nothing
    # the twist reads the map's event: the move reaches the backyard, opening again is wasted
    assert read_step(m, "move north", stay, "twx", imagined=True) == read_step(
        m, "move north", "You are in the backyard.", "twx"
    )
    assert read_step(m, "move north", stay, "twx").place == "kitchen"  # a real reply as it is
    twist = TaskProgress(COIN_TASK, m, "twx")
    again_step = SimpleNamespace(steps=(("open door to north", again),), outcomes=())
    assert twist.deltas(again_step) == [-0.25]  # the same place, nothing learned
    move = SimpleNamespace(steps=(("move north", stay),), outcomes=())
    # entering the unvisited backyard explores (+1); the imagined reply names no exit of it, so
    # the map after the step has no frontier left and no cost term
    assert twist.deltas(move) == [1.0]
    assert steps_read(move, "twx", m, "kitchen") == [("backyard", {"backyard"})]


def test_an_imagined_reveal_of_a_room_that_cannot_be_behind_the_door_opens_onto_the_unknown():
    """A door never opens onto the room it is in, nor onto a room the map has behind another
    exit of the same room: such an imagined reveal reads as a door opened onto an unknown room
    (frontier at extra cost 1, +1/2 as the real reply of a new room would score), while a real
    reply is read as it is."""
    kitchen = Seen().after(LIVING, None, {}, "twx").after(KITCHEN, "move east", {}, "twx").layout
    assert impossible_reveal(kitchen, "kitchen", "north", "kitchen")
    assert impossible_reveal(kitchen, "kitchen", "north", "living room")  # it is to the West
    assert not impossible_reveal(kitchen, "kitchen", "north", "backyard")
    assert not impossible_reveal(kitchen, "kitchen", "west", "living room")
    goal = parse_goal(COIN_TASK)
    for room in ("kitchen", "living room"):
        reply = f"You open the patio door, revealing the {room}. "
        slip = read_step(kitchen, "open door to north", reply, "twx", imagined=True)
        assert slip.doors[("kitchen", "north")] == "open"
        assert ("kitchen", "north") not in slip.exits
        assert frontier(slip) == [("kitchen", 1.0)]
        assert step_progress(kitchen, slip, goal) == 0.5
        real = read_step(kitchen, "open door to north", reply, "twx")
        assert real.exits[("kitchen", "north")] == room
