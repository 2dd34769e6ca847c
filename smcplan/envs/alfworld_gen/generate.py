"""Deterministic generation of solvable ALFWorld games from (task type, floor plan, seed).

Algorithm (one game):

1. Candidate floor plans: those of the ``split`` whose room type admits the task
   (``constants.GOALS_VALID``) and that support at least one goal
   (:func:`~smcplan.envs.alfworld_gen.scene.goal_candidates`), or the one ``layout`` asked for.
2. For attempt ``k = 0, 1, ..., MAX_ATTEMPTS - 1``: a ``random.Random`` seeded with the string
   ``"smcplan/alfworld/v<VERSION>/<task>/<split>/<layout>/<seed>/<k>"`` (string seeds are hashed
   with SHA-512 by CPython, so the stream does not depend on ``PYTHONHASHSEED``) picks the
   floor plan (when not fixed), samples a scene, writes the PDDL problem and the task
   sentence, and ALFWorld's hand-coded expert plays the game
   (:func:`~smcplan.envs.alfworld_gen.expert.expert_walkthrough`, global ``random`` seeded
   with ``seed``). The first attempt the expert wins is the game; its actions are the
   ``walkthrough``.
3. The game folder (``game.tw-pddl`` + ``traj_data.json``, both canonical JSON) is published
   atomically under :func:`~smcplan.envs.alfworld_gen.cache.cache_root`; later calls read it.

The files are those of an ALFWorld game (``alfworld-generate``'s format, with
``"solvable": true``), so ALFWorld's own ``AlfredTWEnv`` loader accepts the folder. They are
ALFWorld-engine games synthesised offline, NOT the official ALFWorld (json_2.1.1) evaluation
games; results on them are not comparable with published ALFWorld numbers.

Must not import anything from ``smcplan`` above ``smcplan.envs``.
"""

from __future__ import annotations

import functools
import json
import operator
import random
from dataclasses import dataclass
from pathlib import Path

from smcplan.envs.alfworld_gen import _deps
from smcplan.envs.alfworld_gen.cache import cache_root, publish_dir, write_json
from smcplan.envs.alfworld_gen.expert import expert_walkthrough
from smcplan.envs.alfworld_gen.layouts import SPLITS, floor_plan_numbers, load_floor_plan
from smcplan.envs.alfworld_gen.pddl import problem_text, task_description
from smcplan.envs.alfworld_gen.scene import (
    TASK_TYPES,
    alfworld_task_type,
    goal_candidates,
    sample_scene,
)
from smcplan.errors import SmcplanError

VERSION = 2  # bump when the generated files change; part of the cache path
MAX_ATTEMPTS = 12
NOT_OFFICIAL = (
    "Synthetic ALFWorld-engine game generated offline by smcplan from the alfworld "
    "package's floor plans and PDDL domain; not part of the official ALFWorld evaluation set."
)


class UnsolvableGame(SmcplanError, ValueError):
    """No attempt produced a game that ALFWorld's expert solves."""


@dataclass(frozen=True)
class GameInfo:
    """A generated game: where it is and what it asks."""

    task_type: str  # our short name
    seed: int
    game_file: Path  # .../game.tw-pddl (traj_data.json beside it)
    floor_plan: int
    task: str  # the task sentence, e.g. "put a clean mug in coffeemachine"
    walkthrough: tuple[str, ...]  # the hand-coded expert's winning actions
    goal: dict[str, str]  # ALFRED pddl_params


def _short_name(task_type: str) -> str:
    alf = alfworld_task_type(task_type)
    return next(k for k, v in TASK_TYPES.items() if v == alf)


@functools.cache
def valid_layouts(task_type: str, split: str = "all") -> tuple[int, ...]:
    """Floor plans of ``split`` that can host ``task_type`` (step 1 of the module doc)."""
    return tuple(
        n for n in floor_plan_numbers(split) if goal_candidates(task_type, load_floor_plan(n))
    )


def game_folder(
    task_type: str,
    seed: int,
    layout: int | None = None,
    split: str = "all",
    cache_dir: str | None = None,
) -> Path:
    """The cache folder of the game for these inputs (it may not exist yet)."""
    where = f"FloorPlan{layout}" if layout is not None else f"{split}-layouts"
    return cache_root(cache_dir) / f"v{VERSION}" / _short_name(task_type) / where / f"seed-{seed}"


def _check_inputs(task_type: str, seed: int, layout: int | None, split: str) -> tuple[int, ...]:
    alfworld_task_type(task_type)  # raises with the known names
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    if isinstance(seed, bool) or not hasattr(seed, "__index__") or operator.index(seed) < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    layouts = valid_layouts(task_type, split)
    if layout is not None:
        if layout not in layouts:
            raise ValueError(
                f"floor plan {layout!r} cannot host {task_type!r} in split {split!r}; "
                f"valid: {', '.join(map(str, layouts))}"
            )
        return (layout,)
    return layouts


def read_game(folder: Path, task_type: str, seed: int) -> GameInfo:
    """Read a published game folder."""
    with open(folder / "game.tw-pddl", encoding="utf-8") as f:
        game = json.load(f)
    with open(folder / "traj_data.json", encoding="utf-8") as f:
        traj = json.load(f)
    return GameInfo(
        task_type=_short_name(task_type),
        seed=seed,
        game_file=folder / "game.tw-pddl",
        floor_plan=int(traj["scene"]["scene_num"]),
        task=traj["turk_annotations"]["anns"][0]["task_desc"],
        walkthrough=tuple(game["walkthrough"]),
        goal={k: v for k, v in traj["pddl_params"].items() if isinstance(v, str)},
    )


def _build(
    folder: Path,
    task_type: str,
    seed: int,
    layouts: tuple[int, ...],
    fixed_layout: bool,
    split: str,
) -> bool:
    domain_path, grammar_path = _deps.logic_paths()
    with open(domain_path, encoding="utf-8") as f:
        domain = f.read()
    with open(grammar_path, encoding="utf-8") as f:
        grammar = f.read()
    short = _short_name(task_type)
    layout_key = layouts[0] if fixed_layout else "any"
    for attempt in range(MAX_ATTEMPTS):
        rng = random.Random(
            f"smcplan/alfworld/v{VERSION}/{short}/{split}/{layout_key}/{seed}/{attempt}"
        )
        fp = load_floor_plan(layouts[0] if fixed_layout else rng.choice(layouts))
        scene = sample_scene(short, fp, rng)
        problem = problem_text(scene, f"smcplan_{short}_{fp.number}_{seed}_{attempt}")
        desc = task_description(scene, rng)
        g = scene.goal
        traj = {
            "task_type": g.task_type,
            "pddl_params": {
                "object_target": g.object_target,
                "parent_target": g.parent_target,
                "toggle_target": g.toggle_target,
                "mrecep_target": "",
                "object_sliced": False,
            },
            "scene": {"floor_plan": fp.name, "scene_num": fp.number, "random_seed": seed},
            "turk_annotations": {"anns": [{"task_desc": desc, "high_descs": [], "votes": []}]},
            "smcplan": {
                "generator": "smcplan.envs.alfworld_gen",
                "version": VERSION,
                "alfworld": _deps.alfworld_version(),
                "task_type": short,
                "seed": seed,
                "split": split,
                "attempt": attempt,
                "note": NOT_OFFICIAL,
            },
        }
        game = {
            "pddl_domain": domain,
            "grammar": grammar.replace("UNKNOWN GOAL", desc),
            "pddl_problem": problem,
            "solvable": None,
            "walkthrough": None,
        }
        write_json(folder / "traj_data.json", traj)
        write_json(folder / "game.tw-pddl", game)
        walkthrough = expert_walkthrough(str(folder / "game.tw-pddl"), seed)
        if walkthrough is not None:
            game.update(solvable=True, walkthrough=walkthrough)
            write_json(folder / "game.tw-pddl", game)
            with open(folder / "initial_state.pddl", "w", encoding="utf-8") as f:
                f.write(problem)
            return True
    return False


def generate_game(
    task_type: str,
    seed: int = 0,
    layout: int | None = None,
    split: str = "all",
    cache_dir: str | None = None,
) -> GameInfo:
    """The game for ``(task_type, seed, layout, split)``: read from the cache or generated.

    ``layout=None`` lets the seed choose among :func:`valid_layouts`. Raises ``ValueError``
    naming the valid values for unknown task types, splits or unsuitable layouts, and
    :class:`UnsolvableGame` if no attempt is solved by the expert.
    """
    layouts = _check_inputs(task_type, seed, layout, split)
    seed = operator.index(seed)
    folder = game_folder(task_type, seed, layout, split, cache_dir)
    if not (folder / "game.tw-pddl").exists():
        ok = publish_dir(
            folder, lambda tmp: _build(tmp, task_type, seed, layouts, layout is not None, split)
        )
        if not ok:
            raise UnsolvableGame(
                f"no solvable {task_type!r} game for seed {seed} (layout {layout}, split "
                f"{split!r}) in {MAX_ATTEMPTS} attempts; try another seed, or one of the "
                f"layouts {', '.join(map(str, layouts))}"
            )
    return read_game(folder, task_type, seed)
