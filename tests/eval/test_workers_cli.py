"""``--workers`` / ``--ray-address`` usage errors (no Ray cluster is started)."""

from __future__ import annotations

import pytest

from smcplan.cli import main
from smcplan.eval import EvalConfig, run_eval


@pytest.mark.parametrize("bad", ["0", "-3", "two"])
def test_workers_must_be_a_positive_integer_usage_error(bad, capsys, tmp_path):
    rc = main(["eval", "--env", "toy:tiger", "--agent", "random", "--workers", bad,
               "--out", str(tmp_path / "run")])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1  # main returns the usage error's status, one line
    assert "--workers: must be a positive integer" in err
    assert not (tmp_path / "run").exists()


def test_run_eval_refuses_zero_workers_before_writing_anything(tmp_path):
    config = EvalConfig(envs=["toy:tiger"], agent="random", out=str(tmp_path / "run"), seeds=[0])
    with pytest.raises(ValueError, match="workers must be >= 1; got 0"):
        run_eval(config, progress=False, workers=0)
    assert not (tmp_path / "run").exists()
