"""Triplet: normalised text, hashing, coercion from the LLM layer's plain tuples."""

from __future__ import annotations

import pytest

from smcplan.memory import Triplet, as_triplet, normalize_text


def test_normalisation_lowercases_trims_and_strips_leading_articles():
    assert Triplet("  The Apple 1. ", "In", "a Fridge 1") == Triplet("apple 1", "in", "fridge 1")
    assert normalize_text("An  open\tfridge") == "open fridge"
    assert normalize_text("some olive oil") == "olive oil"


def test_only_leading_articles_go():
    assert normalize_text("door to the kitchen") == "door to the kitchen"
    assert normalize_text("the the box") == "box"


def test_equal_triplets_hash_equal_and_unpack_like_tuples():
    a, b = Triplet("Apple 1", "on", "countertop 1"), Triplet("apple 1", "on", "Countertop 1")
    assert hash(a) == hash(b) and len({a, b}) == 1
    s, p, o = a
    assert (s, p, o) == ("apple 1", "on", "countertop 1") == a.as_tuple()
    assert str(a) == "(apple 1, on, countertop 1)"


def test_triplets_are_frozen():
    t = Triplet("x", "y", "z")
    with pytest.raises(AttributeError):
        t.subject = "x"  # type: ignore[misc]


def test_empty_field_is_an_error_naming_the_field():
    with pytest.raises(ValueError, match="object"):
        Triplet("apple", "in", " the ")


def test_as_triplet_accepts_tuples_lists_and_mappings():
    want = Triplet("egg 1", "in", "fridge 1")
    assert as_triplet(("Egg 1", "in", "fridge 1")) == want
    assert as_triplet(["egg 1", "in", "the fridge 1"]) == want
    assert as_triplet({"subject": "egg 1", "predicate": "in", "object": "fridge 1"}) == want
    assert as_triplet(want) is want


@pytest.mark.parametrize("bad", [("a", "b"), "abc", 3, ("a", "b", 4)])
def test_as_triplet_rejects_other_shapes(bad):
    with pytest.raises((TypeError, ValueError)):
        as_triplet(bad)


def test_as_triplet_names_missing_mapping_keys():
    with pytest.raises(ValueError, match="predicate"):
        as_triplet({"subject": "a", "object": "c"})
