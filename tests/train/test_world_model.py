"""The learned world model: examples in the planner's prompt, scoring, training, planning."""

from __future__ import annotations

import pytest

from smcplan.errors import InvalidArgumentError
from smcplan.memory import KnowledgeGraph
from smcplan.planning import PlannerConfig, PlanningError, Retrieval
from smcplan.planning.text_particle import TextParticle
from smcplan.train.data import read_shard
from smcplan.train.world_model import (
    context_text,
    exact_match,
    first_sentence,
    observation_event,
    token_f1,
    train_world_model,
    world_model_examples,
)

from .conftest import ACTIONS, BRANCH, OBS, TASK, write_shard


def test_the_context_is_the_planner_particles_own():
    steps = ((ACTIONS[0], OBS[1]),)
    assert context_text(TASK, [], OBS[0], steps) == TextParticle(
        kg=None, root_observation=OBS[0], steps=steps
    ).context(TASK)
    kg = KnowledgeGraph()
    kg.observe(OBS[0], None, env_kind="twx", step=0)
    particle = TextParticle(kg=kg, root_observation=OBS[0])
    facts = particle.facts(TASK, Retrieval())
    assert facts and context_text(TASK, facts, OBS[0]) == particle.context(TASK)


def test_examples_are_the_observation_roles_prompt(shard):
    from smcplan.llm.templates import load_role

    transitions = read_shard(shard).transitions
    examples = world_model_examples(transitions, depths=(0, 1))
    # per episode: 2 steps at depth 0, 1 at depth 1
    assert len(examples) == 2 * 3
    deep = [ex for ex in examples if ex["depth"] == 1][0]
    first = transitions[0]
    context = context_text(TASK, first["facts"], OBS[0], [(ACTIONS[0], OBS[1])])
    assert deep["prompt"] == load_role("observation").messages(context=context, action=ACTIONS[1])
    assert deep["completion"] == OBS[2]


def test_a_branch_is_an_example_in_its_states_context(tmp_path):
    from smcplan.llm.templates import load_role

    read = read_shard(write_shard(tmp_path / "b.jsonl", episodes=(1,), branches=True))
    examples = world_model_examples(read.transitions, (0, 1), read.branches)
    # the branch is at t = 0, so it has a depth-0 example only: 2 + 1 real, 1 branch
    assert [(ex["t"], ex["depth"], ex["branch"]) for ex in examples] == [
        (0, 0, False), (0, 0, True), (1, 0, False), (1, 1, False)
    ]  # fmt: skip
    branch = examples[1]
    context = context_text(TASK, read.transitions[0]["facts"], OBS[0])
    assert branch["prompt"] == load_role("observation").messages(context=context, action=BRANCH[0])
    assert branch["completion"] == BRANCH[1] and branch["action"] == BRANCH[0]


def test_the_event_is_what_the_twists_read():
    assert observation_event(OBS[1], "move west") == ("hallway", False, None)
    assert observation_event(BRANCH[1], BRANCH[0]) == (None, True, None)
    opened = "You open the wood door, revealing the laundry room. "
    assert observation_event(opened, "open door to north") == (None, False, "laundry room")
    # a prediction that names the room but not the failure is a different event
    assert observation_event("You are in the kitchen.", "move east") != observation_event(
        BRANCH[1], BRANCH[0]
    )


def test_exact_match_and_token_f1():
    assert exact_match("You  take the Coin.", "you take the coin.")
    assert not exact_match("you take the coin", "you take the coin.")
    assert token_f1("a b c", "a b c") == 1.0 and token_f1("", "") == 1.0
    assert token_f1("x", "a b") == 0.0
    # c = 2 common tokens, |P| = 3, |T| = 2: F1 = 2c / (|P| + |T|) = 4/5
    assert token_f1("the coin here", "the coin") == pytest.approx(4 / 5)


def test_the_learned_world_model_needs_its_path():
    with pytest.raises(PlanningError, match="needs world_model_path="):
        PlannerConfig(world_model="learned")
    with pytest.raises(PlanningError, match="needs world_model='learned'"):
        PlannerConfig(world_model_path="runs/wm/adapter")
    assert PlannerConfig(world_model="learned", world_model_path="x").world_model == "learned"


def test_train_then_plan_with_the_learned_world_model(shard, tmp_path):
    from smcplan.llm.finetune import SFTSettings
    from smcplan.llm.testing import tiny_model_path
    from smcplan.planning import plan

    out = tmp_path / "wm"
    manifest = train_world_model(
        [shard],
        out,
        model=str(tiny_model_path()),
        settings=SFTSettings(max_steps=2, batch_size=2, save_steps=2, threads=1, progress=False),
    )
    assert manifest["steps"] == 2 and manifest["examples"] == 6
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert (out / "train.json").is_file() and (out / "examples.jsonl").is_file()
    result = plan(
        TASK,
        None,
        ["move west", "move east"],
        observation=OBS[0],
        key=0,
        num_particles=2,
        horizon=1,
        world_model="learned",
        world_model_path=str(out / "adapter"),
        proposal="uniform",
        progress="novelty",
        observation_tokens=4,
    )
    assert result.action in ("move west", "move east")
    assert result.config["world_model_kind"] == "learned" and result.config["oracle"] is False
    assert result.config["world_model_path"] == str(out / "adapter")


def test_a_learned_world_model_is_not_labelled_an_oracle():
    from smcplan.eval.report import variant

    config = {"identity": {"agent": "nesyfs", "agent_config": {"world_model": "learned"}}}
    assert variant(config) == "learned world model"


def _examples(n_real: int, n_branch: int) -> list[dict]:
    return [{"branch": False, "i": i} for i in range(n_real)] + [
        {"branch": True, "i": i} for i in range(n_branch)
    ]


def test_the_mix_has_the_asked_share_of_real_steps():
    from smcplan.train.world_model import mix_examples

    pool = _examples(30, 200)
    mixed = mix_examples(pool, 40, 0.5, seed=3)
    assert len(mixed) == 40 and sum(not ex["branch"] for ex in mixed) == 20
    assert len({(ex["branch"], ex["i"]) for ex in mixed}) == 40  # without replacement
    assert mixed == mix_examples(pool, 40, 0.5, seed=3)  # seeded
    # one part short: the other fills the budget; all real steps when only 30 exist
    assert sum(not ex["branch"] for ex in mix_examples(pool, 100, 0.9, seed=0)) == 30
    assert len(mix_examples(pool, 100, 0.9, seed=0)) == 100
    assert len(mix_examples(_examples(30, 5), 40, 0.5, seed=0)) == 35
    assert mix_examples(pool, None, None, seed=0) == pool


def _outcomes(n_ended: int, n_plain: int) -> list[dict]:
    won = [{"reward": 1.0, "ending": "won", "i": i} for i in range(n_ended // 2)]
    lost = [{"reward": 0.0, "ending": "lost", "i": i} for i in range(n_ended - n_ended // 2)]
    return won + lost + [{"reward": 0.0, "ending": "no", "i": i} for i in range(n_plain)]


def test_the_mix_has_the_asked_share_of_outcomes():
    from smcplan.train.world_model import has_outcome, mix_outcomes

    pool = _outcomes(10, 300)
    mixed = mix_outcomes(pool, 40, 0.25, seed=3)
    assert len(mixed) == 40 and sum(map(has_outcome, mixed)) == 10
    assert len({(ex["ending"], ex["i"]) for ex in mixed}) == 40  # without replacement
    assert mixed == mix_outcomes(pool, 40, 0.25, seed=3)  # seeded
    # too few outcomes: all of them, and plain steps fill the budget
    assert sum(map(has_outcome, mix_outcomes(pool, 40, 0.5, seed=0))) == 10
    assert len(mix_outcomes(pool, 40, 0.5, seed=0)) == 40
    assert has_outcome({"reward": -0.5, "ending": "no"})  # a score change counts
    assert mix_outcomes(pool, None, None, seed=0) == pool
    with pytest.raises(InvalidArgumentError, match="outcome_share needs max_examples"):
        mix_outcomes(pool, None, 0.5, seed=0)
    with pytest.raises(InvalidArgumentError, match="outcome_share"):
        mix_outcomes(pool, 4, 1.5, seed=0)


def test_real_share_and_outcome_share_are_not_given_together(tmp_path):
    from smcplan.train.world_model import train_world_model

    shard = write_shard(tmp_path / "s.jsonl")
    with pytest.raises(InvalidArgumentError, match="give one of them"):
        train_world_model([shard], tmp_path / "o", max_examples=2, real_share=0.5,
                          outcome_share=0.5)  # fmt: skip


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan"), "half", True])
def test_a_bad_real_share_is_a_typed_error(share):
    from smcplan.errors import SmcplanError
    from smcplan.train.world_model import mix_examples

    with pytest.raises(SmcplanError, match="real_share"):
        mix_examples(_examples(3, 3), 4, share, seed=0)


def test_real_share_needs_max_examples():
    from smcplan.errors import InvalidArgumentError
    from smcplan.train.world_model import mix_examples

    with pytest.raises(InvalidArgumentError, match="max_examples"):
        mix_examples(_examples(3, 3), None, 0.5, seed=0)


@pytest.mark.parametrize(
    ("text", "head"),
    [
        (
            "You are in the  corridor. To the North you see a closed wood door.",
            "You are in the corridor.",
        ),
        ("You can't move there, the door is closed.", "You can't move there, the door is closed."),
        (
            "Inventory (maximum capacity is 2 items): Your inventory is currently empty.",
            "Inventory (maximum capacity is 2 items): Your inventory is currently empty.",
        ),
        (
            "This room is called the kitchen. In it, you see: a fridge 1.5 m tall.",
            "This room is called the kitchen.",
        ),
        ("no sentence end here", "no sentence end here"),
    ],
)
def test_the_first_sentence_is_what_the_action_did(text, head):
    assert first_sentence(text) == head


def test_head_target_examples_complete_with_the_first_sentence(shard):
    transitions = read_shard(shard).transitions
    full = world_model_examples(transitions, (0, 1))
    head = world_model_examples(transitions, (0, 1), target="head")
    assert [ex["prompt"] for ex in head] == [ex["prompt"] for ex in full]
    assert [ex["completion"] for ex in head] == [first_sentence(ex["completion"]) for ex in full]
    # the twists read the same event from the head as from the whole observation
    assert all(
        observation_event(h["completion"], h["action"])
        == observation_event(f["completion"], f["action"])
        for h, f in zip(head, full, strict=True)
    )


def test_an_unknown_target_is_a_typed_error(shard):
    with pytest.raises(InvalidArgumentError, match="target must be one of full, head; got 'tail'"):
        world_model_examples(read_shard(shard).transitions, target="tail")
