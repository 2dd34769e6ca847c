"""A wheel install (not editable) works from outside the repository with no environment variable.

Builds the wheel of this source tree, installs it with ``--no-deps`` into a fresh virtualenv
whose only other path is the test interpreter's site-packages (for the dependencies: offline and
fast; that folder's ``.pth`` files, e.g. an editable smcplan, are not processed), and then, in an
empty folder with ``SMCPLAN_MODELS_DIR`` and ``PYTHONPATH`` unset: imports smcplan from the
virtualenv, runs an LLM role (the progress judge) and its template on the packaged prompts, and
plays a 2-step ReAct episode through the installed ``smcplan`` console script.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # builds a wheel, makes a virtualenv, loads the tiny model

ROLE_CHECK = textwrap.dedent(
    """
    import json, smcplan
    from smcplan.llm import ProgressModel
    from smcplan.llm.paths import models_dir
    from smcplan.llm.templates import load_role
    from smcplan.llm.testing import tiny_model

    judge = ProgressModel(tiny_model())
    (verdict,) = judge(["find the coin"], ["You see a coin."], ["take coin"], ["You take it."])
    roles = sorted(p.name for p in (models_dir() / "roles").iterdir())
    from smcplan.llm.artifacts import artifact_names, load_manifest
    artifacts = {n: sorted(load_manifest(n)["files"]) for n in artifact_names()}
    print(json.dumps({
        "file": smcplan.__file__,
        "models_dir": str(models_dir()),
        "roles": roles,
        "artifacts": artifacts,
        "verdict": type(verdict).__name__,
        "zeroshot": load_role("zeroshot").system[:40],
    }))
    """
)


def test_the_explicit_package_list_of_pyproject_names_every_subpackage():
    """pyproject.toml lists smcplan's packages by hand (setuptools cannot find the mapped
    ``smcplan.models`` = ``models/``); a new subpackage must not be left out of the wheel."""
    import tomllib

    from setuptools import find_packages

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    listed = set(config["setuptools"]["packages"])
    assert listed == set(find_packages(str(ROOT), include=["smcplan*"])) | {"smcplan.models"}
    assert config["setuptools"]["package-dir"] == {"smcplan.models": "models"}


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> str:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"{cmd[:3]} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def test_the_wheel_runs_a_role_and_a_react_episode_without_the_repository(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(
        ROOT,
        src,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "runs", "build", "dist", "*.egg-info", "__pycache__", ".*_cache",
            "tests", "bench", "docs", "examples", "scripts",
        ),
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SMCPLAN_MODELS_DIR")}
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(src)],
        tmp_path, env,
    )
    (wheel,) = (tmp_path / "dist").glob("smcplan-*.whl")
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path, env)
    python = venv / "bin" / "python"
    site = Path(_run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                     tmp_path, env).strip())
    (site / "shared-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
          str(wheel)], tmp_path, env)

    work = tmp_path / "elsewhere"
    work.mkdir()
    report = json.loads(_run([str(python), "-c", ROLE_CHECK], work, env).splitlines()[-1])
    assert report["file"].startswith(str(venv)), report["file"]
    assert report["models_dir"].startswith(str(venv))
    assert {"progress", "triplets", "rlaw_actor", "zeroshot", "reflexion", "belief"} <= set(
        report["roles"]
    )
    assert report["verdict"] == "Progress" and report["zeroshot"]
    shipped = {p.name for p in (ROOT / "models" / "trained").iterdir() if p.is_dir()}
    assert set(report["artifacts"]) == shipped and shipped  # every artifact, every file listed
    assert all(files for files in report["artifacts"].values())

    from smcplan.llm.testing import tiny_model_path

    out = work / "run"
    _run(
        [str(venv / "bin" / "smcplan"), "eval", "--env", "toy:household", "--agent", "react",
         "--model", str(tiny_model_path()), "--seeds", "0", "--max-steps", "2", "--out",
         str(out), "--no-progress"],
        work, env,
    )
    (summary,) = [json.loads(p.read_text()) for p in (out / "episodes").glob("*.json")]
    steps = (out / "episodes" / f"{summary['episode']}.steps.jsonl").read_text().splitlines()
    assert summary["status"] == "ok" and summary["agent"] == "react" and len(steps) == 2
