"""Retrieval tau = R(G, task, k): task entities first, k-hop bound, recency, a bounded list."""

from __future__ import annotations

import pytest

from smcplan.memory import KnowledgeGraph, Triplet, format_prompt, mentioned_entities


def kitchen() -> KnowledgeGraph:
    kg = KnowledgeGraph()
    kg.update([("agent", "at", "sidetable 1"), ("desklamp 1", "on", "sidetable 1"),
               ("sidetable 1", "in", "room")], step=1)
    kg.update([("apple 1", "on", "countertop 1"), ("knife 1", "on", "countertop 1"),
               ("countertop 1", "in", "room"), ("fridge 1", "is", "closed"),
               ("fridge 1", "in", "room"), ("egg 1", "in", "fridge 1")], step=2)
    kg.update([("mug 1", "in", "cabinet 1"), ("cabinet 1", "is", "open"),
               ("cabinet 1", "in", "room")], step=3)
    return kg


def test_task_relevant_facts_come_first():
    kg = kitchen()
    got = kg.retrieve("put a cool apple in fridge.", k=1, limit=50)
    first = set(got[:4])
    # Every fact touching the task's entities (apple 1, fridge 1) precedes everything else.
    touching = {t for t in kg if {t.subject, t.object} & {"apple 1", "fridge 1"}}
    assert set(got[: len(touching)]) == touching
    assert Triplet("apple 1", "on", "countertop 1") in first
    assert Triplet("fridge 1", "is", "closed") in first
    # The agent's surroundings (always-seeded) come after the task's.
    assert got.index(Triplet("agent", "at", "sidetable 1")) > got.index(
        Triplet("egg 1", "in", "fridge 1")
    )


def test_k_bounds_the_neighbourhood():
    kg = kitchen()
    zero = kg.retrieve("heat the egg", k=0, always=())
    assert set(zero) == {Triplet("egg 1", "in", "fridge 1")}
    one = set(kg.retrieve("heat the egg", k=1, always=()))
    assert {Triplet("fridge 1", "is", "closed"), Triplet("fridge 1", "in", "room")} <= one
    assert Triplet("apple 1", "on", "countertop 1") not in one
    two = set(kg.retrieve("heat the egg", k=2, always=()))
    assert Triplet("countertop 1", "in", "room") in two  # room is 2 hops from egg 1


def test_values_and_events_are_not_walked_through():
    kg = KnowledgeGraph([("drawer 1", "is", "open"), ("cabinet 1", "is", "open"),
                         ("agent", "opened", "drawer 1"), ("agent", "opened", "cabinet 1")])
    got = set(kg.retrieve("look in drawer 1", k=3, always=()))
    assert Triplet("cabinet 1", "is", "open") not in got  # not reached via the value "open"
    assert Triplet("agent", "opened", "drawer 1") in got
    assert Triplet("agent", "opened", "cabinet 1") not in got  # not reached via the event
    assert mentioned_entities(kg, "is it open?") == []  # values are not entities


def test_ties_break_by_recency_then_source():
    kg = KnowledgeGraph()
    kg.update([("apple 1", "is", "clean")], step=1)
    kg.update([("apple 1", "is", "hot")], step=4, source="predicted")
    kg.update([("apple 1", "is", "sliced")], step=4, source="observed")
    got = kg.retrieve("apple", k=0, always=())
    assert [t.object for t in got] == ["sliced", "hot", "clean"]


def test_last_observation_seeds_after_the_task_and_limit_bounds_the_list():
    kg = kitchen()
    got = kg.retrieve("find the mug", k=0, last_observation="You see a desklamp 1.", always=())
    assert got == [Triplet("mug 1", "in", "cabinet 1"), Triplet("desklamp 1", "on", "sidetable 1")]
    # mug 1 -> cabinet 1 -> room -> countertop 1: 2 hops reach the room's facts, 3 reach all.
    assert len(kg.retrieve("find the mug", k=2)) == 8
    assert len(kg.retrieve("find the mug", k=3)) == len(kg) == 12
    assert len(kg.retrieve("find the mug", k=2, limit=3)) == 3


def test_fill_adds_the_newest_other_facts():
    kg = kitchen()
    plain = kg.retrieve("find the mug", k=0, always=())
    filled = kg.retrieve("find the mug", k=0, always=(), fill=True, limit=5)
    assert filled[: len(plain)] == plain and len(filled) == 5
    assert filled[1] == Triplet("cabinet 1", "is", "open")  # step 3, newest of the rest


def test_numbered_entities_match_their_base_name_and_plural():
    kg = kitchen()
    assert mentioned_entities(kg, "Put two apples in the fridge") == ["apple 1", "fridge 1"]


def test_prompt_serialisation_is_one_triplet_per_line():
    kg = kitchen()
    got = kg.retrieve("apple", k=0, always=())
    assert kg.to_prompt_lines(got) == ["(apple 1, on, countertop 1)"]
    assert format_prompt(got) == "(apple 1, on, countertop 1)"
    assert format_prompt([]) == "(nothing known yet)"


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="k"):
        kitchen().retrieve("x", k=-1)
    with pytest.raises(ValueError, match="limit"):
        kitchen().retrieve("x", limit=-2)


def test_a_numbered_mention_names_that_instance_only():
    kg = KnowledgeGraph([("apple 1", "on", "table 1"), ("apple 2", "in", "fridge 1")])
    assert mentioned_entities(kg, "take apple 2 from fridge 1") == ["apple 2", "fridge 1"]
    assert mentioned_entities(kg, "take an apple") == ["apple 1", "apple 2"]
