"""Input checks for weight vectors, eager and inside ``jit``.

Outside ``jit`` (concrete arrays) the kernels call :func:`check_weights` /
:func:`check_log_weights`,
which raise :class:`~smcplan.smc.errors.InvalidWeightsError` naming the problem.  Inside ``jit``
values are abstract, so nothing can be raised at trace time; the documented checked path is
:func:`checked`, which wraps a kernel with ``jax.experimental.checkify`` so that the same
conditions become run-time errors::

    safe_systematic = checked(systematic, static_argnums=2)
    err, idx = safe_systematic(key, weights, 100)
    err.throw()          # raises JaxRuntimeError("weights contain NaN") etc.

Pure JAX; imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

from smcplan.smc.errors import InvalidWeightsError


def is_concrete(x: Any) -> bool:
    """True when ``x`` holds values (not a tracer inside ``jit``/``vmap``/``grad``)."""
    return not isinstance(x, jax.core.Tracer)


def _check_shape(x: Any, what: str) -> None:
    if np.ndim(x) != 1:
        raise InvalidWeightsError(f"{what} must have shape (N,); got shape {np.shape(x)}")
    if np.shape(x)[0] < 1:
        raise InvalidWeightsError(
            f"{what} must hold at least one particle; got shape {np.shape(x)}"
        )


_HOST_CHECK_MAX = 1 << 15  # below this size a host copy is cheaper than a device reduction


@jax.jit
def _weight_flags(w: jax.Array) -> jax.Array:
    """One fused pass: [has NaN, has inf, has negative, sum > 0]."""
    return jnp.stack([jnp.any(jnp.isnan(w)), jnp.any(jnp.isinf(w)), jnp.any(w < 0), jnp.sum(w) > 0])


@jax.jit
def _log_weight_flags(lw: jax.Array) -> jax.Array:
    """One fused pass: [has NaN, has +inf, all -inf]."""
    return jnp.stack([jnp.any(jnp.isnan(lw)), jnp.any(jnp.isposinf(lw)), jnp.all(jnp.isneginf(lw))])


def check_weights(weights: Any) -> None:
    """Raise :class:`InvalidWeightsError` unless ``weights`` is a usable (N,) probability vector.

    Unusable: NaN or ±inf entries, negative entries, all entries zero.  Weights need not sum to
    one exactly (kernels renormalise), but must have a positive finite sum.  No-op on tracers.
    """
    _check_shape(weights, "weights")
    if not is_concrete(weights):
        return
    if np.size(weights) > _HOST_CHECK_MAX:
        # Large N: one fused device pass and a 4-flag transfer; details only on the error path.
        has_nan, has_inf, has_neg, positive = (bool(f) for f in _weight_flags(jnp.asarray(weights)))
        if positive and not (has_nan or has_inf or has_neg):
            return
    w = np.asarray(weights, dtype=np.float64)
    if np.isnan(w).any():
        raise InvalidWeightsError(
            f"weights contain NaN at indices {np.flatnonzero(np.isnan(w))[:5].tolist()}"
        )
    if np.isinf(w).any():
        raise InvalidWeightsError(
            f"weights contain inf at indices {np.flatnonzero(np.isinf(w))[:5].tolist()}"
        )
    if (w < 0).any():
        bad = np.flatnonzero(w < 0)[:5]
        raise InvalidWeightsError(
            f"weights must be >= 0; negative at indices {bad.tolist()} (values {w[bad].tolist()})"
        )
    if not w.sum() > 0:
        raise InvalidWeightsError("all weights are zero: no particle survives")


def check_log_weights(log_weights: Any) -> None:
    """Raise :class:`InvalidWeightsError` unless ``log_weights`` is a usable (N,) vector.

    ``-inf`` marks a dead particle and is allowed; NaN, ``+inf`` and all-``-inf`` are not.
    No-op on tracers.
    """
    _check_shape(log_weights, "log-weights")
    if not is_concrete(log_weights):
        return
    if np.size(log_weights) > _HOST_CHECK_MAX and not any(
        bool(f) for f in _log_weight_flags(jnp.asarray(log_weights))
    ):
        return
    lw = np.asarray(log_weights, dtype=np.float64)
    if np.isnan(lw).any():
        raise InvalidWeightsError(
            f"log-weights contain NaN at indices {np.flatnonzero(np.isnan(lw))[:5].tolist()}"
        )
    if np.isposinf(lw).any():
        raise InvalidWeightsError(
            f"log-weights contain +inf at indices {np.flatnonzero(np.isposinf(lw))[:5].tolist()}"
        )
    if np.isneginf(lw).all():
        raise InvalidWeightsError("all log-weights are -inf: no particle survives")


def checkify_weights(weights: jax.Array) -> None:
    """Traced counterpart of :func:`check_weights` (valid only under ``checkify.checkify``)."""
    checkify.check(~jnp.any(jnp.isnan(weights)), "weights contain NaN")
    checkify.check(~jnp.any(jnp.isinf(weights)), "weights contain inf")
    checkify.check(jnp.all(weights >= 0), "weights must be >= 0")
    checkify.check(jnp.sum(weights) > 0, "all weights are zero: no particle survives")


def checkify_log_weights(log_weights: jax.Array) -> None:
    """Traced counterpart of :func:`check_log_weights` (valid only under ``checkify.checkify``)."""
    checkify.check(~jnp.any(jnp.isnan(log_weights)), "log-weights contain NaN")
    checkify.check(~jnp.any(jnp.isposinf(log_weights)), "log-weights contain +inf")
    checkify.check(
        jnp.any(log_weights > -jnp.inf), "all log-weights are -inf: no particle survives"
    )


def checked(
    kernel: Callable[..., Any],
    *,
    log_domain: bool = False,
    static_argnums: int | tuple[int, ...] = (),
) -> Callable[..., Any]:
    """Jit ``kernel(key, weights, *rest)`` with run-time weight checks; returns ``(err, out)``.

    ``log_domain=True`` checks the second argument as log-weights.  Call ``err.throw()`` to raise.
    """
    check = checkify_log_weights if log_domain else checkify_weights

    def wrapped(*args: Any) -> Any:
        check(args[1])
        return kernel(*args)

    return jax.jit(
        checkify.checkify(wrapped, errors=checkify.user_checks), static_argnums=static_argnums
    )
