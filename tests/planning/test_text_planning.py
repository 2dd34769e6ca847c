"""plan(task, memory, admissible_actions, lm=...) with the tiny random-weight model of smcplan.llm.

The tiny model's text is meaningless, but it runs the real code paths (batched constrained
scoring and sampling, log-probabilities), so these tests check the planner's plumbing: one
batched call per role per step, copy-on-write graphs, weights computed from the model's numbers.
"""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np
import pytest

import smcplan
from smcplan.memory import KnowledgeGraph, Triplet
from smcplan.planning import PlannerConfig, PlanningError, Score
from smcplan.planning.text_particle import TextParticle
from tests.tolerance import llama_logprob_tol, smc_logweight_tol

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TASK = "find the coin and take it"
ACTIONS = ["go north", "take coin", "look around"]
OBS = "You are in the hallway. There is a door to the north."
#: the language-model roles on lm= (LM proposal, LM world model, LM judge: PlannerConfig's own
#: defaults, the agents'); plan()'s text defaults are the shipped learned world model instead
LM_ROLES = PlannerConfig()


@pytest.fixture(scope="module")
def lm():
    from smcplan.llm.testing import tiny_model

    return tiny_model()


def memory() -> KnowledgeGraph:
    return KnowledgeGraph([("coin", "in", "kitchen"), ("agent", "at", "hallway")])


def test_text_plan_returns_an_admissible_action_with_one_batched_call_per_role_per_step(lm):
    horizon = 2
    before = lm.usage.calls
    res = smcplan.plan(
        TASK,
        memory(),
        ACTIONS,
        lm=lm,
        config=LM_ROLES,
        extractor="llm",
        observation=OBS,
        num_particles=4,
        horizon=horizon,
        key=0,
    )
    assert res.action in ACTIONS
    assert res.calls == {"proposal": horizon, "world_model": horizon, "twist": horizon}
    # proposal scoring + observation sampling + triplet extraction + progress scoring, per step
    assert lm.usage.calls - before == 4 * horizon
    assert all(len(p.steps) == horizon for p in res.particles)
    assert all(a in ACTIONS for a, _ in res.particles[0].steps)
    assert res.to_dict()["action"] == res.action


def test_the_same_key_gives_the_same_plan(lm):
    kw = dict(
        lm=lm, config=LM_ROLES, observation=OBS, num_particles=3, horizon=2, key=7,
        extractor="rule",
    )  # fmt: skip
    a = smcplan.plan(TASK, memory(), ACTIONS, **kw)
    b = smcplan.plan(TASK, memory(), ACTIONS, **kw)
    assert [p.steps for p in a.particles] == [p.steps for p in b.particles]
    assert a.action == b.action


def test_particles_update_their_own_graph_copies_and_never_the_agents_memory(lm):
    root = memory()
    snapshot = root.copy()

    def did(observations, actions, locations, seed):
        """A rule extractor: the imagined action becomes a predicted event of the agent."""
        assert len(locations) == len(actions)  # the agent's location in each particle's graph
        return [[("agent", "tried", a)] for a in actions]

    res = smcplan.plan(
        TASK,
        root,
        ACTIONS,
        lm=lm,
        config=LM_ROLES,
        observation=OBS,
        num_particles=4,
        horizon=2,
        key=3,
        extractor=did,
    )
    assert root == snapshot and len(root) == 2  # the agent's memory is untouched
    for p in res.particles:
        for a, _ in p.steps:
            t = Triplet("agent", "tried", a)
            assert t in p.kg and p.kg.provenance(t).source == "predicted"
        assert Triplet("coin", "in", "kitchen") in p.kg  # inherited from the root graph
    graphs = {id(p.kg) for p in res.particles}
    assert id(root) not in graphs


def test_twisted_text_plan_weights_telescope_to_the_final_progress_twist(lm):
    # Proposal at temperature 1 (q = p0) and observations sampled from the model (q_W = p): the
    # twisted weight of a particle telescopes to psi_H = P(Yes | its last transition).  Without
    # resampling the final log-weights must equal the normalised log P(Yes) recomputed here
    # (the judge sees each particle's retrieved facts and new triplets before its observations).
    from smcplan.llm import ProgressModel
    from smcplan.planning.progress import LMProgress

    res = smcplan.plan(
        TASK,
        memory(),
        ACTIONS,
        lm=lm,
        config=LM_ROLES,
        observation=OBS,
        num_particles=4,
        horizon=2,
        key=5,
        weighting="twisted",
        ess_threshold=0.0,
        extractor="rule",
    )
    shown = LMProgress(None, TASK)
    judged = ProgressModel(lm)(
        [TASK] * 4,
        [shown._before(p) for p in res.particles],
        [p.steps[-1][0] for p in res.particles],
        [p.observation for p in res.particles],
    )
    log_psi = np.array([j.log_twist for j in judged])
    # The planner's and this recomputation's float32 scores come from forward passes of other
    # batch shapes: the proposal/observation terms log p - log q that cancel, and Yes/No
    # (rounding model of tests/tolerance.py over all their tokens; context <= the model's
    # maximum), doubled by the normalisation, plus the weights' own float32 rounding.
    yes_no = sum(len(lm.encode_continuation(w)) for w in ("Yes", "No"))
    n_tok = yes_no + max(
        sum(len(lm.encode_continuation(x)) for step in p.steps for x in step) for p in res.particles
    )
    tol = 2 * llama_logprob_tol(lm.model, n_tok, lm.model.config.max_position_embeddings)
    tol += smc_logweight_tol(2, 4, float(np.abs(log_psi).max()) + np.log(4))
    np.testing.assert_allclose(
        np.asarray(res.log_weights), log_psi - np.logaddexp.reduce(log_psi), atol=tol
    )


def test_a_rule_based_twist_steers_the_text_planner_away_from_the_models_favourite(lm):
    # An LLM-free progress (e.g. RLVMR's rules) plugs in as the twist: delta = 1 iff the imagined
    # action was "go north".  The tiny model scores (go north, take coin, look around) at about
    # (-6.1, -0.002, -31.2), so at temperature 1 it always takes the coin; flattened to temperature
    # 10 the proposal is about (0.34, 0.62, 0.03), so "go north" is among 16 proposals except with
    # probability 0.66^16 = 0.001.  With lam = 5 a particle that went north outweighs any other
    # e^5 to 1: the mass of "go north" is at least e^5 / (e^5 + 15) = 0.908, and max_weight picks
    # it.
    from smcplan.llm import ActionProposal

    def went_north(key, particles: list[TextParticle], t, horizon):
        return Score(delta=jnp.asarray([float(p.steps[-1][0] == "go north") for p in particles]))

    res = smcplan.plan(
        TASK,
        None,
        ACTIONS,
        lm=lm,
        config=LM_ROLES,
        observation=OBS,
        num_particles=16,
        horizon=1,
        key=1,
        lam=5.0,
        twist=went_north,
        choice="max_weight",
        proposer=ActionProposal(lm, temperature=10.0),
    )
    assert "go north" in res.step_actions[0]
    assert res.action == "go north" and res.action_mass["go north"] >= 0.9
    # without the twist's pull the model itself prefers another action
    plain = smcplan.plan(
        TASK,
        None,
        ACTIONS,
        lm=lm,
        config=LM_ROLES,
        observation=OBS,
        num_particles=16,
        horizon=1,
        key=1,
        choice="max_weight",
        proposer=ActionProposal(lm, temperature=1.0),
        twist=lambda *a: Score(delta=jnp.zeros(16)),
    )
    assert plain.action == "take coin"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((TASK, None, []), {}, "the admissible action set is empty"),
        ((TASK, None, "look"), {}, "admissible_actions must be a list of strings"),
        (
            (TASK, {"coin": "kitchen"}, ACTIONS),
            {},
            "memory must be a smcplan.memory.KnowledgeGraph or None",
        ),
        (
            (TASK, None, ACTIONS),
            {"num_particles": 0},
            "num_particles must be an integer >= 1; got 0",
        ),
        ((TASK, None, ACTIONS), {"horizon": 0}, "horizon must be an integer >= 1; got 0"),
        (
            (TASK, None, ACTIONS),
            {"extractor": "magic"},
            "unknown extractor 'magic'; known: llm, rule, none",
        ),
    ],
)
def test_bad_text_plan_input_raises_clear_errors(lm, args, kwargs, message):
    with pytest.raises(PlanningError, match=message):
        smcplan.plan(*args, lm=lm, **kwargs)


def test_text_plan_without_a_model_says_what_is_missing():
    with pytest.raises(PlanningError, match="needs lm="):
        smcplan.plan(TASK, None, ACTIONS, config=LM_ROLES)
