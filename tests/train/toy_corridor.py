"""A toy text task whose best policy is known, a documented feature map, and exact metrics.

**The corridor**: rooms 0..``LENGTH``, the coin in the last; the agent starts in room 0, and
each step chooses one of :data:`ACTIONS` (``move forward`` +1, ``move back`` -1, clamped at the
ends; ``look around`` stays).  The episode is won on entering room ``LENGTH``, and ends after
``HORIZON`` steps.  Best policy: always ``move forward`` (wins surely in ``LENGTH`` steps).
With ``LENGTH = 3, HORIZON = 4`` a uniform policy over the actions wins with probability
``p^3 (1 + 3q + r) = 7/81`` (p = q = r = 1/3: three forwards first, or the one other action
being a look anywhere before the third forward or a back at the very start, clamped).
``always_win=True`` is the tie task: no coin can be reached in time (``LENGTH`` is set beyond
``HORIZON``), and every episode is won when its last step ends, so every outcome ties.

**Toy features** (:class:`ToyFeatures`, for the tests that must not depend on a model's random
geometry): :math:`\\phi(s, (g, a))` = one-hot of the tag (4), one-hot of the action (3), and the
tag's one-hot again when the action appears in the state text's ``Actions tried:`` line (4):
what a model would need to read off the prompt to learn "explore means a new action".

:func:`exact_metrics` enumerates every trajectory (12 candidates a step, ``HORIZON`` steps) and
returns the policy's exact success probability and expected explore steps, so the tests compare
probabilities, not samples.
"""

from __future__ import annotations

import os
import time

import numpy as np

from smcplan.agents.rlvmr_rewards import TAGS
from smcplan.llm.roles.policy_head import candidate_pairs, state_text

ACTIONS = ("move forward", "move back", "look around")
LENGTH, HORIZON = 3, 4
TASK = "Your task is to find the coin at the end of the corridor and take it."


def corridor_step(pos: int, t: int, action: str, always_win: bool) -> tuple[int, str, bool, bool]:
    """``(position, observation, won, done)`` after ``action`` at step ``t`` (0-based)."""
    length = HORIZON + 1 if always_win else LENGTH
    pos = min(pos + 1, length) if action == "move forward" else pos
    pos = max(pos - 1, 0) if action == "move back" else pos
    won = (t + 1 >= HORIZON) if always_win else pos == length
    done = won or t + 1 >= HORIZON
    return pos, ("You take the coin." if pos == length else f"You are in room {pos}."), won, done


class Corridor:
    """The corridor as a text env (``reset(seed)``, ``step(action)``, ``task``, ``close()``);
    ``hang_at_reset=n`` writes ``marker`` and sleeps at the n-th reset (the SIGKILL test)."""

    task = TASK

    def __init__(self, always_win: bool = False, hang_at_reset: int = 0, marker: str = ""):
        self.always_win, self.hang_at_reset, self.marker = always_win, hang_at_reset, marker
        self.resets = 0

    def _info(self, won: bool) -> dict:
        return {"admissible_actions": list(ACTIONS), "won": won, "score": float(won),
                "invalid": False}  # fmt: skip

    def reset(self, seed: int):
        self.resets += 1
        if self.hang_at_reset and self.resets == self.hang_at_reset:
            with open(self.marker, "w") as f:
                f.write(str(self.resets))
            time.sleep(600)  # killed here by the test (SIGKILL)
        self.pos, self.t = 0, 0
        return "You are in room 0.", self._info(False)

    def step(self, action: str):
        self.pos, obs, won, done = corridor_step(self.pos, self.t, action, self.always_win)
        self.t += 1
        return obs, float(won), done, self._info(won)

    def close(self) -> None:
        pass


class ToyFeatures:
    """The documented feature map of the module docstring (``dim`` 11, no model)."""

    dim = 2 * len(TAGS) + len(ACTIONS)
    name = "toy"
    layers = ()

    def __call__(self, state: str, pairs) -> np.ndarray:
        line = next(x for x in state.splitlines() if x.startswith("Actions tried: "))
        tried = set(line[len("Actions tried: ") :].split(", "))
        out = np.zeros((len(pairs), self.dim))
        for i, (g, a) in enumerate(pairs):
            out[i, TAGS.index(g)] = 1.0
            out[i, len(TAGS) + ACTIONS.index(a)] = 1.0
            if a in tried:
                out[i, len(TAGS) + len(ACTIONS) + TAGS.index(g)] = 1.0
        return out


def exact_metrics(head, features, always_win: bool = False, recent: int = 3) -> dict:
    """``{"success", "explore", "explore_new", "explore_new_rate"}``: the exact probability that
    ``head`` (temperature 1) wins, the expected explore steps, those on a new action, and their
    ratio (the share of explore steps the explore rule rewards)."""
    pairs = candidate_pairs(head.tags, ACTIONS)
    acc = {"success": 0.0, "explore": 0.0, "explore_new": 0.0}

    def visit(pos, t, obs, history, prob):
        p = np.exp(head.log_probs(features(state_text(TASK, history, obs, recent), pairs)))
        tried = {a for _, a, _ in history}
        for (g, a), pk in zip(pairs, p, strict=True):
            q = prob * float(pk)
            if g == "explore":
                acc["explore"] += q
                acc["explore_new"] += q if a not in tried else 0.0
            pos2, obs2, won, done = corridor_step(pos, t, a, always_win)
            if won:
                acc["success"] += q
            if not done:
                visit(pos2, t + 1, obs2, [*history, (g, a, obs2)], q)

    visit(0, 0, "You are in room 0.", [], 1.0)
    acc["explore_new_rate"] = acc["explore_new"] / acc["explore"]
    return acc


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
