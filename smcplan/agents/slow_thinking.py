r"""NeSyFS slow thinking: the planner's text entry point, sized and wired for the agents.

After K rejections NeSyFS calls ``smcplan.plan(task, memory, admissible_actions, lm=...)``
(:func:`smcplan.planning.text_components.plan_text`): N particles, each a copy of the agent's
belief graph plus imagined (action, observation) steps, are propagated H steps with **one batched
model call per role for all particles** (proposal over the current admissible actions,
observation model + triplet update of each particle's graph copy, progress judge), reweighted
(``weighting="nesyfs"``: :math:`\omega \leftarrow \omega e^{\lambda\delta}`; ``"twisted"``:
properly weighted twisted SMC) and resampled; the first action of a surviving particle is
executed. :class:`SlowThinker` fixes the settings once per agent, builds the roles once, and
hands the planner the agent's own triplet extractor (so imagined observations are read the way
real ones are).

Without a graph (the ``context="history"`` / ``"belief"`` ablations) the particles carry the
current observation and their imagined steps only: the planner's text particles have no slot for
the agent's history or belief summary.

Imports ``smcplan.planning`` and (lazily) ``smcplan.llm``; never ``smcplan.eval`` /
``smcplan.cli``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from smcplan.agents.context import Context, clip_text
from smcplan.agents.extractors import Extractor
from smcplan.memory import KnowledgeGraph
from smcplan.planning import PlanResult
from smcplan.planning.tsmc import validate_config

__all__ = ["SlowThinker", "summarize"]


class SlowThinker:
    r"""Runs :func:`smcplan.plan` (text entry) from the agent's state; returns its
    :class:`~smcplan.planning.PlanResult`.

    ``num_particles`` N, ``horizon`` H, ``lam`` :math:`\lambda`, ``weighting``, ``resampling``,
    ``ess_threshold`` and ``choice`` go to the planner; ``observation_tokens`` bounds each
    predicted observation; ``retrieve_k``/``retrieve_limit`` are the particles' KG retrieval.
    Roles default to :class:`smcplan.llm.ActionProposal` (no thought, temperature 1: particles
    diversify), :class:`smcplan.llm.ObservationModel` and :class:`smcplan.llm.ProgressModel` on
    ``lm``; pass ``proposer``, ``observation_model`` or ``progress_model`` to replace them.
    """

    def __init__(
        self,
        lm: Any,
        *,
        num_particles: int = 4,
        horizon: int = 2,
        lam: float = 1.0,
        weighting: str = "nesyfs",
        resampling: str = "systematic",
        ess_threshold: float = 1.0,
        choice: str = "sample",
        observation_tokens: int = 32,
        retrieve_k: int = 2,
        retrieve_limit: int = 20,
        proposer: Any = None,
        observation_model: Any = None,
        progress_model: Any = None,
    ) -> None:
        validate_config(num_particles, horizon, weighting, lam, choice, ess_threshold, resampling)
        self.lm = lm
        self.config: dict[str, Any] = dict(
            num_particles=int(num_particles),
            horizon=int(horizon),
            lam=float(lam),
            weighting=weighting,
            resampling=resampling,
            ess_threshold=float(ess_threshold),
            choice=choice,
            retrieve_k=int(retrieve_k),
            retrieve_limit=int(retrieve_limit),
        )
        if proposer is None or observation_model is None or progress_model is None:
            from smcplan.llm import ActionProposal, ObservationModel, ProgressModel

            proposer = proposer or ActionProposal(lm, temperature=1.0, think=False)
            observation_model = observation_model or ObservationModel(
                lm, max_new_tokens=observation_tokens
            )
            progress_model = progress_model or ProgressModel(lm)
        self.proposer = proposer
        self.observation_model = observation_model
        self.progress_model = progress_model

    def __call__(
        self,
        ctx: Context,
        kg: KnowledgeGraph | None,
        admissible: Sequence[str],
        seed: int,
        extractor: Extractor | None = None,
    ) -> PlanResult:
        """Plan from the real observation ``ctx.observation`` and ``kg`` (the agent's graph,
        copied per particle, never written); ``extractor`` reads the imagined observations
        (``None``: the particles' graphs are not updated)."""
        from smcplan.planning import plan

        return plan(
            ctx.task,
            kg,
            list(admissible),
            lm=self.lm,
            observation=ctx.observation,
            key=int(seed),
            extractor=extractor if extractor is not None else "none",
            proposer=self.proposer,
            observation_model=self.observation_model,
            progress_model=self.progress_model,
            **self.config,
        )


def summarize(result: PlanResult, max_chars: int = 160) -> dict[str, Any]:
    """``result.to_dict()`` plus the imagined ``(action, observation)`` steps of the chosen
    particle (when the planner sampled one)."""
    out = result.to_dict()
    j = result.chosen_index
    if j is not None and isinstance(result.particles, list):
        steps = getattr(result.particles[j], "steps", ())
        out["imagined"] = [{"action": a, "observation": clip_text(o, max_chars)} for a, o in steps]
    return out
