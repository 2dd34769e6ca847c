"""Memoisation of three pure, repeated computations inside TextWorld's PDDL engine.

TextWorld 1.7's ``PddlEnv`` re-parses, with TatSu, the same grammar strings and conjunctive
queries for every admissible command at every step, and re-translates the PDDL problem with
fast-downward on every ``reset()``. All three are pure functions of their string arguments:

* ``textworld.envs.pddl.textgen._parse_and_convert(text, rule_name)`` -> symbol list
  (callers set ``symbol.context`` on the result, so each call gets a deep copy);
* ``textworld.logic.Rule.parse_conjunctive_query(expr)`` -> ``Rule`` (only read afterwards);
* ``fast_downward.pddl2sas(domain, problem, optimize=...)`` -> ``(task, sas)`` (``PddlState``
  only reads ``task``'s actions, types, objects and initial facts).

:func:`install` wraps them with bounded memo tables, process-wide (the wrappers return what
the originals would: tests replay walkthroughs with and without them and compare every
observation and admissible-action list). Measured on a 2-core machine: a step of a
30-receptacle kitchen from ~0.30 s to ~0.06-0.09 s, a repeated ``reset()`` from ~1-4 s to
~0.2 s. :func:`uninstall` restores the originals.

Must not import anything from ``smcplan`` above ``smcplan.envs``.
"""

from __future__ import annotations

import copy
import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

_LOCK = threading.Lock()
_ORIGINALS: dict[str, Any] = {}
# Engines call ensure(); uninstall() (or SMCPLAN_ALFWORLD_SPEEDUPS=0) keeps them off.
_WANTED = os.environ.get("SMCPLAN_ALFWORLD_SPEEDUPS", "1") != "0"


class _Memo:
    """A bounded LRU table ``key -> value``."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self.table: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any, compute: Callable[[], Any]) -> Any:
        if key in self.table:
            self.table.move_to_end(key)
            return self.table[key]
        value = compute()
        self.table[key] = value
        if len(self.table) > self.maxsize:
            self.table.popitem(last=False)
        return value


def installed() -> bool:
    """Whether the memoised versions are in place."""
    return bool(_ORIGINALS)


def ensure() -> None:
    """Install the memoised functions unless :func:`uninstall` (or the environment variable
    ``SMCPLAN_ALFWORLD_SPEEDUPS=0``) turned them off; called whenever an engine is built."""
    if _WANTED:
        install()


def install() -> None:
    """Install the memoised engine functions (idempotent)."""
    global _WANTED
    _WANTED = True
    import fast_downward
    import textworld.envs.pddl.textgen as textgen
    import textworld.logic as twlogic

    with _LOCK:
        if _ORIGINALS:
            return
        parse_symbols = textgen._parse_and_convert
        parse_query = twlogic.Rule.__dict__["parse_conjunctive_query"].__func__
        pddl2sas = fast_downward.pddl2sas
        symbols_memo, query_memo, sas_memo = _Memo(8192), _Memo(8192), _Memo(16)

        @functools.wraps(parse_symbols)
        def memo_symbols(text: str, rule_name: str = "symbols", **kwargs: Any) -> Any:
            if kwargs.get("trace"):
                return parse_symbols(text, rule_name=rule_name, **kwargs)
            parsed = symbols_memo.get(
                (text, rule_name), lambda: parse_symbols(text, rule_name=rule_name, **kwargs)
            )
            return copy.deepcopy(parsed)

        def memo_query(cls: type, expr: str) -> Any:
            return query_memo.get((cls, expr), lambda: parse_query(cls, expr))

        @functools.wraps(pddl2sas)
        def memo_pddl2sas(
            domain: str, problem: str, verbose: bool = False, optimize: bool = False
        ) -> Any:
            if verbose:
                return pddl2sas(domain, problem, verbose=verbose, optimize=optimize)
            return sas_memo.get(
                (domain, problem, optimize),
                lambda: pddl2sas(domain, problem, verbose=False, optimize=optimize),
            )

        _ORIGINALS.update(symbols=parse_symbols, query=parse_query, sas=pddl2sas)
        textgen._parse_and_convert = memo_symbols
        twlogic.Rule.parse_conjunctive_query = classmethod(memo_query)
        fast_downward.pddl2sas = memo_pddl2sas


def uninstall() -> None:
    """Restore TextWorld's and fast-downward's own functions, and keep them (idempotent)."""
    global _WANTED
    _WANTED = False
    import fast_downward
    import textworld.envs.pddl.textgen as textgen
    import textworld.logic as twlogic

    with _LOCK:
        if not _ORIGINALS:
            return
        textgen._parse_and_convert = _ORIGINALS["symbols"]
        twlogic.Rule.parse_conjunctive_query = classmethod(_ORIGINALS["query"])
        fast_downward.pddl2sas = _ORIGINALS["sas"]
        _ORIGINALS.clear()
