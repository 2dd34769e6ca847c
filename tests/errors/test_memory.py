"""Garbage into KnowledgeGraph.load: a graph, or an error naming the file."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcplan.memory import KnowledgeGraph
from smcplan.memory.export import JSON_FORMAT, KnowledgeGraphFormatError

from ._garbage import call

json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
documents = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=40).map(str.encode),
    json_values.map(lambda v: json.dumps(v).encode()),
    json_values.map(
        lambda v: json.dumps(
            {"format": JSON_FORMAT, "step": v, "predicates": v, "facts": v}
        ).encode()
    ),
    st.lists(
        st.dictionaries(
            st.sampled_from(["subject", "predicate", "object", "step", "source"]), json_values
        ),
        max_size=2,
    ).map(
        lambda facts: json.dumps(
            {"format": JSON_FORMAT, "step": 0, "predicates": [], "facts": facts}
        ).encode()
    ),
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=documents)
def test_load_returns_a_graph_or_names_the_file(tmp_path, doc):
    path = tmp_path / "kg.json"
    path.write_bytes(doc)
    ok, out = call(KnowledgeGraph.load, path)
    if ok:
        assert isinstance(out, KnowledgeGraph)
    else:
        assert isinstance(out, KnowledgeGraphFormatError) and str(path) in str(out)


def test_corrupt_json_names_the_path(tmp_path):
    kg = KnowledgeGraph()
    path = kg.save(tmp_path / "g.json")
    path.write_text(path.read_text()[:-10])
    with pytest.raises(
        KnowledgeGraphFormatError, match=rf"{path}: not a readable knowledge-graph JSON document"
    ):
        KnowledgeGraph.load(path)
    assert issubclass(KnowledgeGraphFormatError, ValueError)


def _saved_graph_text(tmp_path) -> str:
    kg = KnowledgeGraph()
    kg.update(
        [("agent", "in", "kitchen"), ("coin", "in", "kitchen"), ("door", "is", "closed")], step=1
    )
    return kg.save(tmp_path / "whole.json").read_text()


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    kind=st.sampled_from(["truncate", "flip", "insert"]),
)
def test_a_damaged_saved_graph_loads_or_names_the_file(tmp_path, seed, kind):
    """Damage to a real saved graph (reaching the fact, predicate and invariant checks that
    random documents rarely reach) gives a graph or an error naming the file, never another
    exception."""
    raw = bytearray(_saved_graph_text(tmp_path).encode())
    rng = random.Random(seed)
    if kind == "truncate":
        raw = raw[: rng.randrange(len(raw))]
    elif kind == "flip":
        for _ in range(rng.randint(1, 3)):
            raw[rng.randrange(len(raw))] = rng.randrange(256)
    else:
        at = rng.randrange(len(raw))
        raw[at:at] = rng.choice([b"[", b"{", b'"', b"9" * 400, b"NaN", b"-", b"1e999", b"null"])
    path = tmp_path / "kg.json"
    path.write_bytes(bytes(raw))
    ok, out = call(KnowledgeGraph.load, path)
    if ok:
        assert isinstance(out, KnowledgeGraph)
    else:
        assert isinstance(out, KnowledgeGraphFormatError) and str(path) in str(out), out
