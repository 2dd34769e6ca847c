"""The second bad-input battery, the library side: strict integers, booleans and seed lists
(:mod:`smcplan.options`), typed trainer options, the one JSON writer (:mod:`smcplan.jsonfile`:
never a ``NaN`` token) and text that cannot reach a JVM (:func:`smcplan.errors.check_text`)."""

from __future__ import annotations

import itertools
import json
import math
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan import jsonfile
from smcplan.errors import ArgumentTypeError, InvalidArgumentError, SmcplanError, check_text
from smcplan.options import (
    BOOL_WORDS,
    MAX_SEED,
    MAX_SEEDS,
    coerce_keywords,
    parse_bool,
    parse_int,
    parse_seed_ranges,
    seed_list,
)
from smcplan.train.options import SCHEMAS, trainer_options

from ._garbage import bad_scalar, call

ASCII_INT = re.compile(r"[+-]?[0-9]{1,30}")


# -- integers and booleans ----------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(text=st.one_of(st.text(max_size=8), st.from_regex(r"\A[+-]?[0-9]{1,12}\Z")))
def test_an_integer_is_ascii_digits_and_nothing_else(text):
    ok, out = call(parse_int, text, "--n")
    if ASCII_INT.fullmatch(text.strip()):
        assert ok and out == int(text)
    else:  # "1.5", "1_0", "1e3", "١", "" ... int() takes some of these; the parser does not
        assert not ok and isinstance(out, InvalidArgumentError)
        assert "--n must be an integer" in str(out) and repr(text)[:20] in str(out)


@settings(max_examples=150, deadline=None)
@given(value=bad_scalar, low=st.integers(-5, 5))
def test_an_integer_within_bounds_or_a_typed_error(value, low):
    ok, out = call(parse_int, value, "max_examples", minimum=low, maximum=low + 10)
    if ok:
        assert type(out) is int and low <= out <= low + 10
    else:
        assert "max_examples" in str(out)


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.sampled_from([*BOOL_WORDS, 0, 1, True, False]), bad_scalar,
                       st.text(max_size=6)))  # fmt: skip
def test_a_boolean_is_one_of_six_words(value):
    ok, out = call(parse_bool, value, "full")
    if isinstance(value, bool):
        assert ok and out is value
    elif isinstance(value, str) and value in BOOL_WORDS:
        assert ok and out is BOOL_WORDS[value]
    elif type(value) is int and value in (0, 1):
        assert ok and out is bool(value)
    else:  # bool("no") is True: a loose parser ran a full fine-tune for full=no
        assert not ok and "full must be a boolean" in str(out)
        assert "true, false, 1, 0, yes, no" in str(out)


def test_no_and_false_are_false():
    assert [parse_bool(w, "x") for w in ("no", "false", "0")] == [False] * 3
    for word in ("No", "FALSE", "off", "n", " no"):
        with pytest.raises(InvalidArgumentError, match="use one of true, false, 1, 0, yes, no"):
            parse_bool(word, "x")


# -- seed lists: counted before they are expanded ------------------------------------------------
ranges = st.lists(
    st.tuples(
        st.one_of(
            st.integers(0, 100), st.integers(MAX_SEED - 5, MAX_SEED + 5), st.integers(0, 10**22)
        ),
        st.one_of(st.integers(0, 40), st.integers(MAX_SEEDS, 10**22)),  # small, or over the limit
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=120, deadline=None)
@given(parts=ranges, cap=st.one_of(st.none(), st.integers(1, 50)))
def test_a_seed_list_is_counted_before_it_is_expanded(parts, cap):
    text = ",".join(f"{a}-{a + n}" if n else str(a) for a, n in parts)
    seeds = parse_seed_ranges(text)
    assert seeds.size == sum(n + 1 for _, n in parts)  # exact, however large
    t0 = time.perf_counter()
    ok, out = call(seeds.take, cap)
    assert time.perf_counter() - t0 < 1.0  # never grows a 10**22-long list
    expected_prefix = list(
        itertools.islice((s for a, n in parts for s in range(a, a + n + 1)), cap or MAX_SEEDS + 1)
    )
    if cap is None and seeds.size > MAX_SEEDS:
        assert not ok and f"more than the limit of {MAX_SEEDS:,}" in str(out)
        assert text[:20] in str(out)
    elif any(s > MAX_SEED for s in expected_prefix):
        assert not ok and f"must be <= {MAX_SEED}" in str(out)
    else:
        assert ok and out == expected_prefix


@pytest.mark.parametrize("text", ["", ",", "1,,2", "0,", "3-1", "-1", "a", "1.5", "١", "1-2-3"])
def test_a_bad_seed_list_names_itself(text):
    with pytest.raises(InvalidArgumentError, match=re.escape(f"bad seed list {text!r}")):
        parse_seed_ranges(text)


def test_a_python_range_of_three_billion_seeds_is_refused_at_once():
    t0 = time.perf_counter()
    for seeds in (range(0, 3_000_000_000), range(0, 10**30)):
        with pytest.raises(InvalidArgumentError, match="more than the limit of 1,000,000"):
            seed_list(seeds, "seeds")
    assert time.perf_counter() - t0 < 0.5
    assert seed_list(range(5, 10**30), cap=2) == [5, 6]
    with pytest.raises(ArgumentTypeError, match="seeds: seed must be an integer; got 1.5"):
        seed_list([1, 1.5])


# -- typed trainer options ----------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(
    trainer=st.sampled_from(sorted(SCHEMAS)),
    data=st.data(),
    value=st.one_of(bad_scalar, st.sampled_from(["no", "yes", "abc", "1.5", "[0,1]"]),
                    st.lists(st.integers(-2, 3), max_size=3)),  # fmt: skip
)
def test_every_trainer_option_is_typed(trainer, data, value):
    key = data.draw(st.sampled_from(sorted(SCHEMAS[trainer])))
    ok, out = call(trainer_options, trainer, {key: value})
    if ok:
        got = out.get(key)
        assert got is None or isinstance(got, bool | int | float | str | list)
        if isinstance(got, float):
            assert math.isfinite(got)
        if value is None:
            assert key not in out
    else:
        message = str(out)
        assert f"trainer {trainer!r}: --opt {key}" in message, message


def test_full_no_is_false_and_max_examples_abc_names_the_option():
    assert trainer_options("world-model", {"full": "no", "max_examples": 20}) == {
        "full": False,
        "max_examples": 20,
    }
    with pytest.raises(InvalidArgumentError, match="--opt max_examples must be an integer; got 'a"):
        trainer_options("world-model", {"max_examples": "abc"})
    with pytest.raises(SmcplanError, match="unknown option 'fulll' for trainer 'world-model'"):
        trainer_options("world-model", {"fulll": True})


def test_the_world_model_trainer_fine_tunes_a_lora_for_full_no(monkeypatch, tmp_path):
    from smcplan.train import world_model
    from smcplan.train.registry import TrainRequest

    seen = {}
    monkeypatch.setattr(world_model, "train_world_model", lambda *a, **k: seen.update(k))
    request = TrainRequest("world-model", tmp_path / "o", data=[tmp_path / "d"])
    for word, lora in (("no", True), ("false", True), ("yes", False), ("1", False)):
        world_model.run(TrainRequest(**{**request.__dict__, "options": {"full": word}}))
        assert (seen["lora"] is not None) is lora, word


def test_agent_and_env_keywords_annotated_bool_or_int_are_strict():
    from smcplan import agents, envs

    nesyfs = agents.spec("nesyfs").load()
    out = coerce_keywords("agent 'nesyfs'", nesyfs, {"loop_guard": "no", "think": "yes"})
    assert out == {"loop_guard": False, "think": True}
    with pytest.raises(InvalidArgumentError, match="agent 'nesyfs': loop_guard must be a boolean"):
        agents.check_agent_options("nesyfs", {"loop_guard": "nah"})
    with pytest.raises(ArgumentTypeError, match="agent 'random': seed must be an integer"):
        agents.make("random", seed=1.5)
    with pytest.raises(InvalidArgumentError, match="env 'webshop': show_attrs must be a boolean"):
        envs.make("webshop", show_attrs="nah")  # refused before the catalog is built
    webshop = envs._adapter("webshop")[0]
    assert coerce_keywords("env 'webshop'", webshop, {"show_attrs": "no"}) == {"show_attrs": False}


# -- the JSON writer: never NaN -----------------------------------------------------------------
def _strict_loads(text):
    def refuse(token):
        raise AssertionError(f"{token} in a JSON file")

    return json.loads(text, parse_constant=refuse)


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text("abc", max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _leaves(value, path=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path or "(value)", value


@settings(max_examples=200, deadline=None)
@given(value=json_values)
def test_the_json_writer_never_writes_nan_and_says_where_it_wrote_null(value):
    text = jsonfile.dumps(value, indent=1)
    back = _strict_loads(text)
    bad = {p: v for p, v in _leaves(value) if isinstance(v, float) and not math.isfinite(v)}
    if isinstance(value, dict) and bad:
        note = back.pop(jsonfile.NOTE_KEY)
        assert set(note["fields"]) == set(bad) and "written as null" in note["note"]
    for path, v in _leaves(value):
        if path in bad:
            continue
        assert isinstance(v, float) or (path, v) in list(_leaves(back)) or v != v


def test_write_json_is_atomic_and_strict(tmp_path):
    path = jsonfile.write_json(tmp_path / "a" / "score.json", {"f1": float("nan"), "n": 3})
    body = _strict_loads(path.read_text())
    assert body["f1"] is None and body["n"] == 3
    assert body["non_finite"]["fields"] == {"f1": "nan"}
    assert [p.name for p in path.parent.iterdir()] == ["score.json"]  # no temporary file left


def test_every_json_writer_of_smcplan_goes_through_the_shared_helper():
    """No module writes JSON with ``json.dump`` / ``json.dumps`` into a file itself."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "smcplan"
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "jsonfile.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"json\.dump\(|write\(json\.dumps|write_text\(json\.dumps", line):
                offenders.append(f"{path.relative_to(root)}:{n}")
    assert offenders == []


# -- text a JVM cannot take ---------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=6))
def test_check_text_refuses_exactly_what_utf8_cannot_encode(text):
    try:
        text.encode("utf-8")
        encodable = True
    except UnicodeEncodeError:
        encodable = False
    ok, out = call(check_text, text, "action")
    assert ok == encodable
    if not ok:
        assert "lone surrogate" in str(out) and "action" in str(out)


@pytest.fixture(scope="module")
def household():
    from smcplan import envs

    return envs.make("toy:household")


@settings(max_examples=40, deadline=None)
@given(prefix=st.text(max_size=3), surrogate=st.integers(0xD800, 0xDFFF))
def test_every_env_refuses_a_lone_surrogate_before_its_backend(household, prefix, surrogate):
    household.reset(0)
    with pytest.raises(InvalidArgumentError, match="lone surrogate"):
        household.step(prefix + chr(surrogate) + "look")
    assert household.step(household.admissible_actions()[0]).info["steps"] == 1  # still usable


def test_a_seed_above_what_the_jvms_take_is_refused_by_every_env():
    from smcplan import envs

    with pytest.raises(InvalidArgumentError, match=f"seed must be <= {MAX_SEED}"):
        envs.make("toy:tiger").reset(MAX_SEED + 1)
