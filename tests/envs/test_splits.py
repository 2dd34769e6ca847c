"""The fixed dev/test splits: sizes, folds, no overlap, and agreement with the simulators."""

from __future__ import annotations

import pytest

from smcplan.envs import env_names
from smcplan.envs.scienceworld import ScienceWorldEnv
from smcplan.envs.splits import (
    SCIENCEWORLD_VARIATIONS,
    SplitEntry,
    get_split,
    split_summary,
    spread,
)
from smcplan.envs.textworld_express import fold_of_seed
from smcplan.envs.webshop.catalog import SYNTHETIC_SPLITS


def test_split_sizes():
    assert split_summary("dev") == {"twx": 40, "scienceworld": 60, "alfworld": 18, "webshop": 25}
    assert split_summary("test") == {"twx": 80, "scienceworld": 149, "alfworld": 60,
                                     "webshop": 50}


def test_entries_name_known_envs_and_come_from_held_out_folds():
    known = set(env_names())
    for split in ("dev", "test"):
        for e in get_split(split):
            assert isinstance(e, SplitEntry) and e.env in known
            family = e.env.split(":")[0]
            if family == "twx":
                assert fold_of_seed(e.seed) == split
            elif family == "scienceworld":
                dev, test = SCIENCEWORLD_VARIATIONS[e.task]
                lo, hi = dev if split == "dev" else test
                assert lo <= e.seed < hi
            elif family == "webshop":
                assert e.seed in SYNTHETIC_SPLITS[split]
            elif family == "alfworld":
                assert e.env_kwargs == {"split": "train" if split == "dev" else "test"}


def test_dev_and_test_do_not_overlap_and_have_no_duplicates():
    def keys(split):
        return [(e.env, e.seed, tuple(sorted(e.env_kwargs.items()))) for e in get_split(split)]

    dev, test = keys("dev"), keys("test")
    assert len(set(dev)) == len(dev) and len(set(test)) == len(test)
    assert not set(dev) & set(test)


def test_spread_picks_evenly_and_never_repeats():
    assert spread(range(21, 30), 5) == [21, 22, 24, 26, 28]
    assert spread(range(6, 10), 5) == [6, 7, 8, 9]
    with pytest.raises(ValueError, match="known: dev, test"):
        get_split("valid")


def test_eval_harness_reads_the_splits():
    from smcplan.eval.episodes import resolve_episodes

    specs = resolve_episodes(["twx:coin", "webshop"], split="test")
    assert [s.seed for s in specs[:10]] == list(range(20000, 20010))
    assert len(specs) == 10 + 50


@pytest.mark.slow  # one ScienceWorld JVM, 30 task probes (~15 s)
def test_scienceworld_variation_ranges_match_the_simulator():
    first = ScienceWorldEnv("boil")
    try:
        for task, (dev, test) in SCIENCEWORLD_VARIATIONS.items():
            env = ScienceWorldEnv(task, _share=first._jvm)
            assert env.variations("dev") == list(range(*dev)), task
            assert env.variations("test") == list(range(*test)), task
            env.close()
    finally:
        first.close()
