r"""What a twist carries per particle, so that its cost per planner step does not grow with the
path length.

A cumulative twist scores step t of particle :math:`x_{\le t}` from a summary :math:`S_{t-1}`
of the path before it (the place map, the places and entities seen, the doors the path opened,
...): :math:`(S_t, \delta_t) = f(S_{t-1}, a_t, o_t)`, :math:`S_0` = what the episode has seen,
and :math:`\log\psi_t = \sum_{s\le t}\delta_s`.  :class:`Incremental` keeps
:class:`Carried` :math:`(t, S_t, \delta_t, \log\psi_{t-1}, \log\psi_t)` in the particle's
``memo`` (:class:`~smcplan.planning.text_particle.TextParticle`: a dict per particle object,
keyed by the twist), and reads its parent's from ``parent_memo`` (the ``memo`` of the particle
it was :meth:`~smcplan.planning.text_particle.TextParticle.extend` ed from): one step of
:math:`f` per particle per planner step, O(1) in t.  A particle without its parent's summary (one
built by hand, or by ``dataclasses.replace``) is read from the root, as before, with the same
numbers.  The sum is the same left fold as ``sum(deltas)`` (from the int 0), so
:math:`\log\psi_t` is bit-identical to reading the whole path
(:mod:`smcplan.planning.twist_reread`, ``tests/planning/test_twist_carry.py``).

Imports the planner's component types only; never agents, eval or cli.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from smcplan.planning.components import Score

__all__ = ["Carried", "Incremental"]


class Carried(NamedTuple):
    """A twist's summary of a path of ``steps`` steps: its ``state`` :math:`S_t`, the latest
    ``delta`` :math:`\\delta_t` (0.0 at the root), the sum ``before`` it and the sum ``total``
    :math:`\\log\\psi_t` (left folds from the int 0, as ``sum`` adds)."""

    steps: int
    state: Any
    delta: float
    before: Any
    total: Any


class Incremental:
    r""":math:`\log\psi_t = \sum_{s\le t}\delta_s` from a summary carried per particle (module
    docstring).  A subclass defines :meth:`start` (:math:`S_0`) and :meth:`advance`
    (:math:`(S_{i+1}, \delta_{i+1})` from :math:`S_i` and the particle's step ``i``, 0-based);
    it never mutates a state (states are shared by the particles that share a parent)."""

    def start(self) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def advance(self, state: Any, particle: Any, i: int) -> tuple[Any, float]:  # pragma: no cover
        raise NotImplementedError

    def length(self, particle: Any) -> int:
        """The steps the twist reads (``len(particle.steps)``)."""
        return len(particle.steps)

    def memo_key(self) -> Any:
        """The key of this twist's summaries in a particle's ``memo`` (one per twist object)."""
        return self.__dict__.setdefault("_memo_key", object())

    def initial(self) -> Carried:
        """:math:`S_0`, built once per twist object."""
        if "_root" not in self.__dict__:
            self.__dict__["_root"] = Carried(0, self.start(), 0.0, 0, 0)
        return self.__dict__["_root"]

    def fold(self, particle: Any, steps: int) -> Carried:
        """The summary of the first ``steps`` steps of ``particle``, read from the root."""
        out = self.initial()
        for i in range(steps):
            state, delta = self.advance(out.state, particle, i)
            out = Carried(i + 1, state, delta, out.total, out.total + delta)
        return out

    def carried(self, particle: Any) -> Carried:
        """The particle's summary: its own if stored, else one step from its parent's, else
        read from the root; stored in its ``memo``."""
        n = self.length(particle)
        key = self.memo_key()
        memo = getattr(particle, "memo", None)
        hit = memo.get(key) if memo is not None else None
        if hit is not None and hit.steps == n:
            return hit
        if n == 0:
            return self.initial()
        parent = getattr(particle, "parent_memo", None)
        prev = parent.get(key) if parent is not None else None
        if prev is None or prev.steps != n - 1:
            prev = self.fold(particle, n - 1)
        state, delta = self.advance(prev.state, particle, n - 1)
        out = Carried(n, state, delta, prev.total, prev.total + delta)
        if memo is not None:
            memo[key] = out
        return out

    def deltas(self, particle: Any) -> list[float]:
        """:math:`\\delta_t` of each step of ``particle`` (read from the root)."""
        out, c = [], self.initial()
        for i in range(self.length(particle)):
            c_state, delta = self.advance(c.state, particle, i)
            c = Carried(i + 1, c_state, delta, c.total, c.total + delta)
            out.append(delta)
        return out

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
        per = [self.carried(p) for p in particles]
        return Score(
            jnp.asarray([c.delta for c in per]), jnp.asarray([float(c.total) for c in per])
        )
