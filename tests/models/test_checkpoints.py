"""Every trained checkpoint kept in ``models/checkpoints/`` (not shipped, but committed so that
a new machine does not retrain it) has its README and manifest, and its weights load: a world
model's adapter records its base model and what it writes, a value head reads back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from smcplan.llm.roles.value_head import load_value_head
from smcplan.llm.roles.world_outcome import FULL_TARGETS, read_targets

ROOT = Path(__file__).resolve().parents[2] / "models" / "checkpoints"
FOLDERS = sorted(p for p in ROOT.iterdir() if p.is_dir())


def test_the_checkpoints_folder_holds_the_issue_53_artifacts():
    names = {p.name for p in FOLDERS}
    assert {
        "alfworld-world-model",
        "scienceworld-world-model",
        "webshop-world-model",
        "webshop-value-head",
    } <= names


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_each_checkpoint_is_listed_and_has_a_manifest(folder):
    """Listed in ``models/checkpoints/README.md``; a README of its own where it has one; a
    JSON manifest (``train*.json``, or ``config.json`` / ``train.json`` of each run below it)."""
    assert f"`{folder.name}/`" in (ROOT / "README.md").read_text(encoding="utf-8")
    if (folder / "README.md").is_file():
        assert (folder / "README.md").read_text(encoding="utf-8").startswith(f"# {folder.name}")
    manifests = sorted(folder.glob("*.json")) + sorted(folder.glob("*/train.json"))
    assert manifests, f"{folder.name}: no manifest (train*.json)"
    for path in manifests:
        assert isinstance(json.loads(path.read_text(encoding="utf-8")), dict)


@pytest.mark.parametrize(
    "folder", [p for p in FOLDERS if (p / "adapter").is_dir()], ids=lambda p: p.name
)
def test_each_world_model_adapter_names_its_base_and_its_targets(folder):
    config = json.loads((folder / "adapter" / "adapter_config.json").read_text(encoding="utf-8"))
    assert Path(config["base_model_name_or_path"]).name == "smollm2-135m"
    assert (folder / "adapter" / "adapter_model.safetensors").stat().st_size > 1_000_000
    assert read_targets(folder / "adapter") == FULL_TARGETS


@pytest.mark.parametrize(
    "head", sorted(p.parent for p in ROOT.glob("*/head*/score_head.json")), ids=str
)
def test_each_value_head_loads(head):
    loaded = load_value_head(head)
    weight = np.asarray(loaded.weight)
    assert weight.shape[-1] == loaded.dim and np.all(np.isfinite(weight))
    assert loaded.layers  # the hidden layers it reads
    replies = loaded.info.get("replies", "real")  # a head fitted on a world model's replies
    if replies != "real":  # names a world model that is kept: a shipped name or a folder here
        from smcplan.llm.artifacts import artifact_names

        assert replies in artifact_names() or (ROOT.parents[1] / replies).is_dir(), replies
