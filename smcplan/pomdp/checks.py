r"""Input checks shared by the POMDP entry points: beliefs, and sequences of actions/observations.

A belief is a probability vector over the S states:

.. math::
    b \in \mathbb R^S, \qquad b(s) \ge 0 \ \forall s, \qquad \Bigl|\sum_s b(s) - 1\Bigr| \le
    \texttt{BELIEF\_ATOL} = 10^{-4}.

The tolerance covers the float32 rounding of a belief that smcplan itself computed (the sum of
:math:`10^5` float32 terms is off by about :math:`10^{-5}`); anything further off is a caller's
bug and is reported with the sum and the negative entries, never renormalised or clipped.

Imports numpy and :mod:`smcplan.errors` only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from smcplan.errors import ArgumentTypeError, InvalidArgumentError

__all__ = ["BELIEF_ATOL", "InvalidBeliefError", "check_belief", "check_sequence"]

#: Largest allowed :math:`|\sum_s b(s) - 1|` of a belief given to a POMDP entry point.
BELIEF_ATOL = 1e-4


class InvalidBeliefError(InvalidArgumentError):
    """A belief that is not a probability vector (wrong shape, NaN, negative, or sum not 1)."""


def check_belief(
    belief: Any, num_states: int, name: str = "belief", model: str = "pomdp"
) -> np.ndarray:
    """``belief`` as a float64 array of shape (S,), or :class:`InvalidBeliefError` naming the fix.

    The message names the sum and the first negative entries (index and value).
    """
    try:
        b = np.asarray(belief)
    except (ValueError, TypeError) as exc:
        raise ArgumentTypeError(
            f"{name} must be an array of {num_states} probabilities; got {type(belief).__name__} "
            f"({exc})"
        ) from None
    if b.dtype == object or b.dtype.kind not in "iuf":
        raise ArgumentTypeError(
            f"{name} must be an array of {num_states} probabilities; got dtype {b.dtype} for "
            f"{model}"
        )
    b = b.astype(np.float64)
    if b.shape != (num_states,):
        raise InvalidBeliefError(
            f"{name} must have shape (S,) = ({num_states},) for {model}; got {b.shape}"
        )
    if not np.isfinite(b).all():
        bad = np.flatnonzero(~np.isfinite(b))[:5]
        raise InvalidBeliefError(
            f"{name} has non-finite entries at states {bad.tolist()} ({b[bad].tolist()}); a "
            "belief must be a probability vector"
        )
    total = float(b.sum())
    neg = np.flatnonzero(b < 0)
    if neg.size or abs(total - 1.0) > BELIEF_ATOL:
        parts = [f"sums to {total:.9g}"]
        if neg.size:
            shown = ", ".join(f"[{i}] = {b[i]:.6g}" for i in neg[:5])
            parts.append(f"has {neg.size} negative entries ({shown})")
        raise InvalidBeliefError(
            f"{name} must be a probability vector for {model}: it {' and '.join(parts)}; entries "
            "must be >= 0 and "
            f"sum to 1 within {BELIEF_ATOL:g} (divide by the sum to normalise)"
        )
    return b


def check_sequence(values: Any, name: str) -> Any:
    """``values`` unless it is a string, a number or ``None`` where a sequence is meant."""
    try:
        ndim = np.ndim(values)
    except (ValueError, TypeError):  # ragged nesting
        ndim = 2
    if values is None or isinstance(values, str | bytes | int | float) or ndim == 0:
        raise ArgumentTypeError(
            f"{name} must be a sequence (list or 1-D array) of names or indices; got {values!r}; "
            "wrap a single one in a list"
        )
    if ndim > 1:
        try:
            shape = f"shape {np.shape(values)}"
        except (ValueError, TypeError):  # ragged: numpy cannot give a shape
            shape = f"nested items {values!r:.80}"
        raise InvalidArgumentError(
            f"{name} must be 1-D (a flat list of names or indices); got {shape}"
        )
    return values
