"""Batches of particles, actions and observations: size, indexing by ancestors, replication.

A batch is a Python ``list`` of N objects (language agents: a knowledge graph plus history) or
a JAX pytree whose leaves share a leading axis N (toy POMDPs).  Lists are indexed with Python
lists, so resampling shares objects instead of copying them (copy on write: components return
new objects and never mutate their inputs); pytrees with ``jnp.take`` (works under ``jit``).

Also :func:`as_key`, the one way an entry point turns an int seed into a ``jax.random`` key.

Imports only JAX, NumPy and ``smcplan.planning.components``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.planning.components import Batch, PlanningError

__all__ = [
    "as_key",
    "as_batch",
    "is_list_batch",
    "batch_size",
    "take",
    "replicate",
    "to_host_list",
]


def as_key(key: Any) -> jax.Array:
    """A ``jax.random`` key from a key or an int seed."""
    if isinstance(key, int) and not isinstance(key, bool):
        return jax.random.key(key)
    if isinstance(key, jax.Array):
        return key
    raise PlanningError(
        f"key must be a jax.random key or an int seed; got {type(key).__name__} {key!r}"
    )


def as_batch(particles: Batch) -> Batch:
    """The initial particles as a batch: a plain ``tuple`` of particle objects (e.g. the
    ``particles`` of a :class:`~smcplan.planning.text_components.TextPlanner`) becomes a ``list``
    (a Python-object batch); a tuple whose leaves are all arrays is a pytree and stays as it is,
    and so does anything else."""
    if type(particles) is tuple and particles:
        leaves = jax.tree_util.tree_leaves(particles)
        if not leaves or not all(isinstance(leaf, jax.Array | np.ndarray) for leaf in leaves):
            return list(particles)
    return particles


def is_list_batch(batch: Batch) -> bool:
    """True for a Python-object batch (a ``list``), False for an array pytree."""
    return isinstance(batch, list)


def batch_size(batch: Batch, what: str = "batch") -> int:
    """N, the number of items in ``batch``; raises :class:`PlanningError` on ragged pytrees."""
    if is_list_batch(batch):
        return len(batch)
    leaves = jax.tree_util.tree_leaves(batch)
    if not leaves:
        raise PlanningError(
            f"{what} is an empty pytree; expected a list or arrays with a leading axis N"
        )
    sizes = {int(np.shape(leaf)[0]) if np.ndim(leaf) >= 1 else -1 for leaf in leaves}
    if -1 in sizes:
        raise PlanningError(f"{what} has a scalar leaf; every leaf needs a leading particle axis N")
    if len(sizes) != 1:
        raise PlanningError(f"{what} leaves disagree on the particle axis: sizes {sorted(sizes)}")
    return sizes.pop()


def take(batch: Batch, idx: Any) -> Batch:
    """``batch[idx]`` along the particle axis: ``[batch[i] for i in idx]`` for lists (objects are
    shared, not copied), ``jnp.take(leaf, idx, axis=0)`` for every pytree leaf."""
    if is_list_batch(batch):
        return [batch[int(i)] for i in np.asarray(idx)]
    return jax.tree_util.tree_map(lambda leaf: jnp.take(leaf, idx, axis=0), batch)


def replicate(item: Any, num: int, *, as_list: bool | None = None) -> Batch:
    """N copies of one particle: ``[item] * N`` for Python objects (shared, copy on write), or a
    pytree with every leaf broadcast to a new leading axis N (``as_list=False``).

    ``as_list=None`` chooses lists unless ``item`` is a pytree of arrays.
    """
    if as_list is None:
        leaves = jax.tree_util.tree_leaves(item)
        as_list = not leaves or not all(
            isinstance(leaf, jax.Array | np.ndarray | int | float) for leaf in leaves
        )
    if as_list:
        return [item] * num
    return jax.tree_util.tree_map(
        lambda leaf: jnp.broadcast_to(jnp.asarray(leaf), (num, *jnp.shape(leaf))), item
    )


def to_host_list(batch: Batch) -> list[Any]:
    """A batch of scalars (actions, observations) as a Python list (arrays become ints/floats)."""
    if is_list_batch(batch):
        return list(batch)
    return np.asarray(batch).tolist()
