"""The planner's result: the chosen action and everything needed to audit how it was chosen.

Imports only JAX and NumPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from smcplan.planning.batch import Batch, to_host_list

__all__ = ["PlanResult"]


@dataclass
class PlanResult:
    r"""Outcome of one call of :func:`smcplan.planning.tsmc` (or :func:`smcplan.plan`).

    Attributes
    ----------
    action
        The chosen first action :math:`a_1` (an int for POMDPs, a string for text agents).
    action_mass
        :math:`\sum_i W^H_i\,[a^i_1 = a]` for every first action :math:`a` carried by a final
        particle: the planner's estimate of the target's first-action marginal.
    chosen_index
        The particle :math:`j` whose first action was taken (``choice="sample"``), or ``None``
        (``choice="max_weight"``).
    particles, log_weights
        Final particles :math:`x^i_{1:H}` and normalised log-weights :math:`\log W^H_i`.
    first_actions
        :math:`a^i_1` of each final particle (traced through the ancestry).
    step_actions
        The N actions proposed at each step :math:`t = 1..H` (before that step's reweighting).
    ancestry
        int32 (H, N): :math:`A_t`, the parent of particle i at step t (resampling before step
        t; :math:`A_1` is the identity since all particles start as copies).
    resampled
        bool (H,): whether resampling ran before step t.
    ess
        (H,): :math:`1/\sum_i (W^t_i)^2` after the reweighting of step t.
    log_Z, log_Z_increments
        :math:`\log\hat Z = \sum_t \log\sum_i W^{t-1}_{A_i} w^i_t`.  Under
        ``weighting="twisted"`` this estimates :math:`\log\sum_{x_{1:H}}
        p_0(x_{1:H})\,\phi(x_{1:H})`
        (unbiased in :math:`\hat Z`); under ``"nesyfs"`` it estimates
        :math:`\log\mathbb E_q[e^{\lambda\sum_t\delta_t}]`.
    calls
        Batched invocations of each component: ``{"proposal": H, "world_model": H, "twist": H}``.
    weighting, horizon, num_particles
        The weighting rule, H and N of the run.
    config
        What ran: the settings of :func:`~smcplan.planning.tsmc.tsmc` (``lam``, ``resampling``,
        ``ess_threshold``, ``choice``, ``jit``, ``tie_break``) and each component's name
        (``proposal``, ``world_model``, ``twist``: a function's ``__name__`` or an object's
        class name); the text planner adds ``proposal_kind``, ``world_model_kind`` and
        ``progress`` (the built-in's name, or the user's component's name), ``custom`` (the
        roles the user supplied), ``oracle`` and, where they apply, ``world_model_path``,
        ``clones``, the rollout settings and ``informative``
        (:func:`~smcplan.planning.text_components.run_text_planner`).
    step_observations, step_delta, step_log_psi, step_log_weights
        Per step t: the N observations the world model returned, the twist's :math:`\delta_t`
        and :math:`\log\psi_t` (``None`` where the twist gave none) and the normalised
        :math:`\log W^t` after the reweighting (particle i of step t descends from particle
        ``ancestry[t][i]`` of step t-1).
    degenerate
        Every particle had the same progress at every step (the weights carry no information).
    tie_break
        The rule that chose the action because the run was degenerate (``"proposal"``), or
        ``None`` when the weights decided.
    """

    action: Any
    action_mass: dict[Any, float]
    chosen_index: int | None
    particles: Batch
    log_weights: jax.Array
    first_actions: Batch
    step_actions: list[Batch]
    ancestry: jax.Array
    resampled: jax.Array
    ess: jax.Array
    log_Z: float
    log_Z_increments: jax.Array
    calls: dict[str, int]
    weighting: str
    horizon: int
    num_particles: int
    config: dict[str, Any] = field(default_factory=dict)
    action_names: list[str] | None = None
    step_observations: list[Batch] = field(default_factory=list)
    step_delta: list[Any] = field(default_factory=list)
    step_log_psi: list[Any] = field(default_factory=list)
    step_log_weights: list[Any] = field(default_factory=list)
    degenerate: bool = False
    tie_break: str | None = None

    def action_name(self, action: Any = None) -> str:
        """Human-readable name of ``action`` (default: the chosen one)."""
        a = self.action if action is None else action
        if self.action_names is not None and isinstance(a, int | np.integer):
            return self.action_names[int(a)]
        return str(a)

    def to_dict(self, arrays: bool = False) -> dict[str, Any]:
        """JSON-safe summary for logs; ``arrays=True`` adds per-particle arrays (ancestry, final
        log-weights, first actions, step actions), which grow with N x H."""
        out: dict[str, Any] = {
            "action": self.action_name(),
            "action_mass": {self.action_name(a): float(m) for a, m in self.action_mass.items()},
            "chosen_index": self.chosen_index,
            "weighting": self.weighting,
            "horizon": self.horizon,
            "num_particles": self.num_particles,
            "log_Z": _finite_or_str(self.log_Z),
            "log_Z_increments": [
                _finite_or_str(x) for x in np.asarray(self.log_Z_increments).tolist()
            ],
            "ess": np.asarray(self.ess).tolist(),
            "resampled": [bool(x) for x in np.asarray(self.resampled).tolist()],
            "calls": dict(self.calls),
            "config": {
                k: (v if isinstance(v, int | float | str | bool | type(None)) else repr(v))
                for k, v in self.config.items()
            },
            "degenerate": bool(self.degenerate),
            "tie_break": self.tie_break,
        }
        if arrays:
            out["ancestry"] = np.asarray(self.ancestry).tolist()
            out["log_weights"] = [_finite_or_str(x) for x in np.asarray(self.log_weights).tolist()]
            out["first_actions"] = [self.action_name(a) for a in to_host_list(self.first_actions)]
            out["step_actions"] = [
                [self.action_name(a) for a in to_host_list(b)] for b in self.step_actions
            ]
        return out

    def trace(
        self, max_particles: int = 64, max_steps: int = 8, obs_chars: int = 160
    ) -> dict[str, Any]:
        """The whole run, step by step, for the viewer (schema: :mod:`smcplan.agents.record`).

        Kept in full for N <= ``max_particles`` and H <= ``max_steps``; beyond that the first
        particles and steps are kept and ``truncated`` is True.
        """
        n, h = min(self.num_particles, max_particles), min(len(self.step_actions), max_steps)
        anc = np.asarray(self.ancestry)
        ess = np.asarray(self.ess, dtype=np.float64)
        res = np.asarray(self.resampled)
        steps = []
        for t in range(h):
            lw = np.asarray(self.step_log_weights[t], dtype=np.float64)
            obs = (
                to_host_list(self.step_observations[t])
                if t < len(self.step_observations)
                else [""] * self.num_particles
            )
            steps.append({
                "t": t + 1,
                "actions": [self.action_name(a) for a in to_host_list(self.step_actions[t])[:n]],
                "observations": [_clip(o, obs_chars) for o in obs[:n]],
                "ancestors": [int(a) for a in anc[t][:n]],
                "delta": _floats(self.step_delta[t], n) if t < len(self.step_delta) else None,
                "log_psi": _floats(self.step_log_psi[t], n) if t < len(self.step_log_psi) else None,
                "log_weights": [_finite_or_str(x) for x in lw[:n].tolist()],
                "weights": np.exp(lw[:n]).tolist(),
                "ess": float(ess[t]),
                "resampled": bool(res[t]),
            })
        return {
            "steps": steps,
            "chosen_index": self.chosen_index,
            "action": self.action_name(),
            "truncated": bool(
                self.num_particles > max_particles or len(self.step_actions) > max_steps
            ),
        }

    def __repr__(self) -> str:
        mass = ", ".join(
            f"{self.action_name(a)}: {m:.3f}"
            for a, m in sorted(self.action_mass.items(), key=lambda kv: -kv[1])[:5]
        )
        return (
            f"PlanResult(action={self.action_name()!r}, weighting={self.weighting!r}, "
            f"N={self.num_particles}, "
            f"H={self.horizon}, log_Z={self.log_Z:.4g}, "
            f"min_ess={float(np.min(np.asarray(self.ess))):.3g}, mass={{{mass}}})"
        )


def _floats(row: Any, n: int) -> list[float | str] | None:
    if row is None:
        return None
    return [_finite_or_str(x) for x in np.asarray(row, dtype=np.float64)[:n].tolist()]


def _clip(text: Any, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _finite_or_str(x: float) -> float | str:
    """JSON has no inf/NaN: keep finite floats, spell the others ("-inf", "nan")."""
    x = float(x)
    return x if math.isfinite(x) else str(x)
