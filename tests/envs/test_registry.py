"""``smcplan.envs.make`` and ``env_names``: names, errors, laziness."""

from __future__ import annotations

import subprocess
import sys

import pytest

from smcplan.envs import (
    ALFWORLD_TASK_TYPES,
    SCIENCEWORLD_TASKS,
    TWX_GAMES,
    MissingBenchmark,
    env_names,
    make,
)


def test_env_names_cover_every_benchmark():
    names = env_names()
    assert len(names) == 8 + 30 + 6 + 1 + 2 == len(set(names))
    assert {f"twx:{g}" for g in TWX_GAMES} <= set(names)
    assert {f"scienceworld:{t}" for t in SCIENCEWORLD_TASKS} <= set(names)
    assert {f"alfworld:{t}" for t in ALFWORLD_TASK_TYPES} <= set(names)
    assert {"webshop", "toy:household", "toy:tiger"} <= set(names)


def test_unknown_names_list_the_known_ones_and_suggest():
    with pytest.raises(ValueError, match=r"unknown env 'twx:con' \(did you mean twx:coin"):
        make("twx:con")
    with pytest.raises(ValueError, match="known: twx:cookingworld, twx:twc"):
        make("nethack")
    with pytest.raises(ValueError, match="scienceworld:boil"):
        make("scienceworld:boiling")


def test_alfworld_names_go_to_the_alfworld_adapter(monkeypatch):
    with pytest.raises(ValueError, match="unknown env 'alfworld:pick'"):
        make("alfworld:pick")
    # Without the adapter module the error says so (None in sys.modules blocks the import).
    monkeypatch.setitem(sys.modules, "smcplan.envs.alfworld", None)
    with pytest.raises(MissingBenchmark, match="ALFWorld adapter"):
        make("alfworld:pick_and_place")


def test_the_alfworld_adapter_agrees_on_the_task_types():
    alfworld = pytest.importorskip("smcplan.envs.alfworld")
    assert tuple(alfworld.TASK_TYPES) == ALFWORLD_TASK_TYPES


def test_importing_envs_loads_no_benchmark_and_starts_no_jvm():
    code = (
        "import sys, smcplan.envs, smcplan.envs.splits\n"
        "heavy = [m for m in ('textworld_express', 'scienceworld', 'alfworld', 'textworld',"
        " 'py4j', 'jax', 'torch', 'smcplan.pomdp') if m in sys.modules]\n"
        "from smcplan.envs._jvm import spawned_pids\n"
        "print(heavy, spawned_pids())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] set()"
