"""The harness hands a clone factory only to agents that ask for one (the simulator world model,
an oracle), labels the run so, and refuses an environment without ``clone()`` with a clear error.

Runs NeSyFS's slow thinker alone (``slow_thinking="always"``, LLM-free proposal and twist) on the
toy household text environment, with the tiny random-weight model the agent is built on.
"""

from __future__ import annotations

import os

import pytest

from smcplan.agents.random_agent import RandomAgent
from smcplan.eval import EvalConfig, run_eval
from smcplan.eval.build import attach_simulator
from smcplan.eval.records import RunPaths, read_json, read_jsonl
from smcplan.eval.report import load_run, markdown_report
from smcplan.planning import PlanningError

for _var in ("TORCH_COMPILE_DISABLE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.setdefault(_var, "1")

ORACLE = {
    "world_model": "simulator",
    "progress": "env+novelty",
    "slow_thinking": "always",
    "plan_proposal": "uniform",
    "num_particles": 4,
    "horizon": 2,
    "extractor": "rule",
}


def tiny(model, quantization):
    from smcplan.llm.testing import tiny_model

    return tiny_model()


def test_the_harness_gives_the_simulator_to_the_agent_that_asks_and_labels_the_run(tmp_path):
    out = tmp_path / "run"
    cfg = EvalConfig(
        envs=["toy:household"],
        agent="nesyfs",
        out=str(out),
        seeds=[0, 1],
        max_steps=3,
        agent_config=ORACLE,
    )
    summaries = run_eval(cfg, load_lm=tiny, progress=False)
    assert [s["status"] for s in summaries] == ["ok", "ok"]
    paths = RunPaths(out)
    assert read_json(paths.config)["oracle_world_model"] is True
    for s in summaries:
        for step in read_jsonl(paths.steps(s["episode"])):
            plan = step["meta"]["plan"]
            assert step["meta"]["executed"] == "planner" and step["meta"]["llm_calls"] == 0
            assert plan["world_model"] == "simulator" and plan["oracle"] is True
            assert plan["twist"] == "env+novelty" and plan["config"]["oracle"] is True
            assert len(plan["trace"]["steps"]) == 2 and "oracle world model" in step["thought"]
    assert "nesyfs {oracle world model}" in markdown_report([load_run(out)])


def test_an_agent_that_does_not_ask_gets_no_factory_and_a_clone_less_env_is_refused():
    class Recorder(RandomAgent):
        attached = None

        def attach_simulator(self, factory, env=None):
            self.attached = factory

    agent = Recorder()
    attach_simulator(agent, object())  # never asked: nothing happens
    assert agent.attached is None

    from smcplan.agents.nesyfs import NeSyFSAgent
    from smcplan.llm.testing import tiny_model

    class Bare:
        name = "custom:bare"

    nesyfs = NeSyFSAgent(tiny_model(), **ORACLE)
    with pytest.raises(PlanningError, match="'custom:bare' has none.*alfworld"):
        attach_simulator(nesyfs, Bare())
