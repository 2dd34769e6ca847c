"""Garbage into KnowledgeGraph.load: a graph, or an error naming the file."""

from __future__ import annotations

import json

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
