"""NeSyFS's loop guard and plan following: two small memories of the agent's own steps.

* :class:`LoopGuard` — which steps (the agent's place, or the observation text where the graph
  reads no place, paired with the action) were executed in this episode and whether each
  failed.  A fast proposal equal to an executed step is a loop; a failed step stops counting
  once a later step in the same place brings an observation new to the episode (a door opened:
  what failed there may work now).
* :class:`PlanFollower` — the imagined trajectory of the planner's heaviest chosen particle,
  ``(expected observation, next action)`` pairs, followed while reality matches it.

Both are plain Python state with no model call; :class:`~smcplan.agents.nesyfs.NeSyFSAgent`
documents the options (``loop_guard``, ``follow_plan``) that switch them on.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LoopGuard", "PlanFollower", "place_key"]


def place_key(observation: str, place: str | None) -> str:
    """The loop guard's notion of "here": ``"place:<p>"`` for the agent's place as the graph
    reads it (rooms, receptacles), else the observation text itself."""
    return f"place:{place}" if place else observation


class LoopGuard:
    """The executed steps of an episode, ``(here, action) -> failed`` (module docstring)."""

    def __init__(self) -> None:
        self.reset("")

    def reset(self, observation: str) -> None:
        """Forget everything; ``observation`` is the episode's first."""
        self.pairs: dict[tuple[str, str], bool] = {}
        self.last: tuple[str, str] | None = None
        self.observations: set[str] = {observation.strip()}

    def executed(self, here: str, action: str) -> None:
        """The agent executes ``action`` at ``here``."""
        self.last = (here, action)
        self.pairs.setdefault(self.last, False)

    def remember_outcome(self, observation: str, failed: bool) -> None:
        """The last executed step led to ``observation``; ``failed``: the game's failure or
        no-op reply (or its ``invalid`` flag).  A new observation after a step that did not fail
        clears the failed steps recorded at the same place."""
        new = observation.strip() not in self.observations
        self.observations.add(observation.strip())
        if self.last is None:
            return
        if failed:
            self.pairs[self.last] = True
        elif new:
            where = self.last[0]
            for pair in [p for p, bad in self.pairs.items() if bad and p[0] == where]:
                del self.pairs[pair]

    def repeats(self, here: str, action: str) -> bool:
        """True when ``action`` at ``here`` was executed (and still counts)."""
        return (here, action) in self.pairs

    def loops_here(self, here: str, admissible: list[str]) -> list[str]:
        """The admissible actions that would repeat an executed step at ``here``."""
        return [a for a in admissible if (here, a) in self.pairs]


class PlanFollower:
    """The rest of a followed plan: ``(expected observation, next action)`` pairs in order."""

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = bool(enabled)
        self.plan: list[tuple[str, str]] = []

    def reset(self) -> None:
        """Drop the plan."""
        self.plan = []

    def next_action(self, observation: str, admissible: list[str]) -> tuple[str, int] | None:
        """The plan's next action and how many remain after it when ``observation`` is the one
        the particle imagined (exact text, stripped) and the action is admissible; else
        ``None``, and the plan is dropped."""
        if not self.plan:
            return None
        expected, action = self.plan.pop(0)
        if observation.strip() != expected.strip() or action not in admissible:
            self.plan = []
            return None
        return action, len(self.plan)

    def keep(self, result: Any) -> None:
        """Keep the imagined trajectory of the heaviest final particle ``j = argmax_i W^H_i``
        among those whose first action is ``result.action`` (nothing when disabled)."""
        self.plan = []
        particles = list(getattr(result, "particles", None) or [])
        if not self.enabled or not particles:
            return
        weights = [float(w) for w in result.log_weights]
        best = None
        for i, particle in enumerate(particles):
            steps = getattr(particle, "steps", ())
            if (
                steps
                and steps[0][0] == result.action
                and (best is None or weights[i] > weights[best])
            ):
                best = i
        if best is None:
            return
        steps = particles[best].steps
        # after executing a_k the real observation should be o_k; then a_{k+1} follows
        self.plan = [(steps[k][1], steps[k + 1][0]) for k in range(len(steps) - 1)]
