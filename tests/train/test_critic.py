"""RLAW critic: gold-path labels, examples in the critic role's prompt, AUC, a training step."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.errors import InvalidArgumentError, SmcplanError
from smcplan.train.critic import (
    PREFIX,
    auc,
    critic_examples,
    critic_labels,
    score_actions,
    train_critic,
)

from .conftest import OBS, TASK


def _transitions():
    admissible = [["move west", "open fridge", "look around"], ["take coin", "move east"]]
    gold = ["move west", "take coin"]
    return [
        {
            "episode": "twx:coin/10000",
            "seed": 10000,
            "t": t,
            "task": TASK,
            "observation": OBS[t],
            "action": gold[t],
            "next_observation": OBS[t + 1],
            "reward": float(t == 1),
            "done": t == 1,
            "won": t == 1,
            "score": float(t == 1),
            "facts": [["agent", "in", "kitchen"]],
            "admissible": admissible[t],
        }
        for t in range(2)
    ]


def _gold_shard(path, source="gold"):
    from smcplan.train.data import SHARD_SCHEMA

    lines = [{"kind": "header", "schema": SHARD_SCHEMA, "env": "twx:coin", "source": source}]
    lines += [{"kind": "transition", **t} for t in _transitions()]
    lines.append(
        {
            "kind": "episode",
            "episode": "twx:coin/10000",
            "seed": 10000,
            "won": True,
            "steps": 2,
            "score": 1.0,
        }
    )
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_labels_mark_the_gold_action_of_each_state():
    labels = critic_labels(_transitions())
    assert [(r["t"], r["action"], r["label"]) for r in labels] == [
        (0, "move west", 1),
        (0, "open fridge", 0),
        (0, "look around", 0),
        (1, "take coin", 1),
        (1, "move east", 0),
    ]
    examples = critic_examples(labels, negatives_per_state=1, seed=0)
    assert sum(e["label"] for e in examples) == 2 and len(examples) == 4
    ex = next(e for e in examples if e["label"])
    body = json.loads(ex["completion"])
    assert ex["completion"].startswith(PREFIX) and body["critique_score"] == 1.0
    user = ex["prompt"][-1]["content"]  # the critic role's prompt, as RLAW sends it
    assert "Agent action: move west" in user and "Known facts:" in user
    assert "Current observation:" in user
    with pytest.raises(SmcplanError, match="negatives_per_state"):
        critic_examples(labels, negatives_per_state=-1)


def test_auc_by_hand():
    # pairs (pos, neg): 0.9>0.4, 0.9>0.1, 0.4=0.4 (1/2), 0.4>0.1 -> 3.5 / 4
    assert auc([0.9, 0.4, 0.4, 0.1], [1, 1, 0, 0]) == 0.875
    assert auc([0.1, 0.9], [1, 0]) == 0.0
    with pytest.raises(InvalidArgumentError, match="both classes"):
        auc([0.5, 0.6], [1, 1])
    with pytest.raises(InvalidArgumentError, match="one label each"):
        auc([0.5, 0.6, 0.7], [1, 0])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.5, 0.7, 1.0]), st.booleans()),
        min_size=2,
        max_size=40,
    ).filter(lambda rows: 0 < sum(y for _, y in rows) < len(rows))
)
def test_auc_from_ranks_is_the_pair_count(rows):
    """The rank-sum AUC equals the Mann-Whitney pair count exactly (few distinct scores, so
    ties are common): both numerators are multiples of 1/2, exact in float64, and each side is
    one correctly rounded division of the same rational."""
    from fractions import Fraction

    scores, labels = [s for s, _ in rows], [int(y) for _, y in rows]
    pos = [s for s, y in rows if y]
    neg = [s for s, y in rows if not y]
    twice_wins = sum(2 * (p > n) + (p == n) for p in pos for n in neg)
    assert auc(scores, labels) == float(Fraction(twice_wins, 2 * len(pos) * len(neg)))


def test_summarise_scores_by_hand():
    from smcplan.train.critic import summarise_scores

    # two states: (0.9 gold, 0.4), (0.4 gold, 0.1); AUC over all pairs as in test_auc_by_hand
    examples = [
        {"episode": "e", "t": 0, "label": 1},
        {"episode": "e", "t": 0, "label": 0},
        {"episode": "e", "t": 1, "label": 1},
        {"episode": "e", "t": 1, "label": 0},
    ]
    score = summarise_scores([0.9, 0.4, 0.4, 0.1], examples, resamples=200, seed=0)
    assert (score.n, score.positives, score.states, score.auc) == (4, 2, 2, 0.875)
    assert (score.mean_positive, score.mean_negative) == (0.65, 0.25)
    # a resample draws each state 0, 1 or 2 times: AUC 1 (one state, either) or 0.875 (both)
    assert score.auc_ci[0] in (0.875, 1.0) and score.auc_ci[1] == 1.0
    with pytest.raises(InvalidArgumentError, match="one per example"):
        summarise_scores([0.5], examples)


def test_map_notes_go_into_the_prompt_of_each_action():
    from smcplan.agents.map_notes import action_note, episode_maps

    transitions = _transitions()
    # TextWorldExpress writes a room's exits on a line of their own, which its rules read
    transitions[0]["observation"] = OBS[0].replace(". To the", ". \nTo the") + " "
    plain = critic_examples(critic_labels(transitions), negatives_per_state=None)
    assert all(ex["note"] == "" for ex in plain)
    assert all("map says" not in ex["prompt"][-1]["content"] for ex in plain)
    maps = episode_maps(transitions, "twx:coin")
    noted = critic_examples(critic_labels(transitions, maps), negatives_per_state=None)
    for ex, bare in zip(noted, plain, strict=True):
        want = action_note(maps[(ex["episode"], ex["t"])], ex["action"], first_step=ex["t"] == 0)
        assert ex["note"] == want != ""
        user = ex["prompt"][-1]["content"]
        # the plain prompt with one line more, after the action
        assert user == bare["prompt"][-1]["content"].replace(
            "\nGive your critique", f"\nWhat the agent's map says: {want}\nGive your critique"
        )
    west = next(ex for ex in noted if ex["t"] == 0 and ex["action"] == "move west")
    assert west["note"].startswith("No step has been taken yet; it leads to the hallway")
    with pytest.raises(InvalidArgumentError, match="no place map"):
        critic_labels(transitions, {})


def test_bad_shards_and_options_are_refused(tmp_path):
    from smcplan.train.critic import run
    from smcplan.train.registry import TrainRequest

    with pytest.raises(InvalidArgumentError, match="gold shard"):
        train_critic([_gold_shard(tmp_path / "o.jsonl", "oracle")], tmp_path / "out")
    with pytest.raises(SmcplanError, match="bogus"):
        run(
            TrainRequest(
                "critic", tmp_path / "out", data=[tmp_path / "o.jsonl"], options={"bogus": 1}
            )
        )
    with pytest.raises(InvalidArgumentError, match="--data"):
        run(TrainRequest("critic", tmp_path / "out"))
    gold = _gold_shard(tmp_path / "gold.jsonl")
    # booleans are exactly true/false/1/0/yes/no (smcplan.options.parse_bool)
    with pytest.raises(InvalidArgumentError, match="--opt map_notes must be a boolean; got 'ja'"):
        run(TrainRequest("critic", tmp_path / "out", data=[gold], options={"map_notes": "ja"}))


@pytest.mark.slow
def test_a_training_step_and_the_adapter_plugs_into_rlaw(tmp_path):
    pytest.importorskip("trl")
    from smcplan.agents import make
    from smcplan.llm import load_model
    from smcplan.llm.finetune import SFTSettings
    from smcplan.llm.testing import tiny_model, tiny_model_path

    base = str(tiny_model_path())
    manifest = train_critic(
        [_gold_shard(tmp_path / "gold.jsonl")],
        tmp_path / "critic",
        model=base,
        settings=SFTSettings(
            learning_rate=2e-4,
            weight_decay=0.01,
            max_steps=1,
            batch_size=2,
            grad_accum=1,
            save_steps=1,
            progress=False,
        ),
    )
    assert manifest["steps"] == 1 and manifest["examples"] == 5 and manifest["positives"] == 2
    adapter = manifest["weights"]
    critic_lm = load_model(base, adapter=adapter, threads=1)
    examples = [json.loads(x) for x in open(tmp_path / "critic" / "examples.jsonl")]
    scores = score_actions(critic_lm, examples)
    assert len(scores) == 5 and all(0.0 <= s <= 1.0 for s in scores)
    agent = make("rlaw", lm=tiny_model(), critic_path=adapter, critic_model=base)
    assert agent.critic_path == adapter and agent.critic.lm is not agent.lm
    assert manifest["map_notes"] is False and agent.critic_notes is False


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=5),
        min_size=2,
        max_size=6,
    )
)
def test_summarise_scores_interval_is_ordered(states):
    """Each state's first action is its gold one; the AUC of the pooled scores lies in [0, 1],
    and so does the ordered bootstrap interval (its resamples are AUCs too)."""
    from smcplan.train.critic import summarise_scores

    examples = [
        {"episode": "e", "t": t, "label": int(j == 0)}
        for t, row in enumerate(states)
        for j in range(len(row))
    ]
    score = summarise_scores([s for row in states for s in row], examples, resamples=50)
    assert 0.0 <= score.auc <= 1.0
    assert 0.0 <= score.auc_ci[0] <= score.auc_ci[1] <= 1.0
    assert score.states == len(states) and score.positives == len(states)


def test_auc_difference_by_hand_and_paired():
    from smcplan.train.critic import auc_difference

    examples = [
        {"episode": "e", "t": 0, "label": 1},
        {"episode": "e", "t": 0, "label": 0},
        {"episode": "e", "t": 1, "label": 1},
        {"episode": "e", "t": 1, "label": 0},
    ]
    a, b = [0.9, 0.4, 0.4, 0.1], [0.9, 0.4, 0.4, 0.1]
    d, (lo, hi) = auc_difference(a, b, examples, resamples=200)
    assert (d, lo, hi) == (0.0, 0.0, 0.0)  # the same critic: every paired resample differs by 0
    d, (lo, hi) = auc_difference([1.0, 0.0, 1.0, 0.0], a, examples, resamples=200)
    assert d == 1.0 - 0.875 and lo <= d <= hi and lo >= 0.0  # never worse on any draw
    with pytest.raises(InvalidArgumentError, match="same examples"):
        auc_difference([0.1], a, examples)
