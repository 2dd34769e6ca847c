"""The API reference builds with warnings as errors, and shows every public name with a docstring.

``mkdocs build --strict`` (mkdocs.yml) fails on any warning: a broken link or cross-reference in
the guides, an ``smcplan`` role in a docstring whose target does not exist
(docs/hooks/griffe_smcplan.py), a docstring griffe cannot parse.  The rule for public names: every
name in ``smcplan.__all__`` and in each subpackage's ``__all__`` (and ``smcplan.errors``) has a
non-empty docstring, read statically as the reference reads it: functions and classes their own
docstring (not an inherited or generated one), constants a docstring or the ``#:`` comment above
them; and each is rendered in the reference (an anchor with its public path, or with its defining
path where the name is shadowed by its module, see docs/api/planning.md).  Skipped, with the
reason, only where the ``docs`` extra (mkdocs, mkdocs-material, mkdocstrings-python) is missing.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = [
    "smcplan",
    "smcplan.smc",
    "smcplan.pomdp",
    "smcplan.planning",
    "smcplan.games",
    "smcplan.memory",
    "smcplan.llm",
    "smcplan.envs",
    "smcplan.agents",
    "smcplan.eval",
    "smcplan.errors",
]

for _needed in ("mkdocs", "material", "mkdocstrings_handlers.python", "griffe"):
    if importlib.util.find_spec(_needed.split(".")[0]) is None:
        pytest.skip(
            f"{_needed} is not installed (the docs extra: pip install -e '.[docs]')",
            allow_module_level=True,
        )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "mkdocs.yml", "-d", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    seconds = time.perf_counter() - start
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    print(f"mkdocs build --strict: {seconds:.1f} s")
    return out


@pytest.fixture(scope="module")
def package():
    import griffe

    spec = importlib.util.spec_from_file_location(
        "griffe_smcplan", ROOT / "docs" / "hooks" / "griffe_smcplan.py"
    )
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return griffe.load(
        "smcplan",
        search_paths=[str(ROOT)],
        extensions=griffe.load_extensions(hooks.SmcplanDocstrings()),
        allow_inspection=False,
        resolve_aliases=True,
    )


def _public(package):
    for module_path in MODULES:
        module = package if module_path == "smcplan" else package[module_path[len("smcplan.") :]]
        assert module.exports, f"{module_path} has no __all__"
        for name in module.exports:
            member = module.members.get(name)
            assert member is not None, f"{module_path}.{name} is in __all__ but not found"
            obj = member.final_target if member.is_alias else member
            imported = module.imports.get(name)
            if obj.is_module and imported and imported != obj.path:
                # ``from .plan import plan``: griffe keeps the submodule under the name; the
                # name is the function it imports (as at run time).
                obj = package[imported[len("smcplan.") :]]
            yield module_path, name, obj


def test_the_reference_builds_with_warnings_as_errors(site: Path):
    assert (site / "api" / "planning.html").is_file() and (site / "index.html").is_file()


def test_every_public_name_has_a_docstring(package):
    missing = [
        f"{module}.{name}"
        for module, name, obj in _public(package)
        if obj.docstring is None or not obj.docstring.value.strip()
    ]
    assert not missing, f"public names without a docstring: {', '.join(missing)}"


def test_every_public_name_appears_in_the_reference(site: Path, package):
    anchors: set[str] = set()
    for page in (site / "api").glob("*.html"):
        anchors |= set(re.findall(r'id="(smcplan[^"]*)"', page.read_text(encoding="utf-8")))
    absent = [
        f"{module}.{name}"
        for module, name, obj in _public(package)
        if not {f"{module}.{name}", obj.path} & anchors
    ]
    assert not absent, f"public names missing from docs/api: {', '.join(absent)}"


def test_signatures_of_the_entry_point_are_in_the_reference(site: Path):
    text = (site / "api" / "smcplan.html").read_text(encoding="utf-8")
    assert 'id="smcplan.plan"' in text
    for parameter in ("pomdp_or_task", "num_particles", "admissible_actions"):
        assert parameter in text, parameter


def test_the_lazy_names_the_reference_adds_are_those_import_resolves():
    """docs/hooks/griffe_smcplan.py's ``LAZY`` table against ``smcplan.__getattr__``."""
    import importlib

    import smcplan

    spec = importlib.util.spec_from_file_location(
        "griffe_smcplan_lazy", ROOT / "docs" / "hooks" / "griffe_smcplan.py"
    )
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    assert set(hooks.LAZY["smcplan"]) == set(smcplan.__all__) - {"__version__"}
    for name, target in hooks.LAZY["smcplan"].items():
        module, _, attr = target.rpartition(".")
        assert getattr(smcplan, name) is getattr(importlib.import_module(module), attr), name
