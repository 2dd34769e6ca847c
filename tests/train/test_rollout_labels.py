"""Monte Carlo labels of a shard's steps (smcplan.train.rollout_labels): the rollout's win
probability against exact enumeration, the untried policy by hand, a real WebShop shard
labelled, replayed, resumed and refused when the replay differs, and typed errors."""

from __future__ import annotations

import copy
import json
import math
import random

import pytest

from smcplan.errors import InvalidArgumentError
from smcplan.train.collect import CollectError, collect
from smcplan.train.rollout_labels import label_shard, read_labels, rollout_win

from .toy_corridor import ACTIONS, Corridor


class ClonableCorridor(Corridor):
    def clone(self):
        return copy.deepcopy(self)

    def admissible_actions(self):
        return list(ACTIONS)


def test_uniform_rollouts_estimate_the_corridors_exact_win_probability():
    """From room 0 a uniform policy wins the 4-step corridor with probability 7/81
    (toy_corridor's docstring, by enumeration); M rollouts estimate it with standard error
    sqrt(p(1-p)/M), and 4.5 of them bound a two-sided miss at probability 7e-6."""
    m, p = 20_000, 7 / 81
    rng = random.Random(0)
    wins = 0
    for _ in range(m):
        env = ClonableCorridor()
        obs, info = env.reset(0)
        wins += rollout_win(env, obs, info["admissible_actions"], rng, 10, "uniform")
    assert abs(wins / m - p) <= 4.5 * math.sqrt(p * (1 - p) / m)


class OneRoom:
    """One page, three actions; ``win`` ends the episode won, the others change nothing."""

    def __init__(self):
        self.steps = 0

    def step(self, action):
        self.steps += 1
        won = action == "win"
        return "a room", 0.0, won, {"won": won, "admissible_actions": ["a", "b", "win"]}

    def admissible_actions(self):
        return ["a", "b", "win"]


def test_untried_rollouts_try_every_action_before_any_twice():
    """With three actions on one unchanging page, the untried policy has tried all three
    (the winning one among them) after three steps, whatever it draws: it always wins, where
    uniform draws lose three steps with probability (2/3)^3."""
    rng = random.Random(1)
    for _ in range(200):
        assert rollout_win(OneRoom(), "a room", ["a", "b", "win"], rng, 3, "untried")


@pytest.fixture(scope="module")
def webshop_shard(tmp_path_factory):
    path = tmp_path_factory.mktemp("ws") / "gold.jsonl"
    collect("webshop", [75], path, source="gold", split="train", max_steps=15, branches=3,
            progress=False)  # fmt: skip
    return path


def test_a_webshop_shard_is_labelled_replayed_and_resumed(webshop_shard, tmp_path):
    out = tmp_path / "labels.jsonl"
    r = label_shard(webshop_shard, "webshop", out, rollouts=4, rollout_steps=6, seed=0)
    records = [json.loads(x) for x in webshop_shard.read_text().splitlines()[1:]]
    steps = [x for x in records if x["kind"] in ("transition", "branch")]
    assert r["episodes"] == 1 and r["rows"] == len(steps)
    labels = read_labels(out)["webshop/75"]
    assert set(labels) == {(x["t"], x["action"]) for x in steps}
    last = max((x for x in steps if x["kind"] == "transition"), key=lambda x: x["t"])
    assert last["action"] == "click[buy now]" and last["won"]
    assert labels[(last["t"], last["action"])] == 1.0  # the gold purchase: exact, no rollouts
    for x in steps:
        value = labels[(x["t"], x["action"])]
        if x["done"]:
            assert value == float(x["won"])
        else:
            assert value * 4 == round(value * 4)  # a share of 4 rollouts
    again = tmp_path / "again.jsonl"
    label_shard(webshop_shard, "webshop", again, rollouts=4, rollout_steps=6, seed=0)
    assert again.read_text() == out.read_text()  # seeded: the same labels
    resumed = label_shard(webshop_shard, "webshop", out, rollouts=4, rollout_steps=6,
                          resume=True)  # fmt: skip
    assert (resumed["episodes"], resumed["skipped"]) == (0, 1)


def test_a_torn_episode_is_relabelled_on_resume(webshop_shard, tmp_path):
    out = tmp_path / "labels.jsonl"
    label_shard(webshop_shard, "webshop", out, rollouts=2, rollout_steps=3)
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:3]) + "\n" + lines[3][:10])  # killed mid-episode
    assert read_labels(out) == {}
    r = label_shard(webshop_shard, "webshop", out, rollouts=2, rollout_steps=3, resume=True)
    assert r["episodes"] == 1 and len(read_labels(out)["webshop/75"]) == len(lines) - 1


def test_a_replay_that_differs_is_refused(webshop_shard, tmp_path):
    lines = [json.loads(x) for x in webshop_shard.read_text().splitlines()]
    for x in lines:
        if x.get("kind") == "transition" and x["t"] == 1:
            x["observation"] = "a page this goal never shows"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(CollectError, match="not deterministic"):
        label_shard(bad, "webshop", tmp_path / "l.jsonl", rollouts=1, rollout_steps=1)


def test_bad_arguments_are_typed_errors(webshop_shard, tmp_path):
    out = tmp_path / "l.jsonl"
    with pytest.raises(InvalidArgumentError, match="rollouts"):
        label_shard(webshop_shard, "webshop", out, rollouts=0)
    with pytest.raises(InvalidArgumentError, match="rollout_steps"):
        label_shard(webshop_shard, "webshop", out, rollout_steps=0)
    with pytest.raises(InvalidArgumentError, match="policy='greedy'.*untried"):
        label_shard(webshop_shard, "webshop", out, policy="greedy")
    out.write_text("")
    with pytest.raises(InvalidArgumentError, match="exists; pass resume=True"):
        label_shard(webshop_shard, "webshop", out)


def test_the_cli_labels_each_shard_and_refuses_bad_flags_in_one_line(webshop_shard, tmp_path,
                                                                      capsys):  # fmt: skip
    from smcplan.train.cli import main
    from smcplan.train.rollout_labels import labels_path

    out = tmp_path / "labels"
    base = ["rollout-labels", "--data", str(webshop_shard), "--out", str(out)]
    opts = ["--opt", "rollouts=2", "--opt", "rollout_steps=3"]
    assert main([*base, *opts, "--no-progress"]) == 0
    assert "steps labelled in 1 shard(s)" in capsys.readouterr().out
    direct = tmp_path / "direct.jsonl"
    label_shard(webshop_shard, "webshop", direct, rollouts=2, rollout_steps=3, seed=0)
    assert labels_path(out, webshop_shard).read_text() == direct.read_text()
    manifest = json.loads((out / "train.json").read_text())
    assert manifest["shards"][0]["episodes"] == 1 and manifest["rollouts"] == 2
    for extra, needle in (
        (opts, "exists; pass resume=True"),
        (["--opt", "rollouts=0"], "--opt rollouts"),
        (["--opt", "policy=greedy"], "--opt policy"),
        (["--lr", "0.1"], "--lr=0.1"),
        (["--opt", "horizon=3"], "unknown option 'horizon'"),
    ):
        assert main([*base, *extra]) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (extra, err)
    assert main([*base, *opts, "--resume", "--no-progress"]) == 0  # nothing left to label


def test_ctrl_c_keeps_the_finished_episodes_and_resume_labels_the_rest(tmp_path):
    """SIGINT once the first episode is on disk: exit 130, a message naming --resume, only
    whole episodes in the file; ``--resume`` labels the rest, and (each episode's rollouts
    seeded by its own seed) the labels equal an uninterrupted run's."""
    import os
    import signal
    import subprocess
    import sys
    import time

    shard = tmp_path / "gold.jsonl"
    collect("webshop", list(range(75, 81)), shard, source="gold", split="train", max_steps=15,
            branches="all", progress=False)  # fmt: skip
    out = tmp_path / "labels"
    argv = [sys.executable, "-m", "smcplan.train.cli", "rollout-labels", "--data", str(shard),
            "--out", str(out), "--opt", "rollouts=64", "--opt", "rollout_steps=10",
            "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    target = out / "gold.labels.jsonl"
    deadline = time.monotonic() + 120
    while not (target.is_file() and '"end": true' in target.read_text()):
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err.decode()[-2000:]
    assert "--resume" in err.decode()
    kept = read_labels(target)
    assert 1 <= len(kept) < 6
    env_argv = [*argv, "--resume"]
    assert subprocess.run(env_argv, capture_output=True, env=env, timeout=300).returncode == 0
    direct = tmp_path / "direct.jsonl"
    label_shard(shard, "webshop", direct, rollouts=64, rollout_steps=10)
    assert read_labels(target) == read_labels(direct)
