"""scripts/value_siblings.py: sibling sets read from a shard with branches, the choice accuracy
by hand (ties shared), and a pairwise head that separates a direction it was shown."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import BRANCH, OBS, load_script, write_shard


@pytest.fixture(scope="module")
def script():
    return load_script("value_siblings")


def test_a_sibling_set_is_the_gold_successor_then_its_branches(script, tmp_path):
    shard = write_shard(tmp_path / "s.jsonl", episodes=(1, 2), branches=True)
    sets = script.sibling_sets(shard, siblings=4, max_states=None, seed=0)
    assert len(sets) == 2  # one state with a branch per episode (t = 0)
    for s in sets:
        gold, sibling = s["contexts"]
        assert gold.endswith(f"Observation: {OBS[1]}".strip())
        assert sibling.endswith(f"Observation: {BRANCH[1]}".strip())


def test_choice_accuracy_by_hand(script):
    scores = [np.array([3.0, 1.0, 2.0]), np.array([1.0, 2.0]), np.array([2.0, 2.0, 0.0])]
    got = script.choice(scores)
    # first: gold highest; second: gold second; third: a tie of two shares 1/2
    assert got["choice_accuracy"] == (1 + 0 + 0.5) / 3
    assert got["mean_rank"] == (1 + 2 + 1) / 3
    assert got["chance"] == (1 / 3 + 1 / 2 + 1 / 3) / 3


def test_the_pairwise_head_learns_the_direction_that_separates_gold(script):
    rng = np.random.default_rng(0)
    feats = []
    for _ in range(40):
        f = rng.normal(size=(5, 6))
        f[0, 2] += 3.0  # the gold successor is higher along column 2
        feats.append(f)
    model = script.fit_pairwise(feats, c=1.0, seed=0)
    assert int(np.argmax(model[2])) == 2
    assert script.choice(script.pairwise_scores(model, feats))["choice_accuracy"] > 0.9


def test_bad_counts_exit_2(script, tmp_path, capsys):
    shard = str(write_shard(tmp_path / "s.jsonl", branches=True))
    code = script.main(
        ["--train", shard, "--heldout", shard, "--out", str(tmp_path), "--siblings", "0"]
    )
    assert code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_text_columns_follow_the_hidden_ones(script, tmp_path):
    from smcplan.llm.roles.text_features import text_features

    shard = write_shard(tmp_path / "s.jsonl", episodes=(1, 2), branches=True)
    sets = script.sibling_sets(shard, siblings=4, max_states=None, seed=0)
    hidden = [np.full((len(s["contexts"]), 2), 7.0) for s in sets]
    got = script.with_text(hidden, sets)
    for g, s in zip(got, sets, strict=True):
        assert g.shape == (len(s["contexts"]), 2 + 3)
        assert np.array_equal(g[:, :2], np.full((len(s["contexts"]), 2), 7.0))
        assert np.array_equal(g[:, 2:], text_features(s["contexts"]))


def test_features_resume_from_the_partial_cache_after_a_stop(script, tmp_path, monkeypatch):
    """A run stopped mid-way keeps its rows; the next run computes only the rest, and the result
    equals an uninterrupted run's.  (The hidden features are replaced by a function of the
    prompt: what is tested is the caching, not the model.)"""
    import smcplan.llm.roles.score_head as score_head
    import smcplan.llm.roles.value_head  # noqa: F401 - imported before the patch, not under it

    sets = [
        {"episode": "e", "contexts": [f"Task: t\nObservation: {i} {j}" for j in range(4)]}
        for i in range(20)
    ]  # 80 contexts: 5 batches of 16
    calls: list[int] = []

    def fake(lm, prompts, layers, prefix):
        calls.append(len(prompts))
        if lm == "stop" and len(calls) == 4:
            raise KeyboardInterrupt
        return np.array([[float(len(str(p))), float(sum(map(ord, str(p))) % 97)] for p in prompts])

    monkeypatch.setattr(score_head, "hidden_features", fake)
    whole = script.features(None, sets, tmp_path / "a.npz", every=1)
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        script.features("stop", sets, tmp_path / "b.npz", every=1)
    assert (tmp_path / "b.partial.npz").is_file() and not (tmp_path / "b.npz").exists()
    calls.clear()
    again = script.features(None, sets, tmp_path / "b.npz", every=1)
    assert calls == [16, 16]  # three batches were kept
    assert not (tmp_path / "b.partial.npz").exists()
    for a, b in zip(whole, again, strict=True):
        assert np.array_equal(a, b)
    # a partial file for other contexts is not used
    other = [{"episode": "e", "contexts": [c + "!" for c in s["contexts"]]} for s in sets]
    np.savez(tmp_path / "c.partial.npz", features=np.zeros((16, 2)), digest="x")
    calls.clear()
    script.features(None, other, tmp_path / "c.npz", every=1)
    assert sum(calls) == 80
