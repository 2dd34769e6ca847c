"""No module of ``smcplan/`` is over 450 lines: a module longer than that does more than one job
(split it by job, as :mod:`smcplan.planning.places` / :mod:`smcplan.planning.twist_task` and
:mod:`smcplan.agents.rlaw` / :mod:`smcplan.agents.rlaw_actors` were)."""

from __future__ import annotations

from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "smcplan"
MAX_LINES = 450


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_module_is_at_most_450_lines(path: Path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"smcplan/{path.relative_to(PACKAGE)} has {n} lines (> {MAX_LINES})"
