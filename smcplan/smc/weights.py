r"""Importance weights in the log domain: normalisation, evidence increments, effective sample size.

Particles carry log-weights :math:`\ell_i = \log w_i`.  Everything here is computed with the
log-sum-exp shift :math:`m = \max_i \ell_i`, so log-weights spanning :math:`10^4` in magnitude are
exact to float precision, and :math:`\ell_i = -\infty` (a dead particle) is allowed.

* :func:`normalize` — :math:`\log W_i = \ell_i - \log\sum_j e^{\ell_j}` and the log normaliser
  :math:`\log\sum_j e^{\ell_j}`.  When the incoming log-weights are
  :math:`\log W^{t-1}_i + \log G_t(x_i)` with :math:`W^{t-1}` normalised, the normaliser is the
  SMC evidence increment :math:`\log \hat Z_t / \hat Z_{t-1} = \log \sum_i W^{t-1}_i G_t(x_i)`
  (Del Moral 2004; Chopin & Papaspiliopoulos 2020, §10.3).
* :func:`ess` — Kong's effective sample size :math:`(\sum_i w_i)^2 / \sum_i w_i^2`, in [1, N].
* :func:`log_mean_exp` — :math:`\log \frac1N \sum_i e^{x_i}`.

Pure JAX, jit-able; imports no torch.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from smcplan.smc.validation import check_log_weights

__all__ = ["normalize", "ess", "log_mean_exp", "log_sum_exp", "Weights"]


def log_sum_exp(log_weights: jax.Array) -> jax.Array:
    r""":math:`\log\sum_i e^{\ell_i}`, shifted by the max; ``-inf`` entries contribute zero.

    Same input rules as :func:`log_mean_exp`."""
    return logsumexp(check_log_weights(log_weights, allow_all_dead=True))


def normalize(log_weights: jax.Array) -> tuple[jax.Array, jax.Array]:
    r"""Return :math:`(\ell - \log\sum_j e^{\ell_j},\ \log\sum_j e^{\ell_j})`.

    The first output are normalised log-weights (``exp`` sums to one); dead particles stay
    ``-inf``.  The second is the log normaliser, i.e. the evidence increment when the input is
    (normalised previous log-weights + log incremental weights).

    Raises :class:`~smcplan.smc.errors.InvalidWeightsError` outside ``jit`` on NaN, ``+inf``,
    all ``-inf`` or a non-(N,) shape; see :func:`smcplan.smc.validation.checked` inside ``jit``.
    """
    log_weights = check_log_weights(log_weights)
    # shift first: d_i = l_i - max_j l_j is exact for the entries that matter (Sterbenz), so the
    # normalised weights keep full precision even when |l| is huge (1e30: the log-normaliser's
    # ulp would otherwise swamp them)
    shift = jax.lax.stop_gradient(jnp.max(log_weights))
    d = log_weights - shift
    log_z_rel = logsumexp(d)
    return d - log_z_rel, shift + log_z_rel


def ess(log_weights: jax.Array) -> jax.Array:
    r"""Effective sample size :math:`\mathrm{ESS} = (\sum_i w_i)^2 / \sum_i w_i^2
    = \exp(2\,\mathrm{LSE}(\ell) - \mathrm{LSE}(2\ell))`; accepts unnormalised log-weights."""
    log_weights = check_log_weights(log_weights)
    d = log_weights - jnp.max(log_weights)  # shift-invariant; keeps precision for huge |l|
    return jnp.exp(2.0 * logsumexp(d) - logsumexp(2.0 * d))


def log_mean_exp(x: jax.Array) -> jax.Array:
    r""":math:`\log \frac1N \sum_{i=1}^N e^{x_i}`, stable; the log of an importance-sampling mean.

    ``x`` has shape (N,), N >= 1; ``-inf`` entries (zero terms) are allowed and all ``-inf`` gives
    ``-inf``.  NaN, ``+inf`` and other shapes raise :class:`~smcplan.smc.errors.InvalidWeightsError`
    outside ``jit`` (for a 2-D array, map over its rows: ``jax.vmap(log_mean_exp)``).
    """
    x = check_log_weights(x, "log_mean_exp input x", allow_all_dead=True)
    return logsumexp(x) - jnp.log(x.shape[0])


class Weights:
    """Log-weights with their normalised form and ESS kept together so they never drift apart.

    ``lw`` (raw log-weights), ``log_w`` (normalised), ``W`` (normalised weights), ``log_z``
    (log normaliser), ``ess``.  A convenience for eager code; kernels use the functions above.
    """

    __slots__ = ("lw", "log_w", "W", "log_z", "ess")

    def __init__(self, lw: jax.Array) -> None:
        self.lw = jnp.asarray(lw)
        self.log_w, self.log_z = normalize(self.lw)
        self.W = jnp.exp(self.log_w)
        self.ess = 1.0 / jnp.sum(self.W**2)

    def __repr__(self) -> str:
        n, ess, log_z = self.lw.shape[0], float(self.ess), float(self.log_z)
        return f"Weights(N={n}, ess={ess:.3g}, log_z={log_z:.6g})"
