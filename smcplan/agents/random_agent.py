"""The floor every agent is compared with: a uniformly random admissible action.

Imports nothing from ``smcplan.llm``; randomness only through the seeded ``random.Random`` it owns.
"""

from __future__ import annotations

import random
from typing import Any

from smcplan.agents.base import Step
from smcplan.errors import check_int


class RandomAgent:
    """a_t ~ Uniform(admissible actions at t), independently per step; seeded, reproducible."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        seed = check_int(seed, "seed")
        self._seed = seed
        self._rng = random.Random(seed)

    def reset(self, task: str, observation: str, admissible_actions: list[str]) -> None:
        """Start an episode; the random stream continues across episodes (seeded at construction).
        """

    def act(self, observation: str, admissible_actions: list[str], info: dict[str, Any]) -> Step:
        if not admissible_actions:
            raise ValueError("RandomAgent.act: no admissible actions to choose from")
        action = self._rng.choice(list(admissible_actions))
        return Step(action=action, thought="", tag=None, meta={"llm_calls": 0, "llm_tokens": 0})

    def end_episode(self, won: bool, score: float) -> None:
        """No cross-episode state."""

    def episode_info(self) -> None:
        """Nothing beyond the step records."""
        return None
