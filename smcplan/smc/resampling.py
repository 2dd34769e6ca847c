r"""Resampling: turning N weighted particles into M equally weighted ones.

What it is
    Given normalised weights :math:`W_1..W_N`, a resampling scheme draws ancestor indices
    :math:`A_1..A_M` such that the offspring count :math:`O_i = \#\{j : A_j = i\}` is unbiased,
    :math:`\mathbb E[O_i] = M W_i`.  All schemes here are inverse-CDF methods: with
    :math:`C_i = \sum_{k\le i} W_k` and uniforms :math:`u_1 \le \dots \le u_M` in [0, 1), particle
    :math:`i` receives every :math:`u_j \in [C_{i-1}, C_i)`.  They differ only in the uniforms:

    ==============  ===============================================  ==========================
    scheme          uniforms                                          variance of :math:`O_i`
    ==============  ===============================================  ==========================
    multinomial     i.i.d. U(0,1), sorted                             :math:`M W_i (1-W_i)`
    stratified      :math:`u_j = (j + U_j)/M`, :math:`U_j` i.i.d.       ≤ multinomial
    systematic      :math:`u_j = (j + U)/M`, one :math:`U`              :math:`O_i\in\{\lfloor
    MW_i\rfloor,\lceil MW_i\rceil\}`
    residual        :math:`\lfloor M W_i \rfloor` copies, rest multinomial  ≤ multinomial
    ==============  ===============================================  ==========================

Which to choose
    Systematic is the default: cheapest, lowest variance in practice.  Stratified has a variance
    guarantee (never worse than multinomial) that systematic lacks in adversarial orderings.
    Multinomial is the textbook scheme that theory is stated for.  Residual is deterministic for
    the integer part (Liu & Chen 1998).  See Douc, Cappé & Moulines (2005) and Chopin &
    Papaspiliopoulos (2020), ch. 9.

How (O(N + M), no search)
    Systematic and stratified never search: the number of uniforms below :math:`C_i` has a closed
    form (systematic: :math:`\lceil M C_i - U \rceil`; stratified: :math:`\lfloor M C_i\rfloor` plus
    one Bernoulli comparison), giving cumulative offspring counts in one vectorised pass.  Indices
    are then recovered from the counts by a scatter-add and a cumulative sum, both O(N + M).
    Multinomial draws i.i.d. uniforms and binary-searches the CDF (O(M log N)); residual draws the
    random part's sorted uniforms from exponential spacings (O(M)) and merges them.

Signature (uniform for every scheme, blackjax-style)
    ``scheme(key, weights, num_samples) -> int32 indices of shape (num_samples,)``; ``weights`` are
    non-negative with a positive sum (renormalised internally), shape (N,).  ``num_samples`` must
    be static under ``jit``.  Bad weights raise :class:`~smcplan.smc.errors.InvalidWeightsError`
    outside ``jit``; inside ``jit`` use :func:`smcplan.smc.validation.checked`.

Schemes are registered in :data:`SCHEMES` by the :func:`register` decorator, so adding one is one
function.  Pure JAX; imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial, wraps

import jax
import jax.numpy as jnp

from smcplan.errors import UnknownNameError, check_int
from smcplan.smc.validation import check_key, check_weights

__all__ = [
    "multinomial",
    "systematic",
    "stratified",
    "residual",
    "SCHEMES",
    "register",
    "get",
    "offspring_counts",
]

Resampler = Callable[[jax.Array, jax.Array, int], jax.Array]
#: Largest ``num_samples`` (indices are int32).
MAX_SAMPLES = 2**31 - 2
SCHEMES: dict[str, Resampler] = {}


def register(name: str) -> Callable[[Resampler], Resampler]:
    """Decorator: publish the kernel ``fn`` as the scheme ``name`` in :data:`SCHEMES`.

    What is registered (and returned) is the checked entry point: outside ``jit`` it validates
    the key, the weights (:func:`~smcplan.smc.validation.check_weights`) and that
    ``num_samples`` is an integer in ``[1, MAX_SAMPLES]`` (``2.5`` is a type error), then
    calls ``fn``; a scheme added by a user is checked exactly like the built-in ones. A name
    that is already taken is refused (``ValueError``).
    """

    def deco(fn: Resampler) -> Resampler:
        if name in SCHEMES:
            raise ValueError(f"resampling scheme {name!r} is already registered; pick another name")

        @wraps(fn)
        def resample(key: jax.Array, weights: jax.Array, num_samples: int) -> jax.Array:
            key = check_key(key)
            weights = check_weights(weights)
            num_samples = check_int(num_samples, "num_samples", minimum=1, maximum=MAX_SAMPLES)
            return fn(key, weights, num_samples)

        resample.__name__ = resample.__qualname__ = name
        SCHEMES[name] = resample
        return resample

    return deco


def get(name_or_fn: str | Resampler) -> Resampler:
    """Look a scheme up by name (``"systematic"``, ...) or pass a callable through."""
    if callable(name_or_fn):
        return name_or_fn
    if name_or_fn not in SCHEMES:
        raise UnknownNameError(
            f"unknown resampling scheme {name_or_fn!r}; known: {', '.join(sorted(SCHEMES))}"
        )
    return SCHEMES[name_or_fn]


def _prefix_sum(x: jax.Array) -> jax.Array:
    """Inclusive prefix sum by a parallel associative scan.

    On XLA:CPU this is 3-7x faster than ``jnp.cumsum`` at N = 10^6 (measured; ``cumsum`` lowers to a
    reduce-window), and its pairwise summation is also more accurate for floats.
    """
    return jax.lax.associative_scan(jnp.add, x)


def _scaled_cdf(weights: jax.Array, num_samples: int) -> jax.Array:
    r""":math:`M C_i` (one prefix sum, one scale); callers force the last cumulative count to M."""
    w = jnp.asarray(weights)
    if not jnp.issubdtype(w.dtype, jnp.floating):
        w = w.astype(jnp.float32)
    cdf = _prefix_sum(w)
    return cdf * (num_samples / cdf[-1])


def _indices_from_cumulative_counts(cum_counts: jax.Array, num_samples: int) -> jax.Array:
    r"""Ancestor indices from nondecreasing cumulative counts :math:`K_i` (:math:`K_N = M`).

    :math:`A_j = \#\{i : K_i \le j\}`: scatter a one at each :math:`K_i`, then a prefix sum.
    Positions :math:`j \ge K_N` (when :math:`K_N < M`) get the sink index N.
    """
    marks = jnp.zeros(num_samples + 1, dtype=jnp.int32).at[cum_counts].add(1)
    return _prefix_sum(marks[:num_samples])


@register("systematic")
@partial(jax.jit, static_argnums=2)
def systematic(key: jax.Array, weights: jax.Array, num_samples: int) -> jax.Array:
    r"""Systematic resampling (Carpenter et al. 1999): :math:`u_j = (j + U)/M`, one :math:`U\sim
    U(0,1)`.

    Offspring counts are always :math:`\lfloor M W_i\rfloor` or :math:`\lceil M W_i\rceil`.  O(N +
    M)."""
    x = _scaled_cdf(weights, num_samples)
    u = jax.random.uniform(key, dtype=x.dtype)
    # #{j in 0..M-1 : (j + U) < M C_i} = ceil(M C_i - U), clipped to [0, M].
    cum = jnp.clip(jnp.ceil(x - u), 0, num_samples).astype(jnp.int32).at[-1].set(num_samples)
    return _indices_from_cumulative_counts(cum, num_samples)


@register("stratified")
@partial(jax.jit, static_argnums=2)
def stratified(key: jax.Array, weights: jax.Array, num_samples: int) -> jax.Array:
    r"""Stratified resampling (Kitagawa 1996): :math:`u_j = (j + U_j)/M`, :math:`U_j` i.i.d. U(0,1).
    O(N + M)."""
    x = _scaled_cdf(weights, num_samples)
    u = jax.random.uniform(key, (num_samples,), dtype=x.dtype)
    # u_j = (j + U_j)/M < C_i  <=>  j + U_j < x_i.  Every j < floor(x_i) counts; j = floor(x_i)
    # counts iff U_j < frac(x_i); no larger j counts.
    fl = jnp.floor(x)
    j = jnp.clip(fl.astype(jnp.int32), 0, num_samples - 1)
    extra = (fl < num_samples) & (u[j] < x - fl)
    cum = (
        jnp.clip(fl.astype(jnp.int32) + extra.astype(jnp.int32), 0, num_samples)
        .at[-1]
        .set(num_samples)
    )
    return _indices_from_cumulative_counts(cum, num_samples)


@register("multinomial")
@partial(jax.jit, static_argnums=2)
def multinomial(key: jax.Array, weights: jax.Array, num_samples: int) -> jax.Array:
    r"""Multinomial resampling: :math:`A_j \overset{iid}{\sim} \mathrm{Cat}(W)`; :math:`O \sim
    \mathrm{Mult}(M, W)`."""
    x = _scaled_cdf(weights, num_samples) / num_samples
    u = jax.random.uniform(key, (num_samples,), dtype=x.dtype)
    # A_j = #{i : C_i <= u_j}: i.i.d. inverse-CDF draws, O(M log N) by binary search.
    idx = jnp.searchsorted(x, u, side="right").astype(jnp.int32)
    return jnp.minimum(idx, weights.shape[0] - 1)


@register("residual")
@partial(jax.jit, static_argnums=2)
def residual(key: jax.Array, weights: jax.Array, num_samples: int) -> jax.Array:
    r"""Residual resampling (Liu & Chen 1998): :math:`\lfloor M W_i\rfloor` deterministic copies,
    the
    remaining :math:`M - \sum_i\lfloor M W_i\rfloor` drawn multinomially from :math:`M W_i - \lfloor
    M W_i\rfloor`."""
    w = jnp.asarray(weights)
    if not jnp.issubdtype(w.dtype, jnp.floating):
        w = w.astype(jnp.float32)
    mw = num_samples * w / jnp.sum(w)
    floor_counts = jnp.floor(mw).astype(jnp.int32)
    num_random = num_samples - jnp.sum(floor_counts)
    residual_cdf = _prefix_sum(mw - floor_counts)
    total = residual_cdf[-1]
    residual_cdf = (
        jnp.where(total > 0, residual_cdf / jnp.where(total > 0, total, 1.0), 1.0).at[-1].set(1.0)
    )
    # R = num_random sorted uniforms with a static shape: partial sums of exponentials normalised
    # by the (R+1)-th one are the order statistics of R uniforms; slots j >= R are set to +inf.
    s = _prefix_sum(jax.random.exponential(key, (num_samples + 1,), dtype=mw.dtype))
    u = jnp.where(jnp.arange(num_samples) < num_random, s[:-1] / s[num_random], jnp.inf)
    random_cum = jnp.searchsorted(u, residual_cdf, side="left").astype(jnp.int32)
    random_cum = random_cum.at[-1].set(num_random)
    return _indices_from_cumulative_counts(_prefix_sum(floor_counts) + random_cum, num_samples)


def offspring_counts(indices: jax.Array, num_particles: int) -> jax.Array:
    """:math:`O_i = \\#\\{j : A_j = i\\}` for ancestor indices ``indices``; shape (num_particles,).
    """
    return jnp.bincount(indices, length=num_particles)
