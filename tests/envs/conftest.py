"""Shared fixtures for the environment tests.

The session fixture checks the issue's requirement "no java process left after the test run":
every JVM that ``smcplan.envs._jvm`` started in this process must be gone at the end.  Other
engineers' JVMs on the same machine are not ours and are not looked at (PIDs are tracked).
"""

from __future__ import annotations

import gc

import pytest


@pytest.fixture(scope="session", autouse=True)
def no_java_process_left_behind():
    yield
    from smcplan.envs._jvm import live_pids, spawned_pids

    gc.collect()
    leaked = live_pids()
    assert not leaked, f"JVMs still running after the env tests: {sorted(leaked)} " \
        f"(spawned: {sorted(spawned_pids())})"
