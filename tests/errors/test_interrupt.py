"""Ctrl-C and ``kill``: SIGINT/SIGTERM stop a sweep mid-episode with exit 130/143, drop the
episode in flight (never recorded as an error), leave no JVM, and a rerun equals a run that was
never interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from smcplan.cli import main
from smcplan.eval.records import RunPaths, read_json, read_jsonl

REPO = Path(__file__).resolve().parents[2]
ENV = {
    **os.environ,
    "PYTHONPATH": str(REPO),
    "TORCH_COMPILE_DISABLE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def trajectories(out: Path) -> dict[str, list[tuple]]:
    """episode id -> (status, won, [(trial, t, action, feedback)]) from the run's files."""
    paths = RunPaths(out)
    result = {}
    for p in paths.summaries():
        s = read_json(p)
        steps = [
            (r["trial"], r["t"], r["action"], r["feedback"])
            for r in read_jsonl(paths.steps(s["episode"]))
        ]
        result[s["episode"]] = (s["status"], s["won"], steps)
    return result


def _wait_for(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.002)
    return False


def _in_flight(paths: RunPaths) -> bool:
    """An episode is running and has logged at least one step, after one finished episode."""
    if not paths.episodes.exists() or not paths.summaries():
        return False
    return any(p.stat().st_size > 0 for p in paths.episodes.glob("*.partial"))


def interrupt_mid_episode(
    args: list[str], out: Path, signum: int, *, expect_jvm: bool
) -> tuple[int, str]:
    """Start ``smcplan eval args --out out`` in its own process group, signal the group (as a
    terminal's Ctrl-C does) while an episode is in flight; return (exit status, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "smcplan.cli", "eval", *args, "--out", str(out)],
        cwd=REPO,
        env=ENV,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    paths = RunPaths(out)
    try:
        assert _wait_for(lambda: _in_flight(paths), 300), "the sweep never got mid-episode"
        children = []
        for child in psutil.Process(proc.pid).children(recursive=True):
            try:
                children.append((child, child.name()))
            except psutil.NoSuchProcess:  # a short-lived helper
                pass
        os.killpg(proc.pid, signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert any("java" in name for _, name in children) == expect_jvm
    assert _wait_for(lambda: not any(_alive(c) for c, _ in children), 15), (
        f"left running: {[(c.pid, name) for c, name in children if _alive(c)]}"
    )
    return proc.returncode, err


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def check_interrupted_run(out: Path, rc: int, err: str, expected_rc: int) -> dict:
    paths = RunPaths(out)
    assert rc == expected_rc, err
    assert "the episode in flight was dropped" in err and "re-run the same command to resume" in err
    assert "Traceback" not in err
    partial = list(paths.episodes.glob("*.partial"))
    assert len(partial) == 1  # the episode in flight, dropped: no summary, no error record
    assert not paths.summary(partial[0].name.split(".steps")[0]).exists()
    done = trajectories(out)
    assert done and all(status == "ok" for status, _, _ in done.values())
    return done


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_textworld_express_sweep_and_the_rerun_equals_an_uninterrupted_run(
    tmp_path, signum, code
):
    args = [
        "--env",
        "twx:coin",
        "--agent",
        "random",
        "--seeds",
        "10000-10029",
        "--max-steps",
        "40",
        "--no-progress",
    ]
    rc, err = interrupt_mid_episode(args, tmp_path / "stopped", signum, expect_jvm=True)
    before = check_interrupted_run(tmp_path / "stopped", rc, err, code)
    assert len(before) < 30
    assert main(["eval", *args, "--out", str(tmp_path / "stopped")]) == 0  # resume
    assert main(["eval", *args, "--out", str(tmp_path / "fresh")]) == 0
    resumed = trajectories(tmp_path / "stopped")
    assert len(resumed) == 30 and resumed == trajectories(tmp_path / "fresh")
    assert not list(RunPaths(tmp_path / "stopped").episodes.glob("*.partial"))


@pytest.mark.slow
def test_ctrl_c_stops_a_toy_household_sweep_and_the_rerun_equals_an_uninterrupted_run(tmp_path):
    from smcplan.llm.testing import tiny_model_path

    args = [
        "--env",
        "toy:household",
        "--agent",
        "react",
        "--model",
        str(tiny_model_path()),
        "--agent-arg",
        "think=false",
        "--seeds",
        "0-2",
        "--max-steps",
        "8",
        "--no-progress",
    ]
    rc, err = interrupt_mid_episode(args, tmp_path / "stopped", signal.SIGINT, expect_jvm=False)
    check_interrupted_run(tmp_path / "stopped", rc, err, 130)
    assert main(["eval", *args, "--out", str(tmp_path / "stopped")]) == 0
    assert main(["eval", *args, "--out", str(tmp_path / "fresh")]) == 0
    assert trajectories(tmp_path / "stopped") == trajectories(tmp_path / "fresh")
