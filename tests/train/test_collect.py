"""Collection on a real environment (twx:coin, a JVM): shards, header, resume, torn episodes."""

from __future__ import annotations

import json
import re

import pytest

from smcplan.train.collect import CollectError, collect
from smcplan.train.data import SHARD_SCHEMA, read_shard

pytestmark = pytest.mark.slow  # starts a real JVM


#: TWX's coin gold path is a random walk of the house seeded by the game's seed (seed 10000, dev:
#: 12 steps; at most 37 over all 3,000 seeds), so the step limit holds any seed's path.
GOLD_STEPS = 60


def test_gold_collection_writes_a_resumable_shard(tmp_path):
    out = tmp_path / "gold.jsonl"
    first = collect(
        "twx:coin", [10000], out, source="gold", split="dev", max_steps=GOLD_STEPS, progress=False
    )
    assert (first.played, first.skipped, first.won) == (1, 0, 1)
    shard = read_shard(out)
    assert shard.header["schema"] == SHARD_SCHEMA and shard.header["env"] == "twx:coin"
    assert shard.header["split"] == "dev" and shard.header["source"] == "gold"
    assert shard.header["commit"]  # the repository's commit
    steps = shard.transitions
    assert [t["t"] for t in steps] == list(range(len(steps))) and steps[-1]["won"]
    assert steps[1]["observation"] == steps[0]["next_observation"]
    assert any(f[:2] == ["agent", "in"] for f in steps[0]["facts"])
    # a torn episode (killed mid-way) is dropped on resume; finished ones are skipped
    torn = {**steps[0], "episode": "twx:coin/10001", "seed": 10001}
    with open(out, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(torn) + "\n")
    again = collect(
        "twx:coin",
        [10000, 10001],
        out,
        source="gold",
        split="dev",
        max_steps=GOLD_STEPS,
        resume=True,
        progress=False,
    )
    assert (again.played, again.skipped) == (1, 1)
    shard = read_shard(out)
    assert sorted(shard.episodes) == ["twx:coin/10000", "twx:coin/10001"] and not shard.partial
    # the header keeps every seed asked for, and which resume added which
    assert shard.header["seeds"] == [10000, 10001]
    assert [r["seeds"] for r in shard.header["resumes"]] == [[10001]]
    assert shard.header["resumes"][0]["commit"] == shard.header["commit"]
    assert [t["t"] for t in shard.transitions if t["seed"] == 10001][0] == 0
    with pytest.raises(CollectError, match="exists; pass --resume"):
        collect("twx:coin", [10000], out, source="gold", split="dev", progress=False)
    with pytest.raises(CollectError, match=f"max_steps={GOLD_STEPS}, not 5"):
        collect(
            "twx:coin",
            [10000],
            out,
            source="gold",
            split="dev",
            max_steps=5,
            resume=True,
            progress=False,
        )


def test_oracle_collection_records_the_planner_config(tmp_path):
    out = tmp_path / "oracle.jsonl"
    result = collect(
        "twx:coin", [10002], out, source="oracle", split="dev", max_steps=2, progress=False
    )
    assert result.played == 1 and result.transitions == 2
    header = read_shard(out).header
    assert header["agent"] == "nesyfs"
    assert header["agent_config"]["planner"]["world_model"] == "simulator"
    assert header["agent_config"]["slow_thinking"] == "always"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seeds": [30000]}, "seeds: TextWorldExpress seed 30000 is in no fold"),
        ({"seeds": [10000], "split": "train"}, "seed 10000 is in fold 'dev', not in split 'train'"),
        ({"seeds": [0], "agent_config": {"planner.horizon": 0}}, "horizon must be an integer"),
    ],
)
def test_a_refused_request_writes_no_shard(tmp_path, kwargs, message):
    """Seeds outside the env's folds or split, and bad planner settings, fail before the shard
    is written (a rerun with good values must not need --resume)."""
    out = tmp_path / "bad.jsonl"
    with pytest.raises(ValueError, match=re.escape(message)):
        collect("twx:coin", out=out, source="oracle", max_steps=2, progress=False, **kwargs)
    assert not out.exists()


def test_branches_record_every_other_action_from_each_state(tmp_path):
    """branches="all": at each state, every admissible action but the policy's is taken once
    on a clone; the real episode is the one a clone-free run records, and a clone step is what
    the real environment answers to that action."""
    from smcplan.envs import make

    out = tmp_path / "branched.jsonl"
    result = collect(
        "twx:coin", [1], out, source="gold", split="train", max_steps=4,
        branches="all", progress=False,
    )  # fmt: skip
    shard = read_shard(out)
    assert shard.header["branches"] == "all" and result.transitions == 4
    steps, branches = shard.transitions, shard.branches
    assert [t["t"] for t in steps] == [0, 1, 2, 3]
    for t in steps:
        taken = {b["action"] for b in branches if b["t"] == t["t"]}
        assert taken == set(t["admissible"]) - {t["action"]}
        assert all(b["observation"] == t["observation"] for b in branches if b["t"] == t["t"])
    env = make("twx:coin", split="train")
    try:
        env.reset(1)
        for t in steps[:2]:
            for b in (b for b in branches if b["t"] == t["t"]):
                twin = env.clone()
                assert twin.step(b["action"])[0] == b["next_observation"]
                twin.close()
            assert env.step(t["action"])[0] == t["next_observation"]
    finally:
        env.close()
    # K branches: a seeded draw of K of the others; a resume must ask for the same K
    few = tmp_path / "few.jsonl"
    collect("twx:coin", [1], few, source="gold", split="train", max_steps=2, branches=2,
            progress=False)  # fmt: skip
    assert [sum(b["t"] == t for b in read_shard(few).branches) for t in (0, 1)] == [2, 2]
    with pytest.raises(CollectError, match="branches=2, not 0"):
        collect("twx:coin", [1], few, source="gold", split="train", max_steps=2,
                resume=True, progress=False)  # fmt: skip


@pytest.mark.parametrize("branches", [-1, "some", 1.5])
def test_a_bad_branches_value_names_the_argument(tmp_path, branches):
    from smcplan.errors import SmcplanError

    with pytest.raises(SmcplanError, match="branches"):
        collect("twx:coin", [1], tmp_path / "x.jsonl", source="gold", split="train",
                branches=branches, progress=False)  # fmt: skip
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize(
    ("env_name", "seeds", "split"),
    [("webshop", [75, 76], "train"), ("toy:household", [0, 1], None)],
)
def test_collection_on_a_family_without_its_own_triplet_grammar(tmp_path, env_name, seeds, split):
    """WebShop and the toy worlds read their observations with the ``auto`` grammar (their
    game homes' ``env_kind``); collection passed the env's name to the graph instead, which
    refused it.  Gold episodes with every branch are won, and a WebShop buy is recorded with
    its purchase reward."""
    out = tmp_path / "shard.jsonl"
    result = collect(env_name, seeds, out, source="gold", split=split, max_steps=15,
                     branches="all", progress=False)  # fmt: skip
    shard = read_shard(out)
    assert (result.played, result.won) == (2, 2) and shard.transitions[-1]["won"]
    if env_name == "webshop":
        buys = [b for b in shard.branches + shard.transitions if b["action"] == "click[buy now]"]
        assert buys and all(b["done"] and 0.0 <= b["reward"] <= 1.0 for b in buys)
        assert {b["won"] for b in buys} == {True, False}  # the gold buy, and buys before options
