r"""The particle's own place map, and the imagined reply it keeps: the one place where what the
agent's map already fixes is applied to a world model's reply.

A language-model world model (the untrained LM, or the learned one) imagines a reply
:math:`o^i_t` to action :math:`a^i_t`.  Some steps' outcomes are already fixed by the map
(:mod:`smcplan.planning.places`): a move into a door last seen closed fails, a move through a
known exit arrives in the known room, an open door is already open.  Particle i carries its map
:math:`M^i_t` (:attr:`~smcplan.planning.text_particle.TextParticle.maps`), starting from the
episode's map :math:`M_0` = :attr:`smcplan.planning.seen.Seen.layout`, and keeps

.. math:: \tilde o^i_t = c(M^i_{t-1}, a^i_t, o^i_t), \qquad
   M^i_t = \mathrm{read}(M^i_{t-1}, a^i_t, \tilde o^i_t)

where :math:`c` is the game home's :meth:`~smcplan.games.GameRules.imagined_reply` (the reply
the map decides, where the imagined one tells another event; :math:`o` itself otherwise, and
always for a home that fixes nothing) and read is :func:`~smcplan.planning.places.read_step`
with ``imagined=True``.  Everything downstream reads :math:`\tilde o`: the particle's steps, its
graph (updated from :math:`\tilde o`, :class:`~smcplan.planning.graph_update.GraphUpdate`), the
context of its next imagined step, its next proposal, and the twists.  :math:`c` is idempotent
(:math:`c(M, a, c(M, a, o)) = c(M, a, o)`, tested), so the twists' readers, which still apply
it to the steps of a particle a custom world model made, leave a kept reply as it is.

**The weights.**  :math:`c` is a deterministic function of the drawn reply, so the particle's
world-model factor :math:`p(o)/q(o)` is kept as drawn: for any :math:`f`,
:math:`\mathbb{E}_{o\sim q}[\tfrac{p(o)}{q(o)} f(c(o))] = \mathbb{E}_{o\sim p}[f(c(o))]`, so
under ``weighting="twisted"`` the particles are properly weighted for the world model
:math:`p \circ c^{-1}` (the model's replies pushed through the map's corrections), and the twist
:math:`\psi_t` is evaluated on :math:`\tilde o` and :math:`M_t`.  Drawn from the model itself
(:math:`q = p`), the factor is 1 either way.

The simulator world model's replies are real and are never corrected.  Imports the place map
and ``smcplan.games`` only; never agents, eval or cli.
"""

from __future__ import annotations

from typing import Any

from smcplan.games import GameRules, rules_for
from smcplan.planning.places import PlaceMap, read_step

__all__ = ["MapReplies"]


class MapReplies:
    r"""Keeps each imagined reply the map fixes, once, and carries each particle's map (module
    docstring).  ``layout``: the episode's map :math:`M_0` (``Seen.layout``); ``env_kind``: the
    game's home (a :class:`~smcplan.games.GameRules` or the env name that resolves it)."""

    def __init__(self, layout: PlaceMap | None = None, env_kind: GameRules | str = "auto") -> None:
        self.root = layout if layout is not None else PlaceMap()
        self.rules = rules_for(env_kind)

    def map_of(self, particle: Any) -> PlaceMap:
        r""":math:`M_t` of ``particle``: its last carried map where it carries one per step, else
        read from :math:`M_0` over its steps (a particle made by hand or by another world
        model)."""
        steps = getattr(particle, "steps", ())
        maps = getattr(particle, "maps", ())
        if not steps:
            return self.root
        if len(maps) == len(steps):
            return maps[-1]
        m = self.root
        for a, o in steps:  # read_step(imagined=True) applies the map's reply itself
            m = read_step(m, a, o, self.rules, imagined=True)
        return m

    def keep(self, particle: Any, action: str, reply: str) -> tuple[str, PlaceMap]:
        r"""``(kept reply, map after it)`` for ``particle`` taking ``action`` with imagined
        ``reply``: :math:`(\tilde o_t, M_t)`; a particle whose episode has ended keeps the reply
        and its map as they are."""
        m = self.map_of(particle)
        if getattr(particle, "done", False):
            return reply, m
        kept = self.rules.imagined_reply(m.doors, m.exits, m.place, action, reply)
        return kept, read_step(m, action, kept, self.rules, imagined=True)

    def __call__(
        self, particles: list[Any], actions: list[str], replies: list[str]
    ) -> list[tuple[str, PlaceMap]]:
        """:meth:`keep` for each particle of a batch."""
        return [self.keep(p, a, o) for p, a, o in zip(particles, actions, replies, strict=True)]
