"""The policy head's ``context`` (``smcplan train grpo-mr-head --opt context=task``).

With ``context="task"`` the state text is the task line alone, so a candidate's features are a
function of its own text (``tag: action`` and, with map notes, what the agent's map says) and
are computed once for the whole run; the trainer, the held-out evaluation and the RLVMR agent
given such a head all build the same texts.  ``"full"`` (the default) is today's state text, bit
for bit.  The env is ``toy_rooms``; every comparison is exact.
"""

from __future__ import annotations

import json

import pytest

from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles import policy_head as ph
from smcplan.llm.roles.policy_head import CONTEXTS, LMFeatures, PolicyHead, state_text
from smcplan.train.grpo_mr_head import notes_rules, train_grpo_mr_head
from smcplan.train.head_episodes import evaluate_head

from .test_policy_head_notes import GOLD, Recorder, _config, _rooms_shard
from .toy_corridor import HORIZON, Corridor
from .toy_rooms import TASK, Rooms

TASK_STATE = "Task: " + " ".join(TASK.split())  # state_text collapses whitespace


@pytest.fixture(scope="module")
def tiny_lm():
    from smcplan.llm.testing import tiny_model

    return tiny_model()


STEPS = [("explore", "open door to north", "You open the door."), ("planning", "move north", "Hi")]


def test_the_task_context_is_the_task_line_alone():
    assert CONTEXTS == ("full", "task")
    assert state_text("Find the coin.", STEPS, "You are in the hall.", context="task") == (
        "Task: Find the coin."
    )
    assert state_text("Find the coin.", [], "x", context="task") == "Task: Find the coin."
    full = state_text("Find the coin.", STEPS, "You are in the hall.")
    assert full == state_text("Find the coin.", STEPS, "You are in the hall.", context="full")
    assert full.startswith("Task: Find the coin.\nActions tried: open door to north, move north")
    assert full.endswith("\nNow: You are in the hall.")


@pytest.mark.parametrize("value", ["none", "Task", "", None])
def test_an_unknown_context_is_a_typed_error(value, tmp_path):
    with pytest.raises(InvalidArgumentError, match=rf"context={value!r}: give one of full, task"):
        state_text("t", [], "o", context=value)
    with pytest.raises(InvalidArgumentError, match=rf"context={value!r}: give one of full, task"):
        _config(tmp_path, context=value).validated()
    assert not (tmp_path / "state.json").exists()


def test_the_cli_refuses_an_unknown_context_in_one_line(capsys, tmp_path):
    from smcplan.cli import main

    rc = main(["train", "grpo-mr-head", "--out", str(tmp_path / "o"), "--opt", "context=all"])
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and "context" in lines[0] and "all" in lines[0], lines
    assert not (tmp_path / "o").exists()


def test_trainer_evaluation_and_agent_read_only_the_task_and_the_notes(tiny_lm, tmp_path, seen):
    from smcplan.agents.rlvmr import RLVMRAgent

    shard = _rooms_shard(tmp_path / "gold.jsonl")
    out = tmp_path / "run"
    run = train_grpo_mr_head(_config(out, data=(shard,), iterations=1, eval_seeds=(0,),
                                     map_notes=True, context="task"),
                             env=Rooms(), features=LMFeatures(tiny_lm, (-1, 1)),
                             progress=False)  # fmt: skip
    saved = json.loads((out / "head" / ph.POLICY_FILE).read_text())
    assert saved["info"]["context"] == "task" and run["config"]["context"] == "task"
    assert run["cold_start"]["accuracy"] == 1.0
    # every state the cold start, the rollouts and the held-out games asked about is the task
    assert seen and {state for state, _ in seen} == {TASK_STATE}
    seen.clear()
    cfg = _config(out, map_notes=True, context="task")
    trainer = evaluate_head(PolicyHead.load(out / "head"), Rooms(), (0,),
                            LMFeatures(tiny_lm, (-1, 1)), 5, 3, notes_rules(cfg),
                            cfg.context)  # fmt: skip
    by_trainer = list(seen)
    seen.clear()
    agent = RLVMRAgent(tiny_lm, policy_head=str(out / "head"), seed=0)
    env = Rooms()
    obs, info = env.reset(0)
    agent.reset(env.task, obs, list(info["admissible_actions"]))
    actions = []
    for _ in range(5):
        step = agent.act(obs, list(info["admissible_actions"]), info)
        actions.append(step.action)
        obs, _, done, info = env.step(step.action)
        if done:
            break
    assert by_trainer == list(seen) and {s for s, _ in by_trainer} == {TASK_STATE}
    assert actions == trainer["actions"]["0"] == list(GOLD) and info["won"]


def test_a_task_context_head_is_not_a_full_context_init_head_nor_resumed_as_one(tmp_path):
    corridor = dict(seeds=(0, 1), group_size=4, max_steps=HORIZON)
    features = Recorder()  # hashed texts: the toy features read the full state
    train_grpo_mr_head(_config(tmp_path / "a", iterations=1, context="task", **corridor),
                       env=Corridor(), features=features, progress=False)  # fmt: skip
    with pytest.raises(InvalidArgumentError, match=r"resume: context differ .*context='task'"):
        train_grpo_mr_head(_config(tmp_path / "a", iterations=2, resume=True, **corridor),
                           env=Corridor(), features=features, progress=False)  # fmt: skip
    more = train_grpo_mr_head(_config(tmp_path / "a", iterations=2, resume=True,
                                      context="task", **corridor),
                              env=Corridor(), features=features, progress=False)  # fmt: skip
    assert more["resumed_from"] == 1
    assert PolicyHead.load(more["weights"]).info["context"] == "task"
    with pytest.raises(InvalidArgumentError, match=r"context=full but init_head .*context=task"):
        train_grpo_mr_head(_config(tmp_path / "b", iterations=1, init_head=tmp_path / "a" / "head",
                                   **corridor),
                           env=Corridor(), features=features, progress=False)  # fmt: skip
    # a head made before the setting existed read the full state text
    old = PolicyHead.load(tmp_path / "a" / "head")
    old.info.pop("context")
    old.save(tmp_path / "old")
    with pytest.raises(InvalidArgumentError, match=r"context=task but init_head .*context=full"):
        train_grpo_mr_head(_config(tmp_path / "c", iterations=1, init_head=tmp_path / "old",
                                   context="task", **corridor),
                           env=Corridor(), features=features, progress=False)  # fmt: skip
