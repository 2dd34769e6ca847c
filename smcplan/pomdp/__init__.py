"""Discrete POMDPs as probabilistic programs: exact and particle filters, an exact solver.

* :class:`DiscretePOMDP` — arrays ``T[a, s, s']`` (dense or sparse), ``O[a, s', o]``, ``R[s, a]``,
  ``b0[s]``, ``discount`` and names; validated.
* :class:`POMDPProgram`, :func:`compile_program` — a domain written once in NumPyro, compiled by
  enumeration to a :class:`DiscretePOMDP`.
* :func:`exact_update`, :func:`exact_filter` — the Bayes filter; :func:`particle_filter` — bootstrap
  and guided SMC on :mod:`smcplan.smc`.
* :func:`solve_exact` — finite-horizon expectimax, the reference for planners.
* :mod:`smcplan.pomdp.domains` — tiger, rocksample, household.

Layer ``pomdp`` (see docs/architecture.md): imports ``smcplan.smc``, jax, numpy and numpyro only;
no torch, transformers or outlines, nothing from planning/agents/envs/llm/memory.
"""

from smcplan.pomdp import domains
from smcplan.pomdp.exact import (
    ImpossibleObservationError,
    bayes_update,
    exact_filter,
    exact_update,
    filter_scan,
)
from smcplan.pomdp.model import (
    DenseTransition,
    DiscretePOMDP,
    POMDPValidationError,
    SparseTransition,
)
from smcplan.pomdp.particle import (
    ParticleDegeneracyError,
    ParticleFilterResult,
    optimal_proposal,
    particle_beliefs,
    particle_filter,
)
from smcplan.pomdp.program import POMDPProgram, ProgramError, compile_program, states_to_indices
from smcplan.pomdp.simulate import simulate
from smcplan.pomdp.solve import TreeTooLargeError, exact_q_values, solve_exact

__all__ = [
    "DiscretePOMDP",
    "DenseTransition",
    "SparseTransition",
    "POMDPValidationError",
    "POMDPProgram",
    "ProgramError",
    "compile_program",
    "states_to_indices",
    "exact_update",
    "exact_filter",
    "bayes_update",
    "filter_scan",
    "ImpossibleObservationError",
    "simulate",
    "particle_filter",
    "ParticleFilterResult",
    "ParticleDegeneracyError",
    "optimal_proposal",
    "particle_beliefs",
    "solve_exact",
    "exact_q_values",
    "TreeTooLargeError",
    "domains",
]
