r"""The exact Bayes filter for a discrete POMDP.

One step (Kaelbling, Littman & Cassandra 1998, eq. for the belief state "SE"):

.. math::
    b'(s') = \eta\, O(o \mid s', a) \sum_s T(s' \mid s, a)\, b(s), \qquad
    \eta^{-1} = P(o \mid b, a) = \sum_{s'} O(o \mid s', a) \sum_s T(s' \mid s, a)\, b(s).

Over a sequence, :math:`\log p(o_{1:T} \mid a_{1:T}, b_0) = \sum_t \log P(o_t \mid b_{t-1}, a_t)`.

The kernels are pure, jit-able JAX (:func:`bayes_update`, :func:`filter_scan`); the public
:func:`exact_update` / :func:`exact_filter` add name lookup and raise
:class:`ImpossibleObservationError` when :math:`P(o \mid b, a) = 0`.  Precision is JAX's default
float (float32) unless x64 is enabled (``with jax.enable_x64(True): ...``), see ``docs/pomdp.md``.

Imports only jax/numpy and :mod:`smcplan.pomdp.model`; nothing from ``smcplan.smc`` or above.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.errors import ArgumentTypeError, InvalidArgumentError, SmcplanError
from smcplan.pomdp.checks import check_belief
from smcplan.pomdp.model import DiscretePOMDP, Transition

__all__ = [
    "ImpossibleObservationError",
    "bayes_update",
    "filter_scan",
    "exact_update",
    "exact_filter",
    "predictive_observation_probs",
]


class ImpossibleObservationError(SmcplanError, ValueError):
    """An observation has probability zero under the current belief and action
    (:math:`\\eta = 0`)."""

    def __init__(
        self,
        message: str,
        step: int | None = None,
        action: str | None = None,
        observation: str | None = None,
    ) -> None:
        super().__init__(message)
        self.step = step
        self.action = action
        self.observation = observation


def bayes_update(
    transition: Transition,
    O: jax.Array,  # noqa: N803, E741
    belief: jax.Array,
    action: jax.Array,
    observation: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    r"""One exact filter step, pure and jit-able: returns :math:`(b', \log P(o \mid b, a))`.

    When :math:`P(o \mid b, a) = 0` the returned belief is all zeros and the log-probability
    ``-inf`` (no error can be raised inside ``jit``; :func:`exact_update` checks).
    """
    predicted = transition.predict(belief, action)
    joint = O[action, :, observation] * predicted
    evidence = jnp.sum(joint)
    safe = jnp.where(evidence > 0, evidence, 1.0)
    new_belief = jnp.where(evidence > 0, joint / safe, 0.0)
    return new_belief, jnp.where(evidence > 0, jnp.log(safe), -jnp.inf)


def predictive_observation_probs(
    transition: Transition, O: jax.Array, belief: jax.Array, action: jax.Array  # noqa: N803, E741
) -> jax.Array:
    r""":math:`P(o \mid b, a) = \sum_{s'} O(o \mid s', a) \sum_s T(s' \mid s, a) b(s)` for every o.
    """
    return transition.predict(belief, action) @ O[action]


@jax.jit
def _update_jit(
    transition: Transition,
    O: jax.Array,  # noqa: N803, E741
    belief: jax.Array,
    action: jax.Array,
    observation: jax.Array,
):
    return bayes_update(transition, O, belief, action, observation)


@jax.jit
def filter_scan(
    transition: Transition,
    O: jax.Array,  # noqa: N803, E741
    belief0: jax.Array,
    actions: jax.Array,
    observations: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Exact filter over a sequence with ``lax.scan``: beliefs (T+1, S) and per-step log P(o_t)."""

    def body(
        belief: jax.Array, ao: tuple[jax.Array, jax.Array]
    ) -> tuple[jax.Array, tuple[jax.Array, jax.Array]]:
        new_belief, log_evidence = bayes_update(transition, O, belief, ao[0], ao[1])
        return new_belief, (new_belief, log_evidence)

    _, (beliefs, log_evidence) = jax.lax.scan(body, belief0, (actions, observations))
    return jnp.concatenate([belief0[None], beliefs], axis=0), log_evidence


def _check_pomdp(pomdp: Any) -> None:
    if not isinstance(pomdp, DiscretePOMDP):
        raise ArgumentTypeError(
            f"pomdp must be a DiscretePOMDP; got {type(pomdp).__name__} (build one with "
            "smcplan.pomdp.domains or compile_program)"
        )


def _check_belief(pomdp: DiscretePOMDP, belief: Any, dtype: Any, name: str = "belief") -> jax.Array:
    if (
        isinstance(belief, jax.Array)
        and belief.dtype == dtype
        and not isinstance(belief, jax.core.Tracer)
    ):
        check_belief(np.asarray(belief), pomdp.num_states, name, pomdp.name)
        return belief
    return jnp.asarray(check_belief(belief, pomdp.num_states, name, pomdp.name), dtype=dtype)


def exact_update(
    pomdp: DiscretePOMDP, belief: Any, action: int | str, observation: int | str
) -> jax.Array:
    r"""Exact Bayes filter step :math:`b'(s') = \eta\, O(o|s',a) \sum_s T(s'|s,a)\, b(s)`.

    ``action`` and ``observation`` are indices or names.  Returns the new belief (S,) as a JAX
    array in the default float dtype.

    Raises:
        InvalidBeliefError: if ``belief`` is not a probability vector (shape (S,), entries >= 0,
            sum 1 within :data:`~smcplan.pomdp.checks.BELIEF_ATOL`), naming the sum and the
            negative entries.
        ImpossibleObservationError: if :math:`\eta^{-1} = P(o \mid b, a) = 0`, naming the action
            and the observation.
    """
    _check_pomdp(pomdp)
    arrays = pomdp.device()
    a, o = pomdp.action_index(action), pomdp.observation_index(observation)
    b = _check_belief(pomdp, belief, arrays.O.dtype)
    new_belief, log_evidence = _update_jit(arrays.transition, arrays.O, b, np.int32(a), np.int32(o))
    if not np.isfinite(float(log_evidence)):
        raise ImpossibleObservationError(
            f"observation {pomdp.observation_names[o]!r} is impossible after action "
            f"{pomdp.action_names[a]!r} "
            f"under the given belief (P(o | b, a) = 0) in {pomdp.name}",
            step=None,
            action=pomdp.action_names[a],
            observation=pomdp.observation_names[o],
        )
    return new_belief


def exact_filter(
    pomdp: DiscretePOMDP,
    actions: Sequence[int | str] | Any,
    observations: Sequence[int | str] | Any,
    belief0: Any = None,
) -> tuple[jax.Array, jax.Array]:
    r"""Exact filtering over a sequence: :math:`b_t = \mathrm{update}(b_{t-1}, a_t, o_t)`.

    ``actions[t]`` is taken in :math:`b_t` and ``observations[t]`` is received after it.
    Returns ``(beliefs, log_likelihood)``: beliefs (T+1, S) with ``beliefs[0] = belief0``
    (default :math:`b_0`), and :math:`\log p(o_{1:T} \mid a_{1:T}) = \sum_t \log P(o_t \mid b_{t-1},
    a_t)`.
    Runs as one ``lax.scan``.

    Raises:
        InvalidBeliefError: if ``belief0`` is not a probability vector (see :func:`exact_update`).
        ImpossibleObservationError: naming the first step t (0-based), its action and observation
            where :math:`P(o_t \mid b_{t-1}, a_t) = 0`.
    """
    _check_pomdp(pomdp)
    arrays = pomdp.device()
    acts = pomdp.action_indices(actions)
    obs = pomdp.observation_indices(observations)
    if acts.shape != obs.shape:
        raise InvalidArgumentError(
            f"{acts.shape[0]} actions but {obs.shape[0]} observations; need one observation per "
            "action"
        )
    b0 = arrays.b0 if belief0 is None else _check_belief(pomdp, belief0, arrays.O.dtype, "belief0")
    beliefs, log_evidence = filter_scan(
        arrays.transition, arrays.O, b0, jnp.asarray(acts), jnp.asarray(obs)
    )
    log_evidence_np = np.asarray(log_evidence)
    bad = np.flatnonzero(~np.isfinite(log_evidence_np))
    if bad.size:
        t = int(bad[0])
        a, o = pomdp.action_names[acts[t]], pomdp.observation_names[obs[t]]
        raise ImpossibleObservationError(
            f"step {t}: observation {o!r} is impossible after action {a!r} given the belief "
            "filtered so far "
            f"(P(o | b, a) = 0) in {pomdp.name}",
            step=t,
            action=a,
            observation=o,
        )
    return beliefs, jnp.sum(log_evidence)

