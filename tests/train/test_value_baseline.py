"""The rule twist a learned value head is compared with: each state's real path, the twist's
log-potential along it by hand, and the paired AUC comparison over episodes."""

from __future__ import annotations

import math

import pytest

from smcplan.errors import InvalidArgumentError
from smcplan.train.data import read_shard
from smcplan.train.value_baseline import compare_auc, twist_log_psi
from smcplan.train.value_head import value_states

from .conftest import ACTIONS, BRANCH, OBS, write_shard


def _states(tmp_path, episodes=(1,), branches=True):
    shard = read_shard(write_shard(tmp_path / "s.jsonl", episodes=episodes, branches=branches))
    return value_states([shard], within=1, history=True)


def test_each_state_carries_the_real_path_that_led_to_it(tmp_path):
    """Path states carry the steps before them; the won state the whole path; the branch at the
    first state did not end the episode, so it is not a state (value_states' docstring)."""
    rows = _states(tmp_path)
    assert [r["kind"] for r in rows] == ["path", "path", "won"]
    assert all(r["root"] == OBS[0] for r in rows)
    assert [[h[0] for h in r["history"]] for r in rows] == [[], ACTIONS[:1], ACTIONS]
    assert rows[2]["history"][-1] == (ACTIONS[1], OBS[2], 1.0, True, False, True)
    assert BRANCH[0] not in {h[0] for r in rows for h in r["history"]}
    assert "history" not in value_states([read_shard(tmp_path / "s.jsonl")])[0]


def test_a_branch_that_ended_the_episode_is_reached_through_its_own_step(tmp_path):
    """A losing branch at t = 1: its state's path is the first real step, then the branch."""
    import json

    path = write_shard(tmp_path / "s.jsonl", episodes=(1,))
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    second = next(x for x in lines if x.get("kind") == "transition" and x["t"] == 1)
    lost = {**second, "kind": "branch", "action": "eat coin", "next_observation": "You lose.",
            "reward": 0.0, "won": False, "done": True, "score": 0.0}  # fmt: skip
    lines.insert(-1, lost)  # before the episode's closing record
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rows = value_states([read_shard(path)], within=1, history=True)
    dead = [r for r in rows if r["kind"] == "dead_end"]
    assert len(dead) == 1
    assert [h[0] for h in dead[0]["history"]] == [ACTIONS[0], "eat coin"]
    assert dead[0]["history"][-1][3:] == (False, True, True)  # not won, lost, done


def test_the_twists_log_potential_along_the_path_by_hand(tmp_path):
    """env: 0 until the last step, which gains 1 and wins (an ending counts 1 + H - t = 1 at
    t = H = 2).  novelty (no game knowledge): step 1 reaches the hallway, a new place and a
    new entity: 1/2 (1/sqrt(1) + 1) = 1; step 2 stays there (visited once) and names the coin,
    new: 1/2 (1/sqrt(2) + 1).  The sum is the sum of the parts."""
    rows = _states(tmp_path)
    assert twist_log_psi(rows, "env") == [0.0, 0.0, 2.0]
    second = 0.5 * (1.0 / math.sqrt(2.0) + 1.0)
    tol = 1e-6  # the twists sum in float32 (jax): about 2^-23 relative
    assert twist_log_psi(rows, "novelty") == pytest.approx([0.0, 1.0, 1.0 + second], abs=tol)
    assert twist_log_psi(rows, "env+novelty") == pytest.approx([0.0, 1.0, 3.0 + second], abs=tol)


def test_a_state_without_its_path_is_a_typed_error(tmp_path):
    rows = value_states([read_shard(write_shard(tmp_path / "s.jsonl"))], within=1)
    with pytest.raises(InvalidArgumentError, match="history=True"):
        twist_log_psi(rows)


def test_the_comparison_is_paired_over_episodes(tmp_path):
    """Two episodes, labels (0, 1, 1) each: a ranking that follows the steps to success has AUC
    1 and its reverse AUC 0, so the difference is 1 in every resample; swapping them gives -1."""
    rows = _states(tmp_path, episodes=(1, 2), branches=False)
    good = [float(r["t"] + (r["kind"] == "won")) for r in rows]
    bad = [-s for s in good]
    out = compare_auc(good, bad, rows, resamples=50, seed=0)
    assert out["auc_difference"] == 1.0 and out["ci95"] == [1.0, 1.0]
    assert out["unit"] == "episode" and out["resamples"] == 50
    assert compare_auc(bad, good, rows, resamples=50)["auc_difference"] == -1.0
