"""What the environment says about one imagined step, shared by the text planner's modules.

Imports nothing from smcplan; never agents, eval or cli.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Outcome", "DONE_ACTION"]

#: The action a particle whose episode has ended "takes" (it stays as it is).
DONE_ACTION = "(done)"


class Outcome(NamedTuple):
    r"""What the environment said about one imagined step, one per step in
    :attr:`TextParticle.outcomes <smcplan.planning.text_particle.TextParticle.outcomes>`.

    The simulator world model fills it from the environment copy's reply; the LM and learned
    world models leave the defaults (the score carried over, nothing else known); your own
    world model passes one to ``particle.extend(..., outcome=Outcome(...))`` where it knows
    (the ``env`` twist reads ``gain``, ``won`` and ``lost``; a particle is ``done`` once one of
    its outcomes is).

    Attributes
    ----------
    score
        The episode's score after the step (the environment's own scale, e.g. 0..1 in
        TextWorldExpress).
    gain
        ``score`` minus the score before the step (:math:`\Delta\mathrm{score}_t`).
    won
        The step won the episode.
    lost
        The step ended the episode without winning (not by the step limit).
    done
        The episode ended at this step (won, lost or truncated); later proposals give the
        particle :data:`DONE_ACTION` and it stays as it is.
    invalid
        The environment flagged the action as invalid (nothing happened).
    """

    score: float = 0.0
    gain: float = 0.0
    won: bool = False
    lost: bool = False
    done: bool = False
    invalid: bool = False
