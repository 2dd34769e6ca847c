r"""The benchmark-free twist a learned value head must beat, scored on the head's own states.

A twist ranks states by its log-potential :math:`\log\psi(x_{\le t}) = \sum_{s \le t}
\delta_s` (:mod:`smcplan.planning.progress`).  To say whether the learned twist
(``progress="learned"``, :mod:`smcplan.train.value_head`) ranks states better than the twist
the planner uses without it, both score the *same* labelled states: the learned head reads the
state's text, the rule twist ``env+novelty`` folds its :math:`\delta` s along the **real path
that led to the state** in the shard (the episode's first observation, then its real steps, and
for a ``won`` or ``dead_end`` state the step or counterfactual branch that ended there):

.. math:: \log\psi_{\text{env+novelty}}(x_t) = \sum_{s=1}^{t}\Big(\Delta\mathrm{score}_s
   + [\mathrm{won}_s] - [\mathrm{lost}_s]\Big) + \sum_{s=1}^{t} \tfrac12\Big(
   \frac{1}{\sqrt{1 + n_s(\ell_s)}} + [E_s \not\subseteq \mathcal E_{s-1}]\Big),

with horizon :math:`H = t` so an ending counts 1 (:class:`~smcplan.planning.twist_env.
EnvProgress`, :class:`~smcplan.planning.twist_rules.NoveltyProgress`: the same objects the
planner calls), the places and entities read with no game knowledge (``env_kind="generic"``)
unless a home is named.  Both rankings are then compared on the state labels by AUC, with a
paired bootstrap that resamples **episodes** (a path's states move together).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smcplan.errors import InvalidArgumentError

__all__ = ["twist_log_psi", "compare_auc"]


def twist_log_psi(
    states: Sequence[dict[str, Any]], spec: str = "env+novelty", env_kind: str = "generic"
) -> list[float]:
    r""":math:`\log\psi` of the twist ``spec`` for each state of
    :func:`~smcplan.train.value_head.value_states` (called with ``history=True``: each state
    carries ``"root"``, the episode's first observation, and ``"history"``, the real steps to
    it as ``(action, observation, reward, won, lost, done)``); module docstring."""
    import jax

    from smcplan.planning.outcome import Outcome
    from smcplan.planning.progress import make_progress
    from smcplan.planning.seen import Seen
    from smcplan.planning.text_particle import TextParticle

    out = []
    for row in states:
        if "history" not in row or "root" not in row:
            raise InvalidArgumentError(
                "twist_log_psi: a state without its path; build the states with "
                "value_states(..., history=True)"
            )
        seen = Seen().after(row["root"], None, {}, env_kind)
        particle = TextParticle(kg=None, root_observation=row["root"])
        score = 0.0
        for action, observation, reward, won, lost, done in row["history"]:
            score += float(reward)
            outcome = Outcome(
                score=score, gain=float(reward), won=bool(won), lost=bool(lost), done=bool(done)
            )
            particle = particle.extend(action, observation, outcome=outcome)
        steps = len(particle.steps)
        if steps == 0:
            out.append(0.0)
            continue
        twist = make_progress(spec, seen=seen, env_kind=env_kind)
        result = twist(jax.random.key(0), [particle], steps, steps)
        out.append(float(result.log_psi[0]))
    return out


def compare_auc(
    scores: Sequence[float],
    baseline: Sequence[float],
    states: Sequence[dict[str, Any]],
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """``{"auc_difference", "ci95", "resamples", "unit"}``: AUC(``scores``) - AUC(``baseline``)
    on the states' labels, with a 95 % paired bootstrap interval over episodes
    (:func:`smcplan.train.critic.auc_difference` with each episode one unit)."""
    from smcplan.train.critic import auc_difference

    by_episode = [{"label": s["label"], "episode": s["episode"], "t": 0} for s in states]
    diff, ci = auc_difference(list(scores), list(baseline), by_episode, resamples, seed)
    return {"auc_difference": diff, "ci95": list(ci), "resamples": resamples, "unit": "episode"}
