"""What the environment says about one imagined step, shared by the text planner's modules.

Imports nothing from smcplan; never agents, eval or cli.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Outcome", "DONE_ACTION"]

#: The action a particle whose episode has ended "takes" (it stays as it is).
DONE_ACTION = "(done)"


class Outcome(NamedTuple):
    """What the environment said about one imagined step (simulator world model only; the LM
    world model leaves the defaults): the score after it and its ``gain``, ``won``, ``lost``
    (ended without winning, not by the step limit), ``done`` and ``invalid``."""

    score: float = 0.0
    gain: float = 0.0
    won: bool = False
    lost: bool = False
    done: bool = False
    invalid: bool = False
