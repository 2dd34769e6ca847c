"""The scripts in examples/ that a newcomer runs first run as documented (in a fresh
interpreter, as ``.venv/bin/python examples/NAME.py``) and say what their docstrings promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run_example(name: str, *args: str, timeout: float = 600) -> str:
    env = {
        **os.environ,
        "TORCH_COMPILE_DISABLE": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"examples/{name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_custom_components_plays_twx_coin_with_its_own_proposal_and_twist():
    """examples/custom_components.py: a custom proposal (a function) and a custom twist (an
    object) in the text plan() on twx:coin with the simulator world model; it wins the dev game
    and result.config names the user's components (a few seconds on CPU)."""
    out = run_example("custom_components.py")
    last = out.strip().splitlines()[-1]
    assert last.startswith("== won: True"), out
    assert (
        "planned with proposal explore_first, twist CoinTwist, world model simulator "
        "(oracle: True)" in last
    ), out


@pytest.mark.slow
def test_plan_loop_wins_twx_coin_with_plans_text_defaults_and_no_oracle():
    """examples/plan_loop.py: an agent builder's loop calling smcplan.plan() every step with its
    text defaults (the learned world model shipped in models/trained/, loaded from the
    repository with the network off) wins dev seed 10000 with no oracle (loads the real
    SmolLM2: about 25 s on the shared 2-core CPU, docs/planning.md)."""
    out = run_example("plan_loop.py")
    lines = out.strip().splitlines()
    assert lines[-1].startswith("== won: True"), out
    assert "world model learned twx-coin-world-model (oracle: False)" in lines[-1], out
    assert "horizon 1, twist task+novelty" in lines[-1], out
    steps = [line for line in lines if line.startswith("[")]
    assert steps and all(line.endswith(" s)") for line in steps), out
