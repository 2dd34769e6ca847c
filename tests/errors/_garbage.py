"""Garbage inputs and the one property every public entry point must have on them.

Property (docs/architecture.md, "Errors"): on any input an entry point either returns a valid
result (no NaN anywhere in it) or raises a :class:`smcplan.errors.SmcplanError` with a message;
never another exception type.  :func:`call` applies it; each test then checks the result.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from smcplan.errors import SmcplanError

NAN, INF = float("nan"), float("inf")

#: Scalars a caller might pass by mistake: NaN, inf, negatives, floats where ints are meant,
#: bools, strings, None, containers, huge numbers.
BAD_SCALARS = [
    NAN,
    INF,
    -INF,
    -1,
    -1.5,
    0,
    0.0,
    2.5,
    1.0,
    True,
    False,
    None,
    "3",
    "",
    b"1",
    [],
    [1],
    {},
    (),
    10**12,
    -(10**12),
    2**64,
    1e308,
    -1e308,
    1e-320,
    object(),
]

bad_scalar = st.one_of(
    st.sampled_from(BAD_SCALARS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70),
    st.text(max_size=4),
)


def count_arg(valid_max: int = 4) -> st.SearchStrategy[Any]:
    """A count argument: a small valid int, or garbage (never a huge *valid* count, which would
    only test the machine's memory)."""
    return st.one_of(
        st.integers(1, valid_max),
        bad_scalar.filter(
            lambda x: not (isinstance(x, int) and not isinstance(x, bool) and 0 < x < 10**6)
        ),
    )


float_entry = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e-45, 1e-320, 3e38, 1e308, NAN, INF, -INF]),
)


def vectors(min_size: int = 0, max_size: int = 6) -> st.SearchStrategy[Any]:
    """Vector-like garbage: float lists with NaN/inf/huge/negatives, wrong shapes and dtypes."""
    flist = st.lists(float_entry, min_size=min_size, max_size=max_size)
    return st.one_of(
        flist,
        flist.map(lambda v: np.asarray(v, dtype=np.float64)),
        flist.map(lambda v: np.asarray(v, dtype=np.float32)),
        st.lists(st.integers(-3, 3), min_size=min_size, max_size=max_size),
        st.lists(
            st.lists(float_entry, min_size=1, max_size=3), min_size=1, max_size=3
        ),  # ragged / 2-D
        st.lists(st.text(max_size=3), min_size=1, max_size=3),
        st.lists(st.booleans(), min_size=1, max_size=3),
        st.sampled_from(
            [
                None,
                1.0,
                "abc",
                [],
                np.zeros((2, 2)),
                np.zeros(0),
                np.array([1 + 2j, 3]),
                np.array(["a", "b"]),
                {"a": 1},
                [[1.0], [2.0, 3.0]],
            ]
        ),
    )


def call(fn: Any, *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """``(True, result)``, or ``(False, error)`` for a :class:`SmcplanError` with a message.

    Any other exception propagates, which fails the test.
    """
    try:
        return True, fn(*args, **kwargs)
    except SmcplanError as exc:
        message = str(exc)
        assert len(message) >= 10, f"{type(exc).__name__} without a useful message: {message!r}"
        return False, exc


def assert_no_nan(value: Any) -> None:
    """No NaN anywhere in ``value`` (arrays, numbers, nested tuples/lists/dicts)."""
    if isinstance(value, dict):
        for v in value.values():
            assert_no_nan(v)
    elif isinstance(value, list | tuple):
        for v in value:
            assert_no_nan(v)
    elif isinstance(value, float):
        assert not math.isnan(value)
    elif hasattr(value, "dtype") and hasattr(value, "shape"):
        arr = np.asarray(value)
        if arr.dtype.kind in "fc":
            assert not np.isnan(arr).any(), f"NaN in result {arr}"
