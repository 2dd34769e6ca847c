"""Rule-based extraction on real ALFWorld-engine feedback (TextWorld PddlEnv + alfred.twl2)."""

from __future__ import annotations

import pytest

from smcplan.memory import KnowledgeGraph, extract_triplets

from ._data import records, step


def ex(index: int, action: str | None):
    return extract_triplets(step("alfworld", 0, index, action), action, env_kind="alfworld")


def test_intro_lists_the_receptacles_of_the_room():
    e = ex(0, None)
    assert set(e.as_tuples()) == {("agent", "at", "room")} | {
        (r, "in", "room") for r in ["cabinet 1", "countertop 1", "drawer 1", "fridge 1",
                                    "microwave 1", "sidetable 1", "sinkbasin 1"]}
    assert not e.closed


def test_arriving_at_a_surface_lists_and_closes_its_contents():
    e = ex(2, "go to countertop 1")
    assert set(e.as_tuples()) == {
        ("agent", "at", "countertop 1"), ("agent", "visited", "countertop 1"),
        ("apple 1", "on", "countertop 1"), ("knife 1", "on", "countertop 1")}
    assert e.closed == {"countertop 1"}


def test_arriving_at_a_closed_receptacle_gives_its_state_only():
    e = ex(7, "go to drawer 1")
    assert set(e.as_tuples()) == {("agent", "at", "drawer 1"), ("agent", "visited", "drawer 1"),
                                  ("drawer 1", "is", "closed")}
    assert not e.closed


@pytest.mark.parametrize(("index", "action", "want", "closed"), [
    (8, "open drawer 1", {("agent", "opened", "drawer 1"), ("drawer 1", "is", "open")}, {"drawer 1"}),
    (11, "open fridge 1", {("agent", "opened", "fridge 1"), ("fridge 1", "is", "open"),
                           ("egg 1", "in", "fridge 1")}, {"fridge 1"}),
    (9, "close drawer 1", {("drawer 1", "is", "closed"), ("agent", "closed", "drawer 1")}, set()),
    (4, "take apple 1 from countertop 1", {("apple 1", "in", "inventory"),
                                           ("agent", "picked up", "apple 1")}, set()),
    (14, "move apple 1 to fridge 1", {("apple 1", "in", "fridge 1"), ("agent", "put", "apple 1")},
     set()),
    (5, "inventory", {("apple 1", "in", "inventory")}, {"inventory"}),
    (28, "inventory", set(), {"inventory"}),
    (12, "cool apple 1 with fridge 1", {("apple 1", "is", "cold"), ("agent", "cooled", "apple 1")},
     set()),
    (17, "heat egg 1 with microwave 1", {("egg 1", "is", "hot"), ("agent", "heated", "egg 1")},
     set()),
    (19, "clean egg 1 with sinkbasin 1", {("egg 1", "is", "clean"), ("agent", "cleaned", "egg 1")},
     set()),
    (20, "examine egg 1", {("egg 1", "is", "hot"), ("egg 1", "is", "clean")}, set()),
    (13, "examine apple 1", {("apple 1", "is", "cold")}, set()),
    (6, "examine apple 1", set(), set()),
    (25, "use desklamp 1", {("desklamp 1", "is", "on"), ("agent", "turned on", "desklamp 1")},
     set()),
    (27, "look", {("agent", "at", "sidetable 1")}, set()),
    (29, "jump", set(), set()),
])
def test_feedback_sentences(index, action, want, closed):
    e = ex(index, action)
    assert set(e.as_tuples()) == want
    assert e.closed == closed


def test_old_loc_format_takes_the_receptacle_of_the_next_sentence():
    # Earlier ALFWorld builds said "You arrive at loc 5." before describing the receptacle.
    e = extract_triplets("You arrive at loc 5. The drawer 1 is closed.", env_kind="alfworld")
    assert ("agent", "at", "drawer 1") in e and ("drawer 1", "is", "closed") in e


def test_replaying_the_episode_gives_the_true_final_state():
    kg = KnowledgeGraph()
    for i, s in enumerate(records("alfworld")[0]["steps"]):
        kg.observe(s["observation"], s["action"], env_kind="alfworld", step=i)
        kg.validate()
    assert kg.location_of("apple 1") == "fridge 1"
    assert kg.location_of("egg 1") == "cabinet 1"
    assert kg.location_of("agent") == "sidetable 1"
    assert kg.contents("inventory") == []  # "You are not carrying anything."
    assert kg.contents("cabinet 1") == ["mug 1", "egg 1"]
    assert ("drawer 1", "is", "closed") in kg and ("fridge 1", "is", "open") in kg
    assert {t.object for t in kg.query("egg 1", "is")} == {"hot", "clean"}
