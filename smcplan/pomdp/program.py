r"""POMDPs written as NumPyro probabilistic programs, and the compiler that turns them into arrays.

A :class:`POMDPProgram` is the source of truth of a domain.  The user writes four functions over a
*factored* state, a dict ``{factor: int array}`` (e.g. ``{"x": 3, "y": 1, "rocks": 0b1011}``):

* ``initial()``: a NumPyro model whose return value is :math:`s_0 \sim b_0`;
* ``transition(s, a)``: a NumPyro model returning :math:`s' \sim T(\cdot \mid s, a)`;
* ``observe(s', a)``: a NumPyro model with one sample site named ``"obs"`` whose value is the
  observation index, :math:`o \sim O(\cdot \mid s', a)` (other sites are allowed and marginalised);
* ``reward(s, a, s')``: a deterministic function; the compiled ``R[s, a]`` is its expectation
  over :math:`s'`.

Every random choice is a ``numpyro.sample`` site with a finite support (``Categorical``,
``Bernoulli``, ...), each site holding one value per batch element.  The functions must be
*vectorised*: the same code runs on scalars (simulation), on one batch axis (particles) and on a
grid of actions × states (compilation), so branch with ``jnp.where``, never with Python ``if``
on a state value.  This is the style NumPyro requires for enumeration anyway.

Compilation (:func:`compile_program`) is exhaustive enumeration of the discrete sites, done in
parallel as in NumPyro's enumerated inference (Obermeyer et al. 2019, "Tensor variable
elimination for plated factor graphs"): each site's support is placed on a fresh tensor dimension
to the left of the batch dimensions, log-probabilities broadcast-add, and the final shape is
flattened into :math:`K` = (product of supports) weighted outcomes per (action, state).  The state
space is the reachable closure of the support of :math:`b_0` under every action, ordered by the
mixed-radix code of the factors.  Everything is computed with float64 enabled.

The same program also drives the particle filter directly (:func:`smcplan.pomdp.particle_filter`
accepts a program): ``transition`` is run under ``numpyro.handlers.seed`` per particle, and the
observation weight is the log-density of the ``"obs"`` site conditioned on the received value.

Imports jax, numpy, numpyro and :mod:`smcplan.pomdp.model`; nothing from ``smcplan.smc`` or above.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.primitives import Messenger

from smcplan.errors import SmcplanError
from smcplan.pomdp.model import DENSE_LIMIT, DenseTransition, DiscretePOMDP, SparseTransition

__all__ = [
    "POMDPProgram",
    "ProgramError",
    "compile_program",
    "enumerate_program",
    "states_to_indices",
    "OBS_SITE",
]

State = dict[str, Any]

#: Name of the sample site that carries the observation in ``observe``.
OBS_SITE = "obs"


class ProgramError(SmcplanError, ValueError):
    """A POMDP program cannot be compiled (non-enumerable site, bad state value, missing
    ``obs``)."""


def _default_state_name(values: Mapping[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


@dataclass(frozen=True, eq=False)  # hashed by identity: usable as a static jit argument
class POMDPProgram:
    """A discrete POMDP written as NumPyro programs over a factored state (see the module
    docstring).

    Attributes:
        name: domain name, used in error messages.
        state_factors: ordered ``{factor: number of values}``; factor values are ints in
            ``[0, number)``.
        action_names, observation_names: the readable names; actions and observations are
            passed to the programs as int indices into these.
        initial, transition, observe, reward: the model (module docstring).
        discount: :math:`\\gamma`.
        state_name: ``{factor: int} -> str`` readable (and unique) name of a state.
        is_terminal: optional vectorised ``state -> bool array``; entering such a state ends an
            episode.
        metadata: domain facts copied to :attr:`DiscretePOMDP.metadata`.
    """

    name: str
    state_factors: Mapping[str, int]
    action_names: Sequence[str]
    observation_names: Sequence[str]
    initial: Callable[[], State]
    transition: Callable[[State, Any], State]
    observe: Callable[[State, Any], Any]
    reward: Callable[[State, Any, State], Any]
    discount: float
    state_name: Callable[[Mapping[str, int]], str] = field(default=_default_state_name)
    is_terminal: Callable[[State], Any] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def num_actions(self) -> int:
        return len(self.action_names)

    @property
    def num_observations(self) -> int:
        return len(self.observation_names)


class _Enumerate(Messenger):
    """Put each unobserved discrete site's support on its own dimension left of the batch dims."""

    def __init__(self, fn: Callable, batch_ndim: int, program: str) -> None:
        super().__init__(fn)
        self.batch_ndim = batch_ndim
        self.program = program
        self.sizes: list[int] = []
        self.values: dict[str, jax.Array] = {}
        self.log_prob: Any = 0.0

    def process_message(self, msg: dict) -> None:
        if msg["type"] == "plate":
            raise ProgramError(
                f"{self.program}: plates are not supported; write one sample site per random choice"
            )
        if msg["type"] != "sample":
            return
        name, d = msg["name"], msg["fn"]
        if msg["is_observed"]:  # numpyro.factor or a conditioned site: a weight, not a choice
            self.log_prob = self.log_prob + d.log_prob(msg["value"])
            return
        if not d.has_enumerate_support:
            raise ProgramError(
                f"{self.program}: site {name!r} has distribution {type(d).__name__} without "
                "finite support; "
                "compilation needs discrete sites (Categorical, Bernoulli, DiscreteUniform, ...)"
            )
        if d.event_shape != () or msg["kwargs"].get("sample_shape", ()) != ():
            raise ProgramError(
                f"{self.program}: site {name!r} must draw one scalar per batch element "
                "(event_shape=(), no sample_shape)"
            )
        i = len(self.sizes)
        if len(d.batch_shape) > self.batch_ndim + i:
            raise ProgramError(
                f"{self.program}: site {name!r} has batch shape {d.batch_shape} with more "
                "dimensions than the state "
                "batch; draw one value per batch element (use several sites instead of a batched "
                "one)"
            )
        support = jnp.reshape(d.enumerate_support(expand=False), (-1,))
        value = support.reshape((support.shape[0],) + (1,) * (i + self.batch_ndim))
        msg["value"] = value
        self.log_prob = self.log_prob + d.log_prob(value)
        self.sizes.append(int(support.shape[0]))
        self.values[name] = value


def _enumerate_traced(
    fn: Callable, args: tuple, batch_shape: tuple[int, ...], program: str
) -> tuple[Any, dict[str, Any], Any]:
    handler = _Enumerate(fn, len(batch_shape), program)
    out = handler(*args)
    full = tuple(reversed(handler.sizes)) + tuple(batch_shape)
    k = int(np.prod(handler.sizes)) if handler.sizes else 1

    def flat(x: Any) -> jax.Array:
        arr = jnp.broadcast_to(jnp.asarray(x), full).reshape((k,) + tuple(batch_shape))
        return jnp.moveaxis(arr, 0, -1)

    outputs = jax.tree_util.tree_map(flat, out)
    values = {name: flat(v) for name, v in handler.values.items()}
    return outputs, values, jnp.exp(flat(handler.log_prob))


def enumerate_program(
    fn: Callable, args: tuple, batch_shape: tuple[int, ...], program: str = "program"
) -> tuple[Any, dict[str, np.ndarray], np.ndarray]:
    """Run ``fn(*args)`` enumerating every discrete site in parallel (eagerly; see :func:`_jitted`).

    ``args`` broadcast to ``batch_shape``.  Returns ``(outputs, site_values, probs)`` where every
    array has shape ``batch_shape + (K,)``: the K joint assignments of the sites, the return value
    (a pytree) and site values under each, and their probabilities (summing to one over K for a
    normalised program).  Call with x64 enabled for float64 probabilities.
    """
    out = _enumerate_traced(fn, args, tuple(batch_shape), program)
    return jax.tree_util.tree_map(np.asarray, out)


def _jitted(
    fn: Callable, program: str
) -> Callable[[tuple, tuple[int, ...]], tuple[Any, dict[str, np.ndarray], np.ndarray]]:
    """:func:`enumerate_program` compiled once per batch shape (eager op-by-op dispatch would
    recompile every primitive for every new shape, which dominated compile time)."""
    compiled = jax.jit(
        lambda args, batch_shape: _enumerate_traced(fn, args, batch_shape, program),
        static_argnums=1,
    )

    def run(
        args: tuple, batch_shape: tuple[int, ...]
    ) -> tuple[Any, dict[str, np.ndarray], np.ndarray]:
        return jax.tree_util.tree_map(np.asarray, compiled(args, tuple(batch_shape)))

    return run


def _bucket(n: int) -> int:
    """Next power of two >= n (at least 64): frontier sizes are padded to few distinct shapes."""
    return max(64, 1 << (int(n) - 1).bit_length())


class _Codec:
    """Mixed-radix code of a factored state: code = sum_f value_f * stride_f (first factor most
    significant)."""

    def __init__(self, factors: Mapping[str, int], program: str) -> None:
        self.names = list(factors)
        self.sizes = np.asarray([int(factors[n]) for n in self.names], dtype=np.int64)
        if (self.sizes < 1).any():
            raise ProgramError(
                f"{program}: every state factor needs at least one value; got {dict(factors)}"
            )
        if float(np.prod(self.sizes.astype(np.float64))) >= 2**62:
            raise ProgramError(
                f"{program}: the factored state space {dict(factors)} is too large to index with "
                "int64"
            )
        self.strides = np.concatenate([np.cumprod(self.sizes[::-1])[::-1][1:], [1]]).astype(
            np.int64
        )
        self.program = program

    def encode(self, state: Mapping[str, Any], mask: np.ndarray | None = None) -> np.ndarray:
        missing = [n for n in self.names if n not in state]
        extra = [n for n in state if n not in self.names]
        if missing or extra:
            raise ProgramError(
                f"{self.program}: state has factors {sorted(state)}; expected {self.names}"
            )
        code = None
        for name, size, stride in zip(self.names, self.sizes, self.strides, strict=True):
            v = np.asarray(state[name]).astype(np.int64)
            check = v if mask is None else v[mask]
            if check.size and (check.min() < 0 or check.max() >= size):
                bad = int(check[(check < 0) | (check >= size)][0])
                raise ProgramError(
                    f"{self.program}: factor {name!r} took value {bad}, outside [0, {size})"
                )
            term = np.clip(v, 0, size - 1) * stride
            code = term if code is None else code + term
        return code

    def decode(self, codes: np.ndarray) -> dict[str, np.ndarray]:
        return {
            n: (codes // st) % sz
            for n, sz, st in zip(self.names, self.sizes, self.strides, strict=True)
        }


def _index(
    sorted_codes: np.ndarray, codes: np.ndarray, mask: np.ndarray, program: str
) -> np.ndarray:
    idx = np.clip(np.searchsorted(sorted_codes, codes), 0, sorted_codes.size - 1)
    bad = mask & (sorted_codes[idx] != codes)
    if bad.any():
        raise ProgramError(
            f"{program}: a reachable next state (code {int(codes[bad][0])}) is not in the state "
            "space"
        )
    return np.where(mask, idx, 0).astype(np.int32)


def _tables(
    program: POMDPProgram, states: State, actions: Any, batch_shape: tuple[int, int]
) -> tuple:
    """Traced: enumerated transition and observation on the (A, S) grid, r(s, a, s'), terminal mask.
    """
    nxt, _, t_p = _enumerate_traced(
        program.transition, (states, actions), batch_shape, f"{program.name}.transition"
    )
    _, o_sites, o_p = _enumerate_traced(
        program.observe, (states, actions), batch_shape, f"{program.name}.observe"
    )
    if OBS_SITE not in o_sites:
        raise ProgramError(
            f"{program.name}.observe has no sample site named {OBS_SITE!r}; sites: "
            f"{sorted(o_sites)}"
        )
    states3 = {k: v[..., None] for k, v in states.items()}
    r = program.reward(states3, actions[..., None], nxt)
    terminal = (
        jnp.zeros((), bool)
        if program.is_terminal is None
        else program.is_terminal({k: v[0] for k, v in states.items()})
    )
    return (nxt, t_p), (o_sites[OBS_SITE], o_p), r, terminal


def compile_program(
    program: POMDPProgram,
    *,
    transition_format: str = "auto",
    max_states: int = 2_000_000,
    atol: float = 1e-9,
) -> DiscretePOMDP:
    r"""Compile a program into a :class:`DiscretePOMDP` by exhaustive enumeration.

    1. Enumerate ``initial()``: the support of :math:`b_0` and its probabilities.
    2. States: the reachable closure :math:`S = \mathrm{supp}(b_0) \cup \{s' : T(s'|s,a) > 0,
       s \in S\}` by breadth-first search, each level one vectorised call over actions × states.
    3. ``transition`` on the grid (A, S) gives K weighted next states per row, stored as a
       :class:`SparseTransition` (ELLPACK) when :math:`K \le |S|/8` or a dense :math:`T` is over
       :data:`~smcplan.pomdp.model.DENSE_LIMIT`, else dense (``transition_format`` =
       ``"dense"``/``"sparse"`` forces one).
    4. ``observe`` on the grid (A, S') gives :math:`O[a, s', o]` from the ``"obs"`` site.
    5. :math:`R[s, a] = \sum_{s'} T(s'|s,a)\, r(s, a, s')`.

    Raises :class:`ProgramError` for non-enumerable sites, factor values out of range, a missing
    ``obs`` site or more than ``max_states`` reachable states.
    """
    if transition_format not in ("auto", "dense", "sparse"):
        raise ValueError(
            f"unknown transition_format {transition_format!r}; known: 'auto', 'dense', 'sparse'"
        )
    name = program.name
    codec = _Codec(program.state_factors, name)
    n_a = program.num_actions
    with jax.enable_x64(True):
        # 1. initial belief
        init_state, _, init_p = _jitted(program.initial, f"{name}.initial")((), ())
        run_transition = _jitted(program.transition, f"{name}.transition")
        init_p = np.asarray(init_p).reshape(-1)
        init_state = {k: np.asarray(v).reshape(-1) for k, v in init_state.items()}
        live = init_p > 0
        init_codes = codec.encode(init_state, live)[live]
        init_p = init_p[live]

        # 2. reachable closure
        actions_col = np.arange(n_a)[:, None]
        known = np.unique(init_codes)
        frontier = known
        while frontier.size:
            padded = np.concatenate(
                [frontier, np.full(_bucket(frontier.size) - frontier.size, frontier[0])]
            )
            comps = {k: v[None, :] for k, v in codec.decode(padded).items()}
            nxt, _, p = run_transition((comps, actions_col), (n_a, padded.size))
            mask = p > 0
            codes = codec.encode(nxt, mask)[mask]
            new = np.setdiff1d(np.unique(codes), known, assume_unique=True)
            known = np.union1d(known, new)
            frontier = new
            if known.size > max_states:
                raise ProgramError(f"{name}: more than max_states={max_states:,} reachable states")
        codes = known
        n_s = codes.size
        states = codec.decode(codes)

        # 3-5. transition, observation, reward and terminal tables in one compiled call
        tables = jax.jit(partial(_tables, program), static_argnums=2)
        (nxt, t_p), (o_sites, o_p), r, terminal = jax.tree_util.tree_map(
            np.asarray, tables({k: v[None, :] for k, v in states.items()}, actions_col, (n_a, n_s))
        )
        t_mask = t_p > 0
        next_idx = _index(codes, codec.encode(nxt, t_mask), t_mask, name)
        keep = t_mask.any(axis=(0, 1))
        keep[0] = keep[0] or not keep.any()
        next_idx, t_prob = next_idx[..., keep], np.where(t_mask, t_p, 0.0)[..., keep]
        k = next_idx.shape[-1]
        fmt = transition_format
        if fmt == "auto":
            fmt = "sparse" if (k * 8 <= n_s or n_a * n_s * n_s > DENSE_LIMIT) else "dense"
        if fmt == "sparse":
            transition: Any = SparseTransition(next_idx, t_prob)
        else:
            transition = DenseTransition(SparseTransition(next_idx, t_prob).dense())

        obs = o_sites.astype(np.int64)
        o_mask = o_p > 0
        n_o = program.num_observations
        if o_mask.any() and (obs[o_mask].min() < 0 or obs[o_mask].max() >= n_o):
            bad = int(obs[o_mask & ((obs < 0) | (obs >= n_o))][0])
            raise ProgramError(
                f"{name}.observe: site 'obs' took value {bad}, outside [0, {n_o}) ({n_o} "
                "observation names)"
            )
        O = np.zeros((n_a, n_s, n_o))  # noqa: N806, E741
        ai, si = np.meshgrid(np.arange(n_a), np.arange(n_s), indexing="ij")
        np.add.at(
            O, (ai[..., None], si[..., None], np.where(o_mask, obs, 0)), np.where(o_mask, o_p, 0.0)
        )

        # rewards: expectation of r(s, a, s') over s'
        r = np.broadcast_to(r.astype(np.float64), t_mask.shape)
        R = np.where(t_mask, t_p * r, 0.0).sum(-1).T  # noqa: N806
        terminal = None if program.is_terminal is None else np.broadcast_to(terminal, (n_s,))

    b0 = np.zeros(n_s)
    np.add.at(b0, np.searchsorted(codes, init_codes), init_p)
    names = [program.state_name({f: int(states[f][i]) for f in codec.names}) for i in range(n_s)]
    return DiscretePOMDP(
        transition,
        O,
        R,
        b0,
        program.discount,
        names,
        list(program.action_names),
        list(program.observation_names),
        terminal=terminal,
        factors=states,
        metadata=program.metadata,
        name=name,
        atol=atol,
    )


def states_to_indices(pomdp: DiscretePOMDP, states: Mapping[str, Any]) -> np.ndarray:
    """Map factored states (``{factor: int array}``) to state indices of a compiled POMDP.

    Raises ValueError naming the first combination of factor values that is not a state.
    """
    if pomdp.factors is None:
        raise ValueError(f"{pomdp.name} was not compiled from a program; it has no state factors")
    names = list(pomdp.factors)
    radix = {n: int(np.max(pomdp.factors[n])) + 1 for n in names}
    codec = _Codec(radix, pomdp.name)
    table = codec.encode(pomdp.factors)
    order = np.argsort(table)
    sorted_codes = table[order]
    arrays = {n: np.asarray(states[n]).astype(np.int64) for n in names}
    shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
    flat = {n: np.broadcast_to(a, shape).reshape(-1) for n, a in arrays.items()}
    for n in names:
        if flat[n].size and (flat[n].min() < 0 or flat[n].max() >= radix[n]):
            raise ValueError(f"factor {n!r} value outside the states of {pomdp.name}")
    codes = codec.encode(flat)
    pos = np.clip(np.searchsorted(sorted_codes, codes), 0, sorted_codes.size - 1)
    bad = sorted_codes[pos] != codes
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{ {n: int(flat[n][i]) for n in names} } is not a state of {pomdp.name}")
    return order[pos].reshape(shape)
