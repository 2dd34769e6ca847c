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


def test_the_planner_bench_passes_env_arguments_as_the_cli_does():
    """``bench/agent_step.py --planner --env-arg KEY=VALUE`` builds its env with the same
    keywords ``smcplan eval --env-arg`` would (the |A| = 30 measurement needs ``split=train``)."""
    import argparse
    import sys

    from smcplan.cli import parse_kv

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(
            "_planner_step", ROOT / "bench" / "_planner_step.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    items = ["split=train", "max_steps=30"]
    got = module._env_kwargs(argparse.Namespace(env_arg=items))
    assert got == parse_kv(items) == {"split": "train", "max_steps": 30}
    assert module._env_kwargs(argparse.Namespace(env_arg=[])) == {}
