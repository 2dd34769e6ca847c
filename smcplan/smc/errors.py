"""Typed errors raised by the SMC kernels on bad input (outside ``jit``)."""

from __future__ import annotations

from smcplan.errors import SmcplanError


class InvalidWeightsError(SmcplanError, ValueError):
    """Weights (or log-weights) are unusable: NaN, negative, no survivor, or a wrong shape."""
