"""The trainer registry and ``smcplan train``: typed errors, one-line usage errors (exit 2)."""

from __future__ import annotations

import pytest

from smcplan.errors import UnknownNameError
from smcplan.train import registry
from smcplan.train.cli import main as train_main


def test_the_registry_names_the_trainers():
    names = ["cold-start", "critic", "critic-head", "grpo-mr", "grpo-mr-head", "rollout-labels",
             "value-head", "value-siblings", "world-model"]  # fmt: skip
    assert registry.trainer_names() == names
    from smcplan.train.world_model import run

    assert registry.trainer("world-model") is run


def test_an_unknown_trainer_lists_the_known_names():
    with pytest.raises(UnknownNameError) as info:
        registry.trainer("ppo")
    message = str(info.value)
    assert "unknown trainer 'ppo'" in message
    assert all(name in message for name in registry.trainer_names())


def test_a_registered_trainer_whose_module_is_missing_is_a_typed_error(monkeypatch):
    monkeypatch.setitem(registry.TRAINERS, "later", "smcplan.train.not_written_yet:run")
    with pytest.raises(registry.TrainerUnavailable, match="not_written_yet does not exist"):
        registry.trainer("later")
    monkeypatch.setitem(registry.TRAINERS, "later", "smcplan.train.registry:no_such_function")
    with pytest.raises(registry.TrainerUnavailable, match="no function 'no_such_function'"):
        registry.trainer("later")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["ppo", "--out", "x"], "invalid choice: 'ppo'"),
        (["world-model", "--out", "x", "--max-steps", "0"], "--max-steps: must be an integer"),
        (["world-model", "--out", "x", "--lr", "nan"], "--lr: must be a finite number > 0"),
        (["world-model", "--out", "x", "--seed", "-1"], "--seed: must be an integer >= 0"),
        (["world-model", "--out", "x", "--opt", "noequals"], "expected KEY=VALUE"),
        (["world-model"], "the following arguments are required: --out"),
        (["collect", "--env", "twx:coin", "--seeds", "1-x", "--out", "s.jsonl"], "bad seed list"),
        (
            ["collect", "--env", "twx:coin", "--seeds", "1", "--out", "s", "--source", "x"],
            "invalid choice: 'x'",
        ),
        (["world-model", "--out", "x"], "world-model needs --data SHARD"),
        (
            ["collect", "--env", "twx:coin", "--seeds", "1", "--out", "s", "--branches", "-2"],
            "--branches: expected an integer >= 0 or 'all', got '-2'",
        ),
        (["evaluate", "--data", "d.jsonl", "--sample", "0"], "--sample: must be an integer >= 1"),
        (
            ["world-model", "--out", "x", "--data", "d.jsonl", "--opt", "lr2=1"],
            "unknown option 'lr2' for trainer 'world-model'",
        ),
        (
            ["value-head", "--out", "x", "--data", "d.jsonl", "--opt", "heldout=5"],
            "--opt heldout must be a non-empty string or a JSON list of them; got 5",
        ),
    ],
)
def test_bad_flags_exit_2_with_one_line(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert train_main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err


def test_evaluate_scores_a_seeded_sample_with_its_branches(tmp_path, capsys):
    """``smcplan train evaluate --branches --sample K``: K examples drawn from the transitions
    and branches (the tiny model: the numbers are the metrics' own, not a quality claim)."""
    import json

    from smcplan.llm.testing import tiny_model_path

    from .conftest import write_shard

    data = write_shard(tmp_path / "s.jsonl", episodes=(1, 2), branches=True)
    out = tmp_path / "score.json"
    argv = ["evaluate", "--data", str(data), "--model", str(tiny_model_path(0)), "--branches",
            "--sample", "3", "--seed", "1", "--max-new-tokens", "4", "--no-progress"]  # fmt: skip
    assert train_main([*argv, "--out", str(out)]) == 0
    body = json.loads(out.read_text())
    assert body["n"] == 3 and body["with_branches"] is True and body["sample"] == 3
    assert body["branches"] == sum(p["branch"] for p in body["predictions"])
    assert len(body["predictions"]) == 3
    assert body["event"] == sum(p["event"] for p in body["predictions"]) / 3
    assert "event=" in capsys.readouterr().out
    # the same seed draws the same examples
    assert train_main([*argv, "--out", str(tmp_path / "again.json")]) == 0
    again = json.loads((tmp_path / "again.json").read_text())
    assert [p["truth"] for p in again["predictions"]] == [p["truth"] for p in body["predictions"]]


def test_the_main_cli_delegates_train(capsys):
    from smcplan.cli import main

    assert main(["train", "world-model", "--out", "x", "--max-steps", "-3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("smcplan train world-model: error: argument --max-steps")


def test_ctrl_c_stops_a_trainer_with_its_last_checkpoint_kept(tmp_path):
    """SIGINT after the first checkpoint: exit 130, one message naming --resume, the
    checkpoint still there (resuming from one is tests/llm/test_finetune.py's SIGKILL test)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from smcplan.llm.testing import tiny_model_path

    from .conftest import write_shard

    shard = write_shard(tmp_path / "s.jsonl", episodes=tuple(range(8)))
    out = tmp_path / "wm"
    argv = [
        sys.executable,
        "-m",
        "smcplan.train.cli",
        "world-model",
        "--data",
        str(shard),
        "--out",
        str(out),
        "--model",
        str(tiny_model_path()),
        "--max-steps",
        "400",
        "--save-steps",
        "1",
        "--batch-size",
        "1",
        "--opt",
        "threads=1",
        "--no-progress",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 120
    while not list((out / "checkpoints").glob("checkpoint-*/trainer_state.json")):
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err.decode()[-2000:]
    assert "rerun with --resume" in err.decode()
    assert list((out / "checkpoints").glob("checkpoint-*"))
    assert not (out / "adapter").exists()


@pytest.mark.parametrize(
    "trainer, flag, words",
    [
        ("critic-head", "--epochs", "no optimizer steps"),
        ("critic-head", "--save-steps", "no optimizer steps"),
        ("grpo-mr-head", "--max-steps", "checkpoints every iteration"),
    ],
)
def test_a_shared_flag_a_trainer_does_not_use_is_one_line_exit_2(
    tmp_path, capsys, trainer, flag, words
):
    shard = tmp_path / "shard.jsonl"
    shard.write_text("")
    rc = train_main([trainer, "--data", str(shard), "--out", str(tmp_path / "o"), flag, "3"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and f"{flag}=3" in err and words in err, err
    assert not (tmp_path / "o").exists()
