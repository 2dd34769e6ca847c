"""The sibling value head (smcplan.train.value_siblings): choice metrics by hand, the soft-label
logistic fit, shared-prefix features against the plain pass, the path the ``learned`` twist
reads, the trainer on the tiny model with a real WebShop shard, and its CLI's refusals."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from smcplan.errors import InvalidArgumentError
from smcplan.llm.roles.score_head import ScoreHead, hidden_features
from smcplan.llm.roles.value_head import VALUE_PREFIX, VALUE_ROLE, value_prompts
from smcplan.planning import PlanningError
from smcplan.planning.text_particle import TextParticle
from smcplan.planning.twist_value import LearnedProgress, path_text
from smcplan.train.value_siblings import choice_metrics, fit_soft
from tests.tolerance import gamma, gamma_prob


@pytest.fixture(scope="module")
def tiny_lm():
    from smcplan.llm.testing import tiny_model

    return tiny_model()


def test_choice_metrics_by_hand():
    # state a: the head's top (0.9) is the best label; state b: its top is a tie of two, one of
    # them best; state c: the labels do not differ, so it is left out
    scores = [0.9, 0.1, 0.5, 0.7, 0.7, 0.2, 0.3, 0.4]
    values = [1.0, 0.0, 0.5, 0.25, 0.0, 0.25, 0.5, 0.5]
    states = ["a", "a", "a", "b", "b", "b", "c", "c"]
    m = choice_metrics(scores, values, states)
    assert m["states"] == 2
    assert m["choice_accuracy"] == (1.0 + 0.5) / 2
    assert m["chance"] == (1 / 3 + 2 / 3) / 2
    assert m["regret"] == (0.0 + (0.25 - 0.125)) / 2
    assert m["spearman"] == (1.0 - 0.5) / 2  # b: ranks (2.5, 2.5, 1) vs (2.5, 1, 2.5)


def test_the_soft_label_fit_orders_states_by_their_labels_and_refuses_one_class():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 3))
    values = 1 / (1 + np.exp(-(2.0 * x[:, 0] - 1.0 * x[:, 1])))  # soft labels, a linear logit
    scaler, clf = fit_soft(x, values, c=100.0)
    w = clf.coef_[0] / scaler.scale_
    assert w[0] > 0 > w[1] and abs(w[2]) < abs(w[1])
    with pytest.raises(InvalidArgumentError, match="every step is valued 0"):
        fit_soft(x, np.zeros(len(x)), c=1.0)


def test_shared_prefix_features_are_the_plain_passes_features(tiny_lm):
    """Siblings share the task and the root page; the shared-prefix pass runs that once and the
    suffixes on its cache.  Its final-layer rows agree with the plain batched pass to twice the
    forward error bound of tests/test_critic_head.py's same comparison; a batch of one prompt
    takes the plain path (the same numbers exactly)."""
    root = "Page 1 (Total results: 3) " + " ".join(f"[B0{i}] item {i} $1{i}.00" for i in range(9))
    contexts = [
        path_text("buy a red lamp", root, [(f"click[b0{i}]", f"Item {i} red lamp. Price: $1{i}")])
        for i in range(5)
    ]
    prompts = value_prompts(contexts)
    plain = hidden_features(tiny_lm, prompts, (-1, 1), VALUE_PREFIX, batch=5)
    shared = hidden_features(tiny_lm, prompts, (-1, 1), VALUE_PREFIX, batch=5, share_prefix=True)
    c = tiny_lm.model.config
    g = tiny_lm.model.model.norm.weight.detach().double().abs().max().item()
    k = max(c.hidden_size, c.intermediate_size, 512)
    bound = math.sqrt(c.hidden_size) * g
    tol = 2 * 2 * (c.num_hidden_layers * gamma_prob(k) + gamma_prob(c.hidden_size)) * bound
    assert plain.shape == shared.shape == (5, 2 * c.hidden_size)
    assert np.max(np.abs(plain[:, : c.hidden_size] - shared[:, : c.hidden_size])) <= tol
    assert np.max(np.abs(plain[:, : c.hidden_size])) <= bound * (1 + gamma(c.hidden_size))
    one = prompts[:1]
    alone = hidden_features(tiny_lm, one, (-1,), VALUE_PREFIX, batch=1)
    assert np.array_equal(alone, hidden_features(tiny_lm, one, (-1,), VALUE_PREFIX, 1, True))


def test_a_path_head_reads_the_root_page_the_action_and_the_replys_first_sentence():
    assert path_text("buy a lamp", "Page 1. [B01] lamp", [("click[b01]", "Lamp. Price: $3")]) == (
        "Task: buy a lamp\nObservation: Page 1. [B01] lamp\n> click[b01]\nLamp."
    )
    seen = []

    class Model:
        head = ScoreHead((-1,), np.zeros(1), np.ones(1), np.zeros(1), 0.0,
                         {"role": VALUE_ROLE, "reads": "path", "obs_chars": 8})  # fmt: skip

        def __call__(self, contexts):
            seen.extend(contexts)
            return [0.5] * len(contexts)

    twist = LearnedProgress(Model(), "buy a lamp")
    root = TextParticle(kg=None, root_observation="Page 1. [B01] lamp")
    child = root.extend("click[b01]", "Lamp. Price: $3")
    twist(None, [child], 1, 1)
    # the root page clipped to obs_chars = 8 (its head and tail kept), the reply to a sentence
    assert seen == ["Task: buy a lamp\nObservation: Pa ... p\n> click[b01]\nLamp."]

    class Odd(Model):
        head = ScoreHead((-1,), np.zeros(1), np.ones(1), np.zeros(1), 0.0,
                         {"role": VALUE_ROLE, "reads": "future"})  # fmt: skip

    with pytest.raises(PlanningError, match="reads 'future'; known: state, path"):
        LearnedProgress(Odd(), "buy a lamp")


@pytest.fixture(scope="module")
def webshop_data(webshop_labelled, tmp_path_factory):
    """``train``: the labelled shard of goals 75-76 (``webshop_labelled``); ``held``: the same
    for test goal 20."""
    from smcplan.train.collect import collect
    from smcplan.train.rollout_labels import label_shard

    root = tmp_path_factory.mktemp("sib")
    shard, labels = root / "held.jsonl", root / "held.labels.jsonl"
    collect("webshop", [20], shard, source="gold", split="test", max_steps=15, branches=3,
            progress=False)  # fmt: skip
    label_shard(shard, "webshop", labels, rollouts=4, rollout_steps=6)
    return {"train": webshop_labelled, "held": (shard, labels)}


def test_the_trainer_fits_a_path_head_on_the_tiny_model_that_plans(webshop_data, tmp_path):
    from smcplan.llm.roles.value_head import load_value_head
    from smcplan.llm.testing import tiny_model, tiny_model_path
    from smcplan.planning import plan
    from smcplan.train.rollout_labels import read_labels
    from smcplan.train.value_siblings import train_value_siblings

    (shard, labels), (held, held_labels) = webshop_data["train"], webshop_data["held"]
    m = train_value_siblings(
        [shard], [labels], tmp_path / "v", model=str(tiny_model_path()), heldout=[held],
        heldout_labels=[held_labels], cs=[1.0], folds=2, threads=1, progress=False,
    )  # fmt: skip
    by_state: dict = {}
    for episode, rows in read_labels(labels).items():
        for (t, _action), value in rows.items():
            by_state.setdefault((episode, t), []).append(value)
    informative = [v for v in by_state.values() if max(v) > min(v)]
    assert 0 < len(informative) < len(by_state)  # the search page has one action: no choice
    assert m["examples"] == sum(map(len, informative)) and m["states"] == len(informative)
    assert m["heldout"]["steps"] > 0
    assert m["summary"].startswith(f"{m['examples']} examples, cross-validated choice accuracy")
    assert 0.0 <= m["cv"][0]["choice_accuracy"] <= 1.0
    head = load_value_head(m["weights"])
    assert head.info["reads"] == "path" and head.info["labels"] == "rollouts"
    result = plan(
        "buy a lamp", None, ["click[a]", "click[b]"], lm=tiny_model(), observation="Page 1",
        key=0, world_model="lm", progress="learned", value_head=m["weights"],
        proposal="uniform", num_particles=2, horizon=1, observation_tokens=3,
    )  # fmt: skip
    assert result.action in ("click[a]", "click[b]")


def test_two_shards_of_one_episode_seed_are_two_sets_of_states(webshop_data):
    """A gold and a random-agent shard both play goal 75 as episode ``webshop/75``: their
    states are named by shard too, so siblings of different pages never share a choice."""
    from smcplan.train.data import read_shard
    from smcplan.train.rollout_labels import read_labels
    from smcplan.train.value_siblings import sibling_steps

    shard, labels = webshop_data["train"]
    once = sibling_steps([read_shard(shard)], [read_labels(labels)])
    twice = sibling_steps([read_shard(shard)] * 2, [read_labels(labels)] * 2)
    assert len(twice) == 2 * len(once)
    assert len({s["state"] for s in twice}) == 2 * len({s["state"] for s in once})
    capped = sibling_steps([read_shard(shard)], [read_labels(labels)], max_siblings=2)
    assert all(sum(s["state"] == x["state"] for s in capped) <= 2 for x in capped)
    assert {s["state"] for s in capped} == {s["state"] for s in once}
    assert all(s["kind"] == "transition" for s in capped[::2])  # the real step is kept first


def test_the_cli_refuses_bad_options_in_one_line(webshop_data, tmp_path, capsys):
    from smcplan.train.cli import main

    shard, labels = webshop_data["train"]
    base = ["value-siblings", "--data", str(shard), "--out", str(tmp_path / "o")]
    for extra, needle in (
        ([], "labels: 0 label files for 1 shards"),
        (["--opt", "labels=" + json.dumps([str(labels)] * 2)], "2 label files for 1"),
        (["--opt", f"labels={tmp_path / 'none.jsonl'}"], "is not a file"),
        (["--opt", f"labels={labels}", "--lr", "1"], "--lr"),
        (["--opt", f"labels={labels}", "--opt", "obs_chars=3"], "--opt obs_chars"),
        (["--opt", f"labels={labels}", "--opt", "batch=2"], "unknown option 'batch'"),
        (["--opt", f"labels={labels}", "--opt", "heldout=x"], "heldout_labels: 0 files"),
    ):
        assert main([*base, *extra]) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (extra, err)
    assert not (tmp_path / "o").exists()


def test_features_resume_from_the_cache_after_a_stop(tmp_path, monkeypatch):
    """Stopped after the second state's features were written (the cache is replaced
    atomically, so a SIGKILL leaves the last whole write), a resumed run computes only the
    states after it and returns what an uninterrupted run returns.  (The hidden features are a
    function of the prompt here: what is tested is the caching, not the model.)"""
    import smcplan.llm.roles.score_head as score_head
    from smcplan.train.value_siblings import sibling_features

    steps = [
        {"state": f"s{i}", "prompt": [{"role": "user", "content": f"state {i} action {j}"}]}
        for i in range(5)
        for j in range(3)
    ]
    calls: list[int] = []

    def fake(lm, prompts, layers, prefix, batch, share_prefix=False):
        calls.append(len(prompts))
        if lm == "stop" and len(calls) == 3:
            raise KeyboardInterrupt
        return np.array([[float(len(str(p))), float(sum(map(ord, str(p))) % 97)] for p in prompts])

    monkeypatch.setattr(score_head, "hidden_features", fake)
    whole, cached = sibling_features(None, steps, (-1,), tmp_path / "a.npz", False, False, every=1)
    assert cached == 0 and whole.shape == (15, 2) and calls == [3] * 5
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        sibling_features("stop", steps, (-1,), tmp_path / "b.npz", False, False, every=1)
    calls.clear()
    again, cached = sibling_features(None, steps, (-1,), tmp_path / "b.npz", True, False, every=1)
    assert cached == 6 and calls == [3, 3, 3] and np.array_equal(again, whole)
    with pytest.raises(InvalidArgumentError, match="cached for layers"):
        sibling_features(None, steps[:12], (-1,), tmp_path / "b.npz", True, False)
