"""scripts/sibling_diagnostics.py on a sibling head of the tiny model: the head read on its own
held-out features reports the trainer's held-out numbers, a labelling scored against itself
picks every best sibling, and the three fits report choice metrics in range."""

from __future__ import annotations

import json
import math

import pytest

from .conftest import load_script


@pytest.fixture(scope="module")
def script():
    return load_script("sibling_diagnostics")


@pytest.fixture(scope="module")
def run(webshop_labelled, tmp_path_factory):
    from smcplan.llm.testing import tiny_model_path
    from smcplan.train.value_siblings import train_value_siblings

    shard, labels = webshop_labelled
    folder = tmp_path_factory.mktemp("diag") / "v"
    manifest = train_value_siblings(
        [shard], [labels], folder, model=str(tiny_model_path()), heldout=[shard],
        heldout_labels=[labels], cs=[1.0], folds=2, threads=1, progress=False,
    )  # fmt: skip
    return folder, str(labels), manifest


def _main(script, argv, capsys):
    capsys.readouterr()
    assert script.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cross_reads_the_head_on_its_own_features_as_the_trainer_did(script, run, capsys):
    folder, labels, manifest = run
    out = _main(script, ["cross", "--run", str(folder), "--labels", labels], capsys)
    (metrics,) = out.values()
    held = manifest["heldout"]
    for key in ("states", "choice_accuracy", "chance", "regret"):
        assert metrics[key] == held[key], key


def test_a_labelling_against_itself_picks_every_best_sibling(script, run, capsys):
    folder, labels, manifest = run
    argv = ["relabel", "--run", str(folder), "--labels", labels, "--against", labels]
    out = _main(script, argv, capsys)
    first = out["first labelling as the head"]
    assert first["choice_accuracy"] == 1.0 and first["regret"] == 0.0
    assert math.isclose(out["label correlation"], 1.0, rel_tol=0.0, abs_tol=1e-12)
    assert out["the head"]["choice_accuracy"] == manifest["heldout"]["choice_accuracy"]
    assert "the head" not in _main(script, [*argv, "--no-head"], capsys)


def test_the_three_fits_report_choice_metrics_in_range(script, run, capsys):
    folder, labels, _ = run
    argv = ["fits", "--run", str(folder), "--labels", labels, "--components", "4", "--folds", "2"]
    out = _main(script, argv, capsys)
    assert {k.split()[0] for k in out} == {"plain", "centred", "softmax"}
    for row in out.values():
        for part in ("cv", "heldout"):
            assert 0.0 <= row[part]["choice_accuracy"] <= 1.0
            assert 0.0 < row[part]["chance"] <= 1.0
