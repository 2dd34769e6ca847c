"""Shipping an artifact: the fp16 adapter copy keeps the trained model, and the manifest
describes the folder it sits in (so a damaged or foreign file is caught on loading)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from smcplan.errors import SmcplanError

SYSTEM = {"role": "system", "content": "You simulate a text game."}
EXAMPLES = [
    {"prompt": [SYSTEM, {"role": "user", "content": f"Action: {a}"}], "completion": c}
    for a, c in [
        ("move west", "You are in the hallway."),
        ("take coin", "You take the coin."),
        ("look", "You are in the kitchen. There is a table."),
        ("close door", "The door is now closed."),
    ]
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from smcplan.llm.finetune import SFTSettings, sft_dataset, train_sft
    from smcplan.llm.testing import tiny_model_path

    path = tiny_model_path(0)
    out = tmp_path_factory.mktemp("sft")
    settings = SFTSettings(
        learning_rate=1e-2, max_steps=3, batch_size=2, save_steps=3, threads=1, progress=False
    )
    return path, train_sft(path, sft_dataset(EXAMPLES), out, settings).weights


def _logprobs(base, adapter=None):
    from smcplan.llm import load_model

    lm = load_model(base, adapter=adapter, device="cpu", threads=1)
    return np.asarray(
        lm.logprob([e["prompt"] for e in EXAMPLES], [e["completion"] for e in EXAMPLES])
    )


def test_the_fp16_copy_of_an_adapter_scores_like_the_fp32_adapter(trained, tmp_path):
    """Rounding B and A to fp16 perturbs Delta W = s B A by at most about 2 * 2^-11 of itself
    (two roundings of relative error 2^-11 each); the log-probabilities move linearly in Delta W
    to first order, so the copy's shift from the fp32 adapter is about 2^-10 of the adapter's own
    shift from the base model.  Tested with a 10x margin for the second-order terms: 0.01."""
    from smcplan.llm.finetune import adapter_base, copy_adapter_half
    from smcplan.llm.finetune.lora import is_adapter

    base, adapter = trained
    files = copy_adapter_half(adapter, tmp_path / "half", base_model=str(base))
    assert is_adapter(tmp_path / "half") and adapter_base(tmp_path / "half") == str(base)
    assert sorted(files) == ["adapter_config.json", "adapter_model.safetensors"]
    from safetensors.numpy import load_file

    assert {v.dtype for v in load_file(str(tmp_path / "half" / files[1])).values()} == {
        np.dtype("float16")
    }
    full, half = _logprobs(base, adapter), _logprobs(base, tmp_path / "half")
    plain = _logprobs(base)
    shift = np.abs(full - plain).max()
    assert shift > 1e-3  # the adapter changed the model
    assert np.abs(half - full).max() <= 0.01 * shift


def test_a_manifest_lists_every_file_and_loading_catches_a_damaged_one(tmp_path, monkeypatch):
    from smcplan.llm.artifacts import artifact_names, load_manifest, resolve_artifact
    from smcplan.llm.paths import models_dir
    from smcplan.train.ship import write_manifest

    models = tmp_path / "models"
    (models / "roles").mkdir(parents=True)
    (models / "registry.json").write_text(
        (models_dir() / "registry.json").read_text()
    )
    folder = models / "trained" / "toy-head"
    folder.mkdir(parents=True)
    (folder / "weights.bin").write_bytes(b"\x00" * 100)
    data = tmp_path / "shard.jsonl"
    data.write_text('{"a": 1}\n')
    monkeypatch.setenv("SMCPLAN_MODELS_DIR", str(models))
    manifest = write_manifest(
        folder,
        name="toy-head",
        kind="score-head",
        description="a test",
        base_model="smollm2-135m",
        commands=["smcplan train critic-head --data shard.jsonl --out x"],
        data=[data],
        metrics={"heldout": {"n": 10, "auc": 0.9}, "check": {"n": 2}},
    )
    assert artifact_names() == ["toy-head"]
    assert resolve_artifact("toy-head") == folder
    loaded = load_manifest("toy-head")
    assert loaded == json.loads((folder / "manifest.json").read_text()) == manifest
    assert loaded["files"]["weights.bin"]["bytes"] == 100 and loaded["bytes"] == 100
    assert loaded["data"][0]["sha256"] == (
        "e8c628edc9968ef0c668f54e0ba2636b35503357eb1aca0ddc828aeace432f67"
    )
    (folder / "weights.bin").write_bytes(b"\x00" * 99)
    with pytest.raises(SmcplanError, match="99 bytes, the manifest says 100"):
        load_manifest("toy-head")
    (folder / "weights.bin").unlink()
    with pytest.raises(SmcplanError, match="'weights.bin', which is not in"):
        load_manifest(folder)
    with pytest.raises(SmcplanError, match="known artifacts: toy-head"):
        resolve_artifact("toy-hed", "critic_path")


def test_shipping_a_folder_without_its_weights_names_the_argument_and_the_missing_files(tmp_path):
    from smcplan.train.ship import ship_adapter, ship_head

    (tmp_path / "head").mkdir()
    (tmp_path / "head" / "score_head.json").write_text("{}")
    with pytest.raises(SmcplanError, match=r"head=.* lacks score_head\.npz; pass <out>/head"):
        ship_head(tmp_path / "head", tmp_path / "out")
    with pytest.raises(SmcplanError, match=r"adapter=.* lacks adapter_config\.json, adapter_model"):
        ship_adapter(tmp_path / "nothing", tmp_path / "out", "smollm2-135m")
    assert not (tmp_path / "out").exists()  # nothing written before the check
