r"""The simulator world model (an **oracle**) and the LLM-free uniform proposal for text planning.

With ``world_model="simulator"`` every particle holds its own copy of the environment: the
planner is handed a **clone factory** (a callable returning an independent copy of the real
environment in its current state, e.g. the bound method ``env.clone`` of a
:class:`smcplan.envs.base.TextEnv`), and stepping a particle's copy gives the exact next
observation, the score and its gain, done/won/lost, and the particle's own admissible actions
for its next proposal:

.. math:: (o^i_t, s^i_t, \mathcal A^i_t) = \mathrm{step}(E^i_{t-1}, a^i_t),
   \qquad q_W = p \ (\text{the transition is the environment's own}).

Because the copies see the true hidden state (the map, where the coin is), this world model is an
oracle: results that use it are labelled "oracle world model" everywhere.

**Copy on write.**  Resampling shares particle objects (:func:`smcplan.planning.batch.take`);
before a step, every particle whose environment another particle of the batch also holds gets a
``clone()`` of it *before anything is stepped*, so two children never step one environment, and
the real environment is never touched (the root particle holds no environment: step 1 calls
the factory once per particle).  :meth:`SimulatorWorldModel.close` frees every copy it made
(the planner calls it after the run).

Imports the planner's own modules and, lazily, ``smcplan.memory``; never agents, eval or cli.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.planning.components import PlanningError, Proposed, Transition
from smcplan.planning.outcome import DONE_ACTION, Outcome

__all__ = [
    "SimulatorWorldModel",
    "UniformTextProposal",
    "check_clone_factory",
    "DONE_ACTION",
]


def _cloneable() -> str:
    """The environments whose adapters implement ``clone()``, as the env layer lists them."""
    from smcplan.envs.base import CLONEABLE_ENVS

    return ", ".join(CLONEABLE_ENVS)


def check_clone_factory(factory: Any, env: Any = None) -> Callable[[], Any]:
    """``factory`` if it is callable; a clear :class:`PlanningError` naming the environments that
    support the simulator world model otherwise (``env``: the environment it came from)."""
    if env is not None:
        clone = getattr(type(env), "clone", None)
        from smcplan.envs.base import BaseTextEnv

        if clone is None or clone is BaseTextEnv.clone:
            name = getattr(env, "name", type(env).__name__)
            raise PlanningError(
                f"world_model='simulator' needs an environment with clone(); {name!r} has none. "
                f"Environments that support it: {_cloneable()}; "
                "or use world_model='lm'"
            )
        factory = env.clone
    if not callable(factory):
        raise PlanningError(
            "world_model='simulator' needs a clone factory (e.g. env.clone); "
            f"got {type(factory).__name__}. "
            f"Environments that support it: {_cloneable()}"
        )
    return factory


def _seed(key: jax.Array) -> int:
    return int(jax.random.randint(key, (), 0, 2**31 - 1))


class UniformTextProposal:
    r"""LLM-free proposal: :math:`a^i_t \sim \mathrm{Uniform}(\mathcal A^i_{t-1})` over each
    particle's own admissible actions (the real set where a particle has none);
    :math:`\log q = -\log|\mathcal A^i|` and ``log_p=None`` (the proposal is the prior).

    Stratified over siblings: the particles that share a parent (after resampling, or the N
    copies of the root) take the actions of one random permutation of the parent's set in turn,
    so k siblings try min(k, |A|) distinct actions.  Each particle's marginal is still uniform
    (a uniformly random permutation), so the weights are unchanged in law; only the variance of
    the first-action estimate drops (every first action is tried once N >= |A|)."""

    def __init__(self, admissible: Sequence[str]) -> None:
        self.admissible = list(admissible)

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Proposed:
        rng = np.random.default_rng(_seed(key))
        actions, log_q = [], []
        order: dict[int, tuple[list[str], int]] = {}
        for p in particles:
            if getattr(p, "done", False):
                actions.append(DONE_ACTION)
                log_q.append(0.0)
                continue
            options = list(p.admissible) if getattr(p, "admissible", None) else self.admissible
            perm, used = order.get(id(p), (None, 0))
            if perm is None:
                perm = [options[i] for i in rng.permutation(len(options))]
            actions.append(perm[used % len(perm)])
            order[id(p)] = (perm, used + 1)
            log_q.append(-math.log(len(options)))
        return Proposed(actions, jnp.asarray(log_q))


class SimulatorWorldModel:
    r"""Steps each particle's own copy of the environment (module docstring).

    ``factory()``: a fresh copy of the real environment in its current state. ``update_graphs``:
    ``(particles, actions, observations, key) -> [(graph or None, triplets)]``, the particles'
    graphs after the observation (the planner passes the agent's triplet extractor).
    ``shortlist``: maps an
    admissible set to the actions a proposal may see (the agent's own shortlist), or ``None``.
    """

    #: It reads the real environment's copies: an oracle (``result.config["oracle"]``).
    oracle = True

    def __init__(
        self,
        factory: Callable[[], Any],
        update_graphs: Callable[..., list[Any]] | None = None,
        shortlist: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        self.factory = check_clone_factory(factory)
        self.update_graphs = update_graphs
        self.shortlist = shortlist
        self.made: list[Any] = []
        self.clones = 0

    def _fresh(self, source: Any | None) -> Any:
        try:
            env = self.factory() if source is None else source.clone()
        except NotImplementedError as err:
            raise PlanningError(
                f"world_model='simulator': the environment cannot copy its state ({err}); "
                f"environments that support it: {_cloneable()}"
            ) from None
        self.clones += 1
        self.made.append(env)
        return env

    def __call__(
        self, key: jax.Array, particles: list[Any], actions: list[str], t: int, horizon: int
    ) -> Transition:
        # copy on write: every holder of an environment but the first gets a clone, made
        # before any of them is stepped
        owner: dict[int, int] = {}
        envs: list[Any] = []
        for i, p in enumerate(particles):
            if p.done:
                envs.append(p.env)
            elif p.env is None:
                envs.append(self._fresh(None))
            elif id(p.env) in owner:
                envs.append(self._fresh(p.env))
            else:
                owner[id(p.env)] = i
                envs.append(p.env)
        observations, outcomes, admissible = [], [], []
        for p, env, a in zip(particles, envs, actions, strict=True):
            if p.done:
                observations.append(p.observation)
                outcomes.append(Outcome(score=p.score))
                admissible.append(())
                continue
            obs, _reward, done, info = env.step(a)
            score = float(info.get("score", p.score) or 0.0)
            won = bool(info.get("won", False))
            truncated = bool(info.get("truncated", False))
            observations.append(str(obs))
            outcomes.append(
                Outcome(
                    score=score,
                    gain=score - p.score,
                    won=won,
                    lost=bool(done and not won and not truncated),
                    done=bool(done),
                    invalid=bool(info.get("invalid", False)),
                )
            )
            acts = [] if done else list(info.get("admissible_actions") or env.admissible_actions())
            if self.shortlist is not None and acts:
                acts = list(self.shortlist(acts))
            admissible.append(tuple(acts))
        graphs = (
            self.update_graphs(particles, actions, observations, key)
            if self.update_graphs
            else [(p.kg, ()) for p in particles]
        )
        new = [
            p.extend(a, o, kg=kg, env=env, outcome=oc, admissible=adm, triplets=triples)
            for p, a, o, (kg, triples), env, oc, adm in zip(
                particles, actions, observations, graphs, envs, outcomes, admissible, strict=True
            )
        ]
        return Transition(new, observations)

    def close(self) -> None:
        """Close every copy this world model made (idempotent)."""
        made, self.made = self.made, []
        for env in made:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - best effort: a copy is being discarded
                pass
