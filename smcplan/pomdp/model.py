r"""The discrete POMDP: arrays, names, validation, and two transition layouts behind one API.

A finite POMDP (Kaelbling, Littman & Cassandra 1998) is the tuple
:math:`(S, A, \Omega, T, O, R, b_0, \gamma)` with

* :math:`T[a, s, s'] = P(s_{t+1}=s' \mid s_t=s, a_t=a)`,
* :math:`O[a, s', o] = P(o_{t+1}=o \mid s_{t+1}=s', a_t=a)`,
* :math:`R[s, a]` the expected immediate reward of doing :math:`a` in :math:`s`,
* :math:`b_0[s]` the initial belief and :math:`\gamma \in [0, 1]` the discount.

Transitions come in two layouts with the same methods (``predict``, ``sample``, ``log_prob``,
``dense``), defined in :mod:`smcplan.pomdp.transition` and re-exported here:

* :class:`DenseTransition` stores :math:`T` as an (A, S, S) array; the prediction
  :math:`\bar b(s') = \sum_s T[a,s,s'] b(s)` is a vector–matrix product, :math:`O(S^2)`.
* :class:`SparseTransition` stores each row :math:`T[a, s, \cdot]` as exactly :math:`K` pairs
  (next state, probability) — the ELLPACK sparse format, with :math:`K = 1` for deterministic
  dynamics.  The prediction is a scatter-add of :math:`b(s)\,p_k` onto :math:`s'_k`,
  :math:`O(SK)`.  RockSample(7,8) has :math:`|S| = 12\,545` and :math:`K = 1`: 163k entries
  instead of the 2 billion of a dense :math:`T`.

Arrays are stored on the host in float64 (the exact reference); :meth:`DiscretePOMDP.device`
returns cached JAX copies in the current default float dtype (float32 unless x64 is enabled,
see ``docs/pomdp.md``).

This module imports only numpy and jax: nothing from ``smcplan.smc`` or above, no torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.errors import ArgumentTypeError, IndexOutOfRangeError, UnknownNameError
from smcplan.pomdp.checks import check_sequence
from smcplan.pomdp.transition import (
    DENSE_LIMIT,
    DenseTransition,
    POMDPValidationError,
    SparseTransition,
    Transition,
    _as_float_array,
    default_float,
)

__all__ = [
    "DiscretePOMDP",
    "DenseTransition",
    "SparseTransition",
    "DeviceArrays",
    "POMDPValidationError",
    "DENSE_LIMIT",
    "default_float",
]

class DeviceArrays(NamedTuple):
    """JAX copies of a POMDP's arrays in one float dtype (a pytree: pass it through ``jit``)."""

    transition: Transition
    O: jax.Array  # noqa: E741  (the standard symbol)
    R: jax.Array
    b0: jax.Array


def _check_names(names: Sequence[str] | None, n: int, kind: str, prefix: str) -> tuple[str, ...]:
    if names is None:
        return tuple(f"{prefix}{i}" for i in range(n))
    names = tuple(str(x) for x in names)
    if len(names) != n:
        raise POMDPValidationError(
            f"{len(names)} {kind} names given but the arrays have {n} {kind}s"
        )
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise POMDPValidationError(
                f"{kind} name {name!r} is used twice (indices {seen[name]} and {i}); names must "
                "be unique"
            )
        seen[name] = i
    return names


class DiscretePOMDP:
    r"""A finite POMDP :math:`(S, A, \Omega, T, O, R, b_0, \gamma)` with named states, actions
    and observations, validated at construction.

    Args:
        T: the transition, either an array ``T[a, s, s']`` or a :class:`DenseTransition` /
            :class:`SparseTransition`.
        O: ``O[a, s', o]``, observation probabilities after arriving in ``s'`` by action ``a``.
        R: ``R[s, a]``, expected immediate reward.
        b0: initial belief ``b0[s]``.
        discount: :math:`\gamma \in [0, 1]`.
        state_names, action_names, observation_names: unique strings (default ``s0, a0, o0, ...``).
        terminal: optional boolean mask (S,): entering such a state ends an episode (the arrays
            still define what happens after, usually an absorbing zero-reward state).
        factors: optional factored description of each state, ``{factor: int array (S,)}``
            (set by :func:`smcplan.pomdp.compile_program`).
        metadata: optional domain facts (e.g. RockSample's rock positions), kept as a dict.
        name: used in error messages and ``repr``.
        atol: tolerance for "rows sum to one".

    Raises:
        POMDPValidationError: naming the offending action/state/observation and the rule broken.
    """

    def __init__(
        self,
        T: Any,  # noqa: N803
        O: Any,  # noqa: N803, E741
        R: Any,  # noqa: N803
        b0: Any,
        discount: float,
        state_names: Sequence[str] | None = None,
        action_names: Sequence[str] | None = None,
        observation_names: Sequence[str] | None = None,
        *,
        terminal: Any = None,
        factors: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        name: str = "pomdp",
        atol: float = 1e-6,
    ) -> None:
        if isinstance(T, DenseTransition | SparseTransition):
            transition = T
        else:
            transition = DenseTransition(T)
        if isinstance(transition, DenseTransition):
            matrix = _as_float_array(transition.matrix, "T")
            if matrix.ndim != 3 or matrix.shape[1] != matrix.shape[2]:
                raise POMDPValidationError(f"T must have shape (A, S, S); got {matrix.shape}")
            transition = DenseTransition(matrix)
        else:
            nxt = np.asarray(transition.next_state)
            if not np.issubdtype(nxt.dtype, np.integer):
                raise POMDPValidationError(
                    f"SparseTransition.next_state must be integer; got {nxt.dtype}"
                )
            prob = _as_float_array(transition.prob, "SparseTransition.prob")
            if nxt.ndim != 3 or prob.shape != nxt.shape:
                raise POMDPValidationError(
                    "SparseTransition needs next_state and prob of the same shape (A, S, K); got "
                    f"{nxt.shape} and {prob.shape}"
                )
            transition = SparseTransition(nxt.astype(np.int32), prob)
        num_actions, num_states = transition.num_actions, transition.num_states
        O = _as_float_array(O, "O")  # noqa: N806, E741
        R = _as_float_array(R, "R")  # noqa: N806
        b0 = _as_float_array(b0, "b0")
        if O.ndim != 3 or O.shape[:2] != (num_actions, num_states):
            raise POMDPValidationError(
                f"O must have shape (A, S, num_observations) = ({num_actions}, {num_states}, ·); "
                f"got {O.shape}"
            )
        if R.shape != (num_states, num_actions):
            raise POMDPValidationError(
                f"R must have shape (S, A) = ({num_states}, {num_actions}); got {R.shape}"
            )
        if b0.shape != (num_states,):
            raise POMDPValidationError(f"b0 must have shape (S,) = ({num_states},); got {b0.shape}")
        discount = float(discount)
        if not 0.0 <= discount <= 1.0:
            raise POMDPValidationError(f"discount must lie in [0, 1]; got {discount}")

        self.name = str(name)
        self.state_names = _check_names(state_names, num_states, "state", "s")
        self.action_names = _check_names(action_names, num_actions, "action", "a")
        self.observation_names = _check_names(observation_names, O.shape[2], "observation", "o")
        self.transition: Transition = transition
        self.O = O  # noqa: E741
        self.R = R
        self.b0 = b0
        self.discount = discount
        self.atol = float(atol)
        self.terminal = (
            np.zeros(num_states, bool) if terminal is None else np.asarray(terminal, bool)
        )
        if self.terminal.shape != (num_states,):
            raise POMDPValidationError(
                f"terminal must have shape (S,) = ({num_states},); got {self.terminal.shape}"
            )
        self.factors = None if factors is None else {k: np.asarray(v) for k, v in factors.items()}
        self.metadata: dict[str, Any] = dict(metadata or {})
        self._validate_probabilities()
        self._device: dict[Any, DeviceArrays] = {}
        self._index = {
            "state": {n: i for i, n in enumerate(self.state_names)},
            "action": {n: i for i, n in enumerate(self.action_names)},
            "observation": {n: i for i, n in enumerate(self.observation_names)},
        }

    # ------------------------------------------------------------------ validation
    def _validate_probabilities(self) -> None:
        tol = self.atol
        if isinstance(self.transition, DenseTransition):
            probs, row_sums = self.transition.matrix, self.transition.matrix.sum(-1)
        else:
            probs, row_sums = self.transition.prob, self.transition.prob.sum(-1)
            nxt = self.transition.next_state
            if nxt.min() < 0 or nxt.max() >= self.num_states:
                a, s, _ = np.argwhere((nxt < 0) | (nxt >= self.num_states))[0]
                raise POMDPValidationError(
                    f"SparseTransition.next_state for action {self.action_names[a]!r} in state "
                    f"{self.state_names[s]!r} points outside [0, {self.num_states})"
                )
        if (probs < 0).any():
            a, s = np.argwhere(probs < 0)[0][:2]
            raise POMDPValidationError(
                f"T has a negative probability for action {self.action_names[a]!r} in state "
                f"{self.state_names[s]!r}"
            )
        bad = np.abs(row_sums - 1.0) > tol
        if bad.any():
            a, s = np.argwhere(bad)[0]
            raise POMDPValidationError(
                f"T[{self.action_names[a]!r}, {self.state_names[s]!r}, :] sums to "
                f"{row_sums[a, s]:.9g}; "
                f"each row must sum to 1 within {tol:g}"
            )
        if (self.O < 0).any():
            a, s = np.argwhere(self.O < 0)[0][:2]
            raise POMDPValidationError(
                f"O has a negative probability for action {self.action_names[a]!r} in state "
                f"{self.state_names[s]!r}"
            )
        o_sums = self.O.sum(-1)
        bad = np.abs(o_sums - 1.0) > tol
        if bad.any():
            a, s = np.argwhere(bad)[0]
            raise POMDPValidationError(
                f"O[{self.action_names[a]!r}, {self.state_names[s]!r}, :] sums to "
                f"{o_sums[a, s]:.9g}; "
                f"each row must sum to 1 within {tol:g}"
            )
        if (self.b0 < 0).any() or abs(self.b0.sum() - 1.0) > tol:
            raise POMDPValidationError(
                f"b0 must be a probability vector (>= 0, sum 1 within {tol:g}); sum is "
                f"{self.b0.sum():.9g}, min {self.b0.min():.3g}"
            )

    # ------------------------------------------------------------------ sizes and names
    @property
    def num_states(self) -> int:
        return self.transition.num_states

    @property
    def num_actions(self) -> int:
        return self.transition.num_actions

    @property
    def num_observations(self) -> int:
        return int(self.O.shape[2])

    @property
    def T(self) -> np.ndarray:  # noqa: N802
        """The dense ``T[a, s, s']`` (materialised for a sparse transition; raises MemoryError if
        too big)."""
        return self.transition.dense()

    def _lookup(self, kind: str, value: int | str | np.integer) -> int:
        names = {
            "state": self.state_names,
            "action": self.action_names,
            "observation": self.observation_names,
        }[kind]
        if isinstance(value, str):
            try:
                return self._index[kind][value]
            except KeyError:
                shown = ", ".join(repr(n) for n in names[:12]) + (
                    ", ..." if len(names) > 12 else ""
                )
                raise UnknownNameError(
                    f"unknown {kind} {value!r} in {self.name}; known: {shown}"
                ) from None
        if isinstance(value, bool) or not hasattr(value, "__index__") or np.ndim(value) != 0:
            raise ArgumentTypeError(
                f"{kind} must be a name (str) or an integer index; got "
                f"{value!r} ({type(value).__name__}) in {self.name}"
            )
        idx = int(value)
        if not 0 <= idx < len(names):
            raise IndexOutOfRangeError(
                f"{kind} index {idx} out of range [0, {len(names)}) in {self.name}"
            )
        return idx

    def state_index(self, state: int | str) -> int:
        """Index of a state given by name or index (errors list the valid names)."""
        return self._lookup("state", state)

    def action_index(self, action: int | str) -> int:
        """Index of an action given by name or index (errors list the valid names)."""
        return self._lookup("action", action)

    def observation_index(self, observation: int | str) -> int:
        """Index of an observation given by name or index (errors list the valid names)."""
        return self._lookup("observation", observation)

    def _indices(self, values: Any, kind: str) -> np.ndarray:
        limit = self.num_actions if kind == "action" else self.num_observations
        values = check_sequence(values, f"{kind}s")
        if isinstance(values, np.ndarray | jax.Array) and np.issubdtype(
            np.asarray(values).dtype, np.integer
        ):
            arr = np.asarray(values, dtype=np.int64).reshape(-1)
            if arr.size and (arr.min() < 0 or arr.max() >= limit):
                bad = int(arr[(arr < 0) | (arr >= limit)][0])
                raise IndexOutOfRangeError(
                    f"{kind} index {bad} out of range [0, {limit}) in {self.name}"
                )
            return arr.astype(np.int32)
        return np.asarray([self._lookup(kind, v) for v in values], dtype=np.int32)

    def action_indices(self, actions: Sequence[int | str] | Any) -> np.ndarray:
        """int32 indices of a sequence of actions given by names and/or indices."""
        return self._indices(actions, "action")

    def observation_indices(self, observations: Sequence[int | str] | Any) -> np.ndarray:
        """int32 indices of a sequence of observations given by names and/or indices."""
        return self._indices(observations, "observation")

    # ------------------------------------------------------------------ device copies
    def device(self, dtype: Any = None) -> DeviceArrays:
        """JAX copies of (transition, O, R, b0) in ``dtype`` (default: JAX's default float), cached.

        Caching matters for speed: converting RockSample(7,8)'s O (4 MB) on every update would
        cost more than the update itself.
        """
        dtype = default_float() if dtype is None else jnp.dtype(dtype)
        key = (dtype.name, bool(jax.config.jax_enable_x64))
        if key not in self._device:
            self._device[key] = DeviceArrays(
                self.transition.astype(dtype),
                jnp.asarray(self.O, dtype=dtype),
                jnp.asarray(self.R, dtype=dtype),
                jnp.asarray(self.b0, dtype=dtype),
            )
        return self._device[key]

    def __repr__(self) -> str:
        kind = type(self.transition).__name__
        return (
            f"DiscretePOMDP({self.name!r}, |S|={self.num_states}, |A|={self.num_actions}, "
            f"|O|={self.num_observations}, discount={self.discount}, transition={kind})"
        )
