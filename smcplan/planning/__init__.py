"""Planning layer: the TSMC planner and ``plan()``, generic over proposal / world model / twist.

* :func:`tsmc` — the algorithm (NeSyFS weighting or properly weighted twisted SMC);
* :func:`plan` — the drop-in slow thinker: ``plan(pomdp, belief, key, num_particles, horizon)``
  for toy POMDPs, ``plan(task, memory, admissible_actions)`` for text agents (without
  ``config=``, its text defaults :data:`PLAN_TEXT_DEFAULTS`: the shipped learned world model,
  no oracle);
* :class:`PlannerConfig`, :class:`Retrieval` — the text planner's settings, validated once;
* :class:`PlanResult` — chosen action, weight mass per first action, particles, log-weights,
  ancestry, ESS, log Z, calls per component;
* the component Protocols (:class:`Proposal`, :class:`WorldModel`, :class:`Twist`) and what
  they return (:class:`Proposed`, :class:`Transition`, :class:`Score`); the text planner takes
  the user's own ones as plain callables or objects (:mod:`smcplan.planning.custom`: the calls,
  the math, the checks; a bad one raises :class:`ComponentError`);
* :class:`TextParticle` (one imagined future of a text agent: what a text component gets and a
  world model extends) and :class:`Outcome` (what the environment said about one imagined
  step);
* :class:`TextPlannerRoles` — the text planner built once (settings resolved, roles built;
  an agent holds one), whose ``.plan(task, memory, admissible, key=...)`` plans one decision;
  :func:`build_text_planner` / :func:`run_text_planner` — one decision in two steps (build
  the components from the inputs; run :func:`tsmc` on them with a key), a :class:`TextPlanner`
  in between; ``plan(task, ...)`` is both; all of them call :class:`TextPlannerRoles`;
* POMDP components in :mod:`smcplan.planning.pomdp_components`; the text planner's particle in
  :mod:`smcplan.planning.text_particle`, its graph update in :mod:`smcplan.planning.graph_update`,
  its language-model proposal and world model in :mod:`smcplan.planning.text_roles`, the
  planner object in :mod:`smcplan.planning.text_planner` and the functional entry points in
  :mod:`smcplan.planning.text_components` (which import ``smcplan.llm`` only when they build
  the default roles, so the toy path imports no torch).

Imports ``smcplan.smc`` and ``smcplan.pomdp`` (and, lazily, ``smcplan.llm`` and
``smcplan.memory``); never agents, eval or cli.
"""

from smcplan.planning.batch import replicate
from smcplan.planning.components import (
    ComponentError,
    PlanningError,
    Proposal,
    Proposed,
    Score,
    Transition,
    Twist,
    WorldModel,
)
from smcplan.planning.config import (
    PLAN_TEXT_DEFAULTS,
    PROGRESS,
    WORLD_MODELS,
    PlannerConfig,
    Retrieval,
    WorldModelKind,
)
from smcplan.planning.outcome import Outcome
from smcplan.planning.plan import plan, plan_pomdp
from smcplan.planning.result import PlanResult
from smcplan.planning.text_components import TextPlanner, build_text_planner, run_text_planner
from smcplan.planning.text_particle import TextParticle
from smcplan.planning.text_planner import TextPlannerRoles
from smcplan.planning.tsmc import CHOICES, WEIGHTINGS, tsmc

__all__ = [
    "tsmc",
    "plan",
    "plan_pomdp",
    "build_text_planner",
    "run_text_planner",
    "TextPlanner",
    "TextPlannerRoles",
    "PlanResult",
    "PlanningError",
    "ComponentError",
    "Proposal",
    "WorldModel",
    "Twist",
    "Proposed",
    "Transition",
    "Score",
    "TextParticle",
    "Outcome",
    "replicate",
    "WEIGHTINGS",
    "CHOICES",
    "PlannerConfig",
    "Retrieval",
    "WORLD_MODELS",
    "WorldModelKind",
    "PROGRESS",
    "PLAN_TEXT_DEFAULTS",
]
