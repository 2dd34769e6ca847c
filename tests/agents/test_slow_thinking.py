"""Slow thinking with language-model components: one batched call per role per planning step,
particle graphs copied (the agent's graph untouched), the planner's first action executable."""

from __future__ import annotations

import pytest

from smcplan.agents.context import Context
from smcplan.agents.extractors import Extractor
from smcplan.agents.slow_thinking import SlowThinker
from smcplan.memory import KnowledgeGraph

OBS = (
    "You are in the middle of a room. Looking quickly around you, you see a drawer 1, "
    "a drawer 2, a cabinet 1."
)
ADMISSIBLE = ["go to drawer 1", "go to drawer 2", "open drawer 1", "look"]


class Counted:
    """Wraps a role and records the batch size of every call."""

    def __init__(self, inner):
        self.inner, self.batches = inner, []

    def __call__(self, *columns, **kwargs):
        self.batches.append(len(columns[0]))
        return self.inner(*columns, **kwargs)


@pytest.mark.parametrize("weighting", ["nesyfs", "twisted"])
def test_each_role_is_called_once_per_planning_step_with_all_particles(tiny_lm, weighting):
    from smcplan.llm import ActionProposal, ObservationModel, ProgressModel, TripletExtractor

    n, h = 3, 2
    prop = Counted(ActionProposal(tiny_lm))
    obs = Counted(ObservationModel(tiny_lm, max_new_tokens=12))
    prog = Counted(ProgressModel(tiny_lm))
    ext_role = Counted(TripletExtractor(tiny_lm))
    extractor = Extractor("llm", tiny_lm, llm_extractor=ext_role)
    extractor.start(OBS)
    kg = KnowledgeGraph([("agent", "at", "middle of room"), ("drawer 1", "is", "closed")])
    before = kg.facts()
    thinker = SlowThinker(
        tiny_lm, num_particles=n, horizon=h, weighting=weighting,
        proposer=prop, observation_model=obs, progress_model=prog,
    )
    calls0 = tiny_lm.usage.calls
    root = Context("take the key 1", OBS, [("agent", "at", "middle of room")])
    result = thinker(root, kg, ADMISSIBLE, seed=0, extractor=extractor)
    assert prop.batches == obs.batches == prog.batches == ext_role.batches == [n] * h
    assert tiny_lm.usage.calls - calls0 == 4 * h  # proposal, observation, triplets, progress
    assert result.calls == {"proposal": h, "world_model": h, "twist": h}
    assert result.action in ADMISSIBLE and result.weighting == weighting
    assert kg.facts() == before  # the agent's graph is never written by the planner
    for p in result.particles:
        assert len(p.steps) == h and p.kg is not kg
        assert all(prov.source in ("observed", "predicted") for _, prov in p.kg.facts())
        assert p.steps[0][0] in ADMISSIBLE


def test_without_a_graph_particles_carry_the_observation_and_their_imagined_steps(tiny_lm):
    thinker = SlowThinker(tiny_lm, num_particles=2, horizon=1, observation_tokens=8)
    root = Context("take the key 1", OBS, history="> look\nnothing")
    result = thinker(root, None, ADMISSIBLE, seed=1)
    assert all(p.kg is None and p.root_observation == OBS for p in result.particles)
    assert all(len(p.steps) == 1 and p.steps[0][0] in ADMISSIBLE for p in result.particles)


def test_greedy_imagined_observations_are_one_future_per_action(tiny_lm):
    """observation_temperature=0: the world model decodes greedily, so two particles that take
    the same first action imagine the same observation (at 1 they are free to differ)."""
    thinker = SlowThinker(
        tiny_lm, num_particles=6, horizon=1, observation_tokens=8, observation_temperature=0.0
    )
    assert thinker.observation_model.temperature == 0.0
    result = thinker(Context("take the key 1", OBS), None, ADMISSIBLE[:2], seed=3)
    seen = {}
    for p in result.particles:
        (action, observation), = p.steps
        assert seen.setdefault(action, observation) == observation
    assert SlowThinker(tiny_lm).observation_model.temperature == 1.0


def test_the_same_seed_gives_the_same_plan(tiny_lm):
    thinker = SlowThinker(tiny_lm, num_particles=3, horizon=1, observation_tokens=8)
    root = Context("take the key 1", OBS)
    a, b = (thinker(root, KnowledgeGraph(), ADMISSIBLE, seed=5) for _ in range(2))
    assert a.action == b.action and a.to_dict() == b.to_dict()


def test_bad_planner_settings_are_named(tiny_lm):
    from smcplan.planning import PlanningError

    with pytest.raises(PlanningError, match="num_particles"):
        SlowThinker(tiny_lm, num_particles=0)
    with pytest.raises(PlanningError, match="unknown weighting 'exact'"):
        SlowThinker(tiny_lm, weighting="exact")


@pytest.mark.parametrize(
    ("progress", "judged"), [("lm", True), ("lm+rlvmr", True), ("rlvmr", False)]
)
def test_the_roles_are_built_once_when_the_thinker_is(tiny_lm, progress, judged):
    from smcplan.llm import ObservationModel, ProgressModel

    thinker = SlowThinker(tiny_lm, progress=progress)
    assert isinstance(thinker.observation_model, ObservationModel)
    assert isinstance(thinker.progress_model, ProgressModel) is judged


def test_imagined_lines_list_each_first_action_once_by_its_heaviest_particle_normalised():
    from smcplan.agents.slow_thinking import imagined_lines

    summary = {
        "trace": {
            "steps": [
                {
                    "actions": ["move south", "look around", "move south", "take coin"],
                    "observations": ["You are in the  bathroom.", "You are in the kitchen.",
                                     "You can't move there.", "You take the coin."],
                    "weights": [1.0, 0.5, 3.0, 4.0],
                }
            ]
        }
    }
    lines = imagined_lines(summary, limit=6)
    assert lines == [
        "'take coin' -> \"You take the coin.\" (weight 0.47)",
        "'move south' -> \"You can't move there.\" (weight 0.35)",
        "'look around' -> \"You are in the kitchen.\" (weight 0.06)",
    ]
    assert imagined_lines(summary, limit=1) == lines[:1]
    assert imagined_lines({"trace": {"steps": []}}) == []
    assert imagined_lines({}) == []
