r"""The planner's settings, validated once, with one set of defaults: :class:`PlannerConfig`,
:class:`Retrieval`, and the names of the text planner's world models and progress twists.

Every text entry point (:func:`smcplan.planning.text_components.plan_text`, the agents'
:class:`~smcplan.agents.slow_thinking.SlowThinker` and ``NeSyFSAgent``) takes a
:class:`PlannerConfig` and a :class:`Retrieval` instead of loose keywords, so their defaults
cannot drift apart.  The toy-POMDP entry point :func:`smcplan.planning.plan.plan_pomdp` keeps its
own (N = 256, ``weighting="twisted"``): exact models are cheap and its lookahead needs many
uniform rollouts (docs/planning.md).

Imports only the planner's own modules; never agents, eval or cli.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from smcplan.planning.components import PlanningError

#: rollout policies of the ``env`` twist's Monte Carlo leaf value
#: (:class:`smcplan.planning.progress.EnvProgress`)
ROLLOUT_POLICIES = ("uniform", "untried")

__all__ = [
    "PlannerConfig",
    "Retrieval",
    "DEFAULT_RETRIEVAL",
    "WORLD_MODELS",
    "PROGRESS",
    "PROPOSALS",
    "TIE_BREAKS",
    "parse_progress",
]

#: ``"lm"``: the language model predicts each particle's next observation; ``"simulator"``: each
#: particle steps its own ``clone()`` of the environment (an oracle world model); ``"learned"``:
#: a model fine-tuned on environment transitions (``world_model_path``: a LoRA adapter folder or
#: a merged transformers folder, :mod:`smcplan.train.world_model`) predicts them, in the same
#: prompt as ``"lm"`` (not an oracle: it never sees the environment at planning time).
WORLD_MODELS = ("lm", "simulator", "learned")
#: Progress twists; a sum is written with ``+`` (``"env+novelty"``).
PROGRESS = ("lm", "env", "rlvmr", "novelty", "task")
#: The planner's action proposal: the language model over each particle's admissible actions,
#: or uniform over them (LLM-free).
PROPOSALS = ("lm", "uniform")
#: What decides when the weights carry no information (every particle's progress equal at every
#: step, ``degenerate=True``): ``"proposal"`` = the first action the proposal gave the highest
#: probability at step 1 (lowest particle index among equals); ``"none"`` = the choice rule as if
#: nothing were degenerate (a uniform draw under ``choice="sample"``).
TIE_BREAKS = ("proposal", "none")


class Retrieval(NamedTuple):
    r"""How a particle reads its knowledge graph: :math:`\tau = R(G, \eta)` with ``hops`` graph
    hops from the task's entities and at most ``limit`` facts
    (:meth:`smcplan.memory.KnowledgeGraph.retrieve`)."""

    hops: int = 2
    limit: int = 24

    def validated(self) -> Retrieval:
        for name, v in (("hops", self.hops), ("limit", self.limit)):
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "hops" else 1):
                raise PlanningError(
                    f"Retrieval.{name} must be an integer >= {0 if name == 'hops' else 1}; "
                    f"got {v!r}"
                )
        return self


#: The default :class:`Retrieval` (2 hops, 24 facts: the agents' own KG context).
DEFAULT_RETRIEVAL = Retrieval()


class PlannerConfig(NamedTuple):
    r"""The text planner's settings (one set of defaults, sized for SmolLM2-135M on 2 CPU cores).

    ``num_particles`` N (4) and ``horizon`` H (2); ``lam`` :math:`\lambda` of the NeSyFS weight
    :math:`\omega\leftarrow\omega e^{\lambda\delta}` (1.0); ``weighting`` ``"nesyfs"`` (the
    paper's rule) or ``"twisted"``; ``resampling`` a scheme of :mod:`smcplan.smc.resampling`;
    ``ess_threshold`` :math:`\kappa` (1.0: resample before every step, the paper's rule);
    ``choice`` ``"sample"`` (:math:`j\sim\mathrm{Cat}(W^H)`) or ``"max_weight"``; ``tie_break``
    (:data:`TIE_BREAKS`, ``"proposal"``); ``world_model`` (:data:`WORLD_MODELS`, ``"lm"``);
    ``world_model_path`` (the learned world model's adapter or model folder; only with
    ``world_model="learned"``);
    ``progress`` (:data:`PROGRESS` or a ``+``-sum, ``"lm"``); ``proposal`` (:data:`PROPOSALS`,
    ``"lm"``); ``observation_tokens`` bounds each predicted observation of the LM world model;
    ``rollouts`` M (0: off), ``rollout_steps`` R (25) and ``rollout_discount`` :math:`\gamma`
    (0.95): the ``env`` twist's Monte Carlo leaf value at step H, M rollouts of at most R steps
    on clones of each particle's environment, ``rollout_policy`` ``"uniform"`` or ``"untried"``
    (simulator world model only;
    :class:`smcplan.planning.progress.EnvProgress`).
    """

    num_particles: int = 4
    horizon: int = 2
    lam: float = 1.0
    weighting: str = "nesyfs"
    resampling: str = "systematic"
    ess_threshold: float = 1.0
    choice: str = "sample"
    tie_break: str = "proposal"
    world_model: str = "lm"
    progress: str = "lm"
    proposal: str = "lm"
    observation_tokens: int = 32
    rollouts: int = 0
    rollout_steps: int = 25
    rollout_discount: float = 0.95
    rollout_policy: str = "uniform"
    world_model_path: str | None = None

    def validated(self) -> PlannerConfig:
        """``self`` after checking every field (errors name the value and the valid ones)."""
        from smcplan.planning.checks import validate_config

        validate_config(
            self.num_particles,
            self.horizon,
            self.weighting,
            self.lam,
            self.choice,
            self.ess_threshold,
            self.resampling,
        )
        if self.tie_break not in TIE_BREAKS:
            raise PlanningError(
                f"unknown tie_break {self.tie_break!r}; known: {', '.join(TIE_BREAKS)}"
            )
        if self.world_model not in WORLD_MODELS:
            raise PlanningError(
                f"unknown world_model {self.world_model!r}; known: {', '.join(WORLD_MODELS)}"
            )
        learned = self.world_model == "learned"
        path = self.world_model_path
        if learned and (not isinstance(path, str) or not path.strip()):
            raise PlanningError(
                "world_model='learned' needs world_model_path= the adapter or model folder "
                "written by `smcplan train world-model --out DIR` (DIR/adapter); got "
                f"{path!r}"
            )
        if not learned and path is not None:
            raise PlanningError(
                f"world_model_path={path!r} is the learned world model's folder; it needs "
                f"world_model='learned' (got world_model={self.world_model!r})"
            )
        if self.proposal not in PROPOSALS:
            raise PlanningError(
                f"unknown proposal {self.proposal!r}; known: {', '.join(PROPOSALS)}"
            )
        parse_progress(self.progress)
        if (
            isinstance(self.observation_tokens, bool)
            or not isinstance(self.observation_tokens, int)
            or self.observation_tokens < 1
        ):
            raise PlanningError(
                f"observation_tokens must be an integer >= 1; got {self.observation_tokens!r}"
            )
        for name, low in (("rollouts", 0), ("rollout_steps", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise PlanningError(f"{name} must be an integer >= {low}; got {v!r}")
        g = self.rollout_discount
        if isinstance(g, bool) or not isinstance(g, (int, float)) or not 0.0 < float(g) <= 1.0:
            raise PlanningError(f"rollout_discount must be a number in (0, 1]; got {g!r}")
        if self.rollout_policy not in ROLLOUT_POLICIES:
            raise PlanningError(
                f"rollout_policy must be one of {', '.join(ROLLOUT_POLICIES)}; "
                f"got {self.rollout_policy!r}"
            )
        if self.rollouts > 0:
            if "env" not in parse_progress(self.progress):
                raise PlanningError(
                    f"rollouts={self.rollouts} is the 'env' twist's leaf value, but progress is "
                    f"{self.progress!r}; add 'env' (e.g. progress='env') or set rollouts=0"
                )
            if self.world_model != "simulator":
                raise PlanningError(
                    f"rollouts={self.rollouts} rolls out copies of the environment; it needs "
                    "world_model='simulator' (or rollouts=0)"
                )
        return self

    @classmethod
    def from_options(cls, **options: Any) -> PlannerConfig:
        """Build and validate from keyword options; an unknown key lists the known ones."""
        unknown = sorted(set(options) - set(cls._fields))
        if unknown:
            raise PlanningError(
                f"unknown planner option(s) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(cls._fields)}"
            )
        return cls(**options).validated()

    def tsmc_kwargs(self) -> dict[str, Any]:
        """The keywords :func:`smcplan.planning.tsmc.tsmc` takes."""
        return {
            "horizon": self.horizon,
            "weighting": self.weighting,
            "lam": self.lam,
            "resampling": self.resampling,
            "ess_threshold": self.ess_threshold,
            "choice": self.choice,
            "tie_break": self.tie_break,
        }


def parse_progress(spec: Any) -> tuple[str, ...]:
    """``"env+novelty"`` -> ``("env", "novelty")``; an unknown name lists the valid ones."""
    if not isinstance(spec, str) or not spec.strip():
        raise PlanningError(
            f"progress must be a name or a '+'-sum of names from {', '.join(PROGRESS)}; "
            f"got {spec!r}"
        )
    names = tuple(part.strip() for part in spec.split("+"))
    for name in names:
        if name not in PROGRESS:
            raise PlanningError(
                f"unknown progress {name!r} in {spec!r}; valid: {', '.join(PROGRESS)} "
                "(sums with '+', e.g. 'env+novelty')"
            )
    if len(set(names)) != len(names):
        raise PlanningError(f"progress {spec!r} names a twist twice")
    return names
