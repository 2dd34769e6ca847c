"""``make bench`` runs every benchmark script: bench/run_all.py has quick settings for each."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_bench_script_has_quick_settings_and_writes_its_json():
    spec = importlib.util.spec_from_file_location("run_all", ROOT / "bench" / "run_all.py")
    run_all = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_all)
    assert run_all.scripts() and set(run_all.scripts()) == set(run_all.QUICK)
    for name in run_all.scripts():
        text = (ROOT / "bench" / f"{name}.py").read_text(encoding="utf-8")
        assert f"{name}.json" in text or f'write_json("{name}"' in text, name
    assert "bench/run_all.py" in (ROOT / "Makefile").read_text(encoding="utf-8")
