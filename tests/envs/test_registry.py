"""``smcplan.envs.make`` and ``env_names``: names, errors, laziness."""

from __future__ import annotations

import subprocess
import sys

import pytest

from smcplan.envs import (
    ALFWORLD_TASK_TYPES,
    SCIENCEWORLD_TASKS,
    TWX_GAMES,
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


def test_unknown_alfworld_task_types_are_named():
    with pytest.raises(ValueError, match="unknown env 'alfworld:pick'"):
        make("alfworld:pick")


def test_importing_envs_starts_no_jvm():
    """(What ``import smcplan.envs`` loads is checked on the source by tests/test_layering.py.)"""
    code = (
        "import smcplan.envs, smcplan.envs.splits\n"
        "from smcplan.envs._jvm import spawned_pids\n"
        "print(spawned_pids())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "set()"
