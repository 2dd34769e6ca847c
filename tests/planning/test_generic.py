"""``smcplan/planning/`` is generic: no module names a benchmark or its vocabulary in its code.

Read with ``ast``: every string constant that is not a docstring, and every identifier (names,
attributes, function, class and argument names, imported names and module paths).  Docstrings
may cite where a rule was measured ("on twx:coin ..."); the code may not decide by it.  The map's
own words (place, exit, door, open, closed) are generic; the list below is what moved to
``smcplan/games/``: benchmark names, reply phrases, action grammar, direction words, rooms and
things of the games' tasks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PLANNING = Path(__file__).resolve().parents[2] / "smcplan" / "planning"

#: benchmark names and the words of their replies, actions, maps and tasks
VOCABULARY = (
    "twx", "textworld", "textworld_express", "coin", "alfworld", "alfred", "scienceworld",
    "sciworld", "webshop", "mapreader", "cookingworld",
    "you are in", "that is already", "already open", "already closed", "revealing the",
    "you can't", "nothing happens", "unknown action", "no known action", "i'm not sure",
    "the door is closed", "you open the", "you close the", "your task is to",
    "open door to", "close door to", "move north", "go to",
    "north", "south", "east", "west",
    "kitchen", "pantry", "corridor", "laundry", "washroom", "bathroom", "backyard", "vault",
    "living room", "kettle", "countertop", "inventory",
)  # fmt: skip


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            out.add(id(node.value))  # docstrings and bare string statements
    return out


def _texts(tree: ast.AST) -> list[tuple[int, str]]:
    skip = _docstrings(tree)
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out.append((line, node.value))
        elif isinstance(node, ast.Name):
            out.append((line, node.id))
        elif isinstance(node, ast.Attribute):
            out.append((line, node.attr))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((line, node.name))
        elif isinstance(node, ast.arg):
            out.append((line, node.arg))
        elif isinstance(node, ast.ImportFrom):
            out += [(line, node.module or "")] + [(line, a.asname or a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(line, a.asname or a.name) for a in node.names]
    return out


def benchmark_words(source: str) -> list[tuple[int, str, str]]:
    """``(line, text, word)`` for each string constant or identifier of ``source`` that holds a
    word of :data:`VOCABULARY` (whole words; ``_`` and ``.`` separate words)."""
    found = []
    for line, text in _texts(ast.parse(source)):
        words = " ".join(re.split(r"[\s_.:\-]+", text.lower()))
        for word in VOCABULARY:
            if re.search(rf"(?<![a-z]){re.escape(word.replace('_', ' '))}(?![a-z])", words):
                found.append((line, text, word))
                break
    return found


def test_the_scan_finds_a_benchmark_string_and_an_identifier():
    source = (
        'def twx_rules(x):\n    """On twx:coin."""\n    return x == "You are in the kitchen."\n'
    )
    assert [(line, word) for line, _, word in benchmark_words(source)] == [
        (1, "twx"),
        (3, "you are in"),
    ]


@pytest.mark.parametrize("path", sorted(PLANNING.glob("*.py")), ids=lambda p: p.name)
def test_planning_module_names_no_benchmark(path: Path):
    found = benchmark_words(path.read_text(encoding="utf-8"))
    assert not found, (
        f"smcplan/planning/{path.name} names benchmark vocabulary "
        + "; ".join(f"line {line}: {text!r} ({word!r})" for line, text, word in found)
        + " (game knowledge belongs in smcplan/games/)"
    )
