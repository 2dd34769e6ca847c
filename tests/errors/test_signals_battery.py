"""The second bad-input battery, signals and side effects: Ctrl-C / SIGTERM stop ``smcplan train
collect`` (a JVM behind py4j) and ``smcplan eval --workers 2`` (Ray) with exit 130 / 143, one
line on stderr and no process left; a lone surrogate never reaches the TextWorldExpress JVM;
``--no-progress`` silences transformers' bars too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from .test_interrupt import _alive, _wait_for

REPO = Path(__file__).resolve().parents[2]
ENV = {
    **os.environ,
    # REPO first; a PYTHONPATH given to the suite (an extra package folder) kept after it
    "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    "TORCH_COMPILE_DISABLE": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def _descendants(pid: int) -> list[tuple[psutil.Process, str]]:
    """(process, name) of every live descendant of ``pid``, names read now."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for child in children:
        try:
            out.append((child, child.name()))
        except psutil.Error:  # a short-lived helper
            pass
    return out


def _signal_when(argv: list[str], ready, signum: int, group: bool) -> tuple[int, str, list]:
    """Run ``python -m smcplan.cli argv`` in its own session; once ``ready()`` send ``signum``
    to its process group (a terminal's Ctrl-C) or to it alone (``kill``); return its exit
    status, stderr and the processes it had started."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "smcplan.cli", *argv], cwd=REPO, env=ENV, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert _wait_for(lambda: ready() or proc.poll() is not None, 240), "never got going"
        assert proc.poll() is None, proc.communicate()[1]
        children = _descendants(proc.pid)
        (os.killpg if group else os.kill)(proc.pid, signum)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err, children


def _our_lines(err: str) -> list[str]:
    """stderr's lines less Ray's own start-up notice (not smcplan's to silence)."""
    return [ln for ln in err.splitlines() if ln.strip() and "Token authentication" not in ln]


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_train_collect_cleanly_and_resume_finishes_it(tmp_path, signum, code):
    """Before: exit 1 with a py4j traceback in 6 of 8 tries (collect ran outside
    stop_on_signals, so the KeyboardInterrupt landed inside py4j's socket read)."""
    shard = tmp_path / "s.jsonl"
    argv = ["train", "collect", "--env", "twx:coin", "--seeds", "10000-10400", "--source",
            "gold", "--max-steps", "40", "--out", str(shard), "--no-progress"]  # fmt: skip

    def two_episodes() -> bool:
        return shard.exists() and shard.read_text().count('"kind": "episode"') >= 2

    rc, err, children = _signal_when(argv, two_episodes, signum, group=True)
    lines = _our_lines(err)
    assert rc == code, err
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith(f"smcplan train collect: stopped by {signal.Signals(signum).name}")
    assert "rerun with --resume" in lines[0]
    assert any("java" in name for _, name in children), children
    assert _wait_for(lambda: not any(_alive(c) for c, _ in children), 15), "a JVM was left"
    # the line it names works: --resume finishes the shard (a torn last line is dropped)
    done = subprocess.run([sys.executable, "-m", "smcplan.cli", *argv[:5], "10000-10003",
                           *argv[6:], "--resume"], cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    from smcplan.train.data import read_shard

    assert {f"twx:coin/{s}" for s in range(10000, 10004)} <= set(read_shard(shard).episodes)


@pytest.mark.slow
def test_sigterm_shuts_ray_down_with_no_process_left(tmp_path):
    """Before: ``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent`` outlived a SIGTERM (Ray's
    own SIGTERM handlers replaced smcplan's and exited with 15 or a C++ stack)."""
    pytest.importorskip("ray")
    out = tmp_path / "run"
    argv = ["eval", "--env", "toy:tiger", "--agent", "random", "--seeds", "0-3000",
            "--max-steps", "50", "--workers", "2", "--no-progress", "--out", str(out)]  # fmt: skip

    def three_done() -> bool:
        return (out / "episodes").is_dir() and len(list((out / "episodes").glob("*.json"))) >= 3

    rc, err, children = _signal_when(argv, three_done, signal.SIGTERM, group=False)
    assert rc == 143, err
    assert "Traceback" not in err and "SIGTERM received" not in err, err
    lines = _our_lines(err)
    assert len(lines) == 1 and lines[0].startswith("stopped by SIGTERM"), err
    assert any(name.startswith(("raylet", "gcs_server", "ray::")) for _, name in children)
    assert _wait_for(lambda: not any(_alive(c) for c, _ in children), 20), [
        (c.pid, name) for c, name in children if _alive(c)
    ]


@pytest.mark.slow
def test_a_lone_surrogate_never_reaches_the_textworld_express_jvm():
    """Before: the JVM crashed on the action and the env was unusable afterwards."""
    from smcplan import envs
    from smcplan.errors import InvalidArgumentError

    with envs.make("twx:coin", split="dev") as env:
        env.reset(10000)
        first = env.admissible_actions()[0]
        for bad in ("\ud800", "take \udfff coin", "move west\ud83d"):
            with pytest.raises(InvalidArgumentError, match="lone surrogate"):
                env.step(bad)
        result = env.step(first)  # the same JVM, still at step 0
        assert result.info["steps"] == 1 and isinstance(result.observation, str)
        twin = env.clone()
        with pytest.raises(InvalidArgumentError, match="lone surrogate"):
            twin.step("\ud800")
        twin.close()
    with pytest.raises(InvalidArgumentError, match="TextWorldExpress params"):
        envs.make("twx:coin", params="numLocations=\ud800")


@pytest.mark.slow
def test_no_progress_silences_transformers_bars_and_the_score_has_no_nan(tmp_path):
    """``smcplan train evaluate --no-progress`` on the tiny model: no "Loading weights" bar, no
    tqdm bar at all; the score file is strict JSON (``branch_event`` of a shard without
    branches is NaN: written as null)."""
    from smcplan.llm.testing import tiny_model_path

    from .test_cli_battery import _strict, _write_shard

    shard, out = tmp_path / "s.jsonl", tmp_path / "score.json"
    _write_shard(shard, seeds=(1, 2))
    done = subprocess.run(
        [sys.executable, "-m", "smcplan.cli", "train", "evaluate", "--data", str(shard),
         "--model", str(tiny_model_path()), "--max-new-tokens", "2", "--out", str(out),
         "--no-progress"],
        cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "n=2 " in done.stdout
    for bar in ("Loading weights", "it/s]", "%|", "Cannot enable progress bars"):
        assert bar not in done.stderr, done.stderr
    body = _strict(out.read_text())
    assert body["branch_event"] is None and "branch_event" in body["non_finite"]["fields"]
    assert json.loads(out.read_text())["n"] == 2


PROGRESS_SCRIPT = """
import os
import datasets, huggingface_hub.utils as hub, transformers.utils.logging as logging
from smcplan.eval.progress import progress_bars
assert not hub.are_progress_bars_disabled() and logging.is_progress_bar_enabled()
with progress_bars(False):  # "Loading weights", "Tokenizing train dataset", downloads
    assert hub.are_progress_bars_disabled() and not logging.is_progress_bar_enabled()
    assert not datasets.is_progress_bar_enabled() and os.environ["TQDM_DISABLE"] == "1"
assert not hub.are_progress_bars_disabled() and logging.is_progress_bar_enabled()
assert datasets.is_progress_bar_enabled() and "TQDM_DISABLE" not in os.environ
with progress_bars(True):
    assert logging.is_progress_bar_enabled()
print("ok")
"""


def test_progress_bars_turns_the_libraries_off_and_back_on():
    """In a fresh interpreter: the libraries' switches are read at import time."""
    env = {k: v for k, v in ENV.items() if "PROGRESS" not in k and k != "TQDM_DISABLE"}
    done = subprocess.run([sys.executable, "-c", PROGRESS_SCRIPT], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
