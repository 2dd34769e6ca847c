"""The harness on a real TextWorldExpress game (``twx:coin``, JVM) with the random agent.

Covers: one JSONL line per step and one summary per episode; a backend or agent failure becomes
an error episode and the sweep goes on; resume after SIGKILL loses no finished episode and gives
the same episodes as an uninterrupted run; Reflexion-style trials; refusal to resume with another
configuration.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from smcplan.agents.random_agent import RandomAgent
from smcplan.cli import main
from smcplan.eval import EvalConfig, RunConfigMismatch, run_eval
from smcplan.eval.records import RunPaths, read_json, read_jsonl
from smcplan.eval.runner import agent_needs_lm, default_load_lm

for _var in ("TORCH_COMPILE_DISABLE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")

pytestmark = pytest.mark.slow  # starts TextWorldExpress JVMs

DEV = 10000  # first seed of TextWorldExpress's dev fold
REPO = Path(__file__).resolve().parents[2]


def config(out, n=4, **kw):
    return EvalConfig(
        envs=["twx:coin"],
        out=str(out),
        seeds=list(range(DEV, DEV + n)),
        **{"agent": "random", "max_steps": 20, **kw},
    )


def trajectories(out):
    """episode id -> list of (trial, t, thought, action, feedback) from the step files."""
    paths = RunPaths(out)
    result = {}
    for p in paths.summaries():
        eid = read_json(p)["episode"]
        result[eid] = [
            (r["trial"], r["t"], r["thought"], r["action"], r["feedback"])
            for r in read_jsonl(paths.steps(eid))
        ]
    return result


def test_sweep_writes_one_step_line_per_step_and_one_summary_per_episode(tmp_path):
    summaries = run_eval(config(tmp_path / "run", n=4), progress=False)
    paths = RunPaths(tmp_path / "run")
    assert [s["episode"] for s in summaries] == [f"twx_coin-s{DEV + i}" for i in range(4)]
    for s in summaries:
        lines = list(read_jsonl(paths.steps(s["episode"])))
        assert s["status"] == "ok" and len(lines) == s["steps"] >= 1
        assert [r["t"] for r in lines] == list(range(len(lines)))
        assert all(r["n_admissible"] > 0 and r["admissible"] and not r["invalid"] for r in lines)
        # the harness's max_steps reaches the adapter: it ends the episode as truncated at 20
        assert lines[-1]["done"]
        assert s["truncated"] == (not s["won"] and s["steps"] == 20)
        assert s["won"] == lines[-1]["won"] and s["score"] == lines[-1]["score"]
        assert lines[1]["observation"] == lines[0]["feedback"]
    assert not list(paths.episodes.glob("*.partial"))
    metrics = read_json(paths.metrics)
    assert metrics["per_env"]["twx:coin"]["n"] == 4
    assert metrics["all"]["hallucination_rate"]["value"] == 0.0


class DyingEnv:
    """A real TextWorldExpress env whose backend "dies" at step 3 of seed ``die_seed``."""

    made = 0

    def __init__(self, die_seed, **kwargs):
        from smcplan.envs import make

        DyingEnv.made += 1
        self.env = make("twx:coin", **kwargs)
        self.die_seed = die_seed
        self.closed = False

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self, seed=None):
        self.seed, self.t = seed, 0
        return self.env.reset(seed)

    def step(self, action):
        self.t += 1
        if self.seed == self.die_seed and self.t == 3:
            raise RuntimeError("simulated backend crash")
        return self.env.step(action)

    def close(self):
        self.closed = True
        self.env.close()


def test_backend_failure_is_an_error_episode_and_the_sweep_goes_on(tmp_path):
    envs = []

    def make_env(name, **kw):
        envs.append(DyingEnv(DEV + 1, **kw))
        return envs[-1]

    out = tmp_path / "run"
    summaries = run_eval(config(out, n=3), make_env=make_env, progress=False)
    assert [s["status"] for s in summaries] == ["ok", "error", "ok"]
    err = summaries[1]["error"]
    assert err["source"] == "env" and err["type"] == "RuntimeError"
    assert "simulated backend crash" in err["message"]
    assert summaries[1]["steps"] == 2  # the two steps before the crash are kept
    assert len(list(read_jsonl(RunPaths(out).steps(summaries[1]["episode"])))) == 2
    # the broken env was closed and replaced by a fresh one for the next episode
    assert len(envs) == 2 and envs[0].closed
    assert read_json(RunPaths(out).metrics)["all"]["n_errors"] == 1
    # a rerun skips the error episode; --retry-errors runs it again (now healthy)
    again = run_eval(config(out, n=3), make_env=make_env, progress=False)
    assert again[1]["status"] == "error" and len(envs) == 2
    healthy = run_eval(config(out, n=3, retry_errors=True), progress=False)
    assert healthy[1]["status"] == "ok"


def test_agent_exception_is_an_error_episode_with_source_agent(tmp_path):
    class Flaky(RandomAgent):
        def act(self, observation, admissible_actions, info):
            if len(self.calls) == 1:
                raise KeyError("agent bug")
            self.calls.append(1)
            return super().act(observation, admissible_actions, info)

    def make_agent(name, lm, seed, cfg):
        agent = Flaky(seed=seed) if seed == flaky_seed[0] else RandomAgent(seed=seed)
        agent.calls = []
        return agent

    from smcplan.eval.episodes import episode_seed

    flaky_seed = [episode_seed(0, f"twx_coin-s{DEV}")]
    summaries = run_eval(config(tmp_path / "run", n=2), make_agent=make_agent, progress=False)
    assert summaries[0]["status"] == "error" and summaries[0]["error"]["source"] == "agent"
    assert summaries[0]["error"]["type"] == "KeyError" and summaries[1]["status"] == "ok"


def _wait_for(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return False


def test_sigkill_mid_sweep_loses_no_finished_episode_and_rerun_completes(tmp_path):
    n = 60
    killed = tmp_path / "killed"
    cmd = [
        sys.executable,
        "-m",
        "smcplan.cli",
        "eval",
        "--env",
        "twx:coin",
        "--agent",
        "random",
        "--seeds",
        f"{DEV}-{DEV + n - 1}",
        "--max-steps",
        "30",
        "--no-progress",
    ]
    proc = subprocess.Popen(
        [*cmd, "--out", str(killed)],
        cwd=REPO,
        start_new_session=True,  # its own process group, killed as a whole
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    paths = RunPaths(killed)
    try:
        assert _wait_for(lambda: len(paths.summaries()) >= 3, 120), "sweep never started"
        # the JVM runs in its own session (Ctrl-C goes to Python only): find it by parentage
        jvms = [c for c in psutil.Process(proc.pid).children(recursive=True) if "java" in c.name()]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert jvms, "no JVM found under the sweep"
    assert _wait_for(lambda: _group_gone(proc.pid), 10)
    # with its parent killed, the JVM's stdin closes and --die-on-broken-pipe ends it
    assert _wait_for(lambda: not any(_running(j) for j in jvms), 15), (
        "JVM outlived the killed sweep"
    )

    finished = {p.name: p.read_bytes() for p in paths.summaries()}
    assert 3 <= len(finished) < n, "the kill must land mid-sweep"
    assert len(list(paths.episodes.glob("*.partial"))) <= 1  # at most the episode in flight
    for blob in finished.values():  # every finished episode is complete and consistent
        summary = json.loads(blob)
        steps = list(read_jsonl(paths.steps(summary["episode"])))
        assert len(steps) == summary["stats"]["total_steps"] == summary["steps"]

    assert main(["eval", *cmd[4:], "--out", str(killed)]) == 0  # resume in-process
    assert len(paths.summaries()) == n and not list(paths.episodes.glob("*.partial"))
    for name, blob in finished.items():
        assert (paths.episodes / name).read_bytes() == blob  # not re-run

    fresh = tmp_path / "fresh"
    assert main(["eval", *cmd[4:], "--out", str(fresh)]) == 0
    assert trajectories(killed) == trajectories(fresh)  # same episodes as never interrupted


def _running(process):
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _group_gone(pgid):
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_trials_retry_a_lost_episode_with_the_same_agent(tmp_path):
    ends = []

    class Recording(RandomAgent):
        def end_episode(self, won, score):
            ends.append((won, score))

    def make_agent(name, lm, seed, cfg):
        return Recording(seed=seed)

    # 2 steps never find the coin: both trials are lost and recorded
    (s,) = run_eval(
        config(tmp_path / "run", n=1, max_steps=2, trials=2), make_agent=make_agent, progress=False
    )
    assert [t["trial"] for t in s["trials"]] == [0, 1] and not s["won"]
    assert ends == [(False, 0.0), (False, 0.0)]
    steps = list(read_jsonl(RunPaths(tmp_path / "run").steps(s["episode"])))
    assert [(r["trial"], r["t"]) for r in steps] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert s["steps"] == 2 and s["stats"]["total_steps"] == 4


def test_what_the_agent_reports_of_an_episode_is_kept_per_trial(tmp_path):
    class Counting(RandomAgent):
        """Reports the number of actions it took in the episode (its episode_info)."""

        def reset(self, task, observation, admissible_actions):
            self.taken = 0
            super().reset(task, observation, admissible_actions)

        def act(self, observation, admissible_actions, info):
            self.taken += 1
            return super().act(observation, admissible_actions, info)

        def episode_info(self):
            return {"taken": self.taken}

    (s,) = run_eval(
        config(tmp_path / "run", n=1, max_steps=3, trials=2),
        make_agent=lambda name, lm, seed, cfg: Counting(seed=seed),
        progress=False,
    )
    assert [t["agent"] for t in s["trials"]] == [{"taken": 3}, {"taken": 3}]
    assert read_json(RunPaths(tmp_path / "run").summary(s["episode"]))["trials"] == s["trials"]


def test_resuming_with_another_configuration_is_refused(tmp_path):
    run_eval(config(tmp_path / "run", n=1), progress=False)
    with pytest.raises(RunConfigMismatch, match="max_steps: 20 -> 30"):
        run_eval(config(tmp_path / "run", n=1, max_steps=30), progress=False)
    # more episodes with the same configuration is a resume, not a mismatch
    assert len(run_eval(config(tmp_path / "run", n=2), progress=False)) == 2


def test_random_agent_loads_no_language_model(tmp_path):
    def no_lm(model, quantization):
        raise AssertionError("the random agent must not load a model")

    assert not agent_needs_lm("random")
    run_eval(config(tmp_path / "run", n=1), load_lm=no_lm, progress=False)


def test_cli_show_prints_the_trajectory_and_the_result(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["eval", "--env", "twx:coin", "--agent", "random", "--seeds", str(DEV)]
    assert main([*args, "--max-steps", "5", "--out", str(out), "--no-progress", "--show"]) == 0
    printed = capsys.readouterr().out
    assert "task: Your task is to search the environment and find the coin" in printed
    assert "[  0] > " in printed and "| random | 1 | 0 |" in printed


def test_llm_agent_runs_with_its_model_loaded_once_and_reruns_an_episode_identically(tmp_path):
    from smcplan.llm.testing import tiny_model_path

    loads = []

    def load_lm(model, quantization):
        loads.append(model)
        return default_load_lm(model, quantization)

    out = tmp_path / "run"
    model = str(tiny_model_path())
    cfg = config(out, n=2, agent="react", model=model, max_steps=2)
    summaries = run_eval(cfg, load_lm=load_lm, progress=False)
    assert loads == [model] and [s["status"] for s in summaries] == ["ok", "ok"]
    paths = RunPaths(out)
    for s in summaries:
        steps = list(read_jsonl(paths.steps(s["episode"])))
        for r in steps:  # measured around act from lm.usage; the agent counts the same way
            assert r["llm_calls"] >= 1 and r["llm_calls"] == r["meta"]["llm_calls"]
            assert r["llm_tokens"] == r["meta"]["llm_tokens"] > 0
        assert s["llm_usage"]["calls"] >= sum(r["llm_calls"] for r in steps)
    # the second episode, run again from scratch after the first, is reproduced exactly: the
    # agent and the model's seed stream are reseeded per episode, not carried over
    before = trajectories(out)
    paths.summary(summaries[1]["episode"]).unlink()
    run_eval(cfg, load_lm=load_lm, progress=False)
    assert len(loads) == 2 and trajectories(out) == before


def test_unknown_env_or_agent_is_a_usage_error_not_an_error_episode(tmp_path, capsys):
    base = ["eval", "--seeds", str(DEV), "--no-progress"]
    out = tmp_path / "a"
    assert main([*base, "--env", "twx:coin", "--agent", "rnd", "--out", str(out)]) == 2
    assert "unknown agent 'rnd'; known: nesyfs, random, react" in capsys.readouterr().err
    assert not out.exists()  # nothing written
    out = tmp_path / "b"
    assert main([*base, "--env", "twx:con", "--agent", "random", "--out", str(out)]) == 2
    assert "unknown env 'twx:con' (did you mean twx:coin" in capsys.readouterr().err
    assert not RunPaths(out).summaries()
