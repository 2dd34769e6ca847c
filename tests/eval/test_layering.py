"""Layering: metrics and reports are pure; nothing in smcplan imports the eval layer or the CLI."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "smcplan"


def test_no_library_module_imports_eval_or_cli():
    pattern = re.compile(
        r"^\s*(from|import)\s+smcplan(\.eval|\.cli|\s+import\s+.*\b(eval|cli)\b)", re.M
    )
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if not path.is_relative_to(PACKAGE / "eval")
        and path != PACKAGE / "cli.py"
        and pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_metrics_report_and_cli_import_no_backend_model_or_agent():
    code = (
        "import sys, smcplan.eval.metrics, smcplan.eval.report, smcplan.eval.viewer, smcplan.cli;"
        "heavy = [m for m in ('torch', 'transformers', 'jax', 'smcplan.envs', 'smcplan.agents',"
        " 'smcplan.llm', 'textworld_express', 'scienceworld', 'matplotlib') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
