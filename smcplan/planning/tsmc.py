r"""The planner: NeSyFS slow thinking and properly weighted twisted SMC, one algorithm.

N particles start as copies of the current state :math:`x_0` (for a POMDP: latent states drawn
from the belief) with equal weights.  For each step :math:`t = 1..H`:

1. **resample** (:math:`t \ge 2`): ancestors :math:`A_t \sim r(W^{t-1})` with any scheme of
   :mod:`smcplan.smc.resampling` (systematic by default) — every step (``ess_threshold >= 1``,
   the paper's rule), never (``<= 0``) or when :math:`\mathrm{ESS} < \kappa N` (adaptive);
   resampled weights are reset to :math:`1/N`;
2. **propose** :math:`a^i_t \sim q(\cdot \mid x^{A_i}_{<t})` — one batched proposal call;
3. **transition** :math:`(s^i_t, o^i_t)` from the world model — one batched call;
4. **score** :math:`\delta^i_t` and/or :math:`\log\psi_t(x^i_{\le t})` — one batched twist call;
5. **reweight** :math:`\log W^t_i \propto \log W^{t-1}_{A_i} + \log w^i_t` with

   * ``weighting="nesyfs"`` (NeSyFS, arXiv 2607.28942): :math:`w_t = e^{\lambda\delta_t}`, i.e.
     :math:`\omega \leftarrow \omega\, e^{\lambda\delta}`;
   * ``weighting="twisted"`` (Del Moral, Doucet & Jasra 2006; Zhao et al. 2024, "Probabilistic
     inference in language models via twisted SMC"):

     .. math:: w_t = \frac{p_0(a_t \mid x_{<t})\, p(s_t, o_t \mid x_{<t}, a_t)\, \psi_t(x_{\le t})}
                          {q(a_t \mid x_{<t})\, q_W(s_t, o_t \mid x_{<t}, a_t)\,
                          \psi_{t-1}(x_{<t})},
        \qquad \psi_0 \equiv 1,\ \psi_H = \phi,

     which makes :math:`(x^i_{1:H}, W^H_i)` properly weighted for the target
     :math:`\pi(x_{1:H}) \propto p_0(x_{1:H})\,\phi(x_{1:H})` whatever the twists, and
     :math:`\hat Z = \prod_t \sum_i W^{t-1}_{A_i} w^i_t` an unbiased estimate of its normaliser.

The evidence increment of step t is :math:`\log\sum_i W^{t-1}_{A_i} w^i_t` (from
:func:`smcplan.smc.weights.normalize`).  After H steps the planner returns the first action of
particle :math:`j \sim \mathrm{Cat}(W^H)` (``choice="sample"``; identical in law to the paper's
"resample, then :math:`j \sim \mathrm{Uniform}(1..N)`") or the first action with the largest
total weight :math:`\sum_i W^H_i [a^i_1 = a]` (``choice="max_weight"``).

Each component is called exactly H times, each time with the whole batch.  With pytree
particles and JAX components (e.g. ``equinox`` modules) ``jit=True`` compiles the whole H-step
loop; list particles (language agents) run eagerly.

Imports ``smcplan.smc`` only; must not import agents, eval or cli.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from smcplan.planning.batch import as_batch, batch_size, is_list_batch, take, to_host_list
from smcplan.planning.checks import CHOICES, WEIGHTINGS, validate_config
from smcplan.planning.checks import check_batch as _check_batch
from smcplan.planning.checks import check_returned as _check_returned
from smcplan.planning.checks import check_vector as _check_vector
from smcplan.planning.checks import component_name as _name
from smcplan.planning.choose import action_mass as _action_mass
from smcplan.planning.choose import degenerate as _degenerate
from smcplan.planning.choose import item as _item
from smcplan.planning.components import (
    Batch,
    PlanningError,
    Proposal,
    Proposed,
    Score,
    Transition,
    Twist,
    WorldModel,
)
from smcplan.planning.result import PlanResult
from smcplan.smc.errors import InvalidWeightsError
from smcplan.smc.validation import is_concrete
from smcplan.smc.weights import ess as _ess
from smcplan.smc.weights import normalize

__all__ = ["tsmc", "WEIGHTINGS", "CHOICES", "validate_config"]



class _Run(NamedTuple):
    particles: Batch
    log_weights: jax.Array
    first_actions: Batch
    step_actions: list[Batch]
    ancestry: jax.Array
    resampled: jax.Array
    ess: jax.Array
    log_Z_increments: jax.Array
    chosen: jax.Array
    calls: dict[str, int]
    step_observations: list[Batch]
    step_delta: list[jax.Array | None]
    step_log_psi: list[jax.Array | None]
    step_log_weights: list[jax.Array]
    step_increments: list[jax.Array]
    first_log_q: jax.Array


def _increment(
    weighting: str,
    lam: float,
    score: Score,
    proposed: Any,
    transition: Transition,
    log_psi_prev: jax.Array,
    n: int,
    t: int,
    names: dict[str, str],
) -> tuple[jax.Array, jax.Array]:
    """log w_t of every particle and the new log psi (for the next step's denominator)."""
    if weighting == "nesyfs":
        if score.delta is None:
            raise PlanningError(
                f"weighting='nesyfs' needs a progress delta, but twist {names['twist']} returned "
                "delta=None"
            )
        delta = _check_vector(score.delta, n, f"twist {names['twist']} delta", t)
        return lam * delta, log_psi_prev
    if score.log_psi is None:
        raise PlanningError(
            f"weighting='twisted' needs log_psi, but twist {names['twist']} returned log_psi=None"
        )
    log_psi = _check_vector(score.log_psi, n, f"twist {names['twist']} log_psi", t)
    log_w = log_psi - log_psi_prev
    log_q = _check_vector(
        proposed.log_q, n, f"proposal {names['proposal']} log_q", t, allow_neg_inf=False
    )
    if proposed.log_p is not None:
        log_w = (
            log_w
            + _check_vector(proposed.log_p, n, f"proposal {names['proposal']} log_p", t)
            - log_q
        )
    if transition.log_q is not None:
        if transition.log_p is None:
            raise PlanningError(
                f"world model {names['world_model']} returned log_q without log_p; twisted "
                "weighting needs both or neither"
            )
        wp = _check_vector(transition.log_p, n, f"world model {names['world_model']} log_p", t)
        wq = _check_vector(
            transition.log_q, n, f"world model {names['world_model']} log_q", t, allow_neg_inf=False
        )
        log_w = log_w + wp - wq
    # A particle already dead (psi_{t-1} = 0) stays dead instead of producing inf - inf.
    log_w = jnp.where(jnp.isneginf(log_psi_prev), -jnp.inf, log_w)
    return log_w, log_psi


def _run(
    proposal: Proposal,
    world_model: WorldModel,
    twist: Twist,
    particles: Batch,
    key: jax.Array,
    horizon: int,
    weighting: str,
    lam: float,
    resample_fn: Callable,
    ess_threshold: float,
) -> _Run:
    n = batch_size(particles, "initial particles")
    names = {"proposal": _name(proposal), "world_model": _name(world_model), "twist": _name(twist)}
    calls = {"proposal": 0, "world_model": 0, "twist": 0}
    log_n = math.log(n)
    log_w = jnp.full((n,), -log_n)
    log_psi_prev = jnp.zeros((n,))
    first_actions: Batch = None
    step_actions: list[Batch] = []
    ancestry, resampled, ess_hist, log_z_hist = [], [], [], []
    obs_hist: list[Batch] = []
    delta_hist: list[jax.Array | None] = []
    psi_hist: list[jax.Array | None] = []
    logw_hist: list[jax.Array] = []
    inc_hist: list[jax.Array] = []
    first_log_q = jnp.zeros((n,))
    identity = jnp.arange(n, dtype=jnp.int32)
    key, key_choice = jax.random.split(key)
    for t, step_key in enumerate(jax.random.split(key, horizon), start=1):
        k_res, k_prop, k_world, k_twist = jax.random.split(step_key, 4)
        # 1. resample (not before step 1: all particles start equally weighted)
        anc, did = identity, jnp.asarray(False)
        if t > 1 and ess_threshold > 0.0:
            # a Python bool when known (always, or eager adaptive); a traced bool under jit
            do: Any = True if ess_threshold >= 1.0 else _ess(log_w) < ess_threshold * n
            if is_concrete(do):
                do = bool(do)
            if do is not False:
                idx = resample_fn(k_res, jnp.exp(log_w), n).astype(jnp.int32)
                anc = idx if do is True else jnp.where(do, idx, identity)
                did = jnp.asarray(do)
                log_w = jnp.where(do, -log_n, log_w)
                particles = take(particles, anc)
                first_actions = take(first_actions, anc)
                log_psi_prev = log_psi_prev[anc]
        ancestry.append(anc)
        resampled.append(did)
        # 2. propose
        calls["proposal"] += 1
        proposed = _check_returned(
            proposal(k_prop, particles, t, horizon), Proposed, f"proposal {names['proposal']}", t
        )
        _check_batch(proposed.actions, n, f"proposal {names['proposal']} actions", t)
        _check_vector(
            proposed.log_q, n, f"proposal {names['proposal']} log_q", t, allow_neg_inf=False
        )
        if t == 1:
            first_actions = proposed.actions
            first_log_q = jnp.asarray(proposed.log_q, dtype=jnp.result_type(float))
        step_actions.append(proposed.actions)
        # 3. transition
        calls["world_model"] += 1
        transition = _check_returned(
            world_model(k_world, particles, proposed.actions, t, horizon),
            Transition,
            f"world model {names['world_model']}",
            t,
        )
        _check_batch(transition.particles, n, f"world model {names['world_model']} particles", t)
        _check_batch(
            transition.observations, n, f"world model {names['world_model']} observations", t
        )
        particles = transition.particles
        obs_hist.append(transition.observations)
        # 4. score
        calls["twist"] += 1
        score = _check_returned(
            twist(k_twist, particles, t, horizon), Score, f"twist {names['twist']}", t
        )
        # 5. reweight
        log_inc, log_psi_prev = _increment(
            weighting, lam, score, proposed, transition, log_psi_prev, n, t, names
        )
        try:
            log_w, log_z_inc = normalize(log_w + log_inc)
        except InvalidWeightsError as err:
            raise PlanningError(
                f"step {t}: every particle has weight zero under weighting={weighting!r} ({err}); "
                f"the twist {names['twist']} or the models gave probability 0 to all {n} "
                "continuations"
            ) from None
        ess_hist.append(_ess(log_w))
        log_z_hist.append(log_z_inc)
        fdt = jnp.result_type(float)
        delta_hist.append(None if score.delta is None else jnp.asarray(score.delta, dtype=fdt))
        psi_hist.append(None if score.log_psi is None else jnp.asarray(score.log_psi, dtype=fdt))
        logw_hist.append(log_w)
        inc_hist.append(log_inc)
    return _Run(
        particles=particles,
        log_weights=log_w,
        first_actions=first_actions,
        step_actions=step_actions,
        ancestry=jnp.stack(ancestry),
        resampled=jnp.stack(resampled),
        ess=jnp.stack(ess_hist),
        log_Z_increments=jnp.stack(log_z_hist),
        chosen=jax.random.categorical(key_choice, log_w),  # j ~ Cat(W^H), used by choice="sample"
        calls=calls,
        step_observations=obs_hist,
        step_delta=delta_hist,
        step_log_psi=psi_hist,
        step_log_weights=logw_hist,
        step_increments=inc_hist,
        first_log_q=first_log_q,
    )


_run_jit = eqx.filter_jit(_run)


def tsmc(
    particles: Batch,
    key: jax.Array,
    *,
    proposal: Proposal,
    world_model: WorldModel,
    twist: Twist,
    horizon: int,
    weighting: str = "nesyfs",
    lam: float = 1.0,
    resampling: str | Callable = "systematic",
    ess_threshold: float = 1.0,
    choice: str = "sample",
    jit: bool = False,
    action_names: list[str] | None = None,
    tie_break: str = "none",
) -> PlanResult:
    r"""Plan H steps ahead from N particles and choose a first action (module docstring: the math).

    Parameters
    ----------
    particles
        The N initial particles: a ``list`` (or ``tuple``, e.g. ``TextPlanner.particles``) of
        objects, or a pytree with leading axis N.
    key
        ``jax.random`` key; the same key gives the same plan.
    proposal, world_model, twist
        Components obeying :class:`~smcplan.planning.components.Proposal`,
        :class:`~smcplan.planning.components.WorldModel` and
        :class:`~smcplan.planning.components.Twist`; each is called H times with the whole batch.
    horizon
        H >= 1 planning steps.
    weighting
        ``"nesyfs"`` (:math:`\omega \leftarrow \omega e^{\lambda\delta}`) or ``"twisted"``.
    lam
        :math:`\lambda` of the NeSyFS weighting (unused by ``"twisted"``: twists carry their
        own scale).
    resampling
        A scheme name of :mod:`smcplan.smc.resampling` or a callable ``(key, weights, n) -> idx``.
    ess_threshold
        :math:`\kappa`: >= 1 resample before every step (the paper), <= 0 never, otherwise
        when :math:`\mathrm{ESS} < \kappa N`.
    choice
        ``"sample"`` (first action of :math:`j \sim \mathrm{Cat}(W^H)`, the paper's rule) or
        ``"max_weight"``.
    jit
        Compile the whole loop (pytree particles and JAX-traceable components only).
    action_names
        Names of integer actions, for :meth:`PlanResult.to_dict`.
    tie_break
        What decides when the run is **degenerate** (``result.degenerate``: under
        ``weighting="nesyfs"`` every particle had the same :math:`\delta_t` at every step; under
        ``"twisted"`` the same incremental weight), i.e. the weights carry no information about
        the imagined futures: ``"proposal"`` takes the step-1 action the proposal gave the
        largest :math:`\log q` (lowest particle index among equals; ``result.tie_break`` says
        so); ``"none"`` (default here; the text planner's :class:`~smcplan.planning.config.
        PlannerConfig` defaults to ``"proposal"``) applies ``choice`` as usual.
    """
    particles = as_batch(particles)
    resample_fn = validate_config(
        batch_size(particles, "initial particles"),
        horizon,
        weighting,
        lam,
        choice,
        ess_threshold,
        resampling,
        tie_break,
    )
    n = batch_size(particles, "initial particles")
    if jit and is_list_batch(particles):
        raise PlanningError(
            "jit=True needs pytree particles with a leading axis N; a list of objects runs with "
            "jit=False"
        )
    runner = _run_jit if jit else _run
    out = runner(
        proposal,
        world_model,
        twist,
        particles,
        key,
        int(horizon),
        weighting,
        float(lam),
        resample_fn,
        float(ess_threshold),
    )
    host_log_w, log_z_inc, chosen = jax.device_get(
        (out.log_weights, out.log_Z_increments, out.chosen)
    )
    log_z_inc = np.asarray(log_z_inc, dtype=np.float64)
    if not np.all(np.isfinite(log_z_inc)):
        bad = int(np.flatnonzero(~np.isfinite(log_z_inc))[0]) + 1
        raise PlanningError(
            f"step {bad}: every particle has weight zero (or a NaN weight) under "
            f"weighting={weighting!r}; "
            f"log Z increments {log_z_inc.tolist()}"
        )
    mass = _action_mass(out.first_actions, host_log_w)
    degenerate = _degenerate(weighting, out.step_delta, out.step_increments)
    used_tie_break = None
    if degenerate and tie_break == "proposal":
        used_tie_break = "proposal"
        first_q = np.asarray(out.first_log_q, dtype=np.float64)
        i0 = int(np.argmax(first_q))  # the first index among equals
        action = _item(out.step_actions[0], i0)
        if isinstance(action, list):
            action = tuple(action)
        finals = [
            a if not isinstance(a, list) else tuple(a) for a in to_host_list(out.first_actions)
        ]
        j = next((i for i, a in enumerate(finals) if a == action), None)
    elif choice == "sample":
        j = int(chosen)
        action = _item(out.first_actions, j)
        if isinstance(action, list):
            action = tuple(action)
    else:
        j = None
        action = max(mass.items(), key=lambda kv: kv[1])[0]
    return PlanResult(
        action=action,
        action_mass=mass,
        chosen_index=j,
        particles=out.particles,
        log_weights=out.log_weights,
        first_actions=out.first_actions,
        step_actions=out.step_actions,
        ancestry=out.ancestry,
        resampled=out.resampled,
        ess=out.ess,
        log_Z=float(log_z_inc.sum()),
        log_Z_increments=out.log_Z_increments,
        calls=dict(out.calls),
        weighting=weighting,
        horizon=int(horizon),
        num_particles=n,
        config={
            "lam": float(lam),
            "resampling": resampling
            if isinstance(resampling, str)
            else getattr(resampling, "__name__", repr(resampling)),
            "ess_threshold": float(ess_threshold),
            "choice": choice,
            "jit": bool(jit),
            "proposal": _name(proposal),
            "world_model": _name(world_model),
            "twist": _name(twist),
            "tie_break": tie_break,
        },
        action_names=action_names,
        step_observations=out.step_observations,
        step_delta=out.step_delta,
        step_log_psi=out.step_log_psi,
        step_log_weights=out.step_log_weights,
        degenerate=degenerate,
        tie_break=used_tie_break,
    )
