"""Strict values from text: the command lines' integers, booleans, seed lists and ``KEY=VALUE``
options, each refused with a typed error naming the argument, the value and the fix.

* :func:`parse_bool` accepts ``True``/``False``, ``1``/``0`` and exactly the words of
  :data:`BOOL_WORDS` (``true false 1 0 yes no``); ``bool("no")`` is ``True``, so a loose
  ``bool()`` of an option is never used.
* :func:`parse_int` accepts an ``int`` or ASCII digits with an optional sign (no ``1.5``, no
  ``1e3``, no ``1_000``, no other scripts' digits), at most :data:`MAX_DIGITS` of them.
* :class:`SeedRanges` keeps a ``--seeds`` list as ranges; :meth:`SeedRanges.take` and
  :func:`seed_list` count the seeds *before* expanding them and refuse more than
  :data:`MAX_SEEDS`, and refuse a seed above :data:`MAX_SEED` (the largest seed every
  environment accepts: the JVM backends take a Java ``int``).
* :func:`typed_options` checks a trainer's ``--opt`` mapping against its schema of converters
  (:func:`boolean`, :func:`integer`, :func:`real`, :func:`choice`, :func:`int_list`, ...).
* :func:`argtype` turns one of these into an ``argparse`` ``type=`` (a usage error, exit 2).

Standard library only; every layer may import it.
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from smcplan.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    UnknownNameError,
    check_float,
    check_int,
)

__all__ = [
    "BOOL_WORDS",
    "MAX_SEED",
    "MAX_SEEDS",
    "MAX_INT",
    "SeedRanges",
    "argtype",
    "boolean",
    "check_out_path",
    "coerce_keywords",
    "choice",
    "int_list",
    "int_text",
    "integer",
    "parse_bool",
    "parse_float",
    "parse_int",
    "parse_seed_ranges",
    "real",
    "real_or_list",
    "seed_list",
    "text",
    "text_list",
    "typed_options",
]

#: the words a boolean option accepts (and nothing else)
BOOL_WORDS: dict[str, bool] = {
    "true": True, "false": False, "1": True, "0": False, "yes": True, "no": False,
}  # fmt: skip
#: the largest seed every environment accepts (TextWorldExpress and ScienceWorld take a Java int)
MAX_SEED = 2**31 - 1
#: the most seeds one seed list may expand to (``0-9999999`` without ``--episodes`` is refused)
MAX_SEEDS = 1_000_000
#: the largest value of a command-line count (step limits, sizes: a 32-bit int everywhere)
MAX_INT = 2**31 - 1
#: the most digits an integer written as text may have
MAX_DIGITS = 30

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
_RANGE = re.compile(r"([0-9]+)\s*-\s*([0-9]+)")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_bool(value: Any, name: str) -> bool:
    """``value`` as a bool: ``True``/``False``, the ints 1/0 or one of :data:`BOOL_WORDS`."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value in BOOL_WORDS:
        return BOOL_WORDS[value]
    error = InvalidArgumentError if isinstance(value, str | int) else ArgumentTypeError
    raise error(
        f"{name} must be a boolean; got {_show(value)}; use one of {', '.join(BOOL_WORDS)}"
    )


def parse_int(
    value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``value`` as an int within the bounds: an ``int`` (not a bool) or ASCII digits with an
    optional sign."""
    if isinstance(value, str):
        text = value.strip()
        if not _INT.fullmatch(text):
            raise InvalidArgumentError(
                f"{name} must be an integer; got {_show(value)}; write digits only, e.g. "
                f"{max(minimum or 0, 1)}"
            )
        if len(text.lstrip("+-")) > MAX_DIGITS:
            raise InvalidArgumentError(
                f"{name}: {text[:20]}... has more than {MAX_DIGITS} digits"
                + (f"; the largest allowed is {maximum}" if maximum is not None else "")
            )
        value = int(text)
    return check_int(value, name, minimum=minimum, maximum=maximum)


def parse_float(
    value: Any, name: str, *, minimum: float | None = None, maximum: float | None = None,
    min_inclusive: bool = True,
) -> float:  # fmt: skip
    """``value`` as a finite float within the bounds: a number (not a bool) or a decimal
    (``0.5``, ``1e-4``; no ``nan``, ``inf``)."""
    if isinstance(value, str):
        text = value.strip()
        if not _FLOAT.fullmatch(text) or len(text) > 40:
            raise InvalidArgumentError(
                f"{name} must be a finite number; got {_show(value)}; write e.g. 0.5 or 1e-4"
            )
        value = float(text)
    return check_float(value, name, minimum=minimum, maximum=maximum, min_inclusive=min_inclusive)


# -- seed lists ----------------------------------------------------------------------------------
class SeedRanges:
    """A seed list kept as ranges: ``0-9999999`` costs nothing until it is expanded, and
    :meth:`take` counts before it expands (``--episodes`` caps a long list first)."""

    def __init__(
        self, ranges: Sequence[range], text: str = "", flag: str = "--seeds", hint: str = ""
    ) -> None:
        self.ranges = tuple(ranges)
        self.text = text
        self.flag = flag
        self.hint = hint or "give fewer seeds, or cap them with --episodes N"

    def __iter__(self) -> Iterator[int]:
        for r in self.ranges:
            yield from r

    @property
    def size(self) -> int:
        """How many seeds (any size: ``len()`` stops at ``sys.maxsize``)."""
        return sum(_size(r) for r in self.ranges)

    def __len__(self) -> int:
        return min(self.size, sys.maxsize)

    def take(self, n: int | None = None, limit: int = MAX_SEEDS, hint: str = "") -> list[int]:
        """The first ``n`` seeds (all when ``None``); more than ``limit`` seeds, or a seed taken
        above :data:`MAX_SEED`, raises :class:`InvalidArgumentError` before anything is
        expanded; ``hint``: the fix the error suggests."""
        return seed_list(
            self, f"{self.flag} {_show(self.text)[1:-1]}", cap=n, limit=limit,
            hint=hint or self.hint,
        )  # fmt: skip

    def __repr__(self) -> str:
        return f"SeedRanges({self.text!r})"


def parse_seed_ranges(text: str, flag: str = "--seeds", hint: str = "") -> SeedRanges:
    """``"0,3,5-7"`` -> :class:`SeedRanges` (inclusive ranges, not expanded)."""
    example = "use non-negative integers and inclusive ranges, e.g. 0,3,5-7"
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"bad seed list {text!r}: empty; {example}")
    ranges: list[range] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise InvalidArgumentError(
                f"bad seed list {text!r}: an empty item between commas; {example}"
            )
        match = _RANGE.fullmatch(part)
        bounds = (match[1], match[2]) if match else (part, part)
        if not all(b.isascii() and b.isdigit() for b in bounds):
            raise InvalidArgumentError(f"bad seed list {_show(text)}: {part!r}; {example}")
        if max(len(b) for b in bounds) > MAX_DIGITS:
            raise InvalidArgumentError(
                f"bad seed list {_show(text)}: a seed with more than {MAX_DIGITS} digits; seeds "
                f"go up to {MAX_SEED}"
            )
        low, high = int(bounds[0]), int(bounds[1])
        if high < low:
            raise InvalidArgumentError(
                f"bad seed list {_show(text)}: the range {part!r} runs backwards; write "
                f"{high}-{low}"
            )
        ranges.append(range(low, high + 1))
    return SeedRanges(ranges, text, flag, hint)


def _size(seeds: Any) -> int | None:
    """How many items ``seeds`` holds, computed without expanding it; ``None``: unsized."""
    if isinstance(seeds, range):
        return max(0, -((seeds.start - seeds.stop) // seeds.step))  # len() overflows past 2**63
    if isinstance(seeds, SeedRanges):
        return seeds.size
    try:
        return len(seeds)
    except (TypeError, OverflowError):
        return None


def seed_list(
    seeds: Iterable[Any], name: str = "seeds", *, cap: int | None = None,
    limit: int = MAX_SEEDS, hint: str = "give fewer seeds",
) -> list[int]:  # fmt: skip
    """The first ``cap`` of ``seeds`` (all when ``None``) as checked ints in ``[0, MAX_SEED]``.

    The size is checked before anything is expanded: a sized ``seeds`` (a ``range``,
    :class:`SeedRanges`, a list) longer than ``limit`` without a ``cap`` is refused at once, an
    unsized one after ``limit + 1`` items; ``hint`` is the fix the error names."""
    if cap is not None:
        cap = check_int(cap, f"{name}: the number of seeds to take", minimum=1)
    want = limit if cap is None else min(cap, limit)
    size = _size(seeds)
    if cap is None and size is not None and size > limit:
        raise InvalidArgumentError(
            f"{name}: {size:,} seeds, more than the limit of {limit:,} a run; {hint}"
        )
    out = list(itertools.islice(iter(seeds), want + (1 if cap is None else 0)))
    if cap is None and len(out) > limit:
        raise InvalidArgumentError(
            f"{name}: more than the limit of {limit:,} seeds a run; {hint}"
        )
    return [check_int(s, f"{name}: seed", minimum=0, maximum=MAX_SEED) for s in out]


# -- argparse --------------------------------------------------------------------------------
def int_text(text: str) -> int | None:
    """``text`` as an int if it is ASCII digits with an optional sign (at most
    :data:`MAX_DIGITS`), else ``None`` (``int()`` also takes ``" 1_0"`` and other scripts'
    digits)."""
    text = text.strip()
    if not _INT.fullmatch(text) or len(text.lstrip("+-")) > MAX_DIGITS:
        return None
    return int(text)


def check_out_path(path: Any, flag: str, kind: str = "dir") -> Any:
    """Refuse an output path that cannot be written: for ``kind="dir"`` an existing file, for
    ``kind="file"`` an existing folder, and for both a path under a file.  Returns ``path``."""
    p = Path(path)
    if kind == "dir" and p.exists() and not p.is_dir():
        raise InvalidArgumentError(
            f"{flag} {str(path)!r} is an existing file; give a directory (new, or one to resume)"
        )
    if kind == "file" and p.is_dir():
        raise InvalidArgumentError(
            f"{flag} {str(path)!r} is an existing directory; give a file path, e.g. "
            f"{p / 'out.json'}"
        )
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise InvalidArgumentError(
                    f"{flag} {str(path)!r}: {str(parent)!r} is a file, not a directory; give a "
                    "path under a directory"
                )
            break
    return path


def argtype(parse: Callable[[str], Any], metavar: str = "") -> Callable[[str], Any]:
    """An ``argparse`` ``type=`` from ``parse``: its :class:`~smcplan.errors.SmcplanError` becomes
    a usage error (one line, exit 2) with the same message."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except (InvalidArgumentError, ArgumentTypeError, UnknownNameError) as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = metavar or getattr(parse, "__name__", "value")
    return convert


# -- typed option mappings (a trainer's --opt KEY=VALUE) ------------------------------------------
Converter = Callable[[Any, str], Any]


def boolean(value: Any, name: str) -> bool:
    """Converter: :func:`parse_bool`."""
    return parse_bool(value, name)


def integer(minimum: int | None = None, maximum: int | None = MAX_INT) -> Converter:
    """Converter: an int in ``[minimum, maximum]`` (:func:`parse_int`)."""
    return lambda value, name: parse_int(value, name, minimum=minimum, maximum=maximum)


def real(
    minimum: float | None = None, maximum: float | None = None, min_inclusive: bool = True
) -> Converter:
    """Converter: a finite float in the bounds (:func:`parse_float`)."""
    return lambda value, name: parse_float(
        value, name, minimum=minimum, maximum=maximum, min_inclusive=min_inclusive
    )


def choice(*words: str) -> Converter:
    """Converter: one of ``words``."""

    def convert(value: Any, name: str) -> str:
        if not isinstance(value, str) or value not in words:
            raise InvalidArgumentError(
                f"{name} must be one of {', '.join(words)}; got {_show(value)}"
            )
        return value

    return convert


def text(value: Any, name: str) -> str:
    """Converter: a non-empty string (a path, a name)."""
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty string; got {_show(value)}")
    return value


def text_list(value: Any, name: str) -> list[str]:
    """Converter: one non-empty string or a non-empty JSON list of them (``["a.jsonl","b"]``)."""
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, str) and v for v in items):
        raise InvalidArgumentError(
            f"{name} must be a non-empty string or a JSON list of them; got {_show(value)}"
        )
    return list(items)


def int_list(minimum: int | None = None, maximum: int | None = MAX_INT) -> Converter:
    """Converter: a JSON list of ints (``[0,1]``) or one int, each in ``[minimum, maximum]``."""

    def convert(value: Any, name: str) -> list[int]:
        items = value if isinstance(value, list) else [value]
        if not items:
            raise InvalidArgumentError(f"{name} must not be empty; write e.g. [0,1]")
        return [
            parse_int(v, f"{name} (e.g. [0,1])", minimum=minimum, maximum=maximum) for v in items
        ]

    return convert


def real_or_list(minimum: float | None = None, min_inclusive: bool = True) -> Converter:
    """Converter: one finite number, or a non-empty JSON list of them (``[0.01,0.1]``)."""

    def convert(value: Any, name: str) -> float | list[float]:
        one = real(minimum, None, min_inclusive)
        if isinstance(value, list):
            if not value:
                raise InvalidArgumentError(f"{name} must not be empty; write e.g. [0.01,0.1]")
            return [one(v, f"{name} (e.g. [0.01,0.1])") for v in value]
        return one(value, name)

    return convert


#: constructor annotations (as written, ``from __future__ import annotations``) -> converter
_ANNOTATED: dict[str, tuple[Converter, bool]] = {
    "bool": (boolean, False),
    "bool | None": (boolean, True),
    "int": (integer(None, None), False),
    "int | None": (integer(None, None), True),
}


def annotated_types(factory: Any) -> dict[str, tuple[Converter, bool]]:
    """``{keyword: (converter, optional)}`` for the keywords of ``factory`` (a class, following
    ``**kwargs`` up its MRO, or a function) annotated ``bool`` or ``int`` (``| None``)."""
    import inspect

    functions = (
        [c.__dict__["__init__"] for c in factory.__mro__ if "__init__" in c.__dict__]
        if isinstance(factory, type)
        else [factory]
    )
    found: dict[str, tuple[Converter, bool]] = {}
    for fn in functions:
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            break
        for p in params:
            note = p.annotation if isinstance(p.annotation, str) else getattr(
                p.annotation, "__name__", None
            )
            if p.name not in found and note in _ANNOTATED:
                found[p.name] = _ANNOTATED[note]
        if not any(p.kind is p.VAR_KEYWORD for p in params):
            break
    return found


def coerce_keywords(owner: str, factory: Any, given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` with each value for a keyword of ``factory`` annotated ``bool`` / ``int``
    converted strictly (:func:`parse_bool`: ``"no"`` is ``False``, ``"nah"`` an error naming the
    words; :func:`parse_int`: no ``1.5``); other keys as they are."""
    types = annotated_types(factory)
    out = dict(given)
    for key, value in given.items():
        if key in types and not (value is None and types[key][1]):
            out[key] = types[key][0](value, f"{owner}: {key}")
    return out


def typed_options(
    owner: str, given: Mapping[str, Any], schema: Mapping[str, Converter], flag: str = "--opt"
) -> dict[str, Any]:
    """``given`` checked against ``schema`` (key -> converter): an unknown key lists the known
    ones, a bad value names ``flag KEY=VALUE``, the value and the fix; ``None`` (JSON ``null``)
    keeps the default and is left out."""
    unknown = sorted(set(given) - set(schema))
    if unknown:
        raise UnknownNameError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} for "
            f"{owner}; valid: {', '.join(sorted(schema)) or '(none)'}"
        )
    out: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidArgumentError(f"{owner}: {flag} {key}={value}: must be finite")
        out[key] = schema[key](value, f"{owner}: {flag} {key}")
    return out
