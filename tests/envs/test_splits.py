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
    with pytest.raises(ValueError, match="known: dev, test, alfworld-l0"):
        get_split("valid")


def test_eval_harness_reads_the_splits():
    from smcplan.eval.episodes import resolve_episodes

    specs = resolve_episodes(["twx:coin", "webshop"], split="test")
    assert [s.seed for s in specs[:10]] == list(range(20000, 20010))
    assert len(specs) == 10 + 50


def test_generalisation_split_sizes():
    assert split_summary("alfworld-l0") == {"alfworld": 40}
    assert split_summary("alfworld-l1") == {"alfworld": 40}
    assert split_summary("alfworld-l2") == {"alfworld": 20}
    # RLVMR's L2_idx.json test list: 549 (task, variation) pairs over 10 tasks
    assert split_summary("scienceworld-unseen") == {"scienceworld": 549}
    per_task = {}
    for e in get_split("scienceworld-unseen"):
        per_task[e.task] = per_task.get(e.task, 0) + 1
    # the simulator's test variations of each held-out task (counted in RLVMR's file)
    assert per_task == {
        "change-the-state-of-matter-of": 9,
        "chemistry-mix-paint-tertiary-color": 9,
        "find-plant": 75,
        "grow-plant": 33,
        "identify-life-stages-2": 4,
        "inclined-plane-friction-unnamed-surfaces": 42,
        "lifespan-longest-lived-then-shortest-lived": 32,
        "measure-melting-point-unknown-substance": 75,
        "mendelian-genetics-unknown-plant": 120,
        "test-conductivity-of-unknown-substances": 150,
    }


def test_alfworld_levels_hold_out_task_types_and_scenes():
    def types(name):
        return {e.task for e in get_split(name)}

    assert types("alfworld-l0") == types("alfworld-l1") == {
        "pick_and_place", "look_at_obj_in_light", "pick_clean_then_place", "pick_heat_then_place"
    }
    assert types("alfworld-l2") == {"pick_cool_then_place", "pick_two_obj_and_place"}
    assert not types("alfworld-l0") & types("alfworld-l2")
    assert {e.env_kwargs["split"] for e in get_split("alfworld-l0")} == {"train"}
    assert {e.env_kwargs["split"] for e in get_split("alfworld-l1")} == {"test"}
    assert {e.env_kwargs["split"] for e in get_split("alfworld-l2")} == {"test"}
    # no generalisation episode is a dev or test episode
    def keys(name):
        return {(e.env, e.seed, tuple(sorted(e.env_kwargs.items()))) for e in get_split(name)}

    levels = keys("alfworld-l0") | keys("alfworld-l1") | keys("alfworld-l2")
    assert len(levels) == 100
    assert not levels & (keys("dev") | keys("test"))


def test_scienceworld_unseen_is_test_variations_of_tasks_outside_its_training_set():
    for e in get_split("scienceworld-unseen"):
        _dev, (lo, hi) = SCIENCEWORLD_VARIATIONS[e.task]
        assert lo <= e.seed < hi and e.env == f"scienceworld:{e.task}"
    unseen = {e.task for e in get_split("scienceworld-unseen")}
    assert len(unseen) == 10 and "use-thermometer" not in unseen


def test_generalisation_splits_are_deterministic_and_reach_the_harness():
    from smcplan.eval.episodes import resolve_episodes

    for name in ("alfworld-l0", "alfworld-l1", "alfworld-l2", "scienceworld-unseen"):
        assert get_split(name) == get_split(name)
    specs = resolve_episodes(["alfworld"], split="alfworld-l2", episodes=2)
    assert [(s.env, s.seed) for s in specs] == [
        ("alfworld:pick_cool_then_place", 200),
        ("alfworld:pick_cool_then_place", 201),
        ("alfworld:pick_two_obj_and_place", 200),
        ("alfworld:pick_two_obj_and_place", 201),
    ]


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
