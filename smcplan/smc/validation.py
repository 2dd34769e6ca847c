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

from smcplan.errors import ArgumentTypeError
from smcplan.smc.errors import InvalidWeightsError


def is_concrete(x: Any) -> bool:
    """True when ``x`` holds values (not a tracer inside ``jit``/``vmap``/``grad``)."""
    return not isinstance(x, jax.core.Tracer)


def _check_shape(x: Any, what: str) -> None:
    if np.ndim(x) != 1:
        raise InvalidWeightsError(
            f"{what} must have shape (N,); got shape {np.shape(x)}; pass a 1-D array with one "
            "entry per particle"
        )
    if np.shape(x)[0] < 1:
        raise InvalidWeightsError(
            f"{what} must hold at least one particle; got shape {np.shape(x)}"
        )


def as_kernel_array(x: Any, what: str) -> jax.Array:
    """``x`` as the JAX array a kernel computes with (floats in JAX's default float dtype).

    Raises :class:`InvalidWeightsError` for a non-numeric, boolean or complex input, or a
    wrong shape; no-op (returns ``x``) on tracers.
    """
    if not is_concrete(x):
        return x
    if not isinstance(x, jax.Array):
        try:
            host = np.asarray(x)
        except (ValueError, TypeError) as exc:  # ragged nesting
            raise InvalidWeightsError(
                f"{what} must be a 1-D array of real numbers; got {type(x).__name__} ({exc})"
            ) from None
        if host.dtype == object or host.dtype.kind not in "iuf":
            raise InvalidWeightsError(
                f"{what} must be real numbers; got dtype {host.dtype} "
                f"({np.asarray(x).ravel()[:3].tolist()}...); pass floats"
            )
        x = host
    elif x.dtype.kind not in "iuf":
        raise InvalidWeightsError(f"{what} must be real numbers; got dtype {x.dtype}; pass floats")
    _check_shape(x, what)
    arr = jnp.asarray(x)
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        arr = arr.astype(jnp.float32)
    return arr


_HOST_CHECK_MAX = 1 << 15  # below this size a host copy is cheaper than a device reduction


@jax.jit
def _weight_flags(w: jax.Array) -> jax.Array:
    """One fused pass: [has NaN, has inf, has negative, 0 < sum < inf]."""
    total = jnp.sum(w)
    return jnp.stack(
        [
            jnp.any(jnp.isnan(w)),
            jnp.any(jnp.isinf(w)),
            jnp.any(w < 0),
            (total > 0) & jnp.isfinite(total),
        ]
    )


@jax.jit
def _log_weight_flags(lw: jax.Array) -> jax.Array:
    """One fused pass: [has NaN, has +inf, all -inf]."""
    return jnp.stack([jnp.any(jnp.isnan(lw)), jnp.any(jnp.isposinf(lw)), jnp.all(jnp.isneginf(lw))])


def check_weights(weights: Any) -> jax.Array:
    """Raise :class:`InvalidWeightsError` unless ``weights`` is a usable (N,) probability vector.

    Unusable: NaN or ±inf entries (also entries that overflow the kernel's float dtype, e.g.
    1e300 in float32), negative entries, all entries zero (also after underflow), a sum that
    overflows.  Weights need not sum to one exactly (kernels renormalise), but must have a
    positive finite sum.  Returns the weights as the kernel's array; no-op on tracers.
    """
    w = as_kernel_array(weights, "weights")
    if not is_concrete(w):
        return w
    if np.size(w) > _HOST_CHECK_MAX:
        # Large N: one fused device pass and a 4-flag transfer; details only on the error path.
        has_nan, has_inf, has_neg, positive = (bool(f) for f in _weight_flags(w))
        if positive and not (has_nan or has_inf or has_neg):
            return w
    host = np.asarray(w)
    if np.isnan(host).any():
        raise InvalidWeightsError(
            "weights contain NaN at indices "
            f"{np.flatnonzero(np.isnan(host))[:5].tolist()}; every weight "
            "must be a finite number >= 0"
        )
    if np.isinf(host).any():
        bad = np.flatnonzero(np.isinf(host))[:5]
        given = (
            np.asarray(weights, dtype=np.float64)[bad]
            if not isinstance(weights, jax.Array)
            else host[bad]
        )
        raise InvalidWeightsError(
            f"weights contain inf in {host.dtype} at indices {bad.tolist()} (values "
            f"{given.tolist()}); "
            "pass finite weights (divide by their maximum, or resample from log-weights via "
            "normalize)"
        )
    if (host < 0).any():
        bad = np.flatnonzero(host < 0)[:5]
        raise InvalidWeightsError(
            f"weights must be >= 0; negative at indices {bad.tolist()} (values "
            f"{host[bad].tolist()})"
        )
    total = float(np.sum(host, dtype=host.dtype))
    if not total > 0:
        raise InvalidWeightsError(
            f"all weights are zero in {host.dtype} (no particle survives); pass at least one "
            "positive weight "
            "(for tiny weights, rescale by their maximum)"
        )
    if not np.isfinite(total):
        raise InvalidWeightsError(
            f"the weights' sum overflows {host.dtype} (max {host.max():g}); "
            "divide them by their maximum"
        )
    return w


def check_log_weights(
    log_weights: Any, what: str = "log-weights", allow_all_dead: bool = False
) -> jax.Array:
    """Raise :class:`InvalidWeightsError` unless ``log_weights`` is a usable (N,) vector.

    ``-inf`` marks a dead particle and is allowed; NaN, ``+inf`` (also from overflow of the kernel
    dtype) and all-``-inf`` (unless ``allow_all_dead``) are not.  Returns the kernel's array;
    no-op on tracers.
    """
    lw = as_kernel_array(log_weights, what)
    if not is_concrete(lw):
        return lw
    if np.size(lw) > _HOST_CHECK_MAX:
        has_nan, has_posinf, all_dead = (bool(f) for f in _log_weight_flags(lw))
        if not (has_nan or has_posinf or (all_dead and not allow_all_dead)):
            return lw
    host = np.asarray(lw)
    if np.isnan(host).any():
        raise InvalidWeightsError(
            f"{what} contain NaN at indices "
            f"{np.flatnonzero(np.isnan(host))[:5].tolist()}; pass finite "
            "values or -inf for a dead particle"
        )
    if np.isposinf(host).any():
        raise InvalidWeightsError(
            f"{what} contain +inf in {host.dtype} at indices "
            f"{np.flatnonzero(np.isposinf(host))[:5].tolist()}; "
            "pass finite values (subtract their maximum first)"
        )
    if np.isneginf(host).all() and not allow_all_dead:
        raise InvalidWeightsError(
            f"all {what} are -inf: no particle survives; at least one must be finite"
        )
    return lw


def check_key(key: Any, name: str = "key") -> jax.Array:
    """``key`` unless it is not a ``jax.random`` key (typed, or raw uint32); the error says how
    to make one."""
    if isinstance(key, jax.core.Tracer):
        return key
    if isinstance(key, jax.Array):
        if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) and key.ndim == 0:
            return key
        if key.dtype == jnp.uint32 and key.ndim == 1 and key.shape[0] in (2, 4):
            return key
    shown = repr(key) if len(repr(key)) < 60 else repr(key)[:57] + "..."
    raise ArgumentTypeError(
        f"{name} must be one jax.random key; got {shown}; make one with "
        "jax.random.key(seed) or jax.random.PRNGKey(seed)"
    )


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
