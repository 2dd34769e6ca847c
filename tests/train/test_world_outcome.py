"""The learned simulator's reward and done: the reply format, its parser on malformed replies,
the shard schema (old shards still load), a tiny-model train + evaluate smoke, and the ``env``
twist reading a predicted reward the way it reads the simulator's."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles.world_outcome import (
    DEFAULT_TARGETS,
    FULL_TARGETS,
    TARGETS_FILE,
    check_targets,
    ending_of,
    format_completion,
    parse_completion,
    read_targets,
)
from smcplan.train.data import SHARD_SCHEMA, SHARD_SCHEMAS, DatasetLineError, read_shard
from smcplan.train.world_model import world_model_examples
from smcplan.train.world_model_eval import precision_recall

from .conftest import OBS, TASK, write_shard

# ------------------------------------------------------------------ the format


@pytest.mark.parametrize(
    ("reward", "ending", "line"),
    [
        (1.0, "won", "Reward: +1 | Done: won"),
        (0.0, "no", "Reward: +0 | Done: no"),
        (-0.0, "lost", "Reward: +0 | Done: lost"),
        (0.25, "no", "Reward: +0.25 | Done: no"),
        (-0.5, "lost", "Reward: -0.5 | Done: lost"),
    ],
)
def test_the_outcome_line_comes_first_and_reads_back_exactly(reward, ending, line):
    text = format_completion(OBS[2], reward, ending, FULL_TARGETS)
    assert text == f"{line}\n{OBS[2]}"
    read = parse_completion(text, FULL_TARGETS)
    assert (read.observation, read.reward, read.ending) == (OBS[2], reward, ending)
    assert read.reward_ok and read.done_ok
    assert read.done == (ending != "no") and read.won == (ending == "won")


@settings(max_examples=100, deadline=None)
@given(st.floats(-1.0, 1.0, allow_nan=False), st.sampled_from(["no", "won", "lost"]))
def test_any_reward_round_trips_to_three_significant_digits(reward, ending):
    read = parse_completion(format_completion("You see a coin.", reward, ending, FULL_TARGETS))
    assert read.reward_ok and read.ending == ending
    assert read.reward == float(f"{reward:.3g}")  # exactly the written 3-digit number
    assert abs(read.reward - reward) <= 5e-3 * abs(reward) + 1e-300


def test_the_old_format_is_the_observation_alone():
    assert format_completion(OBS[1]) == OBS[1]
    assert format_completion(OBS[1], 1.0, "won", DEFAULT_TARGETS) == OBS[1]
    read = parse_completion("Reward: +1 | Done: won\nYou take it.", DEFAULT_TARGETS)
    assert read.observation == "Reward: +1 | Done: won\nYou take it."  # not read as an outcome
    assert (read.reward, read.done, read.reward_ok, read.done_ok) == (0.0, False, False, False)
    # reward only: no Done field is written, and done is not read
    assert format_completion("x", 0.5, "won", ["observation", "reward"]) == "Reward: +0.5\nx"


@pytest.mark.parametrize(
    ("reply", "reward", "ending", "reward_ok", "done_ok", "observation"),
    [
        ("You are in the kitchen.", 0.0, "no", False, False, "You are in the kitchen."),
        ("Reward: abc | Done: won\nYou x.", 0.0, "won", False, True, "You x."),
        ("Reward: +1 | Done: maybe\nYou x.", 1.0, "no", True, False, "You x."),
        ("Reward: 1e400 | Done: no\nx", 0.0, "no", False, True, "x"),  # inf: not a number
        ("Reward: nan | Done: no\nx", 0.0, "no", False, True, "x"),
        ("Reward: 7 | Done: won\nx", 0.0, "won", False, True, "x"),  # outside [-1, 1]
        ("Reward: 1.2.3 | Done: won", 0.0, "won", False, True, ""),  # cut before the text
        ("Reward: +0.5", 0.5, "no", True, False, ""),
        ("", 0.0, "no", False, False, ""),
        ("Done: LOST\nYou fall.", 0.0, "lost", False, True, "You fall."),
    ],
)
def test_a_malformed_reply_reads_zero_and_not_done_with_its_flag_down(
    reply, reward, ending, reward_ok, done_ok, observation
):
    read = parse_completion(reply, FULL_TARGETS)
    assert (read.reward, read.ending, read.reward_ok, read.done_ok, read.observation) == (
        reward, ending, reward_ok, done_ok, observation
    )  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_the_parser_never_raises_and_never_reads_a_number_out_of_range(reply):
    read = parse_completion(reply, FULL_TARGETS)
    assert math.isfinite(read.reward) and -1.0 <= read.reward <= 1.0
    assert read.ending in ("no", "won", "lost")
    assert read.reward_ok or read.reward == 0.0


def test_targets_are_checked_and_read_from_the_folder(tmp_path):
    assert check_targets("observation,reward,done") == FULL_TARGETS
    assert check_targets(["done", "observation"]) == ("observation", "done")
    for bad in (["reward"], ["observation", "score"], ["observation", "observation"], 3):
        with pytest.raises(InvalidArgumentError, match="observation"):
            check_targets(bad)
    assert read_targets(tmp_path) == DEFAULT_TARGETS  # no file: the old format
    (tmp_path / TARGETS_FILE).write_text(json.dumps({"targets": ["observation", "reward"]}))
    assert read_targets(tmp_path) == ("observation", "reward")
    (tmp_path / TARGETS_FILE).write_text("{")
    with pytest.raises(InvalidArgumentError, match="not valid JSON"):
        read_targets(tmp_path)
    assert ending_of(True, False, truncated=True) == "no"  # the step limit is no ending
    assert (ending_of(True, True), ending_of(True, False), ending_of(False, False)) == (
        "won", "lost", "no"
    )  # fmt: skip


def test_the_shipped_world_model_keeps_the_old_format():
    from smcplan.planning.learned import learned_targets

    assert learned_targets("twx-coin-world-model") == DEFAULT_TARGETS


# ------------------------------------------------------------------ the shard schema


def _shard_lines(schema, truncated=None, max_steps=2):
    header = {"kind": "header", "schema": schema, "env": "twx:coin", "max_steps": max_steps}
    row = {
        "kind": "transition", "episode": "twx:coin/1", "seed": 1, "t": 1, "task": TASK,
        "observation": OBS[1], "action": "look", "next_observation": OBS[1], "reward": 0.0,
        "done": True, "won": False, "score": 0.0, "facts": [],
    }  # fmt: skip
    if truncated is not None:
        row["truncated"] = truncated
    end = {"kind": "episode", "episode": "twx:coin/1", "seed": 1, "won": False, "steps": 2}
    return [header, row, end]


def _write(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def test_shards_of_schema_1_still_load_and_truncation_is_filled_in(tmp_path):
    assert SHARD_SCHEMA == "smcplan.train.shard/2" and "smcplan.train.shard/1" in SHARD_SCHEMAS
    old = read_shard(_write(tmp_path / "a.jsonl", _shard_lines("smcplan.train.shard/1")))
    assert old.transitions[0]["truncated"] is True  # t + 1 = max_steps, done, not won
    lost = read_shard(
        _write(tmp_path / "b.jsonl", _shard_lines("smcplan.train.shard/1", max_steps=9))
    )
    assert lost.transitions[0]["truncated"] is False  # ended before the limit: lost
    new = read_shard(_write(tmp_path / "c.jsonl", _shard_lines(SHARD_SCHEMA, truncated=False)))
    assert new.transitions[0]["truncated"] is False  # written: kept as written
    with pytest.raises(DatasetLineError, match="'truncated' must be bool"):
        read_shard(_write(tmp_path / "d.jsonl", _shard_lines(SHARD_SCHEMA, truncated="no")))
    with pytest.raises(DatasetLineError, match="schema"):
        read_shard(_write(tmp_path / "e.jsonl", _shard_lines("smcplan.train.shard/9")))


def test_collect_records_truncation_from_the_envs_info():
    from smcplan.train.collect import _record

    for info, want in (({"truncated": True}, True), ({"won": False}, False)):
        row = _record("branch", "twx:coin", 1, 3, TASK, OBS[0], "look",
                      (OBS[0], 0.0, True, info), [], ["look"])  # fmt: skip
        assert row["truncated"] is want and row["done"] is True


# ------------------------------------------------------------------ examples and scores


def test_examples_carry_the_outcome_line_when_asked(tmp_path):
    read = read_shard(write_shard(tmp_path / "s.jsonl", episodes=(1,), branches=True))
    old = world_model_examples(read.transitions, (0,), read.branches)
    assert [ex["completion"] for ex in old] == [OBS[1], "You can't move there, the door is closed.",
                                                OBS[2]]  # fmt: skip
    new = world_model_examples(read.transitions, (0,), read.branches, targets=FULL_TARGETS)
    assert [ex["completion"].split("\n")[0] for ex in new] == [
        "Reward: +0 | Done: no", "Reward: +0 | Done: no", "Reward: +1 | Done: won"
    ]  # fmt: skip
    assert [(ex["reward"], ex["ending"]) for ex in new] == [(0.0, "no"), (0.0, "no"), (1.0, "won")]
    assert [ex["prompt"] for ex in new] == [ex["prompt"] for ex in old]


def test_precision_and_recall_by_hand():
    got = precision_recall([True, True, False, False], [True, False, True, False])
    assert (got["precision"], got["recall"], got["tp"]) == (0.5, 0.5, 1)
    none = precision_recall([False, False], [False, False])
    assert math.isnan(none["precision"]) and math.isnan(none["recall"])
    with pytest.raises(InvalidArgumentError, match="one each"):
        precision_recall([True], [])


class _Scripted:
    """A language model that answers each prompt with the next scripted reply."""

    def __init__(self, replies):
        self.replies = list(replies)

    def generate(self, prompts, output_type, **kw):
        out, self.replies = self.replies[: len(prompts)], self.replies[len(prompts) :]
        return out


def test_evaluation_scores_reward_and_done_events(tmp_path):
    from smcplan.train.world_model import evaluate_world_model

    read = read_shard(write_shard(tmp_path / "s.jsonl", episodes=(1, 2)))
    examples = world_model_examples(read.transitions, (0,), targets=FULL_TARGETS)
    # truths per episode: (no reward, not done), (reward, won)
    replies = [
        "Reward: +0 | Done: no\n" + OBS[1], "Reward: +1 | Done: won\n" + OBS[2],  # right
        "Reward: +1 | Done: no\n" + OBS[1], "garbled",  # a false reward; a missed win
    ]  # fmt: skip
    score = evaluate_world_model(_Scripted(replies), examples, progress=False)
    assert score.targets == FULL_TARGETS
    assert (score.reward["tp"], score.reward["predicted"], score.reward["true"]) == (1, 2, 2)
    assert (score.reward["precision"], score.reward["recall"]) == (0.5, 0.5)
    assert (score.done["precision"], score.done["recall"]) == (1.0, 0.5)
    assert score.unparsed_outcome == 1
    assert score.exact == 0.75  # the observation part is scored as before
    assert "reward P=0.500 R=0.500" in score.outcome_line()
    old = world_model_examples(read.transitions, (0,))
    plain = evaluate_world_model(_Scripted([OBS[1], OBS[2]] * 2), old, progress=False)
    assert plain.exact == 1.0 and plain.reward is None and plain.outcome_line() == ""


def test_a_tiny_model_trains_and_evaluates_with_reward_and_done(shard, tmp_path):
    from smcplan.llm import load_model
    from smcplan.llm.finetune import SFTSettings
    from smcplan.llm.testing import tiny_model_path
    from smcplan.planning.learned import OutcomeObservationModel, learned_observation_model
    from smcplan.train.world_model import evaluate_world_model, train_world_model

    out = tmp_path / "wm"
    manifest = train_world_model(
        [shard], out, model=str(tiny_model_path()), depths=(0,), targets=FULL_TARGETS,
        settings=SFTSettings(max_steps=1, batch_size=2, save_steps=1, threads=1, progress=False),
    )  # fmt: skip
    assert manifest["targets"] == list(FULL_TARGETS)
    assert read_targets(out / "adapter") == FULL_TARGETS
    examples = world_model_examples(read_shard(shard).transitions, (0,), targets=FULL_TARGETS)
    lm = load_model(str(tiny_model_path()), adapter=out / "adapter", threads=1)
    score = evaluate_world_model(lm, examples, max_new_tokens=6, progress=False)
    assert score.n == len(examples) and score.reward is not None and score.done is not None
    assert 0 <= score.unparsed_outcome <= score.n  # random weights: replies are noise, no crash
    model = learned_observation_model(str(out / "adapter"), 6)
    assert isinstance(model, OutcomeObservationModel) and model.predicts == ("reward", "done")
    (sample,) = model(["Task: x\nObservation: y"], ["look"], seed=0)
    assert sample.value == sample.predicted.observation


# ------------------------------------------------------------------ the twist reads it


class _Predicting:
    """An observation model that writes the outcome line: ``take coin`` wins (+1)."""

    predicts = ("reward", "done")

    def __call__(self, contexts, actions, seed=None):
        from smcplan.llm.samples import Sample

        out = []
        for a in actions:
            text = (
                "Reward: +1 | Done: won\nYou take the coin."
                if a == "take coin"
                else "Reward: +0 | Done: no\nYou are in the hallway."
            )
            s = Sample(None, text, -1.0, -1.0, 3, True)
            s.predicted = parse_completion(text, FULL_TARGETS)
            s.value = s.predicted.observation
            out.append(s)
        return out


def test_the_env_twist_reads_a_predicted_reward_like_the_simulators(tmp_path):
    from smcplan.planning import PlanningError, build_text_planner, run_text_planner
    from smcplan.planning.progress import EnvProgress

    (tmp_path / TARGETS_FILE).write_text(json.dumps({"targets": list(FULL_TARGETS)}))
    (tmp_path / "adapter_config.json").write_text("{}")
    planner = build_text_planner(
        TASK, None, ["take coin", "move west"], observation=OBS[1],
        world_model="learned", world_model_path=str(tmp_path), observation_model=_Predicting(),
        progress="env", proposal="uniform", particles_per_action=1, horizon=1,
        choice="max_weight", extractor="none",
    )  # fmt: skip
    result = run_text_planner(planner, 0)
    assert result.action == "take coin"
    particles = {p.steps[0][0]: p for p in result.particles}
    won = particles["take coin"].outcomes[0]
    assert (won.gain, won.won, won.done, won.score) == (1.0, True, True, 1.0)
    assert particles["take coin"].steps[0][1] == "You take the coin."  # the line is not text
    env = EnvProgress()
    env.horizon = 1
    assert env.deltas(particles["take coin"]) == [1.0 + 1.0]  # gain + (1 + H - t) * won
    assert env.deltas(particles["move west"]) == [0.0]
    # a model with the old targets cannot serve the env twist: a typed error with the fix
    with pytest.raises(PlanningError, match="targets"):
        build_text_planner(
            TASK, None, ["take coin"], observation=OBS[1], world_model="learned",
            world_model_path="twx-coin-world-model", progress="env", proposal="uniform",
            extractor="none",
        )  # fmt: skip
