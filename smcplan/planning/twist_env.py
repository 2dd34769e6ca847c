r"""The environment twist ``progress="env"``: score and ending from each imagined step, plus an
optional Monte Carlo leaf value from random rollouts of the particle's own environment copy
(the math is in :mod:`smcplan.planning.progress`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from smcplan.planning.components import PlanningError, Score
from smcplan.planning.config import ROLLOUT_POLICIES
from smcplan.planning.twist_carry import Incremental

__all__ = ["EnvProgress"]


class EnvProgress(Incremental):
    r""":math:`\delta_t = \Delta\mathrm{score}_t + (1 + H - t)([\mathrm{won}_t] -
    [\mathrm{lost}_t])`, plus at t = H the Monte Carlo leaf value :math:`\hat V(x_H)` of
    ``rollouts`` M uniform rollouts of at most ``rollout_steps`` R steps, discounted by
    ``discount`` :math:`\gamma` (module docstring; M = 0: no leaf value).  ``horizon`` H is set
    by the planner at each call; ``rollout_env_steps`` counts the environment steps the
    rollouts took."""

    __name__ = "env"

    def __init__(
        self,
        rollouts: int = 0,
        rollout_steps: int = 25,
        discount: float = 0.95,
        policy: str = "uniform",
    ) -> None:
        if policy not in ROLLOUT_POLICIES:
            raise PlanningError(
                f"rollout_policy must be one of {', '.join(ROLLOUT_POLICIES)}; got {policy!r}"
            )
        self.horizon = 1
        self.policy = policy
        self.rollouts = int(rollouts)
        self.rollout_steps = int(rollout_steps)
        self.discount = float(discount)
        self.rollout_env_steps = 0

    def __call__(self, key: jax.Array, particles: list[Any], t: int, horizon: int) -> Score:
        self.horizon = int(horizon)
        per = [self.carried(p) for p in particles]
        deltas = [c.delta for c in per]
        totals = [c.total for c in per]
        if self.rollouts > 0 and t == self.horizon:
            keys = jax.random.split(key, len(particles))
            for i, (p, k) in enumerate(zip(particles, keys, strict=True)):
                deltas[i] = per[i].delta + self.leaf_value(k, p)
                totals[i] = per[i].before + deltas[i]
        return Score(jnp.asarray(deltas), jnp.asarray([float(x) for x in totals]))

    # the summary carried per particle (smcplan.planning.twist_carry): whether the episode ended
    def length(self, particle: Any) -> int:
        return len(particle.outcomes)

    def memo_key(self) -> Any:
        return (super().memo_key(), self.horizon)  # the ending term reads H

    def start(self) -> Any:
        return False

    def advance(self, state: Any, particle: Any, i: int) -> tuple[Any, float]:
        oc = particle.outcomes[i]
        end = (1 + self.horizon - (i + 1)) * (float(oc.won) - float(oc.lost))
        return state or oc.done, 0.0 if state else float(oc.gain) + end

    def leaf_value(self, key: jax.Array, particle: Any) -> float:
        r""":math:`\hat V(x_H)`: the mean discounted return of M uniform rollouts, each from its
        own ``clone()`` of the particle's environment, the first action drawn from the
        particle's own admissible actions (0 for a particle that has ended)."""
        if particle.done:
            return 0.0
        env = getattr(particle, "env", None)
        if env is None:
            raise PlanningError(
                "progress 'env' with rollouts > 0 rolls out the particle's own copy of the "
                "environment; it needs world_model='simulator'"
            )
        rng = np.random.default_rng(int(jax.random.randint(key, (), 0, 2**31 - 1)))
        total = 0.0
        for _ in range(self.rollouts):
            total += self._rollout(env.clone(), particle, rng)
        return total / self.rollouts

    def _rollout(self, env: Any, particle: Any, rng: np.random.Generator) -> float:
        ret, weight, score = 0.0, 1.0, float(particle.score)
        actions = list(particle.admissible or ())
        obs = particle.observation
        tried: dict[tuple[str, tuple[str, ...]], set[str]] = {}
        try:
            for _ in range(self.rollout_steps):
                if not actions:
                    actions = list(env.admissible_actions())
                if not actions:
                    break
                pool = actions
                if self.policy == "untried":
                    here = tried.setdefault((obs, tuple(actions)), set())
                    pool = [a for a in actions if a not in here] or actions
                action = pool[int(rng.integers(len(pool)))]
                if self.policy == "untried":
                    here.add(action)
                obs, _reward, done, info = env.step(action)
                self.rollout_env_steps += 1
                new = float(info.get("score", score) or 0.0)
                won = bool(info.get("won", False))
                lost = bool(done and not won and not info.get("truncated", False))
                ret += weight * (new - score + float(won) - float(lost))
                score, weight = new, weight * self.discount
                if done:
                    break
                actions = list(info.get("admissible_actions") or ())
        finally:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - best effort: a rollout copy is being discarded
                pass
        return ret
