"""Transition tensors of a discrete POMDP: dense ``T[a, s, s']`` or sparse (K successors per
``(a, s)``), with one interface (``predict``, ``row``, ``dense``) so that filters and solvers
never branch on the storage; and the input checks shared with :mod:`smcplan.pomdp.model`.

Imports only numpy, jax and :mod:`smcplan.errors`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.errors import SmcplanError

__all__ = [
    "DENSE_LIMIT",
    "DenseTransition",
    "POMDPValidationError",
    "SparseTransition",
    "Transition",
    "default_float",
]

#: Largest number of entries :meth:`DiscretePOMDP.T` will materialise as a dense (A, S, S) array
#: (2**27 float64 entries = 1 GiB).
DENSE_LIMIT = 2**27


class POMDPValidationError(SmcplanError, ValueError):
    """The arrays or names given to :class:`DiscretePOMDP` do not describe a valid POMDP."""


def default_float() -> np.dtype:
    """JAX's current default float dtype (float32, or float64 under x64), without a device call."""
    return np.dtype(jax.dtypes.canonicalize_dtype(jnp.float64))


def _as_float_array(x: Any, what: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise POMDPValidationError(f"{what} has a non-finite entry at index {bad}: {arr[bad]}")
    return arr


@jax.tree_util.register_pytree_node_class
class DenseTransition:
    """:math:`T[a, s, s']` as one dense (A, S, S) array (rows sum to one)."""

    def __init__(self, matrix: Any) -> None:
        self.matrix = matrix

    # pytree protocol: the array is the only leaf
    def tree_flatten(self) -> tuple[tuple[Any], None]:
        return (self.matrix,), None

    @classmethod
    def tree_unflatten(cls, aux: None, children: tuple[Any]) -> DenseTransition:
        return cls(children[0])

    @property
    def num_actions(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def num_states(self) -> int:
        return int(self.matrix.shape[1])

    def predict(self, belief: jax.Array, action: jax.Array) -> jax.Array:
        r""":math:`\bar b(s') = \sum_s b(s)\, T[a, s, s']` (jit-able, ``action`` may be traced)."""
        return belief @ self.matrix[action]

    def sample(self, key: jax.Array, states: jax.Array, action: jax.Array) -> jax.Array:
        r"""Draw :math:`s'_i \sim T[a, s_i, \cdot]` for a vector of states (int32, shape (N,))."""
        rows = self.matrix[action][states]
        return jax.random.categorical(key, jnp.log(rows), axis=-1).astype(jnp.int32)

    def log_prob(self, states: jax.Array, action: jax.Array, next_states: jax.Array) -> jax.Array:
        r""":math:`\log T[a, s_i, s'_i]` elementwise."""
        return jnp.log(self.matrix[action, states, next_states])

    def dense(self) -> np.ndarray:
        return np.asarray(self.matrix)

    def astype(self, dtype: Any) -> DenseTransition:
        return DenseTransition(jnp.asarray(self.matrix, dtype=dtype))


@jax.tree_util.register_pytree_node_class
class SparseTransition:
    r"""Each row :math:`T[a, s, \cdot]` as K (next state, probability) pairs (ELLPACK layout).

    ``next_state[a, s, k]`` (int32, in ``[0, S)``) and ``prob[a, s, k]`` (≥ 0, summing to one over
    ``k``) encode :math:`T[a, s, s'] = \sum_k
    \mathrm{prob}[a,s,k]\,[\mathrm{next\_state}[a,s,k]=s']`.
    Repeated next states in a row are allowed (their probabilities add); padding entries carry
    probability zero.  Deterministic dynamics have K = 1.
    """

    def __init__(self, next_state: Any, prob: Any) -> None:
        self.next_state = next_state
        self.prob = prob

    def tree_flatten(self) -> tuple[tuple[Any, Any], None]:
        return (self.next_state, self.prob), None

    @classmethod
    def tree_unflatten(cls, aux: None, children: tuple[Any, Any]) -> SparseTransition:
        return cls(*children)

    @property
    def num_actions(self) -> int:
        return int(self.next_state.shape[0])

    @property
    def num_states(self) -> int:
        return int(self.next_state.shape[1])

    def predict(self, belief: jax.Array, action: jax.Array) -> jax.Array:
        r""":math:`\bar b(s') = \sum_{s,k} b(s)\,p_{a,s,k}\,[s'_{a,s,k} = s']`, one scatter-add."""
        mass = belief[:, None] * self.prob[action]
        return jnp.zeros_like(belief).at[self.next_state[action]].add(mass)

    def sample(self, key: jax.Array, states: jax.Array, action: jax.Array) -> jax.Array:
        r"""Draw :math:`k_i \sim p_{a,s_i,\cdot}` and return :math:`s'_{a,s_i,k_i}` (int32, (N,)).
        """
        probs = self.prob[action][states]
        if self.prob.shape[-1] == 1:
            return self.next_state[action][states, 0].astype(jnp.int32)
        k = jax.random.categorical(key, jnp.log(probs), axis=-1)
        return jnp.take_along_axis(self.next_state[action][states], k[:, None], axis=-1)[
            :, 0
        ].astype(jnp.int32)

    def log_prob(self, states: jax.Array, action: jax.Array, next_states: jax.Array) -> jax.Array:
        r""":math:`\log \sum_k p_{a,s_i,k}\,[s'_{a,s_i,k} = s'_i]` elementwise."""
        rows_next = self.next_state[action][states]
        rows_prob = self.prob[action][states]
        return jnp.log(
            jnp.sum(jnp.where(rows_next == next_states[:, None], rows_prob, 0.0), axis=-1)
        )

    def dense(self) -> np.ndarray:
        a, s, _ = self.next_state.shape
        if a * s * s > DENSE_LIMIT:
            raise MemoryError(
                f"a dense T would have {a}x{s}x{s} = {a * s * s:,} entries (limit "
                f"{DENSE_LIMIT:,}); "
                "use pomdp.transition.predict / sample / log_prob instead"
            )
        out = np.zeros((a, s, s))
        ai, si = np.meshgrid(np.arange(a), np.arange(s), indexing="ij")
        np.add.at(
            out, (ai[..., None], si[..., None], np.asarray(self.next_state)), np.asarray(self.prob)
        )
        return out

    def astype(self, dtype: Any) -> SparseTransition:
        return SparseTransition(
            jnp.asarray(self.next_state, dtype=jnp.int32), jnp.asarray(self.prob, dtype=dtype)
        )


Transition = DenseTransition | SparseTransition
