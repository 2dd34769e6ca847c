"""The library's one rule for bad input, and the small checks that apply it.

Rule (docs/architecture.md, "Errors"): a public entry point given invalid input raises a
:class:`SmcplanError` whose message names the argument, the bad value and the fix.  It never
returns NaN and never silently clips.  Where it fits, the error is also a ``ValueError`` (a bad
value) or a ``TypeError`` (a value of the wrong type), so ``except ValueError`` keeps working.

Every typed error of the library (``InvalidWeightsError``, ``POMDPValidationError``,
``PlanningError``, ``EnvError``, ``GenerationError``, ...) derives from :class:`SmcplanError`, so
``except smcplan.errors.SmcplanError`` catches exactly the errors the library raises on purpose.

The checkers (:func:`check_int`, :func:`check_float`, :func:`check_index`) accept Python and
NumPy numbers (and 0-d integer arrays), reject ``bool`` where a number is meant and a float where
an integer is meant, and return the plain Python value.

Imports nothing but the standard library (every layer may use it).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator
from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "SmcplanError",
    "InvalidArgumentError",
    "ArgumentTypeError",
    "UnknownNameError",
    "IndexOutOfRangeError",
    "check_int",
    "check_float",
    "check_index",
    "check_text",
    "Settings",
    "nest_dotted",
]


class SmcplanError(Exception):
    """Base of every error smcplan raises on purpose (bad input, a failed backend, ...)."""


class InvalidArgumentError(SmcplanError, ValueError):
    """An argument has the right type but a value the entry point cannot use."""


class ArgumentTypeError(SmcplanError, TypeError):
    """An argument has the wrong type (e.g. a float or a bool where an integer is meant)."""


class UnknownNameError(SmcplanError, KeyError, ValueError):
    """A name (action, observation, env, scheme, option key, ...) that is not among the known ones.

    Also a ``KeyError`` (lookups by name used to raise one) and a ``ValueError``; ``str()`` is the
    message itself, not ``KeyError``'s quoted repr.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class IndexOutOfRangeError(SmcplanError, IndexError, ValueError):
    """An integer index outside its valid range (also an ``IndexError`` and a ``ValueError``)."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_int(
    value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``value`` as a Python int, or an error naming ``name``, the value and the fix.

    Accepts ``int``, NumPy integers and 0-d integer arrays; rejects ``bool`` and floats (also
    integral ones such as ``2.0``: a float where a count is meant is almost always a bug).
    """
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        hint = f" such as {int(value)}" if isinstance(value, float) and math.isfinite(value) else ""
        raise ArgumentTypeError(
            f"{name} must be an integer; got {_show(value)} ({type(value).__name__}); pass an "
            f"int{hint}"
        )
    try:
        out = operator.index(value)
    except TypeError as exc:  # an array of size > 1 has __index__ but refuses it
        raise ArgumentTypeError(f"{name} must be a single integer; got {_show(value)}") from exc
    if minimum is not None and out < minimum:
        raise InvalidArgumentError(f"{name} must be >= {minimum}; got {out}")
    if maximum is not None and out > maximum:
        raise InvalidArgumentError(f"{name} must be <= {maximum}; got {out}")
    return out


def check_float(
    value: Any,
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    min_inclusive: bool = True,
    max_inclusive: bool = True,
    finite: bool = True,
) -> float:
    """``value`` as a finite Python float within the given bounds, or an error that says so.

    Accepts ints and floats (Python or NumPy); rejects ``bool``, strings, NaN and (with
    ``finite=True``) infinities.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ArgumentTypeError(
            f"{name} must be a real number; got {_show(value)} ({type(value).__name__})"
        )
    out = float(value)
    if math.isnan(out) or (finite and math.isinf(out)):
        raise InvalidArgumentError(f"{name} must be a finite number; got {out}")
    low_ok = minimum is None or (out >= minimum if min_inclusive else out > minimum)
    high_ok = maximum is None or (out <= maximum if max_inclusive else out < maximum)
    if not (low_ok and high_ok):
        lo = "-inf" if minimum is None else f"{minimum:g}"
        hi = "inf" if maximum is None else f"{maximum:g}"
        interval = ("[" if min_inclusive else "(") + f"{lo}, {hi}" + ("]" if max_inclusive else ")")
        raise InvalidArgumentError(f"{name} must lie in {interval}; got {out:g}")
    return out


def check_index(value: Any, name: str, size: int, what: str = "index") -> int:
    """An integer index in ``[0, size)``, or an error naming the valid range."""
    idx = check_int(value, name)
    if not 0 <= idx < size:
        raise IndexOutOfRangeError(f"{name}: {what} {idx} out of range [0, {size})")
    return idx


def check_text(value: Any, name: str) -> str:
    """``value`` if it is a ``str`` that UTF-8 can encode, else an error naming ``name``.

    A lone surrogate (``"\\ud800"``, e.g. from a model's JSON escape) cannot be sent to a
    backend that speaks UTF-8 (the JVMs of TextWorldExpress and ScienceWorld crash on it)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(
            f"{name} must be a str; got {_show(value)} ({type(value).__name__})"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start]
        raise InvalidArgumentError(
            f"{name}: {_show(value)} holds {bad!r} at position {exc.start}, which is not valid "
            "text (a lone surrogate cannot be encoded as UTF-8); remove it or pass the "
            "intended character"
        ) from None
    return value


def keyword_names(factory: Any) -> frozenset[str] | None:
    """The keyword arguments ``factory`` (a class or a function) accepts, following ``**kwargs``
    up a class's MRO to the ``__init__`` that names them; ``None`` when some ``**kwargs`` is
    never resolved (then any key is accepted).  Private names (``_share``) are left out.
    """
    import inspect

    def params(fn: Any) -> tuple[set[str], bool]:
        sig = inspect.signature(fn)
        names = {
            p.name
            for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and p.name != "self"
            and not p.name.startswith("_")
        }
        return names, any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())

    if not isinstance(factory, type):
        names, open_ = params(factory)
        return None if open_ else frozenset(names)
    found: set[str] = set()
    for cls in factory.__mro__:
        if cls is object:
            break
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        names, open_ = params(init)
        found |= names
        if not open_:
            return frozenset(found)
    return None


def check_options(kind: str, given: Any, accepted: Any) -> None:
    """Raise :class:`UnknownNameError` when ``given`` (a mapping) has keys outside ``accepted``.

    ``kind`` names the owner, e.g. ``"agent 'random'"``; ``accepted=None`` accepts everything.
    """
    if accepted is None:
        return
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        raise UnknownNameError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} for "
            f"{kind}; "
            f"valid: {', '.join(sorted(accepted)) or '(none)'}"
        )


class Settings:
    """Base of the library's frozen settings dataclasses (``PlannerConfig``, ``Retrieval``,
    ``ReflectionConfig``, ...): each checks its values once, in ``__post_init__``; this base adds
    :meth:`field_names`, :meth:`from_options` and :meth:`coerce` (an unknown key names the known
    fields) and :meth:`replace` (a changed copy, checked again).

    A subclass sets ``owner`` (what its options are called in errors, e.g. ``"planner option"``)
    and ``error`` (the :class:`SmcplanError` subclass it raises, which must accept one message).
    """

    owner: ClassVar[str] = "option"
    error: ClassVar[type[Exception]] = UnknownNameError

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The settings' names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    @classmethod
    def check_keys(cls, options: Mapping[str, Any]) -> None:
        """Raise ``cls.error`` when ``options`` has a key that is not a field."""
        unknown = sorted(set(options) - set(cls.field_names()))
        if unknown:
            raise cls.error(
                f"unknown {cls.owner}(s) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(cls.field_names())}"
            )

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None, /, **more: Any) -> Any:
        """Build (and so check) from a mapping and/or keywords; an unknown key lists the known
        ones."""
        given = {**dict(options or {}), **more}
        cls.check_keys(given)
        return cls(**given)

    @classmethod
    def coerce(cls, value: Any, name: str) -> Any:
        """``value`` as this class: ``None`` -> the defaults, an instance as it is, a mapping ->
        :meth:`from_options`; anything else is ``cls.error`` naming ``name``."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls.from_options(value)
        raise cls.error(
            f"{name} must be a {cls.__module__}.{cls.__name__} or a mapping of its fields "
            f"({', '.join(cls.field_names())}); got {type(value).__name__}"
        )

    def replace(self, **changes: Any) -> Any:
        """A copy with ``changes`` (checked again); an unknown key lists the known ones."""
        self.check_keys(changes)
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]


def nest_dotted(options: Mapping[str, Any]) -> dict[str, Any]:
    """``{"planner.num_particles": 16, "seed": 1}`` -> ``{"planner": {"num_particles": 16},
    "seed": 1}``: a dotted key (``--agent-arg planner.num_particles=16``) becomes an entry of the
    mapping under its first part; entries given both ways are merged.  A dotted key under a name
    whose value is not a mapping (``planner=3`` and ``planner.horizon=2``) raises
    :class:`UnknownNameError` naming both."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        head, dot, rest = str(key).partition(".")
        if not dot:
            if isinstance(out.get(key), dict) and isinstance(value, Mapping):
                out[key] = {**dict(value), **out[key]}
            elif key in out:
                raise UnknownNameError(f"option {key!r} is given twice (as {key} and {key}.*)")
            else:
                out[key] = dict(value) if isinstance(value, Mapping) else value
            continue
        if not head or not rest:
            raise UnknownNameError(f"option {key!r}: expected GROUP.FIELD (e.g. planner.horizon)")
        group = out.setdefault(head, {})
        if not isinstance(group, dict):
            raise UnknownNameError(
                f"option {key!r} sets a field of {head!r}, but {head}={group!r} is not a group "
                "of settings; drop one of them"
            )
        group.update(nest_dotted({rest: value}))
    return out
