r"""The three swappable parts of the planner, as Protocols, and what each returns.

A planning step :math:`t` extends every particle :math:`x_{<t}` (a latent state or imagined
world plus its history) by an action and a transition, :math:`x_t = (a_t, s_t, o_t)`:

* **proposal** — :math:`a_t \sim q(\cdot \mid x_{<t})`, returning :math:`\log q(a_t \mid x_{<t})`
  and, where the target's prior policy :math:`p_0` differs from :math:`q`,
  :math:`\log p_0(a_t \mid x_{<t})` (e.g. a uniform prior under a heuristic proposal);
* **world model** — :math:`(s_t, o_t) \sim q_W(\cdot \mid x_{<t}, a_t)`, returning the next
  particles and observations and, where known, :math:`\log p(s_t, o_t \mid x_{<t}, a_t)` under
  the model and :math:`\log q_W` of what was sampled (``None`` when it samples from the model
  itself, :math:`q_W = p`, the usual case);
* **twist / progress** — a score of each extended particle: a binary progress
  :math:`\delta_t \in \{0, 1\}` (NeSyFS) and/or a log-potential :math:`\log\psi_t(x_{\le t})`
  (twisted SMC; at :math:`t = H` this is the terminal potential :math:`\log\phi`).

Each component is called **once per planning step with the whole batch** of N particles, so a
language-model backend can batch (DESIGN.md, "Data flow of one NeSyFS step").  A batch of
particles is either a JAX pytree whose leaves share a leading axis N (toy POMDPs: vectorised,
jit-able) or a Python ``list`` of N objects (a knowledge graph plus history, for language
agents).  A batch of actions or observations is likewise an array with leading axis N or a list
of N items.  Components must not mutate the particles they receive: after resampling several
entries of a list batch may be the same object (copy on write).

This module imports only JAX; it must not import ``smcplan.agents``, ``smcplan.eval`` or
``smcplan.cli``.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax

from smcplan.errors import SmcplanError

__all__ = [
    "Batch",
    "Proposed",
    "Transition",
    "Score",
    "Proposal",
    "WorldModel",
    "Twist",
    "PlanningError",
    "ComponentError",
]

Batch = Any
"""A batch of N particles, actions or observations: a pytree with leading axis N, or a list."""


class PlanningError(SmcplanError, ValueError):
    """Bad planner input or a component that broke its contract (names the value and the fix)."""


class ComponentError(PlanningError, TypeError):
    """A proposal, world model or twist of the wrong kind: neither a built-in name nor a callable,
    a class where an instance is meant, a callable whose signature cannot take the planner's call,
    or one that returned the wrong type.  Also a ``TypeError`` (and, as a
    :class:`PlanningError`, a ``ValueError``); the message names the argument, the value and the
    call the planner makes."""


class Proposed(NamedTuple):
    """What a :class:`Proposal` returns for N particles.

    ``actions``: N actions (int array (N,) for POMDPs, ``list[str]`` for text agents);
    ``log_q``: (N,) :math:`\\log q(a_t \\mid x_{<t})`;
    ``log_p``: (N,) :math:`\\log p_0(a_t \\mid x_{<t})` under the target's prior policy, or
    ``None`` when the proposal *is* the prior (:math:`q = p_0`, the ratio cancels).  Under
    ``weighting="twisted"`` the step's log-weight gains ``log_p - log_q`` (nothing when
    ``log_p`` is ``None``); under ``"nesyfs"`` ``log_q`` only breaks ties (``tie_break``).
    """

    actions: Batch
    log_q: jax.Array
    log_p: jax.Array | None = None


class Transition(NamedTuple):
    """What a :class:`WorldModel` returns for N particles and their actions.

    ``particles``: the N extended particles :math:`x_{\\le t}` (new objects, never mutated
    inputs); ``observations``: N observations; ``log_p``: (N,) model log-probability of the
    sampled transition where known, else ``None``; ``log_q``: (N,) log-density under which the
    transition was actually sampled, or ``None`` when it was sampled from the model (:math:`q_W
    = p`).  Twisted weighting uses :math:`\\log p - \\log q_W` when ``log_q`` is given.
    """

    particles: Batch
    observations: Batch
    log_p: jax.Array | None = None
    log_q: jax.Array | None = None


class Score(NamedTuple):
    """What a :class:`Twist` returns for N extended particles.

    ``delta``: (N,) binary progress :math:`\\delta_t \\in \\{0, 1\\}` (needed by
    ``weighting="nesyfs"``); ``log_psi``: (N,) :math:`\\log\\psi_t(x_{\\le t})`, the terminal
    :math:`\\log\\phi` at :math:`t = H` (needed by ``weighting="twisted"``).  Either may be
    ``None`` when the weighting in use does not need it.
    """

    delta: jax.Array | None = None
    log_psi: jax.Array | None = None


@runtime_checkable
class Proposal(Protocol):
    """``proposal(key, particles, t, horizon) -> Proposed``: one action per particle.

    ``t`` is the planning step (1-based) and ``horizon`` the planning horizon H.  Any function
    or object with this call is one (the text ``plan()`` takes it as ``proposal=``:
    :mod:`smcplan.planning.custom`).
    """

    def __call__(self, key: jax.Array, particles: Batch, t: int, horizon: int) -> Proposed: ...


@runtime_checkable
class WorldModel(Protocol):
    """``world_model(key, particles, actions, t, horizon) -> Transition``: one transition each
    (the text ``plan()`` takes any such function or object as ``world_model=``:
    :mod:`smcplan.planning.custom`)."""

    def __call__(
        self, key: jax.Array, particles: Batch, actions: Batch, t: int, horizon: int
    ) -> Transition: ...


@runtime_checkable
class Twist(Protocol):
    """``twist(key, particles, t, horizon) -> Score``: progress and/or log-potential of each
    extended particle :math:`x_{\\le t}`; at ``t == horizon`` the log-potential is terminal
    (the text ``plan()`` takes any such function or object as ``twist=``:
    :mod:`smcplan.planning.custom`)."""

    def __call__(self, key: jax.Array, particles: Batch, t: int, horizon: int) -> Score: ...
