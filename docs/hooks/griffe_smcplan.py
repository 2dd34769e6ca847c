"""Griffe extension for smcplan's API reference (mkdocs.yml loads it; nothing imports it).

It does four things while griffe reads the package statically (no module is imported):

1. Lazy names.  ``smcplan.plan`` and the names of ``smcplan.llm`` are resolved on first use by a
   module ``__getattr__`` (so ``import smcplan`` imports no JAX or torch); griffe cannot see them,
   so they are added here as aliases of the objects they resolve to (the ``_WHERE`` tables of
   ``smcplan.llm`` and ``smcplan.llm.finetune`` are read from their source).
2. Sphinx roles.  The docstrings use reST roles (``:class:`~smcplan.memory.KnowledgeGraph```,
   ``:func:`plan_pomdp```, ``:math:`e^\\lambda```).  Each role whose target resolves to an
   object of the package becomes an optional cross-reference (a link where the object is
   rendered in the reference, code text otherwise); ``:math:`` becomes code text.  A role naming
   an ``smcplan`` object that does not exist is a warning, which fails ``mkdocs build --strict``.
   reST's literal-block marker ``::`` becomes ``:`` (the indented block is Markdown code as is).
3. Tables.  reST simple tables become Markdown tables.
4. Doc comments.  A module constant is documented by ``#:`` comment lines right above it (the
   Sphinx convention the package uses); griffe reads only string docstrings, so the comment
   becomes the constant's docstring.
"""

from __future__ import annotations

import ast
import html
import logging
import re
from typing import Any

import griffe

_log = logging.getLogger("mkdocs.plugins.smcplan_docs")

#: Names a module ``__getattr__`` resolves lazily, with their targets.
LAZY = {"smcplan": {"plan": "smcplan.planning.plan.plan"}}

_ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|mod|data|exc|obj|const|math):`([^`]+)`")


def _lazy_names(pkg: griffe.Module) -> dict[str, dict[str, str]]:
    """``LAZY`` plus every module's ``_WHERE`` table (name -> module, absolute or relative)."""
    lazy = {module: dict(names) for module, names in LAZY.items()}
    for obj in _walk(pkg, set()):
        if obj.is_module and "_WHERE" in obj.members:
            where = ast.literal_eval(str(obj.members["_WHERE"].value))
            lazy[obj.path] = {
                name: f"{mod if mod.startswith('smcplan.') else f'{obj.path}.{mod}'}.{name}"
                for name, mod in where.items()
            }
    return lazy


def _lookup(pkg: griffe.Module, path: str) -> Any:
    """The object at dotted ``path`` under ``pkg`` (aliases resolved), or None."""
    if path == pkg.path:
        return pkg
    if not path.startswith(pkg.path + "."):
        return None
    try:
        obj = pkg[path[len(pkg.path) + 1 :]]
        if isinstance(obj, griffe.Alias):
            obj.final_target  # noqa: B018 (raises if the alias does not resolve)
        return obj
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _resolve(pkg: griffe.Module, scope: Any, target: str) -> str | None:
    """The full path of ``target`` as seen from ``scope``, or None."""
    target = target.lstrip(".")
    candidates = [target]
    here = scope
    while here is not None:
        candidates.append(f"{here.path}.{target}")
        here = here.parent
    head, _, rest = target.partition(".")
    try:
        base = scope.resolve(head)
        candidates.append(f"{base}.{rest}" if rest else base)
    except (griffe.NameResolutionError, NameError, AttributeError, KeyError):
        pass
    for candidate in candidates:
        if _lookup(pkg, candidate) is not None:
            return candidate
    return None


_BORDER = re.compile(r"^(\s*)=+(?:\s+=+)+\s*$")


def _tables(text: str) -> str:
    """reST simple tables (``====  ====`` borders) as Markdown tables.

    Cells are split at runs of two or more spaces (the docstrings' cells overflow their columns
    now and then), by column otherwise; a line holding one cell continues the previous row's
    last cell (the docstrings wrap long cells that way); a border after the first row marks it
    as the header.
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _BORDER.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        starts = [m.start() for m in re.finditer(r"=+", lines[i])]
        rows: list[list[str]] = []
        header: list[str] | None = None
        i += 1
        while i < len(lines) and not (
            _BORDER.match(lines[i]) and (header is not None or len(rows) != 1)
        ):
            if _BORDER.match(lines[i]):
                header = rows.pop()
            elif lines[i].strip():
                cells = re.split(r"\s{2,}", lines[i].strip())
                if len(cells) != len(starts) and len(cells) > 1:  # a cell overflows: by column
                    line = lines[i].ljust(starts[-1] + 1)
                    ends = [*starts[1:], len(line)]
                    cells = [line[a:b].strip() for a, b in zip(starts, ends, strict=True)]
                if rows and len(cells) == 1:
                    rows[-1][-1] = f"{rows[-1][-1]} {cells[0]}".strip()
                else:
                    rows.append(cells + [""] * (len(starts) - len(cells)))
            i += 1
        i += 1  # the closing border

        def row(cells: list[str]) -> str:
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

        out += ["", row(header or [""] * len(starts)), row(["---"] * len(starts))]
        out += [row(r) for r in rows] + [""]
    return "\n".join(out)


def _rewrite(pkg: griffe.Module, obj: Any, text: str) -> str:
    def role(match: re.Match[str]) -> str:
        kind, body = match.groups()
        if kind == "math":
            return f"`{body}`"
        title = None
        explicit = re.fullmatch(r"(.+?)\s*<(.+)>", body)
        if explicit:
            title, body = explicit.groups()
        body = re.sub(r"\s+", "", body) if title is None else body
        short = body.startswith("~")
        target = body.lstrip("~").removesuffix("()")
        shown = title or (target.rsplit(".", 1)[-1] if short else target)
        if kind in ("func", "meth") and not title:
            shown += "()"
        path = _resolve(pkg, obj, target)
        if path is None:
            if target.startswith("smcplan."):
                _log.warning("%s: broken cross-reference %s", obj.path, match.group(0))
            return f"`{shown}`"
        return (
            f'<autoref identifier="{html.escape(path)}" optional>'
            f"<code>{html.escape(shown)}</code></autoref>"
        )

    text = _tables(text)
    # ``plan``'s entries are filled in at import time; here the overload signatures show them.
    text = re.sub(r"::\s*\{entries\}", ": the two overload signatures shown above.", text)
    # reST's literal-block marker ``text::`` (Markdown's indented block needs no marker).
    text = re.sub(r"(\S)::\n\n", r"\1:\n\n", text)
    text = re.sub(r"(?m)^::\n\n", "\n", text)
    return _ROLE.sub(role, text)


def _doc_comment(attribute: Any) -> str | None:
    """The ``#:`` comment lines right above an attribute (Sphinx's convention), or None."""
    lines = attribute.module.lines
    found: list[str] = []
    i = (attribute.lineno or 1) - 2
    while 0 <= i < len(lines) and lines[i].lstrip().startswith("#:"):
        found.insert(0, lines[i].lstrip()[2:].strip())
        i -= 1
    return "\n".join(found) or None


def _walk(obj: Any, seen: set[str]):
    if obj.path in seen:
        return
    seen.add(obj.path)
    yield obj
    for member in list(obj.members.values()):
        if isinstance(member, griffe.Alias):
            continue
        yield from _walk(member, seen)


class SmcplanDocstrings(griffe.Extension):
    """Add the lazy names, read ``#:`` doc comments, turn Sphinx roles into cross-references."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if pkg.path != "smcplan":
            return
        for module_path, names in _lazy_names(pkg).items():
            module = _lookup(pkg, module_path)
            for name, target in names.items():
                if name not in module.members:
                    module.set_member(name, griffe.Alias(name, target, parent=module))
        for obj in _walk(pkg, set()):
            if obj.is_attribute and obj.docstring is None:
                comment = _doc_comment(obj)
                if comment:
                    obj.docstring = griffe.Docstring(comment, parent=obj)
            if obj.docstring is not None:
                obj.docstring.value = _rewrite(pkg, obj, obj.docstring.value)
