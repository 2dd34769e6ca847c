r"""The planner's settings, validated once, at construction, with one set of defaults:
:class:`PlannerConfig`, :class:`Retrieval`, the :class:`WorldModelKind` enum, and the names of
the text planner's progress twists and proposals.

Every text entry point (:func:`smcplan.planning.text_components.plan_text`, the agents'
:class:`~smcplan.agents.slow_thinking.SlowThinker` and ``NeSyFSAgent``, ``smcplan eval
--agent-arg planner.num_particles=16``) takes a :class:`PlannerConfig` and a :class:`Retrieval`
(frozen dataclasses) instead of loose keywords, so their defaults cannot drift apart and a bad
value is caught in one place: ``__post_init__``.  :meth:`PlannerConfig.replace` builds a changed
copy (validated again); :meth:`PlannerConfig.from_options` builds one from keywords and names the
known fields when a key is unknown.  The toy-POMDP entry point
:func:`smcplan.planning.plan.plan_pomdp` has its own settings (N = 256,
``weighting="twisted"``, ``world_model=WorldModelKind.EXACT``): exact models are cheap and its
lookahead needs many uniform rollouts (docs/planning.md).

Imports the planner's own modules and :mod:`smcplan.games` (the default world model's name); never
agents, eval or cli.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, ClassVar

from smcplan.errors import Settings
from smcplan.games import DEFAULT_WORLD_MODEL
from smcplan.memory.retrieval import DEFAULT_RETRIEVAL, Retrieval
from smcplan.planning.checks import TIE_BREAKS, validate_config
from smcplan.planning.components import PlanningError

__all__ = [
    "PlannerConfig",
    "Retrieval",
    "WorldModelKind",
    "DEFAULT_RETRIEVAL",
    "WORLD_MODELS",
    "PROGRESS",
    "PROPOSALS",
    "TIE_BREAKS",
    "ROLLOUT_POLICIES",
    "parse_progress",
    "world_model_of",
    "PLAN_TEXT_DEFAULTS",
    "plan_text_config",
]


class WorldModelKind(StrEnum):
    """Which world model imagines the particles' next observations (the one vocabulary of the
    setting; a member equals its string value, so ``WorldModelKind.SIMULATOR == "simulator"``).

    ``LM``: the language model predicts each particle's next observation; ``SIMULATOR``: each
    particle steps its own ``clone()`` of the environment (an **oracle** world model);
    ``LEARNED``: a model fine-tuned on environment transitions (``world_model_path``: a LoRA
    adapter folder or a merged transformers folder, :mod:`smcplan.train.world_model`), in the
    same prompt as ``LM`` (not an oracle: it never sees the environment at planning time);
    ``EXACT``: the toy POMDPs' exact :math:`T` and :math:`O`
    (:func:`smcplan.planning.plan.plan_pomdp` only).
    """

    LM = "lm"
    SIMULATOR = "simulator"
    LEARNED = "learned"
    EXACT = "exact"

    @property
    def oracle(self) -> bool:
        """True for the world models that read the real environment (``SIMULATOR``)."""
        return self is WorldModelKind.SIMULATOR


#: The text planner's world models (:class:`WorldModelKind` less ``EXACT``).
WORLD_MODELS = (WorldModelKind.LM, WorldModelKind.SIMULATOR, WorldModelKind.LEARNED)
#: Progress twists; a sum is written with ``+`` (``"env+novelty"``).
PROGRESS = ("lm", "env", "rlvmr", "novelty", "untried", "task", "learned")
#: The planner's action proposal: the language model over each particle's admissible actions,
#: or uniform over them (LLM-free).
PROPOSALS = ("lm", "uniform")
#: rollout policies of the ``env`` twist's Monte Carlo leaf value
#: (:class:`smcplan.planning.twist_env.EnvProgress`)
ROLLOUT_POLICIES = ("uniform", "untried")


#: How a refused name says where the user's own component goes (PlannerConfig holds names only).
_OWN = {
    role: f", or your own {role} as a callable {call} passed to plan(..., {role}=...) or "
    "build_text_planner (docs/planning.md, 'Your own proposal, world model and twist')"
    for role, call in (
        ("proposal", "(key, particles, t, horizon) -> Proposed"),
        ("world_model", "(key, particles, actions, t, horizon) -> Transition"),
    )
}


def _check_int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise PlanningError(f"{name} must be an integer >= {low}; got {value!r}")


@dataclass(frozen=True)
class PlannerConfig(Settings):
    r"""The text planner's settings (one set of defaults, sized for SmolLM2-135M on 2 CPU cores),
    checked once when the object is built (a bad value raises :class:`PlanningError` naming the
    field, the value and the valid ones).

    ``num_particles`` N (4) and ``horizon`` H (2); ``particles_per_action`` k (0: off) replaces
    N by :math:`k|\mathcal A|` at each call, so the stratified uniform proposal makes every
    admissible action the first action of exactly k particles (equal allocation; at H = 1 an
    action's mass is then k times the mean of :math:`e^{\lambda\delta_1}` over its particles, an
    estimate of its value rather than of how often it was drawn; needs ``proposal="uniform"``);
    ``lam`` :math:`\lambda` of the NeSyFS weight
    :math:`\omega\leftarrow\omega e^{\lambda\delta}` (1.0); ``weighting`` ``"nesyfs"`` (the
    paper's rule) or ``"twisted"``; ``resampling`` a scheme of :mod:`smcplan.smc.resampling`;
    ``ess_threshold`` :math:`\kappa` (1.0: resample before every step, the paper's rule);
    ``choice`` ``"sample"`` (:math:`j\sim\mathrm{Cat}(W^H)`) or ``"max_weight"``; ``tie_break``
    (:data:`TIE_BREAKS`, ``"proposal"``); ``world_model`` (:class:`WorldModelKind`, ``"lm"``;
    stored as the enum member);
    ``world_model_path`` (the learned world model's adapter or model folder, or a shipped
    artifact's name such as ``"twx-coin-world-model"``; only with ``world_model="learned"``);
    ``progress`` (:data:`PROGRESS` or a ``+``-sum, ``"lm"``); ``proposal`` (:data:`PROPOSALS`,
    ``"lm"``); ``observation_tokens`` bounds each predicted observation of the LM world model;
    ``observation_temperature`` (1.0) is the temperature the LM and learned world models sample
    each imagined observation at (1: the model's own distribution; 0: greedy, one imagined
    future per action; a small model's tail at 1 is often off-topic text);
    ``rollouts`` M (0: off), ``rollout_steps`` R (25) and ``rollout_discount`` :math:`\gamma`
    (0.95): the ``env`` twist's Monte Carlo leaf value at step H, M rollouts of at most R steps
    on clones of each particle's environment, ``rollout_policy`` ``"uniform"`` or ``"untried"``
    (simulator world model only;
    :class:`smcplan.planning.twist_env.EnvProgress`); ``value_head`` the ``learned`` twist's
    value head (a folder written by ``smcplan train value-head``, ``DIR/head``, or a shipped
    artifact's name; needed by and only with ``progress`` naming ``learned``).
    """

    owner: ClassVar[str] = "planner option"
    error: ClassVar[type[Exception]] = PlanningError

    num_particles: int = 4
    horizon: int = 2
    particles_per_action: int = 0
    lam: float = 1.0
    weighting: str = "nesyfs"
    resampling: str = "systematic"
    ess_threshold: float = 1.0
    choice: str = "sample"
    tie_break: str = "proposal"
    world_model: WorldModelKind | str = WorldModelKind.LM
    progress: str = "lm"
    proposal: str = "lm"
    observation_tokens: int = 32
    observation_temperature: float = 1.0
    rollouts: int = 0
    rollout_steps: int = 25
    rollout_discount: float = 0.95
    rollout_policy: str = "uniform"
    world_model_path: str | None = None
    value_head: str | None = None

    def __post_init__(self) -> None:
        validate_config(
            self.num_particles,
            self.horizon,
            self.weighting,
            self.lam,
            self.choice,
            self.ess_threshold,
            self.resampling,
            self.tie_break,
        )
        if not isinstance(self.world_model, str) or self.world_model not in WORLD_MODELS:
            raise PlanningError(
                f"unknown world_model {self.world_model!r}; known: {', '.join(WORLD_MODELS)}"
                f"{_OWN['world_model']}"
            )
        object.__setattr__(self, "world_model", WorldModelKind(self.world_model))
        learned = self.world_model is WorldModelKind.LEARNED
        path = self.world_model_path
        if learned and (not isinstance(path, str) or not path.strip()):
            raise PlanningError(
                "world_model='learned' needs world_model_path= a shipped artifact's name "
                "(smcplan.llm.artifacts lists them) or the adapter or model folder written by "
                f"`smcplan train world-model --out DIR` (DIR/adapter); got {path!r}"
            )
        if not learned and path is not None:
            raise PlanningError(
                f"world_model_path={path!r} is the learned world model's folder; it needs "
                f"world_model='learned' (got world_model={str(self.world_model)!r})"
            )
        if not isinstance(self.proposal, str) or self.proposal not in PROPOSALS:
            raise PlanningError(
                f"unknown proposal {self.proposal!r}; known: {', '.join(PROPOSALS)}"
                f"{_OWN['proposal']}"
            )
        _check_value_head(self.value_head, parse_progress(self.progress))
        _check_int("particles_per_action", self.particles_per_action, 0)
        if self.particles_per_action and self.proposal != "uniform":
            raise PlanningError(
                f"particles_per_action={self.particles_per_action} allocates the root's "
                "particles to the admissible actions through the stratified uniform proposal; it "
                f"needs proposal='uniform' (got proposal={self.proposal!r}), or set "
                "particles_per_action=0"
            )
        _check_int("observation_tokens", self.observation_tokens, 1)
        temp = self.observation_temperature
        if (
            isinstance(temp, bool)
            or not isinstance(temp, (int, float))
            or not 0.0 <= float(temp) < float("inf")
        ):
            raise PlanningError(
                f"observation_temperature must be a finite number >= 0 (0: greedy); got {temp!r}"
            )
        _check_int("rollouts", self.rollouts, 0)
        _check_int("rollout_steps", self.rollout_steps, 1)
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
            if not self.world_model.oracle:
                raise PlanningError(
                    f"rollouts={self.rollouts} rolls out copies of the environment; it needs "
                    "world_model='simulator' (or rollouts=0)"
                )

    @property
    def oracle(self) -> bool:
        """True when the world model reads the real environment (``world_model="simulator"``)."""
        return self.world_model.oracle  # type: ignore[union-attr]

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


def _check_value_head(path: Any, progress: tuple[str, ...]) -> None:
    """``value_head`` is a non-empty string when ``learned`` is among the twists, else None."""
    if "learned" in progress and (not isinstance(path, str) or not path.strip()):
        raise PlanningError(
            "progress 'learned' needs value_head= the folder written by `smcplan train "
            f"value-head --out DIR` (DIR/head) or a shipped value head's name; got {path!r}"
        )
    if "learned" not in progress and path is not None:
        raise PlanningError(
            f"value_head={path!r} is the 'learned' twist's head; add 'learned' to progress "
            "(e.g. progress='learned+novelty') or drop value_head"
        )


def world_model_of(options: Mapping[str, Any]) -> WorldModelKind | None:
    """The world model an agent's options name (``world_model=...``, ``planner.world_model=...``
    or ``planner={"world_model": ...}`` / a :class:`PlannerConfig`), as a
    :class:`WorldModelKind`; ``None`` when they name none or an unknown one (run configs and
    reports read it; the agent itself raises on an unknown name)."""
    planner = options.get("planner")
    if isinstance(planner, PlannerConfig):
        value: Any = planner.world_model
    elif isinstance(planner, Mapping) and "world_model" in planner:
        value = planner["world_model"]
    else:
        value = options.get("planner.world_model", options.get("world_model"))
    try:
        return WorldModelKind(value) if value is not None else None
    except ValueError:
        return None


def parse_progress(spec: Any) -> tuple[str, ...]:
    """``"env+novelty"`` -> ``("env", "novelty")``; an unknown name lists the valid ones."""
    if not isinstance(spec, str) or not spec.strip():
        own = (
            "; your own twist, a callable (key, particles, t, horizon) -> Score, goes to "
            "twist= instead"
            if callable(spec)
            else ""
        )
        raise PlanningError(
            f"progress must be a name or a '+'-sum of names from {', '.join(PROGRESS)}; "
            f"got {spec!r}{own}"
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


#: ``smcplan.plan(task, ...)``'s settings when no ``config=`` is given: the best configuration
#: without an oracle measured so far (``make demo``'s slow thinker; docs/planning.md, "plan()'s
#: text defaults"): the shipped learned world model imagines every admissible action once
#: (N = |A|, H = 1, greedy), the task+novelty twist scores each imagined step and the best one
#: is taken.  :class:`PlannerConfig`'s own defaults (the agents') are unchanged.
PLAN_TEXT_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "world_model": WorldModelKind.LEARNED,
        "world_model_path": DEFAULT_WORLD_MODEL,
        "particles_per_action": 1,
        "horizon": 1,
        "progress": "task+novelty",
        "choice": "max_weight",
        "observation_temperature": 0.0,
        "proposal": "uniform",
    }
)


def plan_text_config(
    options: Mapping[str, Any], *, proposal: Any = None, world_model: Any = None
) -> PlannerConfig:
    """The :class:`PlannerConfig` of a text ``plan()`` called without ``config=``:
    :data:`PLAN_TEXT_DEFAULTS` under the caller's ``options`` (and a built-in ``proposal`` or
    ``world_model`` given by name).  Two defaults hold only beside the others they serve:
    ``world_model_path`` only while the world model is ``"learned"``, and
    ``particles_per_action=1`` only while the proposal is the built-in ``"uniform"`` and
    ``num_particles`` is not given (a caller's ``num_particles=8``, ``proposal="lm"`` or own
    proposal callable means N particles drawn by that proposal).  Either one given explicitly
    is kept, and checked as usual."""
    given = dict(options)
    PlannerConfig.check_keys(given)
    for role, value in (("proposal", proposal), ("world_model", world_model)):
        if isinstance(value, str):
            given[role] = value
    settings = {**PLAN_TEXT_DEFAULTS, **given}
    if "world_model_path" not in given and settings["world_model"] != WorldModelKind.LEARNED:
        del settings["world_model_path"]
    own_proposal = proposal is not None and not isinstance(proposal, str)
    if "particles_per_action" not in given and (
        own_proposal or "num_particles" in given or settings["proposal"] != "uniform"
    ):
        settings["particles_per_action"] = 0
    return PlannerConfig(**settings)
