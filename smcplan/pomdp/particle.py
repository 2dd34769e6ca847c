r"""Particle filters for discrete POMDPs, on the generic SMC step of :mod:`smcplan.smc`.

Given actions :math:`a_{1:T}` and observations :math:`o_{1:T}`, the filter targets
:math:`p(s_t \mid a_{1:t}, o_{1:t})` with N weighted particles (Gordon, Salmond & Smith 1993;
Doucet, de Freitas & Gordon 2001).  Per step, :func:`smcplan.smc.step` resamples adaptively
(ESS below ``ess_threshold`` × N), propagates and reweights:

* **bootstrap**: :math:`s'_i \sim T(\cdot \mid s_i, a_t)`, :math:`\log G_i = \log O(o_t \mid s'_i,
  a_t)`;
* **guided**: :math:`s'_i \sim q(\cdot \mid s_i, a_t, o_t)` from a user proposal returning
  :math:`\log q`, :math:`\log G_i = \log T(s'_i \mid s_i, a_t) + \log O(o_t \mid s'_i, a_t)
  - \log q(s'_i \mid s_i, a_t, o_t)`.  :func:`optimal_proposal` gives the locally optimal
  :math:`q \propto T\,O` (Doucet, Godsill & Andrieu 2000), whose weight
  :math:`p(o_t \mid s_i, a_t)` does not depend on :math:`s'_i`.

:math:`\hat Z_T = \prod_t \sum_i W^{t-1}_i G^i_t` is an unbiased estimate of
:math:`p(o_{1:T} \mid a_{1:T})` (Del Moral 2004); ``log_likelihood`` is its log.

The model is a :class:`~smcplan.pomdp.model.DiscretePOMDP` (particles are state indices) or a
:class:`~smcplan.pomdp.program.POMDPProgram` (particles are dicts of factor arrays; the NumPyro
``transition`` runs under ``numpyro.handlers.seed`` per particle and the weight is the log-density
of the ``"obs"`` site conditioned on :math:`o_t`; auxiliary sites in ``observe`` are drawn from
their prior, which keeps the weight unbiased).  The whole filter is one jitted ``lax.scan``.

Imports :mod:`smcplan.smc`, jax, numpyro and :mod:`smcplan.pomdp` modules; nothing above.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers

from smcplan import smc
from smcplan.errors import (
    ArgumentTypeError,
    InvalidArgumentError,
    SmcplanError,
    UnknownNameError,
    check_float,
    check_index,
    check_int,
)
from smcplan.pomdp.checks import check_sequence
from smcplan.pomdp.model import DenseTransition, DeviceArrays, DiscretePOMDP
from smcplan.pomdp.program import OBS_SITE, POMDPProgram
from smcplan.smc.validation import check_key

__all__ = [
    "ParticleFilterResult",
    "ParticleDegeneracyError",
    "particle_filter",
    "optimal_proposal",
    "particle_beliefs",
    "Proposal",
]

#: ``proposal(key, states (N,), action, observation) -> (next_states (N,), log_q (N,))``.
Proposal = Callable[[jax.Array, jax.Array, jax.Array, jax.Array], tuple[jax.Array, jax.Array]]


class ParticleDegeneracyError(SmcplanError, RuntimeError):
    """Every particle got zero weight at some step: no particle explains the observation."""

    def __init__(self, message: str, step: int, action: str, observation: str) -> None:
        super().__init__(message)
        self.step, self.action, self.observation = step, action, observation


class ParticleFilterResult(NamedTuple):
    """Output of :func:`particle_filter` over T steps with N particles.

    ``particles``: (T+1, N) int32 state indices (or a dict of such arrays per factor for a
    program), ``particles[0]`` drawn from :math:`b_0`; ``log_weights``: (T+1, N) normalised;
    ``ess``: (T,) ESS after each step's reweighting; ``resampled``: (T,) whether step t resampled
    before propagating; ``ancestors``: (T, N); ``log_likelihood_increments``: (T,)
    :math:`\\log \\sum_i W^{t-1}_i G^i_t`; ``log_likelihood``: their sum,
    :math:`\\log \\hat p(o_{1:T} \\mid a_{1:T})`.
    """

    particles: Any
    log_weights: jax.Array
    ess: jax.Array
    resampled: jax.Array
    ancestors: jax.Array
    log_likelihood_increments: jax.Array
    log_likelihood: jax.Array


def optimal_proposal(pomdp: DiscretePOMDP) -> Proposal:
    r"""The locally optimal proposal :math:`q(s' \mid s, a, o) \propto T(s' \mid s, a)\, O(o \mid
    s', a)`.

    With it the incremental weight is :math:`p(o \mid s, a) = \sum_{s'} T(s'|s,a) O(o|s',a)`, the
    minimum-variance choice given :math:`s` (Doucet, Godsill & Andrieu 2000, Prop. 2).  If
    :math:`p(o \mid s, a) = 0` it falls back to :math:`T` (the weight is then zero anyway).
    """
    arrays = pomdp.device()

    def proposal(
        key: jax.Array, states: jax.Array, action: jax.Array, observation: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        tr, obs_lik = arrays.transition, arrays.O[action, :, observation]
        if isinstance(tr, DenseTransition):
            candidates = jnp.broadcast_to(
                jnp.arange(tr.num_states), (states.shape[0], tr.num_states)
            )
            prior = tr.matrix[action][states]
        else:
            candidates = tr.next_state[action][states]
            prior = tr.prob[action][states]
        joint = prior * obs_lik[candidates]
        usable = joint.sum(-1, keepdims=True) > 0
        weights = jnp.where(usable, joint, prior)
        log_probs = jnp.log(weights / weights.sum(-1, keepdims=True))
        k = jax.random.categorical(key, log_probs, axis=-1)
        nxt = jnp.take_along_axis(candidates, k[:, None], axis=-1)[:, 0]
        # q(s') sums the probability of every candidate slot that leads to s' (repeated next states)
        log_q = jnp.log(
            jnp.sum(jnp.where(candidates == nxt[:, None], jnp.exp(log_probs), 0.0), axis=-1)
        )
        return nxt.astype(jnp.int32), log_q

    return proposal


def _sample_initial(key: jax.Array, b0: jax.Array, num_particles: int) -> jax.Array:
    """N i.i.d. draws from b0 by inverse CDF, O(N log S) (Gumbel-max would cost O(N S))."""
    cdf = jnp.cumsum(b0)
    u = jax.random.uniform(key, (num_particles,), dtype=cdf.dtype) * cdf[-1]
    idx = jnp.searchsorted(cdf, u, side="right")
    # never select a zero-probability state at the top end (rounding of the last cdf entries)
    last = b0.shape[0] - 1 - jnp.argmax(b0[::-1] > 0)
    return jnp.minimum(idx, last).astype(jnp.int32)


def _log(x: jax.Array) -> jax.Array:
    return jnp.log(x)


@partial(jax.jit, static_argnames=("num_particles", "resampling", "ess_threshold", "proposal"))
def _filter_arrays(
    arrays: DeviceArrays,
    key: jax.Array,
    actions: jax.Array,
    observations: jax.Array,
    num_particles: int,
    resampling: Any,
    ess_threshold: float,
    proposal: Proposal | None,
) -> tuple:
    key0, key_steps = jax.random.split(key)
    x0 = _sample_initial(key0, arrays.b0, num_particles)
    tr, O = arrays.transition, arrays.O  # noqa: N806, E741

    def body(state: smc.SMCState, inputs: tuple[jax.Array, jax.Array, jax.Array]):
        k, a, o = inputs
        if proposal is None:

            def propagate(kk: jax.Array, parents: jax.Array) -> jax.Array:
                return tr.sample(kk, parents, a)

            def log_weight(new: jax.Array, parents: jax.Array) -> jax.Array:
                return _log(O[a, new, o])

            new_state, info = smc.step(k, state, propagate, log_weight, resampling, ess_threshold)
            particles = new_state.particles
        else:

            def propagate(
                kk: jax.Array, parents: tuple[jax.Array, jax.Array]
            ) -> tuple[jax.Array, jax.Array]:
                return proposal(kk, parents[0], a, o)

            def log_weight(
                new: tuple[jax.Array, jax.Array], parents: tuple[jax.Array, jax.Array]
            ) -> jax.Array:
                return tr.log_prob(parents[0], a, new[0]) + _log(O[a, new[0], o]) - new[1]

            new_state, info = smc.step(k, state, propagate, log_weight, resampling, ess_threshold)
            particles = new_state.particles[0]
        return new_state, (particles, new_state.log_weights, info)

    if proposal is None:
        state0 = smc.init(x0)
    else:
        state0 = smc.init((x0, jnp.zeros(num_particles, arrays.O.dtype)))
    keys = jax.random.split(key_steps, actions.shape[0])
    _, (particles, log_weights, info) = jax.lax.scan(body, state0, (keys, actions, observations))
    return x0, state0.log_weights, particles, log_weights, info


def _seeded(fn: Callable, key: jax.Array, *args: Any) -> Any:
    return handlers.seed(fn, rng_seed=key)(*args)


def _obs_log_prob(
    program: POMDPProgram, key: jax.Array, state: dict, action: jax.Array, observation: jax.Array
) -> jax.Array:
    model = handlers.seed(
        handlers.condition(program.observe, data={OBS_SITE: observation}), rng_seed=key
    )
    trace = handlers.trace(model).get_trace(state, action)
    if OBS_SITE not in trace:
        raise ValueError(f"{program.name}.observe has no sample site named {OBS_SITE!r}")
    total = jnp.zeros(())
    for site in trace.values():
        if site["type"] == "sample" and site["is_observed"]:
            total = total + site["fn"].log_prob(site["value"])
    return total


@partial(jax.jit, static_argnames=("program", "num_particles", "resampling", "ess_threshold"))
def _filter_program(
    program: POMDPProgram,
    key: jax.Array,
    actions: jax.Array,
    observations: jax.Array,
    num_particles: int,
    resampling: Any,
    ess_threshold: float,
) -> tuple:
    key0, key_steps = jax.random.split(key)
    x0 = jax.vmap(lambda k: _seeded(program.initial, k))(jax.random.split(key0, num_particles))
    x0 = jax.tree_util.tree_map(lambda v: jnp.asarray(v, jnp.int32), x0)

    def body(state: smc.SMCState, inputs: tuple[jax.Array, jax.Array, jax.Array]):
        k, a, o = inputs
        k_step, k_obs = jax.random.split(k)

        def propagate(kk: jax.Array, parents: dict) -> dict:
            keys = jax.random.split(kk, num_particles)
            new = jax.vmap(lambda k1, s: _seeded(program.transition, k1, s, a))(keys, parents)
            return jax.tree_util.tree_map(lambda v: jnp.asarray(v, jnp.int32), new)

        def log_weight(new: dict, parents: dict) -> jax.Array:
            keys = jax.random.split(k_obs, num_particles)
            return jax.vmap(lambda k1, s: _obs_log_prob(program, k1, s, a, o))(keys, new)

        new_state, info = smc.step(k_step, state, propagate, log_weight, resampling, ess_threshold)
        return new_state, (new_state.particles, new_state.log_weights, info)

    state0 = smc.init(x0)
    keys = jax.random.split(key_steps, actions.shape[0])
    _, (particles, log_weights, info) = jax.lax.scan(body, state0, (keys, actions, observations))
    return x0, state0.log_weights, particles, log_weights, info


def _program_indices(program: POMDPProgram, values: Any, kind: str) -> np.ndarray:
    names = list(program.action_names if kind == "action" else program.observation_names)
    values = check_sequence(values, f"{kind}s")
    out: list[int] = []
    for v in values:
        if isinstance(v, str):
            if v not in names:
                raise UnknownNameError(
                    f"unknown {kind} {v!r} in {program.name}; known: "
                    f"{', '.join(map(repr, names[:12]))}"
                )
            out.append(names.index(v))
        else:
            idx = check_index(v, f"{kind}s[{len(out)}]", len(names), f"{kind} index")
            out.append(idx)
    return np.asarray(out, dtype=np.int32)


def particle_filter(
    model: DiscretePOMDP | POMDPProgram,
    actions: Sequence[int | str] | Any,
    observations: Sequence[int | str] | Any,
    num_particles: int,
    key: jax.Array,
    resampling: str | Callable = "systematic",
    ess_threshold: float = 0.5,
    proposal: Proposal | None = None,
) -> ParticleFilterResult:
    r"""Bootstrap (``proposal=None``) or guided particle filter; see the module docstring.

    Args:
        model: a :class:`DiscretePOMDP` or a :class:`POMDPProgram` (bootstrap only).
        actions, observations: length-T sequences of indices or names.
        num_particles: N.
        key: a ``jax.random`` key; same key, same run.
        resampling: a scheme name of :mod:`smcplan.smc.resampling` (``"systematic"``,
            ``"stratified"``, ``"multinomial"``, ``"residual"``) or a resampler function.
        ess_threshold: resample when ESS < ``ess_threshold`` × N (1 = every step, 0 = never).
        proposal: ``(key, states, action, observation) -> (next_states, log_q)``, e.g.
            :func:`optimal_proposal`; only with a :class:`DiscretePOMDP`.

    Raises:
        ParticleDegeneracyError: naming the first step, action and observation at which every
            particle has zero weight.
    """
    num_particles = check_int(
        num_particles, "num_particles", minimum=1, maximum=smc.resampling.MAX_SAMPLES
    )
    ess_threshold = check_float(ess_threshold, "ess_threshold", minimum=0.0, maximum=1.0)
    if isinstance(resampling, str) and resampling not in smc.resampling.SCHEMES:
        raise UnknownNameError(
            f"unknown resampling {resampling!r}; known: {', '.join(sorted(smc.resampling.SCHEMES))}"
        )
    if not isinstance(resampling, str) and not callable(resampling):
        raise ArgumentTypeError(
            f"resampling must be a scheme name or a resampler function; got {resampling!r}"
        )
    key = check_key(key)
    if isinstance(model, DiscretePOMDP):
        acts = model.action_indices(actions)
        obs = model.observation_indices(observations)
        action_names, obs_names = model.action_names, model.observation_names
    elif isinstance(model, POMDPProgram):
        if proposal is not None:
            raise InvalidArgumentError(
                "a guided proposal needs T(s'|s,a) pointwise: compile the "
                "program first (compile_program)"
            )
        acts = _program_indices(model, actions, "action")
        obs = _program_indices(model, observations, "observation")
        action_names, obs_names = tuple(model.action_names), tuple(model.observation_names)
    else:
        raise ArgumentTypeError(
            f"model must be a DiscretePOMDP or a POMDPProgram; got {type(model).__name__}"
        )
    if acts.shape != obs.shape:
        raise InvalidArgumentError(
            f"{acts.shape[0]} actions but {obs.shape[0]} observations; "
            "need one observation per action"
        )

    if isinstance(model, DiscretePOMDP):
        out = _filter_arrays(
            model.device(),
            key,
            jnp.asarray(acts),
            jnp.asarray(obs),
            num_particles,
            resampling,
            float(ess_threshold),
            proposal,
        )
    else:
        out = _filter_program(
            model,
            key,
            jnp.asarray(acts),
            jnp.asarray(obs),
            num_particles,
            resampling,
            float(ess_threshold),
        )
    x0, lw0, particles, log_weights, info = out
    increments = info.log_Z_increment
    bad = np.flatnonzero(~np.isfinite(np.asarray(increments)))
    if bad.size:
        t = int(bad[0])
        a, o = action_names[acts[t]], obs_names[obs[t]]
        raise ParticleDegeneracyError(
            f"step {t}: all {num_particles} particles have zero weight for observation {o!r} "
            f"after action {a!r} "
            "(the observation is impossible, or no particle reached a state that explains it: use "
            "more particles "
            "or a guided proposal)",
            step=t,
            action=a,
            observation=o,
        )
    all_particles = jax.tree_util.tree_map(
        lambda first, rest: jnp.concatenate([first[None], rest]), x0, particles
    )
    return ParticleFilterResult(
        particles=all_particles,
        log_weights=jnp.concatenate([lw0[None], log_weights]),
        ess=info.ess,
        resampled=info.resampled,
        ancestors=info.ancestors,
        log_likelihood_increments=increments,
        log_likelihood=jnp.sum(increments),
    )


def particle_beliefs(result: ParticleFilterResult, num_states: int) -> jax.Array:
    r"""Weighted empirical beliefs :math:`\hat b_t(s) = \sum_i W^i_t [s^i_t = s]`, shape (T+1, S).
    """
    particles = result.particles
    if isinstance(particles, dict):
        raise TypeError(
            "particles are factored states; map them with smcplan.pomdp.states_to_indices first"
        )
    weights = jnp.exp(result.log_weights)
    return jax.vmap(lambda x, w: jnp.zeros(num_states, w.dtype).at[x].add(w))(particles, weights)
