"""Robustness layer: time-bounded calls, one restart with replay, then a typed error; no leaks.

Faults are real: the JVM is SIGKILLed (a crash) or SIGSTOPped (a hang) through psutil.
TextWorldExpress is the backend under test because its JVM starts in about a second.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
import time

import psutil
import pytest

from smcplan.envs import BackendTimeout, EnvError, _jvm, make
from smcplan.envs import textworld_express as twx_module

pytestmark = pytest.mark.slow  # starts real JVMs


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _thread_states(pid: int) -> set[str]:
    states = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states.add(f.read().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:  # the thread ended meanwhile
            continue
    return states


def _wait_all_threads_stopped(pid: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while _thread_states(pid) - {"T", "t"}:
        if time.monotonic() > deadline:
            raise AssertionError(f"pid {pid} did not stop: thread states {_thread_states(pid)}")
        time.sleep(0.01)


@contextlib.contextmanager
def _kept_frozen(pid: int):
    """SIGSTOP ``pid`` and keep it stopped until the block ends or the process is gone.

    A group stop is not instantaneous: each thread stops at its next pass through the kernel,
    so a JVM thread can still answer a request sent right after ``kill(SIGSTOP)`` returns (seen
    about once in ten runs).  The block is entered only once every thread of the process is in
    state ``T``; after that the stop is sent again every 50 ms, so a SIGCONT from outside the
    test cannot thaw the "hung" JVM halfway through the call that is meant to time out.
    """
    process = psutil.Process(pid)
    process.suspend()
    _wait_all_threads_stopped(pid)
    done = threading.Event()

    def refreeze() -> None:
        while not done.wait(0.05):
            try:
                if process.status() not in (psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE):
                    process.suspend()
            except psutil.NoSuchProcess:
                return

    thread = threading.Thread(target=refreeze, daemon=True)
    thread.start()
    try:
        yield process
    finally:
        done.set()
        thread.join()


def _reference_observations(seed: int, actions: list[str]) -> list[str]:
    env = make("twx:coin")
    try:
        env.reset(seed)
        return [env.step(a).observation for a in actions]
    finally:
        env.close()


def test_close_ends_the_jvm_and_is_idempotent():
    env = make("twx:coin")
    pid = env.java_pid
    assert _running(pid) and pid in _jvm.live_pids()
    env.close()
    env.close()
    assert not _running(pid)
    assert pid in _jvm.spawned_pids() and pid not in _jvm.live_pids()


def test_an_env_dropped_without_close_still_ends_its_jvm():
    env = make("twx:coin")
    pid = env.java_pid
    del env
    gc.collect()
    assert not _running(pid)


def test_a_crashed_jvm_is_restarted_and_the_episode_replayed():
    env = make("twx:coin")
    try:
        env.reset(20010)
        gold = env.gold_actions()
        expected = _reference_observations(20010, gold[:6])
        got = [env.step(a).observation for a in gold[:3]]
        old_pid = env.java_pid
        psutil.Process(old_pid).kill()
        psutil.Process(old_pid).wait(10)
        got += [env.step(a).observation for a in gold[3:6]]
        assert got == expected
        assert env._sup.restarts == 1 and env.java_pid != old_pid
        assert env.actions == gold[:6]
    finally:
        env.close()


def test_a_hung_jvm_is_killed_restarted_and_the_call_retried():
    env = make("twx:coin", call_timeout_s=4.0)
    try:
        env.reset(20011)
        gold = env.gold_actions()
        expected = _reference_observations(20011, gold[:2])
        first = env.step(gold[0]).observation
        old_pid = env.java_pid
        with _kept_frozen(old_pid):
            second = env.step(gold[1]).observation  # times out, kill, restart, replay, retry
        assert [first, second] == expected
        assert env._sup.restarts == 1
        assert not _running(old_pid)
    finally:
        env.close()


def test_a_backend_that_hangs_again_after_restart_raises_backend_timeout(monkeypatch):
    env = make("twx:coin", call_timeout_s=4.0)
    started: list[int] = []

    class HangingJVM(_jvm.JavaProcess):
        """A real JVM that is frozen right after it starts (SIGSTOP)."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self.pid)
            psutil.Process(self.pid).suspend()
            _wait_all_threads_stopped(self.pid)

    try:
        env.reset(20012)
        monkeypatch.setattr(twx_module, "JavaProcess", HangingJVM)
        with _kept_frozen(env.java_pid), pytest.raises(BackendTimeout, match="restarted once"):
            env.step("look around")
        assert isinstance(BackendTimeout("x"), EnvError)
    finally:
        env.close()
    assert started and not any(_running(pid) for pid in started)


def test_a_java_side_error_is_an_env_error_without_restart():
    env = make("twx:coin")
    try:
        env.reset(20013)
        with pytest.raises(EnvError, match="failed"):
            env._sup.call(lambda: env._sim.noSuchMethod(), "probe")
        assert env._sup.restarts == 0
        assert env.step("look around").observation
    finally:
        env.close()
