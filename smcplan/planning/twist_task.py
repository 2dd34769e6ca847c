r"""The task-aware twist ``progress="task"``: the goal the task names, read on the episode's
place map (:mod:`smcplan.planning.places`), and the progress of a particle toward it.

**The goal** (:meth:`smcplan.games.GameRules.parse_goal`, :class:`smcplan.games.TaskGoal`): the
object the task names, where the task says it is, the receptacle it must go to and where that
is.  Stage :math:`s = 0` until an object of the goal's type is held, 1 while held, 2 once put
in/on the receptacle.  The **target** is the goal object's place (stage 0) or the receptacle's
(stage 1), from the map (nearest instance of the type) or else the task; with no goal (a task
the game's home does not parse) the twist explores.  The cost-to-go :math:`D_{M,s}` and the
frontier are :mod:`smcplan.planning.places`'.

**The progress** of a particle's step t.  A move is read on the map *after* the step
(:math:`M' = M_t`), so that going back and forth on an unchanged map nets zero and discovering
a dead end is not punished as moving away; a step that stays in place compares the cost before
and after it (:math:`M' = M_{t-1}`: opening a door turns a cost-2 door into a cost-1 room),
except when the stage changes (the target changes; the stage term counts it):

.. math:: \delta_t = \tfrac12\big(D_{M',s_t}(\ell_{t-1}) - D_{M_t,s_t}(\ell_t)\big)
   + (s_t - s_{t-1}) + [\text{explored}_t,\ \text{searching}]
   + [\text{target connected in } M_t \text{ and not in } M_{t-1}]
   - \tfrac14[\text{wasted}_t] - h\,[\text{took a thing the task does not name}]

(a step toward the target or the frontier earns 1/2, away loses 1/2; each stage reached (taking
the object, treating it, putting it) earns 1 and each stage undone (putting the object down
elsewhere, taking it back out) loses 1, so that the stage term telescopes and no cycle of steps
gains; *exploring* while the target is unknown earns 1 — entering an unvisited
place, or in a ``complete`` map opening the closed place the agent stands at; reading a
map or exploring that connects the target earns 1; a *wasted* step, one that moves nowhere and
adds no link, exit, sighting or opening and moves no goal object, loses 1/4, so that of two
paths reaching the same place the shorter one wins; taking a thing the task does not name loses
:math:`h` = the home's ``hold_penalty``, for a game whose agent holds one thing).  Steps after
the particle's episode ended score 0; :math:`\log\psi_t = \sum_{s\le t}\delta_s`.  LLM-free
and exact given the observations.  Each imagined step is read with ``imagined=True``: where the
map already decides the reply, that reply is read.  Each particle carries its map (one
:func:`~smcplan.planning.places.read_step` per planner step, :mod:`smcplan.planning.twist_carry`).

Imports the place map, ``smcplan.games`` (the protocol) and the planner's component types only.
"""

from __future__ import annotations

from typing import Any

from smcplan.games import GameRules, TaskGoal, rules_for
from smcplan.planning.outcome import DONE_ACTION
from smcplan.planning.places import (
    PlaceMap,
    cost_to_go,
    explored,
    kind_of,
    read_step,
    stage,
    wasted,
)
from smcplan.planning.twist_carry import Incremental

__all__ = ["TaskProgress", "step_progress"]


class TaskProgress(Incremental):
    r"""``progress="task"``: :math:`\delta_t` of the module docstring, from the episode's map
    ``root`` (:attr:`smcplan.planning.progress.Seen.layout`) and the particle's own steps;
    ``env_kind``: the game's home (or the env name :func:`smcplan.games.rules_for` resolves),
    which parses the task and reads the steps.  Carries per particle its map :math:`M_t` and
    whether its episode ended (:mod:`smcplan.planning.twist_carry`): a step compares the map
    before and after it."""

    __name__ = "task"

    def __init__(
        self, task: str, root: PlaceMap | None = None, env_kind: GameRules | str = "auto"
    ) -> None:
        self.rules = rules_for(env_kind)
        self.goal = self.rules.parse_goal(task)
        self.root = root or PlaceMap()
        self.env_kind = env_kind

    def start(self) -> Any:
        return self.root, False

    def advance(self, state: Any, particle: Any, i: int) -> tuple[Any, float]:
        m, done = state
        a, o = particle.steps[i]
        if done or a == DONE_ACTION:
            return state, 0.0
        new = read_step(m, a, o, self.rules, imagined=True)
        delta = step_progress(m, new, self.goal, self.rules)
        outcomes = getattr(particle, "outcomes", ())
        return (new, bool(i < len(outcomes) and outcomes[i].done)), delta


def step_progress(
    before: PlaceMap,
    after: PlaceMap,
    goal: TaskGoal | None,
    env_kind: GameRules | str = "auto",
) -> float:
    r""":math:`\delta_t` for one step from map ``before`` to map ``after`` (module docstring);
    :math:`h` is the ``hold_penalty`` of the game's home ``env_kind``."""
    cost_now, connected = cost_to_go(after, goal, after.place)
    cost_then, was_connected = cost_to_go(before, goal, before.place)
    advance = stage(after, goal) - stage(before, goal)
    # moving: both costs on the new map; staying: what the step taught about the same place
    cost_prev = (
        cost_to_go(after, goal, before.place)[0]
        if after.place != before.place
        else (None if advance else cost_then)
    )
    delta = 0.0
    if cost_now is not None and cost_prev is not None:
        delta += 0.5 * (cost_prev - cost_now)
    delta += float(advance)
    if not was_connected and explored(before, after):
        delta += 1.0
    if connected and not was_connected and advance == 0:
        delta += 1.0
    if wasted(before, after, goal):
        delta -= 0.25
    if goal is not None and any(kind_of(e) != goal.obj for e in after.held() - before.held()):
        delta -= rules_for(env_kind).hold_penalty  # a detour: the hands are now full
    return delta
