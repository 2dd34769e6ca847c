"""scripts/sibling_diagnostics.py on a sibling head of the tiny model: the head read on its own
held-out features reports the trainer's held-out numbers, a labelling scored against itself
picks every best sibling, and the three fits report choice metrics in range."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sibling_diagnostics.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("sibling_diagnostics", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from smcplan.llm.testing import tiny_model_path
    from smcplan.train.collect import collect
    from smcplan.train.rollout_labels import label_shard
    from smcplan.train.value_siblings import train_value_siblings

    root = tmp_path_factory.mktemp("diag")
    shard, labels = root / "gold.jsonl", root / "gold.labels.jsonl"
    collect("webshop", [75, 76], shard, source="gold", split="train", max_steps=15, branches=3,
            progress=False)  # fmt: skip
    label_shard(shard, "webshop", labels, rollouts=4, rollout_steps=6)
    manifest = train_value_siblings(
        [shard], [labels], root / "v", model=str(tiny_model_path()), heldout=[shard],
        heldout_labels=[labels], cs=[1.0], folds=2, threads=1, progress=False,
    )  # fmt: skip
    return root / "v", str(labels), manifest


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
