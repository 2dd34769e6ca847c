"""Rule-based extraction on real ScienceWorld observations (boil, find-living-thing, melt)."""

from __future__ import annotations

import pytest

from smcplan.memory import KnowledgeGraph, extract_triplets

from ._data import records, step

HALL_DOORS = ["art studio", "bedroom", "greenhouse", "kitchen", "living room", "workshop"]


def ex(record: int, index: int, action: str | None, location: str | None = None):
    return extract_triplets(step("scienceworld", record, index, action), action,
                            env_kind="scienceworld", location=location)


def test_hallway_with_doors():
    e = ex(0, 0, None)
    want = {("agent", "in", "hallway"), ("air", "in", "hallway"), ("picture", "in", "hallway")}
    for room in HALL_DOORS:
        want.add(("hallway", "connects to", room))
        a, b = sorted(("hallway", room))
        want.add((f"door between {a} and {b}", "is", "closed"))
    assert set(e.as_tuples()) == want
    assert e.closed == {"hallway"}


def test_kitchen_nested_containers_states_and_readings():
    e = ex(0, 7, "look around")  # after opening the cupboard
    got = set(e.as_tuples())
    assert {
        ("counter", "in", "kitchen"),
        ("bowl", "on", "counter"),
        ("red apple", "in", "bowl"),
        ("banana", "in", "bowl"),
        ("orange", "in", "bowl"),
        ("potato", "in", "bowl"),
        ("glass cup", "on", "table"),
        # ScienceWorld names two drawers alike; both facts are read, the graph keeps the last.
        ("drawer", "on", "counter"),
        ("drawer", "in", "cupboard"),
        ("cupboard", "is", "open"),
        ("ceramic cup", "in", "cupboard"),
        ("tin cup", "in", "cupboard"),
        ("freezer", "is", "closed"),
        ("fridge", "is", "closed"),
        ("sodium chloride", "in", "glass jar"),
        ("oven", "is", "off"),
        ("oven", "is", "closed"),
        ("sink", "is", "off"),
        ("stopwatch", "is", "off"),
        ("stove", "is", "off"),
        ("kitchen", "connects to", "hallway"),
        ("door between hallway and kitchen", "is", "open"),
        ("door between kitchen and outside", "is", "closed"),
    } <= got
    # listed contents are complete: nothing (more) in the sink, on the chair, in the cups
    assert {"kitchen", "counter", "bowl", "cupboard", "sink", "chair", "stove", "table",
            "ceramic cup", "tin cup", "glass cup", "glass jar"} == e.closed
    reading = ex(0, 3, "look around")
    assert ("thermometer", "reads", "10 degrees celsius") in reading


def test_outside_location():
    e = ex(1, 5, "look around")
    got = set(e.as_tuples())
    assert {("agent", "in", "outside"), ("axe", "in", "outside"),
            ("blue jay egg", "in", "outside"), ("water", "in", "fountain"),
            ("outside", "connects to", "greenhouse"),
            ("door between greenhouse and outside", "is", "open")} <= got
    assert {"outside", "fire pit", "fountain"} == e.closed


@pytest.mark.parametrize(
    ("record", "index", "action", "want"),
    [
        (0, 2, "go to kitchen", {("agent", "in", "kitchen"), ("agent", "visited", "kitchen")}),
        (
            0,
            4,
            "pick up thermometer",
            {("thermometer", "in", "inventory"), ("agent", "moved", "thermometer")},
        ),
        (
            0,
            8,
            "move metal pot to sink",
            {("metal pot", "in", "sink"), ("agent", "moved", "metal pot")},
        ),
        (0, 5, "open cupboard", {("cupboard", "is", "open"), ("agent", "opened", "cupboard")}),
        (0, 9, "activate sink", {("sink", "is", "on"), ("agent", "activated", "sink")}),
        (0, 10, "deactivate sink", {("sink", "is", "off"), ("agent", "deactivated", "sink")}),
        (0, 12, "focus on substance in metal pot", {("agent", "focused on", "water")}),
        (
            3,
            4,
            "look at fridge",
            {
                ("fridge", "is", "open"),
                ("wood cup", "in", "fridge"),
                ("orange juice", "in", "wood cup"),
            },
        ),
        (3, 7, "look at fridge", {("fridge", "is", "closed")}),
        (
            3,
            8,
            "look at counter",
            {
                ("bowl", "on", "counter"),
                ("red apple", "in", "bowl"),
                ("banana", "in", "bowl"),
                ("orange", "in", "bowl"),
                ("potato", "in", "bowl"),
                ("drawer", "on", "counter"),
            },
        ),
    ],
)
def test_feedback_sentences(record, index, action, want):
    assert set(ex(record, index, action).as_tuples()) == want


def test_inventory_with_contents_and_readings():
    e = extract_triplets(records("scienceworld")[0]["inventory"], "inventory", env_kind="sciworld")
    assert set(e.as_tuples()) == {
        ("metal pot", "in", "inventory"), ("water", "in", "metal pot"),
        ("orange", "in", "inventory"), ("thermometer", "in", "inventory"),
        ("thermometer", "reads", "10 degrees celsius")}
    assert e.closed == {"inventory", "metal pot"}


def test_the_door_is_named_by_the_room_and_the_action():
    e = ex(0, 1, "open door to kitchen", location="hallway")
    assert set(e.as_tuples()) == {("door between hallway and kitchen", "is", "open"),
                                  ("agent", "opened", "door between hallway and kitchen")}
    assert not ex(0, 1, "open door to kitchen").triplets  # which door is unknown


def test_replaying_boil_tracks_the_pot_and_the_door():
    kg = KnowledgeGraph()
    for i, s in enumerate(records("scienceworld")[0]["steps"]):
        kg.observe(s["observation"], s["action"], env_kind="scienceworld", step=i)
        kg.validate()
    assert kg.location_of("agent") == "kitchen"
    assert kg.location_of("metal pot") == "inventory"
    assert kg.location_of("thermometer") == "inventory"
    assert ("door between hallway and kitchen", "is", "open") in kg
    assert ("sink", "is", "off") in kg
    assert ("agent", "focused on", "water") in kg
