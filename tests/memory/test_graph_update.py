"""KnowledgeGraph.update: functional replacement, exclusion, precedence, events, closure."""

from __future__ import annotations

import pytest

from smcplan.memory import DEFAULT_PREDICATES, KnowledgeGraph, PredicateSpec, Triplet


def T(s: str, p: str, o: str) -> Triplet:
    return Triplet(s, p, o)


def test_an_object_is_in_one_place_new_location_replaces_old():
    kg = KnowledgeGraph([("apple", "on", "countertop 1")], step=1)
    report = kg.update([("apple", "in", "fridge 1")], step=2)
    assert list(kg) == [T("apple", "in", "fridge 1")]
    assert report.added == (T("apple", "in", "fridge 1"),)
    assert report.removed == (T("apple", "on", "countertop 1"),)
    assert kg.location_of("apple") == "fridge 1"
    kg.validate()


def test_mutually_exclusive_values_replace_each_other_others_coexist():
    kg = KnowledgeGraph([("drawer 1", "is", "closed"), ("egg 1", "is", "hot")], step=1)
    kg.update([("drawer 1", "is", "open"), ("egg 1", "is", "clean")], step=2)
    assert T("drawer 1", "is", "open") in kg and T("drawer 1", "is", "closed") not in kg
    assert {t.object for t in kg.query("egg 1", "is")} == {"hot", "clean"}
    kg.validate()


def test_a_functional_predicate_keeps_one_value():
    kg = KnowledgeGraph([("thermometer", "reads", "10 degrees celsius")], step=0)
    kg.update([("thermometer", "reads", "100 degrees celsius")], step=1)
    assert kg.query("thermometer", "reads") == [T("thermometer", "reads", "100 degrees celsius")]


def test_observed_beats_predicted_at_the_same_step():
    kg = KnowledgeGraph()
    kg.update([("apple", "on", "countertop 1")], step=3, source="observed")
    report = kg.update([("apple", "in", "fridge 1")], step=3, source="predicted")
    assert report.rejected == (T("apple", "in", "fridge 1"),) and not report.added
    assert kg.location_of("apple") == "countertop 1"
    assert kg.provenance(("apple", "on", "countertop 1")).source == "observed"


def test_observed_replaces_predicted_at_the_same_step():
    kg = KnowledgeGraph()
    kg.update([("apple", "in", "fridge 1")], step=3, source="predicted")
    kg.update([("apple", "on", "countertop 1")], step=3, source="observed")
    assert kg.location_of("apple") == "countertop 1"


def test_an_older_prediction_cannot_overwrite_a_newer_observation_but_a_newer_one_can():
    kg = KnowledgeGraph([("drawer 1", "is", "closed")], step=5)
    assert kg.update([("drawer 1", "is", "open")], step=4, source="predicted").rejected
    assert T("drawer 1", "is", "closed") in kg
    # A rollout predicting the future moves the belief forward.
    kg.update([("drawer 1", "is", "open")], step=6, source="predicted")
    assert T("drawer 1", "is", "open") in kg


def test_reasserting_a_fact_keeps_the_later_step_and_the_stronger_source():
    kg = KnowledgeGraph([("apple", "on", "table")], step=2, source="observed")
    kg.update([("apple", "on", "table")], step=5, source="predicted")
    p = kg.provenance(("apple", "on", "table"))
    assert (p.step, p.source) == (5, "observed")
    assert len(kg) == 1


def test_events_are_appended_never_replaced():
    kg = KnowledgeGraph()
    kg.update([("agent", "opened", "drawer 1")], step=1)
    kg.update([("agent", "opened", "fridge 1"), ("agent", "picked up", "apple 1")], step=2)
    kg.update([("drawer 1", "is", "closed"), ("agent", "closed", "drawer 1")], step=3)
    assert {t.object for t in kg.query("agent", "opened")} == {"drawer 1", "fridge 1"}
    assert T("agent", "picked up", "apple 1") in kg and T("agent", "closed", "drawer 1") in kg


def test_unknown_past_tense_predicates_are_events_and_other_unknowns_plain_relations():
    assert DEFAULT_PREDICATES.is_event("sniffed")
    assert DEFAULT_PREDICATES.is_event("took apart")
    assert not DEFAULT_PREDICATES.is_event("likes")
    kg = KnowledgeGraph([("cat", "likes", "fish"), ("cat", "likes", "milk")])
    assert len(kg.query("cat", "likes")) == 2


def test_symmetric_and_inverse_partners_are_stored_and_removed_together():
    kg = KnowledgeGraph([("kitchen", "connects to", "hallway"), ("kitchen", "north", "pantry")])
    assert T("hallway", "connects to", "kitchen") in kg
    assert T("pantry", "south", "kitchen") in kg
    # "north" is functional: a new northern room replaces the old one and its partner.
    report = kg.update([("kitchen", "north", "garden")], step=1)
    assert T("pantry", "south", "kitchen") in report.removed
    assert T("garden", "south", "kitchen") in kg and T("pantry", "south", "kitchen") not in kg
    assert kg.remove(("hallway", "connects to", "kitchen"))
    assert T("kitchen", "connects to", "hallway") not in kg
    kg.validate()


def test_aliases_and_inverse_aliases_resolve_to_canonical_facts():
    kg = KnowledgeGraph([("fridge 1", "contains", "egg 1"), ("apple", "is in", "bowl")])
    assert set(kg) == {T("egg 1", "in", "fridge 1"), T("apple", "in", "bowl")}
    assert kg.query("fridge 1", "contains") == [T("egg 1", "in", "fridge 1")]
    assert ("fridge 1", "contains", "egg 1") in kg


def test_closure_removes_things_no_longer_listed_in_a_container():
    kg = KnowledgeGraph([("apple 1", "on", "countertop 1"), ("knife 1", "on", "countertop 1"),
                         ("egg 1", "in", "fridge 1")], step=1)
    report = kg.update([("apple 1", "on", "countertop 1")], step=2, closed=["countertop 1"])
    assert report.removed == (T("knife 1", "on", "countertop 1"),)
    assert kg.contents("countertop 1") == ["apple 1"]
    assert kg.contents("fridge 1") == ["egg 1"]  # other containers untouched


def test_closure_by_a_prediction_does_not_remove_a_newer_observation():
    kg = KnowledgeGraph([("knife 1", "on", "countertop 1")], step=4)
    kg.update([], step=3, source="predicted", closed=["countertop 1"])
    assert kg.contents("countertop 1") == ["knife 1"]


def test_a_later_fact_in_one_batch_wins_and_the_report_shows_the_net_change():
    kg = KnowledgeGraph([("apple", "on", "table")], step=0)
    report = kg.update([("apple", "in", "bowl"), ("apple", "in", "fridge")], step=1)
    assert kg.location_of("apple") == "fridge"
    assert report.added == (T("apple", "in", "fridge"),)
    assert set(report.removed) == {T("apple", "on", "table")}


def test_step_defaults_to_the_graph_clock_and_the_clock_only_moves_forward():
    kg = KnowledgeGraph()
    kg.update([("x", "in", "y")], step=7)
    kg.update([("c", "in", "d")])
    assert kg.provenance(("c", "in", "d")).step == 7
    kg.update([("e", "in", "f")], step=2)
    assert kg.step == 7


def test_unknown_source_is_an_error_listing_the_valid_ones():
    with pytest.raises(ValueError, match="observed, predicted, inferred"):
        KnowledgeGraph().update([("x", "in", "y")], source="guessed")  # type: ignore[arg-type]


def test_query_len_iteration_order_and_equality():
    facts = [("apple", "on", "table"), ("egg", "in", "fridge"), ("table", "in", "kitchen")]
    kg = KnowledgeGraph(facts, step=1)
    assert len(kg) == 3
    assert [t.as_tuple() for t in kg] == facts  # insertion order
    assert kg.query(object="fridge") == [T("egg", "in", "fridge")]
    assert kg.query(predicate="in") == [T("egg", "in", "fridge"), T("table", "in", "kitchen")]
    assert kg.neighbors("table") == ["apple", "kitchen"]
    assert kg == KnowledgeGraph(reversed(facts), step=1)  # order is not part of equality
    assert kg != KnowledgeGraph(facts, step=2)  # provenance is
    assert kg != KnowledgeGraph(facts[:2], step=1)


def test_users_extend_the_table_with_their_own_predicates():
    table = DEFAULT_PREDICATES.extend(
        PredicateSpec("worn by", slot="location"),  # wearing is a place, exclusive with in/on
        PredicateSpec("colour", functional=True, attribute=True, aliases=("color",)),
    )
    kg = KnowledgeGraph([("hat", "in", "wardrobe")], predicates=table)
    kg.update([("hat", "worn by", "agent"), ("hat", "color", "red")], step=1)
    assert kg.location_of("hat") == "agent"
    kg.update([("hat", "colour", "blue")], step=2)
    assert kg.query("hat", "colour") == [T("hat", "colour", "blue")]


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        ([PredicateSpec("x", inverse="y")], "inverse 'y'"),
        ([PredicateSpec("x", aliases=("z",)), PredicateSpec("y", aliases=("z",))], "claimed by"),
        ([PredicateSpec("x"), PredicateSpec("y", aliases=("x",))], "itself a predicate"),
    ],
)
def test_inconsistent_tables_are_rejected_with_the_reason(specs, message):
    from smcplan.memory import PredicateTable

    with pytest.raises(ValueError, match=message):
        PredicateTable(specs)


def test_spec_validation_names_the_problem():
    with pytest.raises(ValueError, match="two exclusive groups"):
        PredicateSpec("is", exclusive_values=(("open", "closed"), ("closed", "locked")))
    with pytest.raises(ValueError, match="event"):
        PredicateSpec("opened", event=True, functional=True)


def test_non_strict_update_skips_malformed_llm_output_and_reports_it():
    kg = KnowledgeGraph()
    bad = [("apple", "in", ""), ("apple", "on"), "apple on table"]
    report = kg.update([("apple", "on", "table"), *bad], step=1, strict=False)
    assert list(kg) == [T("apple", "on", "table")]
    assert report.invalid == tuple(bad)
    with pytest.raises(ValueError, match="object"):
        kg.update([("apple", "in", "")], step=2)
