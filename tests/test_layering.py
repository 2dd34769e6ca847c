"""The layering of docs/architecture.md, checked on the source (``ast``), not by importing it.

Three rules, all read from the import statements of every module under ``smcplan/`` (top-level,
inside functions and under ``TYPE_CHECKING`` alike):

1. **Layers.** The diagram at the top of docs/architecture.md is the table: rows lower in the
   diagram are lower layers; within a row, packages separated by ``/`` are ordered (left above
   right) and packages separated by spaces are independent. A package may import itself and any
   package of a lower layer, nothing else.
2. **Third-party homes.** Heavy dependencies live in one layer: torch / transformers / outlines /
   bitsandbytes only in ``smcplan.llm``; the benchmark packages only in ``smcplan.envs``.
3. **No import circles** between the modules of a package.

And laziness, statically: the modules a module imports *when it is imported* (top-level
statements, followed through smcplan's own modules) reach none of the heavy packages it must not
load (``import smcplan.llm`` loads no torch; the report and CLI load no model, agent or JAX).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "smcplan"

#: third-party top-level names that may only be imported inside one smcplan package
HOMES = {
    **dict.fromkeys(
        ("torch", "transformers", "outlines", "outlines_core", "bitsandbytes", "accelerate",
         "tokenizers", "safetensors", "gguf", "trl", "peft", "datasets"),
        "llm",
    ),
    **dict.fromkeys(
        ("textworld_express", "scienceworld", "alfworld", "textworld", "py4j"), "envs"
    ),
}
JAX = ("jax", "jaxlib", "numpyro", "equinox", "chex", "blackjax")
MODEL = ("torch", "transformers", "outlines", "outlines_core", "bitsandbytes")
BENCH = ("textworld_express", "scienceworld", "alfworld", "textworld", "py4j")


# --------------------------------------------------------------------------- reading the source


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


class Import:
    """One imported name: ``target`` (dotted), whether it runs at import time, and its line."""

    def __init__(self, target: str, eager: bool, line: int) -> None:
        self.target, self.eager, self.line = target, eager, line


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not MODULES[module].name == "__init__.py":
        base = base[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str) -> Iterator[Import]:
    """Every import of ``module``; ``eager`` iff it runs when the module is imported."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))

    def walk(node: ast.AST, eager: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(alias.name, eager, child.lineno)
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(module, child)
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    # ``from pkg import submodule`` imports the submodule
                    yield Import(sub if sub in MODULES else base, eager, child.lineno)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(child, False)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                yield from walk(child, False)
            else:
                yield from walk(child, eager)

    yield from walk(tree, True)


def smcplan_target(name: str) -> str | None:
    """The smcplan module an import of ``name`` loads (a module or a package), or None."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def package_of(module: str) -> str:
    """``smcplan.memory.graph`` -> ``memory``; ``smcplan.cli`` -> ``cli``; ``smcplan`` -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


# --------------------------------------------------------------------------- the layer table


def layer_table() -> dict[str, tuple[int, int]]:
    """package -> (row from the bottom, position in its ``/`` chain; 0 = independent)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"imports point down only.*?```\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md lost its layer diagram"
    rows = [line[:22].strip() for line in block.group(1).splitlines() if line.strip()]
    table: dict[str, tuple[int, int]] = {}
    for height, row in enumerate(reversed(rows)):
        chain = [part.split() for part in row.split("/")]
        for pos, names in enumerate(reversed(chain)):
            for name in names:
                table[name] = (height, pos if len(chain) > 1 else 0)
    return table


LAYERS = layer_table()


def test_the_layer_table_names_every_package():
    packages = {package_of(m) for m in MODULES} - {""}
    assert packages == set(LAYERS), "docs/architecture.md's diagram and smcplan/ disagree"
    # the stdlib-only base (errors, interrupts) is below smc, the lowest package of the stack
    assert LAYERS["errors"][0] == LAYERS["interrupts"][0] == 0 and LAYERS["smc"][0] == 1
    assert LAYERS["cli"] > LAYERS["eval"]


def may_import(importer: str, imported: str) -> bool:
    if importer == imported or importer == "" or imported == "":
        return True  # a package itself; the root facade; the root's ``__version__``
    (h1, p1), (h2, p2) = LAYERS[importer], LAYERS[imported]
    return h2 < h1 or (h1 == h2 and p1 > p2)


def test_imports_point_down_the_layer_table():
    bad = []
    for module in MODULES:
        for imp in imports(module):
            target = smcplan_target(imp.target)
            if target and not may_import(package_of(module), package_of(target)):
                bad.append(f"{module}:{imp.line} imports {target}")
    assert bad == []


def test_heavy_dependencies_live_in_their_one_package():
    bad = []
    for module in MODULES:
        for imp in imports(module):
            home = HOMES.get(imp.target.split(".")[0])
            if home and package_of(module) != home:
                bad.append(f"{module}:{imp.line} imports {imp.target} (only smcplan.{home} may)")
    assert bad == []


# --------------------------------------------------------------------------- circles


def cycles_within_packages() -> list[list[str]]:
    """Strongly connected components (size > 1) of the module graph, per package (Tarjan)."""
    graph = {
        m: sorted(
            {
                t
                for imp in imports(m)
                if (t := smcplan_target(imp.target)) and t != m and package_of(t) == package_of(m)
                and not (MODULES[m].name == "__init__.py" and t.startswith(m + "."))
            }
        )
        for m in MODULES
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            strongconnect(v)
    return found


def test_no_import_circles_inside_a_package():
    """A package's ``__init__`` importing its submodules is the package, not a circle; any other
    loop (lazy and ``TYPE_CHECKING`` imports included) is."""
    assert cycles_within_packages() == []


# --------------------------------------------------------------------------- laziness


def loaded_at_import(module: str) -> set[str]:
    """Top-level names (smcplan modules and third-party roots) loaded by ``import module``."""
    seen: set[str] = set()
    todo = [module]
    # importing a dotted module first imports its parent packages
    parts = module.split(".")
    todo += [".".join(parts[:i]) for i in range(1, len(parts))]
    out: set[str] = set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        out.add(m)
        for imp in imports(m):
            if not imp.eager:
                continue
            target = smcplan_target(imp.target)
            if target is None:
                out.add(imp.target.split(".")[0])
            else:
                t_parts = target.split(".")
                todo += [".".join(t_parts[:i]) for i in range(1, len(t_parts) + 1)]
    return out


@pytest.mark.parametrize(
    ("modules", "forbidden"),
    [
        (["smcplan"], (*JAX, *MODEL, *BENCH, "numpy")),
        (["smcplan.smc", "smcplan.pomdp"], (*MODEL, *BENCH)),
        (["smcplan.llm"], (*MODEL, *JAX)),
        (["smcplan.llm.roles", "smcplan.llm.backends.hf", "smcplan.llm.loading",
          "smcplan.llm.testing"],
         ("smcplan.memory", "smcplan.envs", "smcplan.planning", "smcplan.agents")),
        (["smcplan.memory"], (*JAX, *MODEL, *BENCH)),
        (["smcplan.envs", "smcplan.envs.splits"], (*BENCH, *JAX, "torch", "smcplan.pomdp")),
        (["smcplan.planning", "smcplan.pomdp.domains"], MODEL),
        (["smcplan.agents"], (*MODEL, "smcplan.llm")),
        (
            ["smcplan.eval.metrics", "smcplan.eval.report", "smcplan.eval.viewer", "smcplan.cli"],
            ("torch", "transformers", "jax", "smcplan.envs", "smcplan.agents", "smcplan.llm",
             *BENCH, "matplotlib"),
        ),
    ],
)
def test_importing_loads_nothing_heavy(modules, forbidden):
    loaded = set().union(*(loaded_at_import(m) for m in modules))
    assert sorted(loaded & set(forbidden)) == []


def test_the_checker_sees_lazy_imports_and_type_checking_blocks():
    """The rules above read imports inside functions and ``TYPE_CHECKING`` blocks too (a rule
    that cannot fail checks nothing): the runner's agent import is lazy, and it is found."""
    found = {(i.target, i.eager) for i in imports("smcplan.eval.build")}
    assert ("smcplan.agents", False) in found
    assert "smcplan.agents" not in loaded_at_import("smcplan.eval.build")
