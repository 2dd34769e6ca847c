"""Map notes for the critic: by hand on a built map, and along a real TextWorldExpress gold path."""

from __future__ import annotations

import re

import pytest

from smcplan.agents.map_notes import MapNotes, action_note, episode_maps
from smcplan.errors import InvalidArgumentError
from smcplan.planning.places import PlaceMap

OPPOSITE = {"north": "south", "south": "north", "east": "west", "west": "east"}


def _kitchen() -> PlaceMap:
    return PlaceMap(
        place="kitchen",
        visited=frozenset({"kitchen", "hallway"}),
        exits={("kitchen", "west"): "hallway", ("kitchen", "east"): "pantry"},
        doors={("kitchen", "north"): "closed", ("kitchen", "south"): "open"},
    )


def test_notes_by_hand():
    m = _kitchen()
    left = "closed doors left in the kitchen: to the north."
    assert action_note(m, "open door to north") == "The door to the north is closed; " + left
    assert action_note(m, "open door to south") == "The door to the south is already open; " + left
    assert action_note(m, "close door to south") == "The door to the south is open; " + left
    assert (
        action_note(m, "close door to north") == "The door to the north is already closed; " + left
    )
    assert action_note(m, "move north") == "The door to the north is closed; " + left
    assert action_note(m, "move west") == "It leads back to the hallway, visited before; " + left
    assert action_note(m, "Move  EAST") == "It leads to the pantry, not visited yet; " + left
    # a door open to the south, no exit known there: the map does not know where it leads
    assert action_note(m, "move south") == "Where the south leads is not known yet; " + left
    assert action_note(m, "take coin") == "Closed doors left in the kitchen: to the north."
    assert action_note(m, "look around", first_step=True) == ("No step has been taken yet; " + left)
    opened = PlaceMap(place="kitchen", doors={("kitchen", "north"): "open"})
    assert action_note(opened, "inventory") == "No closed door is left in the kitchen."
    assert action_note(PlaceMap(), "inventory") == ""
    assert action_note(PlaceMap(), "inventory", first_step=True) == "No step has been taken yet."


def test_notes_along_a_real_gold_path(coin_env):
    """TextWorldExpress coin, dev seed 10000, its own gold path: the map is read from the real
    observations only, and what the notes say must agree with what the game then does."""
    obs, info = coin_env.reset(10000)
    gold = list(coin_env.gold_actions())
    notes = MapNotes("twx:coin")
    notes.reset(obs)
    came_from: tuple[str, str] | None = None  # (room left, direction moved)
    checked = {"open": 0, "back": 0}
    for t, action in enumerate(gold):
        admissible = info["admissible_actions"]
        said = dict(zip(admissible, notes.notes(admissible), strict=True))
        assert all(n.startswith("No step has been taken yet") == (t == 0) for n in said.values())
        here = notes.map.place
        assert all(
            f" left in the {here}" in n or f"no closed door is left in the {here}" in n
            for n in said.values()
        )
        if action.startswith("open door to "):
            # the game's gold path opens closed doors only; the map read it from the room text
            assert "is closed" in said[action]
            checked["open"] += 1
        if action.startswith("move "):
            assert "is closed" not in said[action]  # the gold path never walks into a door
        if came_from is not None:
            back = f"move {OPPOSITE[came_from[1]]}"
            if back in said:
                assert said[back].startswith(f"It leads back to the {came_from[0]}, visited before")
                checked["back"] += 1
        before = notes.map.place
        obs, _, done, info = coin_env.step(action)
        notes.update(action, obs)
        if action.startswith("open door to "):
            again = notes.notes([action])[0]
            assert re.search(r"is already open", again), again
        came_from = (before, action.split()[-1]) if action.startswith("move ") else None
        if done:
            break
    assert info.get("won") and checked["open"] >= 1 and checked["back"] >= 1


def test_episode_maps_need_every_step_of_an_episode():
    step = {
        "episode": "e",
        "observation": "You are in the kitchen.",
        "action": "look around",
        "next_observation": "You are in the kitchen.",
    }
    maps = episode_maps([{**step, "t": 0}, {**step, "t": 1}])
    assert maps[("e", 0)].place == maps[("e", 1)].place == "kitchen"
    with pytest.raises(InvalidArgumentError, match="every step from t = 0"):
        episode_maps([{**step, "t": 0}, {**step, "t": 2}])
