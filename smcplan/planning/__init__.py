"""Planning layer: the TSMC planner and ``plan()``, generic over proposal / world model / twist.

* :func:`tsmc` — the algorithm (NeSyFS weighting or properly weighted twisted SMC);
* :func:`plan` — the drop-in slow thinker: ``plan(pomdp, belief, key, num_particles, horizon)``
  for toy POMDPs, ``plan(task, memory, admissible_actions, lm=...)`` for text agents;
* :class:`PlannerConfig`, :class:`Retrieval` — the text planner's settings, validated once;
* :class:`PlanResult` — chosen action, weight mass per first action, particles, log-weights,
  ancestry, ESS, log Z, calls per component;
* the component Protocols (:class:`Proposal`, :class:`WorldModel`, :class:`Twist`) and what
  they return (:class:`Proposed`, :class:`Transition`, :class:`Score`);
* POMDP components in :mod:`smcplan.planning.pomdp_components`, language-model components in
  :mod:`smcplan.planning.text_components` (it imports ``smcplan.llm`` only when it builds the
  default roles, so the toy path imports no torch).

Imports ``smcplan.smc`` and ``smcplan.pomdp`` (and, lazily, ``smcplan.llm`` and
``smcplan.memory``); never agents, eval or cli.
"""

from smcplan.planning.batch import replicate
from smcplan.planning.components import (
    PlanningError,
    Proposal,
    Proposed,
    Score,
    Transition,
    Twist,
    WorldModel,
)
from smcplan.planning.config import PROGRESS, WORLD_MODELS, PlannerConfig, Retrieval
from smcplan.planning.plan import plan, plan_pomdp
from smcplan.planning.result import PlanResult
from smcplan.planning.tsmc import CHOICES, WEIGHTINGS, tsmc

__all__ = [
    "tsmc",
    "plan",
    "plan_pomdp",
    "PlanResult",
    "PlanningError",
    "Proposal",
    "WorldModel",
    "Twist",
    "Proposed",
    "Transition",
    "Score",
    "replicate",
    "WEIGHTINGS",
    "CHOICES",
    "PlannerConfig",
    "Retrieval",
    "WORLD_MODELS",
    "PROGRESS",
]
