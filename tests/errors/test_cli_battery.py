"""The second bad-input battery, the command lines: every integer flag parsed strictly, booleans
of ``--opt`` / ``--agent-arg`` strictly, ``--out`` checked before anything runs, seed ranges
checked before they are expanded; each refusal exit status 2 with one line naming the flag.
And the fixes that must work: a NaN score is written as null (explained), a torn shard line
is dropped by the ``--resume`` its error suggests."""

from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smcplan.cli import main
from smcplan.options import BOOL_WORDS, MAX_INT, MAX_SEED

ASCII_INT = re.compile(r"[+-]?[0-9]{1,30}")

#: (argv before the flag, flag, smallest and largest valid value): each command's integer flags
INT_FLAGS = [
    (["eval", "--env", "toy:tiger", "--agent", "random"], "--episodes", 1, MAX_INT),
    (["eval", "--env", "toy:tiger", "--agent", "random"], "--seed", 0, MAX_SEED),
    (["eval", "--env", "toy:tiger", "--agent", "random"], "--max-steps", 1, MAX_INT),
    (["eval", "--env", "toy:tiger", "--agent", "random"], "--trials", 1, MAX_INT),
    (["eval", "--env", "toy:tiger", "--agent", "random"], "--workers", 1, MAX_INT),
    (["report", "runs/x"], "--seed", 0, MAX_SEED),
    (["report", "runs/x"], "--resamples", 1, MAX_INT),
    (["train", "collect", "--env", "twx:coin", "--seeds", "1", "--out", "s"], "--max-steps", 1,
     MAX_INT),
    (["train", "collect", "--env", "twx:coin", "--seeds", "1", "--out", "s"], "--branches", 0,
     MAX_INT),
    (["train", "evaluate", "--data", "d"], "--limit", 1, MAX_INT),
    (["train", "evaluate", "--data", "d"], "--sample", 1, MAX_INT),
    (["train", "evaluate", "--data", "d"], "--seed", 0, MAX_SEED),
    (["train", "evaluate", "--data", "d"], "--max-new-tokens", 1, MAX_INT),
    (["train", "world-model", "--out", "o"], "--seed", 0, MAX_SEED),
    (["train", "critic", "--out", "o"], "--max-steps", 1, MAX_INT),
    (["train", "grpo-mr", "--out", "o"], "--batch-size", 1, MAX_INT),
    (["train", "cold-start", "--out", "o"], "--save-steps", 1, MAX_INT),
]  # fmt: skip

bad_ints = st.one_of(
    st.text(max_size=6),
    st.sampled_from(["1.5", "1_0", "1e3", "١", "２", " ", "0x10", "+", "nan", "inf", "2.0"]),
    st.integers(-(10**40), 10**40).map(str),
)


def one_line_error(rc: int, err: str, needle: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("smcplan") and "error: " in lines[0], err
    assert needle in lines[0], err
    assert "Traceback" not in err


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=st.sampled_from(INT_FLAGS), value=bad_ints)
def test_every_integer_flag_is_parsed_strictly(case, value, capsys, tmp_path, monkeypatch):
    before, flag, low, high = case
    text = value.strip()
    if (ASCII_INT.fullmatch(text) and low <= int(text) <= high) or (
        flag == "--branches" and value == "all"
    ):
        return  # a valid value: the command would run
    monkeypatch.chdir(tmp_path)
    rc = main([*before, f"{flag}={value}"])
    one_line_error(rc, capsys.readouterr().err, f"argument {flag}")


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    word=st.one_of(st.text(max_size=5), st.sampled_from(["No", "off", "nah", "2", "[]", "null!"]))
)
def test_boolean_options_accept_six_words_and_refuse_the_rest(word, capsys, tmp_path):
    if word in BOOL_WORDS or "=" in word or not word.strip() or word in ("true", "false"):
        return
    try:
        json.loads(word)
        return  # a JSON value (a number, null, a list) is its own case, below
    except ValueError:
        pass
    shard = tmp_path / "d.jsonl"
    shard.write_text("{}\n")
    rc = main(["train", "world-model", "--out", str(tmp_path / "o"), "--data", str(shard),
               "--opt", f"full={word}"])  # fmt: skip
    one_line_error(rc, capsys.readouterr().err, "--opt full must be a boolean")
    rc = main(["eval", "--env", "toy:tiger", "--agent", "react", "--seeds", "0",
               "--agent-arg", f"think={word}", "--out", str(tmp_path / "run")])  # fmt: skip
    one_line_error(rc, capsys.readouterr().err, "think must be a boolean")
    assert not (tmp_path / "o").exists() and not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("opt", "needle"),
    [
        ("max_examples=abc", "--opt max_examples must be an integer; got 'abc'"),
        ("max_examples=1.5", "--opt max_examples must be an integer; got 1.5"),
        ("max_examples=0", "--opt max_examples must be >= 1; got 0"),
        ("full=2", "--opt full must be a boolean; got 2"),
        ("real_share=nan", "--opt real_share must be a finite number; got 'nan'"),
        ("depths=[0,-1]", "--opt depths (e.g. [0,1]) must be >= 0; got -1"),
        ("target=tail", "--opt target must be one of full, head; got 'tail'"),
    ],
)
def test_a_bad_trainer_option_is_one_line_naming_it(opt, needle, capsys, tmp_path):
    rc = main(["train", "world-model", "--out", str(tmp_path / "o"), "--data", "d.jsonl",
               "--opt", opt])  # fmt: skip
    one_line_error(rc, capsys.readouterr().err, needle)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["eval", "--env", "toy:tiger", "--agent", "random", "--seeds", "0", "--out"], "file"),
        (["report", "RUN", "--no-plots", "--no-viewer", "--out"], "file"),
        (["train", "collect", "--env", "toy:household", "--seeds", "0", "--source", "gold",
          "--out"], "dir"),
        (["train", "evaluate", "--data", "SHARD", "--out"], "dir"),
        (["train", "world-model", "--data", "SHARD", "--out"], "file"),
        (["train", "critic-head", "--data", "SHARD", "--out"], "file"),
        (["train", "grpo-mr", "--out"], "file"),
    ],
)  # fmt: skip
def test_out_naming_the_wrong_kind_of_path_is_one_line(argv, kind, capsys, tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "file").write_text("keep me\n")
    shard = tmp_path / "s.jsonl"
    shard.write_text("{}\n")
    argv = [str(shard) if a == "SHARD" else str(tmp_path / "run") if a == "RUN" else a
            for a in argv]  # fmt: skip
    wrong = tmp_path / kind if kind == "file" else tmp_path / "run"
    rc = main([*argv, str(wrong)])
    what = "is an existing file" if kind == "file" else "is an existing directory"
    one_line_error(rc, capsys.readouterr().err, f"--out {str(wrong)!r} {what}")
    rc = main([*argv, str(tmp_path / "file" / "below")])  # a path under a file
    one_line_error(rc, capsys.readouterr().err, "is a file, not a directory")
    assert (tmp_path / "file").read_text() == "keep me\n"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["train", "collect", "--env", "twx:coin", "--seeds", "0-3000000000", "--out", "s.jsonl"],
         "3,000,000,001 seeds, more than the limit of 1,000,000"),
        (["eval", "--env", "toy:tiger", "--agent", "random", "--seeds",
          "0-99999999999999999999", "--out", "run"], "more than the limit of 1,000,000"),
        (["eval", "--env", "toy:tiger", "--agent", "random", "--seeds", "3000000000",
          "--episodes", "1", "--out", "run"], f"seed must be <= {MAX_SEED}; got 3000000000"),
        (["train", "collect", "--env", "toy:household", "--seeds", "2147483648", "--out",
          "s.jsonl"], f"seed must be <= {MAX_SEED}"),
        # what the env accepts, found without starting its JVM
        (["eval", "--env", "twx:coin", "--agent", "random", "--seeds", "10000,5000", "--out",
          "run"], "twx:coin: TextWorldExpress seed 5000 is in no fold; valid seeds: train 0-999"),
        (["eval", "--env", "twx", "--agent", "random", "--seeds", "10000", "--env-arg",
          "split=test", "--out", "run"], "seed 10000 is in fold 'dev', not in split 'test'"),
    ],
)  # fmt: skip
def test_seed_ranges_are_checked_before_they_are_expanded(
    argv, needle, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    t0 = time.perf_counter()
    rc = main(argv)
    assert time.perf_counter() - t0 < 30  # expanding 3e9 seeds takes minutes and 100+ GB
    one_line_error(rc, capsys.readouterr().err, needle)
    assert not list(tmp_path.iterdir())  # nothing written


def _strict(text: str):
    def refuse(token):
        raise AssertionError(f"{token} written into a JSON file")

    return json.loads(text, parse_constant=refuse)


def test_train_evaluate_writes_no_nan_into_its_score(tmp_path, capsys, monkeypatch):
    """The score of a shard without branches has ``branch_event`` NaN: written as null, with
    the explanation, and the file is strict JSON."""
    from smcplan.train import world_model

    shard = tmp_path / "s.jsonl"
    _write_shard(shard)
    monkeypatch.setattr("smcplan.llm.load_model", lambda model, adapter=None: object())
    monkeypatch.setattr(
        world_model, "evaluate_world_model",
        lambda lm, examples, **kw: world_model.WorldModelScore(
            len(examples), 0.0, (0.0, 0.5), 0.0, (0.0, 0.0), 0.1, [], float("nan"),
            (float("nan"), float("inf")),
        ),
    )  # fmt: skip
    out = tmp_path / "score.json"
    argv = ["train", "evaluate", "--data", str(shard), "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    body = _strict(out.read_text())
    assert body["event"] is None and body["event_ci"] == [None, None]
    assert body["branch_event"] is None
    assert body["non_finite"]["fields"] == {
        "event": "nan", "event_ci[0]": "nan", "event_ci[1]": "inf", "branch_event": "nan"
    }  # fmt: skip
    assert "event=nan" in capsys.readouterr().out  # the printed line may say nan; the file not


def _write_shard(path, seeds=(1,)):
    from smcplan.train.data import SHARD_SCHEMA

    rows = [{"kind": "header", "schema": SHARD_SCHEMA, "env": "twx:coin", "seeds": list(seeds)}]
    for seed in seeds:
        rows.append({
            "kind": "transition", "episode": f"twx:coin/{seed}", "seed": seed, "t": 0,
            "task": "Find the coin.", "observation": "You are in the kitchen.",
            "action": "take coin", "next_observation": "You take the coin.", "reward": 1.0,
            "done": True, "won": True, "score": 1.0, "facts": [],
        })  # fmt: skip
        rows.append({"kind": "episode", "episode": f"twx:coin/{seed}", "seed": seed,
                     "won": True, "steps": 1, "score": 1.0})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.slow
def test_a_torn_last_shard_line_is_fixed_by_the_resume_its_error_suggests(tmp_path, capsys):
    """(The real TextWorldExpress JVM: gold paths of three games, a few seconds.)"""
    from smcplan.train.data import DatasetLineError, read_shard

    shard = tmp_path / "s.jsonl"
    argv = ["train", "collect", "--env", "twx:coin", "--seeds", "10000-10002", "--source",
            "gold", "--max-steps", "40", "--out", str(shard), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    whole = read_shard(shard)
    assert len(whole.episodes) == 3
    text = shard.read_text()
    shard.write_text(text[: len(text) - 25])  # a kill mid-write tore the last line
    fix = "rerun the same `smcplan train collect` with --resume"
    with pytest.raises(DatasetLineError, match=fix) as info:
        read_shard(shard)
    assert str(info.value).startswith(f"{shard}:{text.count(chr(10))}: not valid JSON")
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0, capsys.readouterr().err  # the suggested fix works
    again = read_shard(shard)
    assert sorted(again.episodes) == sorted(whole.episodes) and again.torn_line is None
    # a damaged line in the middle is not a torn tail: resume refuses it, naming the line
    lines = shard.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:10] + "\n"
    shard.write_text("".join(lines))
    rc = main([*argv, "--resume"])
    one_line_error(rc, capsys.readouterr().err, f"{shard}:3: not valid JSON")
