"""scripts/value_probe.py: a bad --fact is one line and exit 2; a committed ALFWorld value head
scores a hand-written state exactly as ValueModel does on the embedded model."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import load_script

ROOT = Path(__file__).resolve().parents[2]
HEAD = ROOT / "models" / "checkpoints" / "alfworld-pick-value-head" / "head"
TASK = "Your task is to: put a kettle in countertop."


@pytest.fixture(scope="module")
def script():
    return load_script("value_probe")


def test_a_bad_fact_is_one_line_and_exit_2(script, capsys):
    code = script.main(["--head", str(HEAD), "--task", TASK, "--fact", "a|b", "You see."])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--fact 'a|b'" in err[0]


def test_a_missing_head_is_one_line_and_exit_2(script, tmp_path, capsys):
    code = script.main(["--head", str(tmp_path / "none"), "--task", TASK, "You see."])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "none" in err[0]


def test_the_probe_prints_the_value_models_scores(script, capsys):
    from smcplan.llm import load_model
    from smcplan.llm.roles.value_head import ValueModel
    from smcplan.planning.text_particle import render_context

    obs = ["You pick up the kettle 1 from the cabinet 1.", "You close the cabinet 1."]
    fact = ("countertop 1", "in", "room")
    assert script.main(["--head", str(HEAD), "--task", TASK, "--fact", "|".join(fact), *obs]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "head 1\tobservation" and len(lines) == 3
    want = ValueModel(load_model(), HEAD)([render_context(TASK, [fact], o) for o in obs])
    for line, o, v in zip(lines[1:], obs, want, strict=True):
        assert line == f"{float(v):.3f}\t{o}"
