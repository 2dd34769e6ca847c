"""The policy head's map notes (``smcplan train grpo-mr-head --opt map_notes=true``).

Each candidate's text carries what the agent's place map says about its action
(:func:`smcplan.agents.map_notes.action_note`): the cold start reads the maps the critic's noted
examples read, the rollouts and the RLVMR agent read them from the episode's real
observations, and with the option off every text, hence every feature, is the one before.
The env is ``toy_rooms`` (three rooms in TextWorldExpress's words, which the map reads).
Every comparison here is exact: the same text gives the same features bit for bit.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from smcplan.agents.map_notes import MapNotes, action_note
from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles import policy_head as ph
from smcplan.llm.roles.policy_head import (
    NOTE_LABEL,
    LMFeatures,
    PolicyHead,
    candidate_features,
    candidate_pairs,
    candidate_text,
    state_prompt,
)
from smcplan.train.grpo_mr_head import HeadGRPOConfig, notes_rules, train_grpo_mr_head
from smcplan.train.head_episodes import evaluate_head, play_episode

from .toy_corridor import HORIZON, Corridor, ToyFeatures
from .toy_rooms import TASK, Rooms

GOLD = ("open door to north", "move north", "take coin")


@pytest.fixture(scope="module")
def tiny_lm():
    from smcplan.llm.testing import tiny_model

    return tiny_model()


class Recorder:
    """Toy features (a hash of the texts, no model) that record the notes they are given."""

    dim, name, layers = 6, "recorder", ()

    def __init__(self) -> None:
        self.calls: list[tuple[str, list, list | None]] = []

    def __call__(self, state, pairs, notes=None):
        self.calls.append((state, list(pairs), None if notes is None else list(notes)))
        texts = [candidate_text(g, a, n) for (g, a), n in zip(pairs, notes or [""] * len(pairs))]
        seeds = [int(hashlib.sha256(t.encode()).hexdigest()[:8], 16) for t in texts]
        return np.stack([np.random.default_rng(s).normal(size=self.dim) for s in seeds])


class NotedToyFeatures(ToyFeatures):
    """The corridor's toy features, taking (and ignoring) notes."""

    def __call__(self, state, pairs, notes=None):
        return super().__call__(state, pairs)


def _rooms_shard(path, seeds=(0, 1)):
    """A gold shard of ``toy_rooms``: the best path, once per seed (header env ``twx:coin``,
    whose words the rooms use)."""
    from smcplan.train.data import SHARD_SCHEMA

    lines = [{"kind": "header", "schema": SHARD_SCHEMA, "env": "twx:coin", "source": "gold"}]
    env = Rooms()
    for seed in seeds:
        obs, info = env.reset(seed)
        for t, action in enumerate(GOLD):
            admissible = list(info["admissible_actions"])
            nxt, _, done, info = env.step(action)
            lines.append({"kind": "transition", "episode": f"rooms/{seed}", "seed": seed, "t": t,
                          "task": TASK, "observation": obs, "action": action,
                          "next_observation": nxt, "reward": float(info["won"]), "done": done,
                          "won": info["won"], "score": info["score"], "admissible": admissible,
                          "facts": []})  # fmt: skip
            obs = nxt
        lines.append({"kind": "episode", "episode": f"rooms/{seed}", "seed": seed, "won": True,
                      "steps": len(GOLD), "score": 1.0})  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _replayed_notes(observations, actions, admissible):
    """The note of every admissible action before each step, read afresh from the episode's
    observations (``observations[t]`` before ``actions[t]``)."""
    m, out = MapNotes("twx:coin"), []
    m.reset(observations[0])
    for t, (action, shown) in enumerate(zip(actions, admissible, strict=True)):
        out.append({a: action_note(m.map, a, first_step=t == 0) for a in shown})
        m.update(action, observations[t + 1])
    return out


# ------------------------------------------------------------------ the text


def test_the_note_is_in_the_candidate_text_exactly_as_action_note_gives_it():
    env = Rooms()
    obs, info = env.reset(0)
    m = MapNotes("twx:coin")
    m.reset(obs)
    note = action_note(m.map, "move west", first_step=True)
    assert note == ("No step has been taken yet; it leads to the hallway, not visited yet; "
                    "closed doors left in the kitchen: to the north.")  # fmt: skip
    assert m.notes(["move west"]) == [note]
    text = candidate_text("explore", "move west", note)
    assert text == "explore: move west\nWhat the agent's map says: " + note
    # no note, or an empty one: the text before the option existed
    assert candidate_text("explore", "move west") == "explore: move west"
    assert candidate_text("explore", "move west", "") == "explore: move west"


def test_a_rollout_gives_each_candidate_its_actions_note_from_the_real_observations():
    env, features = Rooms(), Recorder()
    head = PolicyHead.uniform(features.dim, ("planning", "explore"))
    rng = np.random.default_rng(3)
    ep = play_episode(env, 0, head, features, rng, 5, 3, 1.0, "twx:coin")
    # replay the episode to get its observations, then read the notes afresh
    obs, info = env.reset(0)
    observations, admissible = [obs], []
    for action in ep["actions"]:
        admissible.append(list(info["admissible_actions"]))
        obs, _, _, info = env.step(action)
        observations.append(obs)
    want = _replayed_notes(observations, ep["actions"], admissible)
    assert len(features.calls) == ep["steps"]
    for (_, pairs, notes), by_action in zip(features.calls, want, strict=True):
        assert notes == [by_action[a] for _, a in pairs]
    distinct = {n for _, _, notes in features.calls for n in notes}
    assert len(distinct) > 2  # the map's notes change along the episode
    # off: the features are asked as before, (state, pairs) and no notes
    plain = Recorder()
    play_episode(env, 0, head, plain, np.random.default_rng(3), 5, 3, 1.0)
    assert all(notes is None for _, _, notes in plain.calls)


def test_the_cold_start_notes_are_the_critics_noted_examples(tmp_path):
    from smcplan.train.critic import _maps, critic_labels
    from smcplan.train.data import read_shard
    from smcplan.train.head_cold_start import cold_start_head

    shard = _rooms_shard(tmp_path / "gold.jsonl")
    features = Recorder()
    head = cold_start_head([shard], features, map_notes=True)
    read = read_shard(shard)
    labels = critic_labels(read.transitions, _maps(read.transitions, [read.header]))
    critic = {(r["episode"], r["t"], r["action"]): r["note"] for r in labels}
    steps = list(read.transitions)
    assert len(features.calls) == len(steps) and head.info["cold_start"]["examples"] == len(steps)
    for tr, (_, pairs, notes) in zip(steps, features.calls, strict=True):
        assert notes == [critic[(tr["episode"], tr["t"], a)] for _, a in pairs]
    # and the same as a rollout along the gold path reads them
    env = Rooms()
    obs, info = env.reset(0)
    observations, admissible = [obs], []
    for action in GOLD:
        admissible.append(list(info["admissible_actions"]))
        obs, _, _, info = env.step(action)
        observations.append(obs)
    replay = _replayed_notes(observations, GOLD, admissible)
    for (_, pairs, notes), by_action in zip(features.calls[: len(GOLD)], replay, strict=True):
        assert notes == [by_action[a] for _, a in pairs]
    plain = Recorder()
    cold_start_head([shard], plain)
    assert all(notes is None for _, _, notes in plain.calls)


def test_without_notes_the_features_are_bit_identical(tiny_lm, seen):
    state = "Task: t\nActions tried: none\nNow: You are in the kitchen."
    pairs = candidate_pairs(("planning", "explore"), ["move west", "look around"])
    before = candidate_features(tiny_lm, state_prompt(state), [f"{g}: {a}" for g, a in pairs],
                                (-1, 1))  # fmt: skip
    plain = LMFeatures(tiny_lm, (-1, 1))(state, pairs)
    empty = LMFeatures(tiny_lm, (-1, 1))(state, pairs, [""] * len(pairs))
    assert np.array_equal(plain, before) and np.array_equal(empty, before)
    assert seen[0] == seen[1] == (state, [f"{g}: {a}" for g, a in pairs])
    noted = LMFeatures(tiny_lm, (-1, 1))(state, pairs, ["It leads on."] * len(pairs))
    assert not np.array_equal(noted, before)
    with pytest.raises(InvalidArgumentError, match="notes: 1 for 4 candidates"):
        LMFeatures(tiny_lm, (-1, 1))(state, pairs, ["x"])


# ------------------------------------------------------------------ the trainer and the agent


def _config(out, **kw):
    base = dict(out=out, seeds=(0,), group_size=2, max_steps=5, learning_rate=5.0)
    return HeadGRPOConfig(**{**base, **kw})


def test_the_agent_builds_the_texts_the_trainer_built(tiny_lm, tmp_path, seen):
    from smcplan.agents.rlvmr import RLVMRAgent

    shard = _rooms_shard(tmp_path / "gold.jsonl")
    out = tmp_path / "run"
    run = train_grpo_mr_head(_config(out, data=(shard,), iterations=0, eval_seeds=(0,),
                                     map_notes=True),
                             env=Rooms(), features=LMFeatures(tiny_lm, (-1, 1)),
                             progress=False)  # fmt: skip
    saved = json.loads((out / "head" / ph.POLICY_FILE).read_text())
    assert saved["info"]["map_notes"] is True and run["config"]["map_notes"] is True
    cold = run["cold_start"]
    assert cold["accuracy"] == 1.0  # the greedy head then walks the gold path
    assert run["heldout_start"]["actions"] == {"0": list(GOLD)}
    # the trainer's held-out episode, then the agent's, on the same head
    seen.clear()
    cfg = _config(out, map_notes=True)
    trainer = evaluate_head(PolicyHead.load(out / "head"), Rooms(), (0,),
                            LMFeatures(tiny_lm, (-1, 1)), 5, 3, notes_rules(cfg))  # fmt: skip
    by_trainer = list(seen)
    seen.clear()
    agent = RLVMRAgent(tiny_lm, policy_head=str(out / "head"), seed=0)
    assert agent.head_notes
    env = Rooms()
    obs, info = env.reset(0)
    agent.reset(env.task, obs, list(info["admissible_actions"]))
    actions, recorded = [], []
    for _ in range(5):
        step = agent.act(obs, list(info["admissible_actions"]), info)
        actions.append(step.action)
        recorded.append(step.meta["rlvmr_head_note"])
        obs, _, done, info = env.step(step.action)
        if done:
            break
    assert by_trainer == list(seen) and len(by_trainer) == len(GOLD)
    assert actions == trainer["actions"]["0"] == list(GOLD) and info["won"]
    for (_, texts), note in zip(by_trainer, recorded, strict=True):
        assert any(t.endswith(NOTE_LABEL + note) for t in texts)
    assert all(NOTE_LABEL in t for _, texts in by_trainer for t in texts)


def test_a_head_trained_without_notes_plays_as_before(tiny_lm, tmp_path, seen):
    from smcplan.agents.rlvmr import RLVMRAgent

    run = train_grpo_mr_head(_config(tmp_path, iterations=0), env=Rooms(),
                             features=LMFeatures(tiny_lm, (-1, 1)), progress=False)  # fmt: skip
    head = PolicyHead.load(run["weights"])
    assert head.info["map_notes"] is False
    agent = RLVMRAgent(tiny_lm, policy_head=run["weights"], seed=0)
    env = Rooms()
    obs, info = env.reset(0)
    agent.reset(env.task, obs, list(info["admissible_actions"]))
    seen.clear()
    step = agent.act(obs, list(info["admissible_actions"]), info)
    assert not agent.head_notes and "rlvmr_head_note" not in step.meta
    pairs = candidate_pairs(head.tags, info["admissible_actions"])
    assert seen[0][1] == [f"{g}: {a}" for g, a in pairs]


# ------------------------------------------------------------------ settings


@pytest.mark.parametrize("value", ["yes", 1, None, "true"])
def test_map_notes_must_be_a_bool(value, tmp_path):
    with pytest.raises(InvalidArgumentError, match=rf"map_notes={value!r}: give true or false"):
        _config(tmp_path, map_notes=value).validated()
    assert not (tmp_path / "state.json").exists()


def test_the_cli_reads_map_notes_as_a_strict_boolean(capsys, tmp_path):
    from smcplan.cli import main

    rc = main(["train", "grpo-mr-head", "--out", str(tmp_path / "o"), "--opt", "map_notes=maybe"])
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and "map_notes" in lines[0] and "maybe" in lines[0], err
    assert not (tmp_path / "o").exists()


def test_resuming_with_another_map_notes_is_refused(tmp_path):
    corridor = dict(seeds=(0, 1), group_size=4, max_steps=HORIZON)
    features = NotedToyFeatures()
    train_grpo_mr_head(_config(tmp_path, iterations=1, **corridor), env=Corridor(),
                       features=features, progress=False)  # fmt: skip
    with pytest.raises(InvalidArgumentError, match=r"resume: map_notes differ .*map_notes=False"):
        train_grpo_mr_head(_config(tmp_path, iterations=2, resume=True, map_notes=True,
                                   **corridor),
                           env=Corridor(), features=features, progress=False)  # fmt: skip
    # a run made before the setting existed (its config.json lacks it) ran without notes
    config = json.loads((tmp_path / "config.json").read_text())
    del config["map_notes"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(InvalidArgumentError, match=r"resume: map_notes differ .*map_notes=False"):
        train_grpo_mr_head(_config(tmp_path, iterations=2, resume=True, map_notes=True,
                                   **corridor),
                           env=Corridor(), features=features, progress=False)  # fmt: skip
    more = train_grpo_mr_head(_config(tmp_path, iterations=2, resume=True, **corridor),
                              env=Corridor(), features=features, progress=False)  # fmt: skip
    assert more["resumed_from"] == 1 and len(more["log"]) == 2


def test_a_noted_run_resumes_and_refuses_a_plain_resume_or_init_head(tmp_path):
    corridor = dict(seeds=(0, 1), group_size=4, max_steps=HORIZON, map_notes=True)
    features = NotedToyFeatures()
    train_grpo_mr_head(_config(tmp_path / "a", iterations=1, **corridor), env=Corridor(),
                       features=features, progress=False)  # fmt: skip
    with pytest.raises(InvalidArgumentError, match=r"resume: map_notes differ .*map_notes=True"):
        train_grpo_mr_head(_config(tmp_path / "a", iterations=2, resume=True,
                                   **{**corridor, "map_notes": False}),
                           env=Corridor(), features=features, progress=False)  # fmt: skip
    more = train_grpo_mr_head(_config(tmp_path / "a", iterations=2, resume=True, **corridor),
                              env=Corridor(), features=features, progress=False)  # fmt: skip
    assert more["resumed_from"] == 1
    assert PolicyHead.load(more["weights"]).info["map_notes"] is True
    noted = tmp_path / "a" / "head"
    refused = r"map_notes=False but init_head .*map_notes=True"
    with pytest.raises(InvalidArgumentError, match=refused):
        train_grpo_mr_head(_config(tmp_path / "b", iterations=1, init_head=noted,
                                   **{**corridor, "map_notes": False}),
                           env=Corridor(), features=features, progress=False)  # fmt: skip
