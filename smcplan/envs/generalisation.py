"""RLVMR's generalisation splits as fixed episode lists: ALFWorld L0 / L1 / L2, ScienceWorld unseen.

RLVMR (Zhang et al. 2025, arXiv 2507.22844) reports three levels of generalisation. Its code (the
``RLVMR/code`` folder of Tencent's DigitalHuman repository, read from the public mirror
``zzjweb/digitalhuman`` at commit 5d02be6) defines them as follows.

* **ALFWorld** (``agent_system/environments/env_package/alfworld/configs``): task-type ids
  1 Pick & Place, 2 Examine in Light, 3 Clean & Place, 4 Heat & Place, 5 Cool & Place,
  6 Pick Two & Place. L0 evaluates on ``valid_seen`` (seen scenes), L1 on ``valid_unseen``
  (unseen scenes, i.e. unseen instances); for L2 the agent trains on ``task_types: [1, 2, 3, 4]``
  (``config_tw_train_ood.yaml``) and is evaluated on ``task_types: [5, 6]``
  (``config_tw_test_ood.yaml``): Cool & Place and Pick Two & Place are held out.
* **ScienceWorld** (``.../sciworld/variations_idx/L{0,1,2}_idx.json``, pairs of task index into
  ScienceWorld's alphabetically sorted task names and variation index): L0 tests on the
  simulator's *dev* variations of 29 tasks (1661 episodes), L1 on its *test* variations (1684),
  L2 trains on 19 tasks and tests on the test variations of the other 10 (549); use-thermometer
  is in none of them. The 10 held-out tasks are :data:`SCIENCEWORLD_UNSEEN_TASKS`.

This repository has no training, so "seen" means "the task types / scenes an agent may be tuned
on". To keep one consistent ladder without training, the three ALFWorld levels share RLVMR's L2
partition of task types (RLVMR's own L0/L1 runs train and test on all six types):

==============  ==========================================================  =========
split           episodes                                                    size
==============  ==========================================================  =========
alfworld-l0     the 4 seen task types x seeds 200-209 on ALFRED's training  40
                scenes (``split="train"``): seen types, seen scenes
alfworld-l1     the 4 seen task types x seeds 200-209 on the held-out       40
                scenes (``split="test"``): seen types, unseen instances
alfworld-l2     pick_cool_then_place, pick_two_obj_and_place x seeds        20
                200-209 on the held-out scenes: unseen task types
scienceworld-   the 10 held-out tasks x all their test variations (RLVMR's  549
unseen          L2 test list exactly)
==============  ==========================================================  =========

ALFWorld games are ALFWorld-engine games generated offline (``smcplan.envs.alfworld_gen``), not
the official ``valid_seen`` / ``valid_unseen`` sets, which need a download; seeds 200-209 are
used by no other split. Entries are in task order, then seed / variation order; ``smcplan eval
--episodes k`` takes the first ``k`` of each task.

Pure Python; imports only the adapters' name tables (no benchmark package, no JVM).
"""

from __future__ import annotations

from smcplan.envs.base import unknown_choice
from smcplan.envs.split_tables import ALFWORLD_TASK_TYPES, SCIENCEWORLD_VARIATIONS, SplitEntry

__all__ = [
    "GENERALISATION_SPLITS",
    "ALFWORLD_SEEN_TASK_TYPES",
    "ALFWORLD_UNSEEN_TASK_TYPES",
    "ALFWORLD_GENERALISATION_SEEDS",
    "SCIENCEWORLD_UNSEEN_TASKS",
    "generalisation_split",
]

GENERALISATION_SPLITS = ("alfworld-l0", "alfworld-l1", "alfworld-l2", "scienceworld-unseen")

#: RLVMR's task types 1-4 (Pick & Place, Examine in Light, Clean & Place, Heat & Place).
ALFWORLD_SEEN_TASK_TYPES = (
    "pick_and_place",
    "look_at_obj_in_light",
    "pick_clean_then_place",
    "pick_heat_then_place",
)
#: RLVMR's held-out task types 5-6 (Cool & Place, Pick Two & Place).
ALFWORLD_UNSEEN_TASK_TYPES = ("pick_cool_then_place", "pick_two_obj_and_place")
ALFWORLD_GENERALISATION_SEEDS = range(200, 210)

#: The task indices 1, 4, 8, 11, 13, 16, 18, 21, 24, 28 of RLVMR's ``L2_idx.json`` test list.
SCIENCEWORLD_UNSEEN_TASKS = (
    "change-the-state-of-matter-of",
    "chemistry-mix-paint-tertiary-color",
    "find-plant",
    "grow-plant",
    "identify-life-stages-2",
    "inclined-plane-friction-unnamed-surfaces",
    "lifespan-longest-lived-then-shortest-lived",
    "measure-melting-point-unknown-substance",
    "mendelian-genetics-unknown-plant",
    "test-conductivity-of-unknown-substances",
)

assert set(ALFWORLD_SEEN_TASK_TYPES) | set(ALFWORLD_UNSEEN_TASK_TYPES) == set(ALFWORLD_TASK_TYPES)


def _alfworld(task_types: tuple[str, ...], scenes: str) -> list[SplitEntry]:
    return [
        SplitEntry(f"alfworld:{t}", seed, t, {"split": scenes})
        for t in task_types
        for seed in ALFWORLD_GENERALISATION_SEEDS
    ]


def _scienceworld_unseen() -> list[SplitEntry]:
    entries = []
    for task in SCIENCEWORLD_UNSEEN_TASKS:
        _dev, (lo, hi) = SCIENCEWORLD_VARIATIONS[task]
        entries += [SplitEntry(f"scienceworld:{task}", v, task) for v in range(lo, hi)]
    return entries


def generalisation_split(name: str) -> list[SplitEntry]:
    """The entries of one of :data:`GENERALISATION_SPLITS` (module docstring)."""
    if name == "alfworld-l0":
        return _alfworld(ALFWORLD_SEEN_TASK_TYPES, "train")
    if name == "alfworld-l1":
        return _alfworld(ALFWORLD_SEEN_TASK_TYPES, "test")
    if name == "alfworld-l2":
        return _alfworld(ALFWORLD_UNSEEN_TASK_TYPES, "test")
    if name == "scienceworld-unseen":
        return _scienceworld_unseen()
    raise unknown_choice("generalisation split", name, GENERALISATION_SPLITS)
