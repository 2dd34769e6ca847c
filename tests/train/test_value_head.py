"""The learned twist ``progress="learned"``: labels by steps to success, the value head on the
tiny random-weight model, its typed errors, the twist's log-weights by hand, the trainer and
its CLI."""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest

from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles.score_head import ScoreHead
from smcplan.llm.roles.value_head import VALUE_ROLE, ValueModel, load_value_head
from smcplan.planning import PlannerConfig, PlanningError
from smcplan.planning.text_particle import TextParticle, render_context
from smcplan.planning.twist_value import VALUE_FLOOR, LearnedProgress
from smcplan.train.data import read_shard
from smcplan.train.value_head import rank_metrics, spearman, value_states

from .conftest import OBS, TASK, write_shard


@pytest.fixture(scope="module")
def tiny_lm():
    from smcplan.llm.testing import tiny_model

    return tiny_model()


# ------------------------------------------------------------------ labels


def test_states_are_labelled_by_steps_to_success(tmp_path):
    """One won two-step episode with a branch at its first state that did not end it: the
    two real states are 2 and 1 steps from success, the won state 0; the branch is unlabelled."""
    shard = read_shard(write_shard(tmp_path / "s.jsonl", episodes=(1,), branches=True))
    rows = value_states([shard], within=1, discount=0.5)
    assert [(r["kind"], r["steps"], r["label"], r["value"]) for r in rows] == [
        ("path", 2, 0, 0.25), ("path", 1, 1, 0.5), ("won", 0, 1, 1.0)
    ]  # fmt: skip
    assert rows[0]["context"] == render_context(TASK, [["agent", "in", "kitchen"]], OBS[0])
    assert rows[2]["context"].endswith(f"Observation: {OBS[2]}")


def test_a_lost_episode_is_worth_nothing_and_its_last_state_is_a_dead_end(tmp_path):
    path = write_shard(tmp_path / "s.jsonl", episodes=(1,))
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for x in lines[1:]:
        x["won"] = False
        if x["kind"] == "transition":
            x["reward"], x["score"] = 0.0, 0.0
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    rows = value_states([read_shard(path)], within=5)
    assert [(r["kind"], r["steps"], r["label"], r["value"]) for r in rows] == [
        ("path", None, 0, 0.0), ("path", None, 0, 0.0), ("dead_end", None, 0, 0.0)
    ]  # fmt: skip


def test_rank_metrics_by_hand():
    assert spearman([1.0, 2.0, 3.0], [10.0, 30.0, 20.0]) == 0.5  # ranks (1,2,3) vs (1,3,2)
    assert math.isnan(spearman([1.0, 1.0], [0.0, 1.0]))
    m = rank_metrics([0.9, 0.1, 0.5], [1, 0, 1], [1.0, 0.0, 0.5])
    assert (m["n"], m["positives"], m["auc"], m["spearman"]) == (3, 2, 1.0, 1.0)
    assert math.isnan(rank_metrics([0.1, 0.2], [1, 1], [1.0, 1.0])["auc"])


# ------------------------------------------------------------------ the head


def _value_head(dim, bias=0.0, role=VALUE_ROLE):
    return ScoreHead((-1,), np.zeros(dim), np.ones(dim), np.zeros(dim), bias, {"role": role})


def test_the_value_model_is_the_logistic_of_the_heads_logit(tiny_lm, tmp_path):
    dim = tiny_lm.model.config.hidden_size
    head = _value_head(dim, bias=math.log(3.0))  # w = 0: V = 1 / (1 + 1/3) = 0.75 exactly
    folder = head.save(tmp_path / "head")
    model = ValueModel(tiny_lm, folder)
    values = model(["Task: a\nObservation: b", "Task: c\nObservation: d"])
    assert values.shape == (2,) and np.all(np.abs(values - 0.75) <= 4 * np.finfo(float).eps)
    assert model([]).shape == (0,)
    loaded = load_value_head(folder)
    assert loaded.info["role"] == VALUE_ROLE and loaded.bias == head.bias


def test_bad_value_heads_and_models_are_typed_errors(tiny_lm, tmp_path):
    critic = _value_head(3, role=None).save(tmp_path / "critic")
    with pytest.raises(InvalidArgumentError, match="not a value head.*smcplan train value-head"):
        load_value_head(critic)
    with pytest.raises(InvalidArgumentError, match="hidden states.*load_model"):
        ValueModel(object(), _value_head(3))
    with pytest.raises(InvalidArgumentError, match="not one string"):
        ValueModel(tiny_lm, _value_head(tiny_lm.model.config.hidden_size))("Task: x")
    with pytest.raises(PlanningError, match="needs value_head="):
        PlannerConfig(progress="learned+novelty")
    with pytest.raises(PlanningError, match="add 'learned' to progress"):
        PlannerConfig(progress="novelty", value_head="x")
    assert PlannerConfig(progress="env+learned", value_head="x").value_head == "x"
    with pytest.raises(PlanningError, match="needs a value model"):
        LearnedProgress(None, TASK)


def test_progress_learned_refuses_a_model_without_hidden_states(tmp_path):
    from smcplan.planning import build_text_planner

    folder = _value_head(3).save(tmp_path / "head")

    class Remote:  # generates and scores, but has no in-process weights
        def sample(self, *a, **k):
            raise AssertionError("not called")

        logprob = generate = sample

    with pytest.raises(PlanningError, match="hidden states"):
        build_text_planner(
            TASK, None, ["look"], Remote(), observation=OBS[0], world_model="lm",
            progress="learned", value_head=str(folder), proposal="uniform", extractor="none",
        )  # fmt: skip


# ------------------------------------------------------------------ the twist


def test_the_twist_is_the_log_value_ratio_on_a_two_state_example():
    """Two particles from the same root: one steps to a state the model values 0.8, the other
    to one it values 0.2; at step 2 the first moves to 0.4 and the second to 0 (floored)."""
    root = TextParticle(kg=None, root_observation=OBS[0])
    a1 = root.extend("move west", "A")
    b1 = root.extend("look", "B")
    table = {"A": 0.8, "B": 0.2, "A2": 0.4, "B2": 0.0}
    calls = []

    def value_model(contexts):
        calls.append(list(contexts))
        return [table[c.rsplit("Observation: ", 1)[1]] for c in contexts]

    twist = LearnedProgress(value_model, TASK)
    key = jax.random.PRNGKey(0)
    s1 = twist(key, [a1, b1], 1, 2)
    assert np.allclose(np.asarray(s1.log_psi), [math.log(0.8), math.log(0.2)])
    assert np.allclose(np.asarray(s1.delta), np.asarray(s1.log_psi))  # log psi_0 = 0
    # the twisted incremental weight of step 1 favours A by the value ratio 0.8 / 0.2 = 4
    assert math.isclose(float(s1.log_psi[0] - s1.log_psi[1]), math.log(4.0), rel_tol=1e-6)
    s2 = twist(key, [a1.extend("take coin", "A2"), b1.extend("look", "B2")], 2, 2)
    assert np.allclose(np.asarray(s2.log_psi), [math.log(0.4), math.log(VALUE_FLOOR)])
    assert np.allclose(
        np.asarray(s2.delta), [math.log(0.4 / 0.8), math.log(VALUE_FLOOR / 0.2)]
    )  # delta_t = log psi_t - log psi_{t-1}: the parents' values came from the cache
    assert [len(c) for c in calls] == [2, 2]  # each state scored once
    with pytest.raises(PlanningError, match="lie in"):
        LearnedProgress(lambda cs: [1.5] * len(cs), TASK)(key, [a1], 1, 1)


# ------------------------------------------------------------------ trainer and CLI


def test_a_tiny_model_trains_a_value_head_that_plans(tmp_path):
    from smcplan.llm.testing import tiny_model, tiny_model_path
    from smcplan.planning import plan
    from smcplan.train.value_head import train_value_head

    shard = write_shard(tmp_path / "s.jsonl", episodes=(1, 2, 3, 4))
    held = write_shard(tmp_path / "h.jsonl", episodes=(9, 10))
    manifest = train_value_head(
        [shard], tmp_path / "v", model=str(tiny_model_path()), within=1, heldout=[held],
        cs=[1.0], folds=2, threads=1, progress=False,
    )  # fmt: skip
    assert (manifest["examples"], manifest["positives"]) == (12, 8)
    assert manifest["kinds"] == {"path": 8, "won": 4, "dead_end": 0}
    assert 0.0 <= manifest["cv_auc"] <= 1.0 and manifest["heldout"]["n"] == 6
    assert 0.0 <= manifest["heldout"]["auc"] <= 1.0
    assert manifest["heldout"]["baseline"]["twist"] == "env+novelty"
    assert manifest["heldout"]["baseline"]["n"] == 6
    diff = manifest["heldout"]["against_baseline"]
    # the same auc() of the same scores on both sides: the same float, exactly
    assert diff["auc_difference"] == (
        manifest["heldout"]["auc"] - manifest["heldout"]["baseline"]["auc"]
    )
    head = load_value_head(manifest["weights"])
    assert head.info["within"] == 1 and head.info["role"] == VALUE_ROLE
    result = plan(
        TASK, None, ["move west", "take coin"], lm=tiny_model(), observation=OBS[0], key=0,
        world_model="lm", progress="learned+novelty", value_head=manifest["weights"],
        proposal="uniform", num_particles=2, horizon=1, observation_tokens=3,
    )  # fmt: skip
    assert result.action in ("move west", "take coin")


def test_the_cli_refuses_bad_options(tmp_path, capsys):
    from smcplan.train.cli import main

    shard = write_shard(tmp_path / "s.jsonl", episodes=(1,))
    base = ["value-head", "--data", str(shard), "--out", str(tmp_path / "o")]
    for extra, needle in (
        (["--max-steps", "3"], "--max-steps=3"),
        (["--opt", "within=-1"], "--opt within"),
        (["--opt", "discount=2"], "--opt discount"),
        (["--opt", "C=[0]"], "--opt C"),
        (["--opt", "layers=[1]"], "unknown option 'layers'"),
    ):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "o").exists()


VALUE_CHILD = """
import sys, time
sys.path.insert(0, {root!r})
import smcplan.llm.roles.score_head as score_head
from smcplan.train.value_head import train_value_head

real, calls = score_head.hidden_features, []


def hang_after_the_first_chunk(*args, **kwargs):
    calls.append(1)
    if len(calls) == 2:  # the first 16 states' features are on disk by now
        open({marker!r}, "w").write("cached")
        time.sleep(600)  # killed here by the test (SIGKILL)
    return real(*args, **kwargs)


score_head.hidden_features = hang_after_the_first_chunk
train_value_head([{shard!r}], {out!r}, model={model!r}, within=1, cs=[1.0], folds=2,
                 threads=1, progress=False)
"""


def test_the_value_head_resumes_after_sigkill_to_the_uninterrupted_head(tmp_path):
    """Killed (SIGKILL) after the first 16 states' features were cached, the trainer resumed
    with ``resume=True`` reads those 16 from the cache, computes the other 14, and fits the
    head an uninterrupted run fits: the same cross-validated AUC and the same weights."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from smcplan.llm.testing import tiny_model_path
    from smcplan.train.value_head import train_value_head

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    shard = write_shard(tmp_path / "s.jsonl", episodes=tuple(range(1, 11)))  # 30 states
    out, marker, model = tmp_path / "killed", tmp_path / "cached", str(tiny_model_path())
    script = tmp_path / "child.py"
    script.write_text(
        VALUE_CHILD.format(
            root=root, marker=str(marker), shard=str(shard), out=str(out), model=model
        )
    )
    child = subprocess.Popen(
        [sys.executable, str(script)], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 180
    while not marker.exists():
        assert child.poll() is None, child.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline, "the child never cached a chunk of features"
        time.sleep(0.2)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert (out / "features.npz").is_file() and not (out / "head").exists()
    kw = dict(model=model, within=1, cs=[1.0], folds=2, threads=1, progress=False)
    resumed = train_value_head([shard], out, resume=True, **kw)
    straight = train_value_head([shard], tmp_path / "straight", **kw)
    assert resumed["features_cached"] == 16 and straight["features_cached"] == 0
    assert (resumed["examples"], resumed["positives"]) == (30, 20)
    assert resumed["cv_auc"] == straight["cv_auc"]
    a, b = load_value_head(resumed["weights"]), load_value_head(straight["weights"])
    # the same features (the tiny model is deterministic on one thread) and the same convex fit
    for x, y in ((a.weight, b.weight), (a.mean, b.mean), (a.scale, b.scale)):
        np.testing.assert_array_equal(x, y)
    assert a.bias == b.bias


# ------------------------------------------------------------------ text features


def test_text_features_by_hand():
    from smcplan.llm.roles.text_features import content_words, split_context, text_features

    task = "Your task is to: put a kettle in countertop."
    assert content_words(task) == {"put", "kettle", "countertop"}
    obs = "You pick up the kettle 1 from the cabinet 1."  # 10 words, "kettle" named
    ctx = render_context(task, [("countertop 1", "in", "room")], obs)
    assert split_context(ctx) == (task, "countertop 1 in room", obs)
    row = text_features([ctx])[0]
    # 1 of the task's 3 words in the observation, 1 of 3 in the facts, log(1 + 10)
    assert row[0] == 1 / 3 and row[1] == 1 / 3 and row[2] == math.log(11)
    bare = text_features([render_context("", [], "You see nothing.")])[0]
    assert bare[0] == bare[1] == 0.0  # no task words: no overlap, no division by zero
    assert text_features([]).shape == (0, 3)


def test_a_value_head_with_text_features_reads_them_and_a_foreign_version_is_refused(
    tmp_path,
):
    from smcplan.llm.testing import tiny_model, tiny_model_path
    from smcplan.train.value_head import train_value_head

    shard = write_shard(tmp_path / "s.jsonl", episodes=(1, 2, 3, 4))
    manifest = train_value_head(
        [shard], tmp_path / "v", model=str(tiny_model_path()), within=1, cs=[1.0], folds=2,
        threads=1, progress=False, text_features=True,
    )  # fmt: skip
    head = load_value_head(manifest["weights"])
    assert head.info["text_features"] == manifest["text_features"] == "task_overlap/1"
    width = tiny_model().model.config.hidden_size
    assert head.weight.size == width * len(head.layers) + 3
    lm = tiny_model()
    values = ValueModel(lm, head)([render_context(TASK, [], o) for o in OBS])
    assert values.shape == (len(OBS),) and ((values > 0) & (values < 1)).all()
    head.info["text_features"] = "task_overlap/99"
    head.save(tmp_path / "foreign")
    with pytest.raises(InvalidArgumentError, match="task_overlap/99"):
        load_value_head(tmp_path / "foreign")
    with pytest.raises(InvalidArgumentError, match="text_features=true"):
        ValueModel(lm, head)
