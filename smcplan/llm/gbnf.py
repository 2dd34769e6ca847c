"""Regular expression → llama.cpp GBNF grammar, so a llama.cpp server enforces our output types.

The local backend constrains generation with the regular expression outlines_core compiles for
an output type (:func:`smcplan.llm.constrained.spec_regex`: choices, regexes and JSON schemas
alike). A llama.cpp server takes a GBNF grammar instead; :func:`regex_to_gbnf` translates the
regex's syntax tree (Python's own parser, ``re._parser``) into one GBNF rule that accepts the
same language, so the roles' guarantees (a parseable JSON object, one of the choices) hold
remotely too:

    literal c      -> "c"        [...] / [^...] -> the same class     .   -> [^\\n]
    e1 e2          -> e1 e2      e1 | e2        -> ( e1 | e2 )        (e) -> ( e )
    e{m,n} / e* / e+ / e?       -> the same repetition operators

Characters are written as ``\\xHH`` / ``\\uHHHH`` / ``\\UHHHHHHHH`` escapes unless they are
alphanumeric, which keeps the grammar free of GBNF's own metacharacters. Anchors (``^``, ``$``,
``\\A``, ``\\Z``) are dropped: the whole output must match anyway. Back-references and
look-arounds have no GBNF form and raise :class:`ValueError`.

Pure Python; imports nothing from smcplan.
"""

from __future__ import annotations

import re._constants as C  # noqa: N812
import re._parser as P  # noqa: N812

__all__ = ["regex_to_gbnf"]

_CATEGORY = {
    C.CATEGORY_DIGIT: ("0-9", False),
    C.CATEGORY_NOT_DIGIT: ("0-9", True),
    C.CATEGORY_SPACE: (r"\x20\x09\x0A\x0D\x0C\x0B", False),
    C.CATEGORY_NOT_SPACE: (r"\x20\x09\x0A\x0D\x0C\x0B", True),
    C.CATEGORY_WORD: (r"a-zA-Z0-9\x5F", False),
    C.CATEGORY_NOT_WORD: (r"a-zA-Z0-9\x5F", True),
}


def _char(code: int) -> str:
    c = chr(code)
    if c.isascii() and c.isalnum():
        return c
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


def _class(items: list, pattern: str) -> str:
    negate = False
    parts = []
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            parts.append(_char(av))
        elif op is C.RANGE:
            parts.append(f"{_char(av[0])}-{_char(av[1])}")
        elif op is C.CATEGORY:
            body, neg = _CATEGORY[av]
            if neg:
                raise ValueError(
                    f"regex {pattern!r}: a negated category (\\D, \\S, \\W) inside [...] has no "
                    "GBNF form; write the class out"
                )
            parts.append(body)
        else:
            raise ValueError(f"regex {pattern!r}: unsupported item {op} in a character class")
    return ("[^" if negate else "[") + "".join(parts) + "]"


def _seq(sub, pattern: str) -> str:
    out: list[str] = []
    literal: list[str] = []

    def flush() -> None:
        if literal:
            out.append('"' + "".join(literal) + '"')
            literal.clear()

    for op, av in sub:
        if op is C.LITERAL:
            literal.append(_char(av))
            continue
        flush()
        if op is C.NOT_LITERAL:
            out.append(f"[^{_char(av)}]")
        elif op is C.ANY:
            out.append("[^\\x0A]")
        elif op is C.IN:
            out.append(_class(av, pattern))
        elif op is C.CATEGORY:
            body, neg = _CATEGORY[av]
            out.append(("[^" if neg else "[") + body + "]")
        elif op is C.BRANCH:
            out.append("( " + " | ".join(_seq(b, pattern) or '""' for b in av[1]) + " )")
        elif op is C.SUBPATTERN:
            out.append("( " + (_seq(av[3], pattern) or '""') + " )")
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, item = av
            inner = "( " + (_seq(item, pattern) or '""') + " )"
            if (lo, hi) == (0, C.MAXREPEAT):
                out.append(inner + "*")
            elif (lo, hi) == (1, C.MAXREPEAT):
                out.append(inner + "+")
            elif (lo, hi) == (0, 1):
                out.append(inner + "?")
            elif hi == C.MAXREPEAT:
                out.append(f"{inner}{{{lo},}}")
            elif lo == hi:
                out.append(f"{inner}{{{lo}}}")
            else:
                out.append(f"{inner}{{{lo},{hi}}}")
        elif op is C.AT:
            continue  # anchors: the whole output is matched anyway
        else:
            raise ValueError(
                f"regex {pattern!r}: {op} (back-reference or look-around) has no GBNF form"
            )
    flush()
    return " ".join(out)


def regex_to_gbnf(pattern: str) -> str:
    """A GBNF grammar (one ``root`` rule) for the language of ``pattern`` (module docstring)."""
    body = _seq(P.parse(pattern), pattern)
    return f"root ::= {body or chr(34) * 2}\n"
