"""Property tests: any sequence of updates keeps the invariants; copies are independent.

Hypothesis draws updates over a small vocabulary (so that conflicts are frequent): batches of
triplets with random steps, sources and closed containers.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.memory import KnowledgeGraph, Triplet

ENTITIES = ["apple", "egg", "drawer", "fridge", "table", "kitchen", "hall", "agent", "inventory"]
RELATIONS = ["in", "on", "at", "north", "south", "connects to", "opened", "likes", "contains",
             "is in"]
VALUES = ["open", "closed", "hot", "clean", "dirty", "on", "off"]
SOURCES = ["observed", "predicted", "inferred"]

triplets = st.one_of(
    st.tuples(st.sampled_from(ENTITIES), st.sampled_from(RELATIONS), st.sampled_from(ENTITIES)),
    st.tuples(st.sampled_from(ENTITIES), st.just("is"), st.sampled_from(VALUES)),
    st.tuples(st.sampled_from(ENTITIES), st.just("reads"), st.sampled_from(["1 c", "2 c"])),
)
updates = st.tuples(
    st.lists(triplets, max_size=5),
    st.integers(0, 6),
    st.sampled_from(SOURCES),
    st.lists(st.sampled_from(ENTITIES), max_size=2),
)
histories = st.lists(updates, max_size=12)


def replay(history, kg: KnowledgeGraph | None = None) -> KnowledgeGraph:
    kg = KnowledgeGraph() if kg is None else kg
    for batch, step, source, closed in history:
        kg.update(batch, step=step, source=source, closed=closed)
    return kg


def assert_invariants(kg: KnowledgeGraph) -> None:
    kg.validate()
    facts = list(kg)
    for e in ENTITIES:
        places = [t for t in facts if t.subject == e and t.predicate in ("in", "on", "at")]
        assert len(places) <= 1, f"{e} is in two places at once: {places}"
        states = {t.object for t in facts if t.subject == e and t.predicate == "is"}
        assert not {"open", "closed"} <= states and not {"on", "off"} <= states
        assert not {"clean", "dirty"} <= states
        assert len([t for t in facts if t.subject == e and t.predicate == "reads"]) <= 1
    for t in facts:
        if t.predicate == "north":
            assert Triplet(t.object, "south", t.subject) in kg
        if t.predicate == "connects to":
            assert Triplet(t.object, "connects to", t.subject) in kg


@settings(max_examples=150, deadline=None)
@given(histories)
def test_any_sequence_of_updates_keeps_the_invariants(history):
    kg = KnowledgeGraph()
    for batch, step, source, closed in history:
        kg.update(batch, step=step, source=source, closed=closed)
        assert_invariants(kg)


@settings(max_examples=100, deadline=None)
@given(histories, histories, histories)
def test_copies_are_independent_of_each_other_and_of_the_original(base, left, right):
    original = replay(base)
    snapshot = original.to_json()
    twin = original.copy()
    frozen = original.copy()
    replay(left, original)
    replay(right, twin)
    assert original == replay(base + left)
    assert twin == replay(base + right)
    assert frozen.to_json() == snapshot  # untouched copy still sees the state at copy time
    for kg in (original, twin, frozen):
        assert_invariants(kg)


@settings(max_examples=100, deadline=None)
@given(histories, histories)
def test_json_round_trip_is_equal_and_behaves_the_same(history, later):
    kg = replay(history)
    back = KnowledgeGraph.from_json(kg.to_json())
    assert back == kg and back.step == kg.step and back.to_json() == kg.to_json()
    assert replay(later, back) == replay(later, kg)


@settings(max_examples=150, deadline=None)
@given(histories, st.lists(triplets, max_size=6), st.integers(0, 6),
       st.lists(st.sampled_from(ENTITIES), max_size=3))
def test_a_prediction_never_removes_an_observation_made_at_or_after_its_step(
    history, batch, step, closed
):
    kg = replay(history)
    kept = [t for t, p in kg.facts() if p.source == "observed" and p.step >= step]
    kg.update(batch, step=step, source="predicted", closed=closed)
    for t in kept:
        assert t in kg and kg.provenance(t).source == "observed"


def test_copy_shares_storage_until_a_write_then_copies_one_shard():
    kg = KnowledgeGraph([(f"thing {i}", "in", f"box {i % 7}") for i in range(500)])
    twin = kg.copy()
    shards_a, shards_b = kg._facts._shards, twin._facts._shards
    assert all(a is b for a, b in zip(shards_a, shards_b, strict=True))
    twin.update([("thing 3", "is", "hot")], step=1)
    shared = sum(a is b for a, b in zip(kg._facts._shards, twin._facts._shards, strict=True))
    assert shared == len(shards_a) - 1  # one new fact: one shard of the fact map copied
    assert ("thing 3", "is", "hot") not in kg and len(kg) == 500 and len(twin) == 501
