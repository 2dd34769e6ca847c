"""``smcplan.plan(task, ...)`` without ``config=`` runs its text defaults: the best configuration
without an oracle measured so far (the shipped learned world model imagining every admissible
action once, H = 1, greedy; the task+novelty twist; the best imagined step taken; the rule
triplet extractor).  A setting the caller gives replaces its default, and a default that only
serves another one falls away with it.  examples/plan_loop.py (tests/test_examples.py) plays
twx:coin with them on the real model; these tests use a stand-in observation model."""

from __future__ import annotations

import shutil

import pytest

from smcplan.games import DEFAULT_WORLD_MODEL
from smcplan.llm.artifacts import ArtifactError, artifact_names, models_dir
from smcplan.llm.samples import Sample
from smcplan.memory import KnowledgeGraph
from smcplan.planning import PlannerConfig, PlanningError, build_text_planner, run_text_planner
from smcplan.planning.config import PLAN_TEXT_DEFAULTS, WorldModelKind, plan_text_config
from smcplan.planning.simulator import UniformTextProposal
from smcplan.planning.text_components import plan_text

TASK = "find the coin and take it"
ACTIONS = ["move north", "open door to east", "look around", "inventory"]
OBS = "You are in the hallway. There is a door to the east."


class EchoWorld:
    """A stand-in for the learned ObservationModel: replies with the action it was asked about
    and counts the calls and contexts it got."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def __call__(self, contexts, actions, seed=None):
        self.calls.append(len(contexts))
        return [
            Sample(value=f"You did {a}.", text=f"You did {a}.", logq=0.0, logp=0.0,
                   num_tokens=3, finished=True)
            for a in actions
        ]  # fmt: skip


def test_the_defaults_are_the_learned_world_model_trying_every_action_once_greedily():
    cfg = plan_text_config({})
    assert cfg == PlannerConfig(**PLAN_TEXT_DEFAULTS)
    assert cfg.world_model is WorldModelKind.LEARNED and not cfg.oracle
    assert cfg.world_model_path == DEFAULT_WORLD_MODEL in artifact_names()  # shipped
    assert (cfg.particles_per_action, cfg.horizon, cfg.observation_temperature) == (1, 1, 0.0)
    assert (cfg.progress, cfg.choice, cfg.proposal) == ("task+novelty", "max_weight", "uniform")
    # the agents' settings object keeps its own defaults
    assert PlannerConfig().world_model is WorldModelKind.LM


def test_plan_without_config_runs_the_defaults_one_world_model_call_for_all_actions():
    world = EchoWorld()
    planner = build_text_planner(
        TASK, KnowledgeGraph([("agent", "at", "hallway")]), ACTIONS, observation=OBS,
        observation_model=world,
    )  # fmt: skip
    assert planner.config == plan_text_config({})
    assert isinstance(planner.proposal, UniformTextProposal)
    assert len(planner.particles) == len(ACTIONS)  # N = |A|
    assert planner.world_model.graphs.extractor == "rule"  # not the LLM extractor
    result = run_text_planner(planner, 0)
    assert world.calls == [len(ACTIONS)]  # H = 1: one batched call, every action once
    assert sorted(p.steps[0][0] for p in result.particles) == sorted(ACTIONS)
    assert (result.num_particles, result.horizon) == (len(ACTIONS), 1)
    cfg = result.config
    assert cfg["world_model_kind"] == "learned" and cfg["oracle"] is False
    assert cfg["world_model_path"] == DEFAULT_WORLD_MODEL
    assert cfg["progress"] == "task+novelty" and cfg["proposal_kind"] == "uniform"
    assert cfg["choice"] == "max_weight" and cfg["particles_per_action"] == 1
    assert cfg["observation_temperature"] == 0.0


@pytest.mark.parametrize(
    ("given", "proposal", "expected"),
    [
        ({"num_particles": 8}, None, {"num_particles": 8, "particles_per_action": 0}),
        ({"proposal": "lm"}, None, {"proposal": "lm", "particles_per_action": 0}),
        ({}, "lm", {"proposal": "lm", "particles_per_action": 0}),
        ({}, lambda key, particles, t, horizon: None, {"particles_per_action": 0}),
        ({"particles_per_action": 2}, None, {"particles_per_action": 2}),
        (
            {"world_model": "simulator"},
            None,
            {"world_model": "simulator", "world_model_path": None},
        ),
        (
            {"world_model": "lm", "horizon": 2},
            None,
            {"world_model": "lm", "world_model_path": None, "horizon": 2},
        ),
        ({"world_model_path": "runs/wm/adapter"}, None, {"world_model_path": "runs/wm/adapter"}),
    ],
)
def test_a_setting_given_replaces_its_default_and_the_defaults_that_only_serve_it(
    given, proposal, expected
):
    cfg = plan_text_config(given, proposal=proposal)
    want = {**PLAN_TEXT_DEFAULTS, **expected}
    assert {k: getattr(cfg, k) for k in want} == want


def test_a_default_given_against_another_setting_is_still_refused():
    with pytest.raises(PlanningError, match="world_model_path='x' is the learned world model"):
        plan_text_config({"world_model": "lm", "world_model_path": "x"})
    with pytest.raises(PlanningError, match="particles_per_action=1 .* needs proposal='uniform'"):
        plan_text_config({"proposal": "lm", "particles_per_action": 1})
    with pytest.raises(PlanningError, match="unknown planner option"):
        plan_text_config({"particles": 4})


def test_a_config_given_is_used_as_it_is():
    given = PlannerConfig(proposal="uniform", progress="novelty")
    planner = build_text_planner(TASK, None, ACTIONS, config=given, observation_model=EchoWorld())
    assert planner.config == given
    assert planner.config.world_model is WorldModelKind.LM and len(planner.particles) == 4


def test_a_missing_default_world_model_names_world_model_path_and_the_fix(tmp_path, monkeypatch):
    shutil.copy(models_dir() / "registry.json", tmp_path / "registry.json")
    monkeypatch.setenv("SMCPLAN_MODELS_DIR", str(tmp_path))  # no trained/ folder
    with pytest.raises(ArtifactError) as raised:
        plan_text(TASK, None, ACTIONS)
    message = str(raised.value)
    assert f"world_model_path={DEFAULT_WORLD_MODEL!r}" in message
    assert "make models" in message and "world_model='lm'" in message
