"""Episodes on Ray (``--workers N``): same records as one worker, no finished episode lost when a
worker is killed, no Ray or JVM process left behind (also after Ctrl-C).

Slow: starts a local Ray cluster (and TextWorldExpress JVMs). Skipped when Ray is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from smcplan.eval import EvalConfig, run_eval
from smcplan.eval.episodes import episode_seed, resolve_episodes
from smcplan.eval.ray_sweep import TIMING_FIELDS
from smcplan.eval.records import RunPaths, read_json, read_jsonl

for _var in ("TORCH_COMPILE_DISABLE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None, reason="ray is not installed (smcplan[scale])"
    ),
]

DEV = 10000
REPO = Path(__file__).resolve().parents[2]
RAY_MARKERS = ("raylet", "gcs_server", "ray::", "default_worker.py", "ray/dashboard", "java")


def _procs() -> dict[int, str]:
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if any(m in cmd for m in RAY_MARKERS):
                out[int(d.name)] = cmd
    return out


def _ppid(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _ours(pid: int) -> bool:
    """Started under this test process, or orphaned (what a leaked Ray/JVM process becomes);
    JVMs of other test sessions on the machine have a live parent of their own."""
    first = True
    while pid > 1:
        parent = _ppid(pid)
        if parent == os.getpid() or (first and parent == 1):
            return True
        pid, first = parent, False
    return False


def _left_behind(before: dict[int, str], timeout_s: float = 20.0) -> dict[int, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        new = {p: c for p, c in _procs().items() if p not in before and _ours(p)}
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.2)


def _records(out):
    """Every summary and step line of a run directory, without the timing fields."""
    paths = RunPaths(out)
    result = {}
    for p in paths.summaries():
        summary = {k: v for k, v in read_json(p).items() if k not in TIMING_FIELDS}
        summary["stats"] = {k: v for k, v in summary["stats"].items() if k not in TIMING_FIELDS}
        steps = [
            {k: v for k, v in r.items() if k not in TIMING_FIELDS}
            for r in read_jsonl(paths.steps(summary["episode"]))
        ]
        result[summary["episode"]] = (summary, steps)
    return result


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray cluster for the in-process tests (run_eval reuses a running one and leaves it
    up); at the end it is shut down and nothing it started may be left."""
    import ray

    from smcplan.eval.parallel import _start

    before = _procs()
    started = _start(ray, 2, None)
    yield
    if started:
        ray.shutdown()
    assert _left_behind(before) == {}


def _config(out, env="twx:coin", n=6, **kw):
    return EvalConfig(
        envs=[env], out=str(out), seeds=list(range(DEV, DEV + n)),
        **{"agent": "random", "max_steps": 15, **kw},
    )  # fmt: skip


def test_two_workers_write_the_same_episodes_as_one(tmp_path, ray_cluster):
    run_eval(_config(tmp_path / "one"), progress=False)
    run_eval(_config(tmp_path / "two"), progress=False, workers=2)
    one, two = _records(tmp_path / "one"), _records(tmp_path / "two")
    assert len(one) == 6 and one == two
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(
        p.name for p in (tmp_path / "one").iterdir()
    )


def _slow_agent_factory(delay_s: float, die_on: int | None = None):
    """make_agent for the random agent that sleeps ``delay_s`` per act, and kills its own
    worker process when building the agent of the episode seeded ``die_on``."""

    def make_agent(name, lm, seed, config):
        from smcplan.agents.random_agent import RandomAgent

        if die_on is not None and seed == die_on:
            os.kill(os.getpid(), signal.SIGKILL)
        agent = RandomAgent(seed=seed)
        act = agent.act

        def slow_act(*args, **kwargs):
            time.sleep(delay_s)
            return act(*args, **kwargs)

        agent.act = slow_act
        return agent

    return make_agent


def test_sigkill_of_a_worker_mid_sweep_loses_no_finished_episode(tmp_path, ray_cluster):
    out = tmp_path / "killed"
    paths = RunPaths(out)
    killed: list[int] = []

    def killer():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(paths.summaries()) < 2:
            time.sleep(0.05)
        finished = {p.name: p.read_bytes() for p in paths.summaries()}
        workers = [p for p, c in _procs().items() if c.startswith("ray::_Worker")]
        if workers:
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])
        killer.finished = finished

    thread = threading.Thread(target=killer)
    thread.start()
    config = _config(out, env="twx:coin", n=8, max_steps=12)
    run_eval(config, progress=False, workers=2, make_agent=_slow_agent_factory(0.05))
    thread.join()
    assert killed, "no worker was running to be killed"
    for name, blob in killer.finished.items():  # finished before the kill: kept byte for byte
        assert (paths.episodes / name).read_bytes() == blob
    got = _records(out)
    assert len(got) == 8 and all(s["status"] == "ok" for s, _ in got.values())  # retried once
    run_eval(_config(tmp_path / "seq", env="twx:coin", n=8, max_steps=12), progress=False)
    assert got == _records(tmp_path / "seq")


def test_an_episode_whose_worker_dies_twice_is_an_error_and_the_sweep_goes_on(
    tmp_path, ray_cluster
):
    config = _config(tmp_path / "run", env="twx:coin", n=5, max_steps=5)
    target = resolve_episodes(config.envs, seeds=config.seeds)[2].id
    die_on = episode_seed(config.seed, target)
    summaries = run_eval(
        config, progress=False, workers=2, make_agent=_slow_agent_factory(0, die_on)
    )
    by_id = {s["episode"]: s for s in summaries}
    assert len(by_id) == 5
    assert by_id[target]["status"] == "error" and by_id[target]["error"]["source"] == "worker"
    assert "died 2 times" in by_id[target]["error"]["message"]
    assert all(s["status"] == "ok" for e, s in by_id.items() if e != target)
    assert list(read_jsonl(RunPaths(tmp_path / "run").steps(target))) == []


def test_ctrl_c_stops_a_parallel_sweep_with_no_ray_or_jvm_process_left(tmp_path):
    before = _procs()
    out = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "smcplan.cli", "eval", "--env", "twx:coin", "--agent", "random",
        "--seeds", f"{DEV}-{DEV + 199}", "--max-steps", "50", "--no-progress", "--workers", "2",
        "--out", str(out),
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    paths = RunPaths(out)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and len(paths.summaries()) < 2 and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
    try:
        code = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    stderr = proc.stderr.read().decode()
    assert code == 130, stderr[-2000:]
    assert "stopped by SIGINT" in stderr and "resume" in stderr
    assert 2 <= len(paths.summaries()) < 200
    assert _left_behind(before) == {}
