"""Dataset files: a bad line is a typed error naming file:line and the fix (hypothesis)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcplan.errors import SmcplanError
from smcplan.train.data import (
    TRANSITION_FIELDS,
    DatasetLineError,
    read_examples,
    read_shard,
)

from .conftest import write_shard


def test_a_valid_shard_reads_back_with_the_torn_episode_apart(tmp_path):
    path = write_shard(tmp_path / "s.jsonl", episodes=(1, 2), partial=3)
    shard = read_shard(path)
    assert sorted(shard.episodes) == ["twx:coin/1", "twx:coin/2"]
    assert len(shard.transitions) == 4 and len(shard.partial) == 2
    assert {t["episode"] for t in shard.partial} == {"twx:coin/3"}


def test_branches_read_apart_from_the_transitions(tmp_path):
    """Counterfactual branches are kept out of ``transitions`` (the critic and the cold start
    read real paths only), and those of a torn episode are dropped with it."""
    shard = read_shard(write_shard(tmp_path / "b.jsonl", episodes=(1,), partial=3, branches=True))
    assert len(shard.transitions) == 2 and [b["episode"] for b in shard.branches] == ["twx:coin/1"]
    assert shard.branches[0]["action"] == "move east" and shard.branches[0]["t"] == 0
    bad = tmp_path / "bad.jsonl"
    lines = (tmp_path / "b.jsonl").read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if '"branch"' in line)
    obj = json.loads(lines[number - 1])
    del obj["facts"]
    lines[number - 1] = json.dumps(obj)
    bad.write_text("\n".join(lines) + "\n")
    message = f"bad.jsonl:{number}: branch lacks the field 'facts'"
    with pytest.raises(DatasetLineError, match=message):
        read_shard(bad)


def _not_an_object(text: str) -> bool:
    if not text.strip():
        return False  # blank lines are skipped, not errors
    try:
        return not isinstance(json.loads(text), dict)
    except ValueError:
        return True


garbage_text = st.text(min_size=1, max_size=40).filter(
    lambda s: "\n" not in s and "\r" not in s and _not_an_object(s)
)
field = st.sampled_from(sorted(TRANSITION_FIELDS))
wrong_value = st.one_of(
    st.none(), st.just([]), st.just({}), st.just("x"), st.just(1.5), st.just(True)
)


def _damaged(path, number: int, line: str):
    lines = path.read_text(encoding="utf-8").splitlines()
    lines.insert(number - 1, line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _good_transition() -> dict:
    return {
        "kind": "transition",
        "episode": "twx:coin/9",
        "seed": 9,
        "t": 0,
        "task": "t",
        "observation": "o",
        "action": "a",
        "next_observation": "n",
        "reward": 0.0,
        "done": False,
        "won": False,
        "score": 0.0,
        "facts": [],
    }


def _wrong_for(name: str, value) -> bool:
    types = TRANSITION_FIELDS[name]
    if isinstance(value, bool):
        return bool not in types
    return not isinstance(value, types)


@settings(
    max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None
)
@given(
    st.integers(min_value=2, max_value=8),
    st.one_of(
        garbage_text,
        field.map(lambda f: json.dumps({k: v for k, v in _good_transition().items() if k != f})),
        st.tuples(field, wrong_value)
        .filter(lambda fv: _wrong_for(*fv))
        .map(lambda fv: json.dumps({**_good_transition(), fv[0]: fv[1]})),
    ),
)
def test_any_bad_line_names_its_file_and_line(tmp_path_factory, number, line):
    path = write_shard(tmp_path_factory.mktemp("bad") / "s.jsonl", episodes=(1, 2, 3))
    _damaged(path, number, line)
    with pytest.raises(DatasetLineError) as info:
        read_shard(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{number}: ") and "; fix: " in message
    assert isinstance(info.value, SmcplanError) and isinstance(info.value, ValueError)
    assert info.value.line == number


def test_a_shard_without_its_header_is_refused(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(_good_transition()) + "\n", encoding="utf-8")
    with pytest.raises(DatasetLineError, match=r"s\.jsonl:1: the first record must be the shard"):
        read_shard(path)


def test_example_files(tmp_path):
    path = tmp_path / "ex.jsonl"
    path.write_text('{"prompt": "p", "completion": "c"}\n\n{"prompt": "p"}\n', encoding="utf-8")
    with pytest.raises(
        DatasetLineError, match=r"ex\.jsonl:3: example lacks the field 'completion'"
    ):
        read_examples(path)
    path.write_text('{"prompt": "p", "completion": "c"}\n', encoding="utf-8")
    assert read_examples(path) == [{"prompt": "p", "completion": "c"}]
    with pytest.raises(DatasetLineError, match="no such file"):
        read_examples(tmp_path / "missing.jsonl")
