"""Crash-safe run files and the resolution of a sweep's episodes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from smcplan.eval.episodes import EpisodeSpec, episode_seed, resolve_episodes
from smcplan.eval.records import JsonlWriter, RunPaths, atomic_write_json, read_jsonl, to_jsonable


def test_atomic_write_json_replaces_whole_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "sub" / "a.json"
    atomic_write_json(path, {"x": 1})
    atomic_write_json(path, {"x": 2, "arr": np.arange(3), "f": np.float32(0.5)})
    assert json.loads(path.read_text()) == {"x": 2, "arr": [0, 1, 2], "f": 0.5}
    assert [p.name for p in path.parent.iterdir()] == ["a.json"]


def test_jsonl_writer_flushes_each_line_to_partial_and_commit_renames(tmp_path):
    path = tmp_path / "e.steps.jsonl"
    w = JsonlWriter(path)
    w.write({"t": 0})
    w.write({"t": 1})
    # readable while the episode is running (flushed per line), under the .partial name
    assert [r["t"] for r in read_jsonl(w.partial)] == [0, 1]
    assert not path.exists()
    w.commit()
    assert [r["t"] for r in read_jsonl(path)] == [0, 1]
    assert not w.partial.exists()


def test_read_jsonl_skips_a_torn_last_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": 3, "b": [1, 2')
    assert [r["a"] for r in read_jsonl(path)] == [1, 2]


def test_to_jsonable_never_loses_a_value():
    class Odd:
        def __repr__(self):
            return "Odd()"

    out = to_jsonable({"n": np.int64(3), "t": (1, 2), "inf": float("inf"), "o": Odd()})
    assert out == {"n": 3, "t": [1, 2], "inf": "inf", "o": "Odd()"}
    json.dumps(out)


def test_run_paths_list_only_finished_summaries(tmp_path):
    paths = RunPaths(tmp_path)
    paths.episodes.mkdir()
    (paths.episodes / "a.json").write_text("{}")
    (paths.episodes / "a.steps.jsonl").write_text("")
    (paths.episodes / "b.steps.jsonl.partial").write_text("")
    (paths.episodes / ".b.json.123.tmp").write_text("")
    assert [p.name for p in paths.summaries()] == ["a.json"]


# --- episodes ----------------------------------------------------------------------------------


def test_explicit_seeds_pair_every_env_with_every_seed():
    specs = resolve_episodes(["twx:coin", "twx:sorting"], seeds=[3, 1, 2], episodes=2)
    assert [(s.env, s.seed) for s in specs] == [
        ("twx:coin", 3),
        ("twx:coin", 1),
        ("twx:sorting", 3),
        ("twx:sorting", 1),
    ]
    assert specs[0].id == "twx_coin-s3"


def test_split_entries_filter_by_env_or_prefix_and_truncate_per_env():
    entries = [
        ("twx:coin", None, 0),
        ("twx:coin", None, 1),
        ("twx:sorting", None, 0),
        {"env": "scienceworld:boil", "task": "boil", "variation": 7},
    ]
    specs = resolve_episodes(["twx"], split="dev", entries=entries)
    assert [s.env for s in specs] == ["twx:coin", "twx:coin", "twx:sorting"]
    specs = resolve_episodes(
        ["twx:coin", "scienceworld:boil"], split="dev", episodes=1, entries=entries
    )
    assert [(s.env, s.seed, s.task) for s in specs] == [
        ("twx:coin", 0, None),
        ("scienceworld:boil", 7, "boil"),
    ]


def test_unknown_env_in_split_names_the_known_ones():
    with pytest.raises(
        ValueError, match=r"no entry for env 'twx:con' in split 'dev'; known: twx:coin"
    ):
        resolve_episodes(["twx:con"], split="dev", entries=[("twx:coin", None, 0)])


def test_duplicate_episodes_are_refused():
    with pytest.raises(ValueError, match="duplicate episodes in the sweep: twx_coin-s1"):
        resolve_episodes(["twx:coin"], seeds=[1, 1])


def test_env_kwargs_change_the_episode_id_and_conflicts_with_split_raise():
    a = EpisodeSpec("twx:coin", 1)
    b = EpisodeSpec("twx:coin", 1, env_kwargs={"num_locations": 5})
    assert a.id != b.id and b.id.startswith("twx_coin-s1-k")
    entries = [{"env": "twx:coin", "seed": 0, "env_kwargs": {"fold": "dev"}}]
    with pytest.raises(ValueError, match="conflict"):
        resolve_episodes(["twx:coin"], split="dev", entries=entries, env_kwargs={"fold": "test"})


def test_episode_seed_depends_on_run_seed_and_id_only():
    assert episode_seed(0, "twx_coin-s1") == episode_seed(0, "twx_coin-s1")
    assert len({episode_seed(0, f"twx_coin-s{i}") for i in range(50)}) == 50
    assert episode_seed(0, "twx_coin-s1") != episode_seed(1, "twx_coin-s1")


def test_the_real_dev_split_resolves_per_env_and_per_family():
    coin = resolve_episodes(["twx:coin"], split="dev")
    assert [(s.env, s.seed) for s in coin] == [("twx:coin", 10000 + i) for i in range(5)]
    assert coin[0].id == "twx_coin-s10000"
    twx = resolve_episodes(["twx"], split="dev", episodes=2)
    assert len(twx) == 16 and len({s.env for s in twx}) == 8  # 2 per game, 8 games
    (boil,) = resolve_episodes(["scienceworld:boil"], split="dev", episodes=1)
    assert boil.env == "scienceworld:boil" and boil.task == "boil" and 14 <= boil.seed < 21
    alf = resolve_episodes(["alfworld:pick_and_place"], split="dev")
    assert all(s.env_kwargs == {"split": "train"} for s in alf) and len(alf) == 3


def test_unknown_split_names_the_known_ones():
    with pytest.raises(ValueError, match="unknown split 'val'; known: dev, test"):
        resolve_episodes(["twx:coin"], split="val")
