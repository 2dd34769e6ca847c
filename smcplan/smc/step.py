r"""The generic SMC step (Feynman–Kac form), blackjax-style: small NamedTuples, pure functions.

One step of a particle system targeting :math:`\pi_t(x_{0:t}) \propto \pi_{t-1}(x_{0:t-1})\,
M_t(x_t \mid x_{t-1})\, G_t(x_{t-1}, x_t)`:

1. **Adaptive resampling.**  If :math:`\mathrm{ESS}(W^{t-1}) < \kappa N` draw ancestors
   :math:`A \sim r(W^{t-1})` and reset :math:`\log W^{t-1}_i = -\log N`; otherwise keep them
   (:math:`A_i = i`).  :math:`\kappa \ge 1` resamples every step, :math:`\kappa \le 0` never.
2. **Propagate** :math:`x^i_t \sim M_t(\cdot \mid x^{A_i}_{t-1})` with ``propagate_fn``.
3. **Reweight** :math:`\log \tilde w^i_t = \log W^{t-1}_i + \log G_t(x^{A_i}_{t-1}, x^i_t)` with
   ``log_weight_fn``; normalise.  The log normaliser
   :math:`\log \sum_i W^{t-1}_i G_t^i` is the evidence increment
   :math:`\log \hat Z_t - \log \hat Z_{t-1}`, so summing increments over steps gives the standard
   unbiased (in :math:`\hat Z`) SMC estimate of the log-evidence (Del Moral 2004).

Particles are any pytree whose leaves have leading dimension N.  Pure JAX, jit-able (pass the
callables as static or close over them); imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from smcplan.smc import resampling
from smcplan.smc.weights import ess as _ess
from smcplan.smc.weights import normalize

__all__ = ["SMCState", "SMCInfo", "init", "step", "resample_state"]

PyTree = Any


class SMCState(NamedTuple):
    """Particles (pytree, leading axis N) and their normalised log-weights, shape (N,)."""

    particles: PyTree
    log_weights: jax.Array


class SMCInfo(NamedTuple):
    """Diagnostics of one step.

    ``ess``: ESS of the new weights; ``resampled``: whether resampling ran before propagation;
    ``log_Z_increment``: :math:`\\log \\sum_i W^{t-1}_i G^i_t`; ``ancestors``: int32 (N,).
    """

    ess: jax.Array
    resampled: jax.Array
    log_Z_increment: jax.Array
    ancestors: jax.Array


def init(particles: PyTree) -> SMCState:
    """Equally weighted initial state: :math:`\\log W_i = -\\log N`."""
    n = jax.tree_util.tree_leaves(particles)[0].shape[0]
    return SMCState(particles, jnp.full((n,), -jnp.log(n)))


def _take(tree: PyTree, idx: jax.Array) -> PyTree:
    return jax.tree_util.tree_map(lambda leaf: jnp.take(leaf, idx, axis=0), tree)


def resample_state(
    key: jax.Array, state: SMCState, resample_fn: Callable | str = "systematic"
) -> tuple[SMCState, jax.Array]:
    """Unconditionally resample: particles indexed by ancestors, log-weights reset to -log N."""
    resample_fn = resampling.get(resample_fn)
    n = state.log_weights.shape[0]
    idx = resample_fn(key, jnp.exp(state.log_weights), n)
    return SMCState(
        _take(state.particles, idx), jnp.full((n,), -jnp.log(n), state.log_weights.dtype)
    ), idx


def step(
    key: jax.Array,
    state: SMCState,
    propagate_fn: Callable[[jax.Array, PyTree], PyTree],
    log_weight_fn: Callable[[PyTree, PyTree], jax.Array],
    resample_fn: Callable | str = "systematic",
    ess_threshold: float = 0.5,
) -> tuple[SMCState, SMCInfo]:
    """One resample–propagate–reweight step; see the module docstring for the math.

    ``propagate_fn(key, particles) -> new_particles``;
    ``log_weight_fn(new_particles, parent_particles) -> log G, shape (N,)``.
    ``state.log_weights`` must be normalised (as returned by :func:`init` and :func:`step`).
    """
    resample_fn = resampling.get(resample_fn)
    key_resample, key_propagate = jax.random.split(key)
    n = state.log_weights.shape[0]
    log_w = state.log_weights

    if ess_threshold >= 1.0:
        do_resample = jnp.asarray(True)
    elif ess_threshold <= 0.0:
        do_resample = jnp.asarray(False)
    else:
        do_resample = _ess(log_w) < ess_threshold * n

    def with_resampling(_: None) -> tuple[jax.Array, jax.Array]:
        idx = resample_fn(key_resample, jnp.exp(log_w), n).astype(jnp.int32)
        return idx, jnp.full((n,), -jnp.log(n), log_w.dtype)

    def without_resampling(_: None) -> tuple[jax.Array, jax.Array]:
        return jnp.arange(n, dtype=jnp.int32), log_w

    if ess_threshold >= 1.0:
        ancestors, log_w_parent = with_resampling(None)
    elif ess_threshold <= 0.0:
        ancestors, log_w_parent = without_resampling(None)
    else:
        ancestors, log_w_parent = jax.lax.cond(
            do_resample, with_resampling, without_resampling, None
        )

    parents = _take(state.particles, ancestors)
    new_particles = propagate_fn(key_propagate, parents)
    log_g = log_weight_fn(new_particles, parents)
    new_log_w, log_z_increment = normalize(log_w_parent + log_g)
    info = SMCInfo(
        ess=_ess(new_log_w),
        resampled=do_resample,
        log_Z_increment=log_z_increment,
        ancestors=ancestors,
    )
    return SMCState(new_particles, new_log_w), info
