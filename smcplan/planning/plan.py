r"""``smcplan.plan``: the drop-in slow thinker, one planner behind two entry points.

* Toy POMDPs: ``plan(pomdp, belief, key, num_particles, horizon, ...)`` — components from
  :mod:`smcplan.planning.pomdp_components`, vectorised and jit-compiled.
* Text agents: ``plan(task, memory, admissible_actions, lm=..., ...)`` — language-model
  components from :mod:`smcplan.planning.text_components` (which imports ``smcplan.llm`` only
  when it builds them, so the toy path never imports torch).

Both run :func:`smcplan.planning.tsmc.tsmc` and return a
:class:`~smcplan.planning.result.PlanResult`.

Imports ``smcplan.pomdp`` and the planning modules; never agents, eval or cli.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, overload

import jax
import numpy as np

from smcplan.planning import pomdp_components as pc
from smcplan.planning.batch import as_key
from smcplan.planning.components import PlanningError, Proposal, Twist, WorldModel
from smcplan.planning.config import WorldModelKind
from smcplan.planning.result import PlanResult
from smcplan.planning.text_components import plan_text
from smcplan.planning.tsmc import tsmc, validate_config
from smcplan.pomdp.model import DiscretePOMDP

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

if TYPE_CHECKING:
    from smcplan.memory import KnowledgeGraph

__all__ = ["plan", "plan_pomdp", "PROPOSALS", "TWISTS", "as_key"]

PROPOSALS = ("uniform", "softmax")
TWISTS = ("reward", "reward_cumulative", "value", "soft_value", "none")
_VALUE_TWISTS: weakref.WeakKeyDictionary[DiscretePOMDP, dict[tuple, pc.ExactValueTwist]] = (
    weakref.WeakKeyDictionary()
)
_VALUE_CACHE_SIZE = 32


def _value_twist(
    pomdp: DiscretePOMDP, belief: Any, horizon: int, beta: float, kind: str, mask: np.ndarray
) -> pc.ExactValueTwist:
    """Exact value twist, cached per (POMDP, belief, horizon, beta, kind, allowed actions): the
    belief tree is the expensive part and a decision loop asks for the same one repeatedly."""
    b = np.asarray(pomdp.b0 if belief is None else belief, dtype=np.float64)
    key = (b.tobytes(), int(horizon), float(beta), kind, mask.tobytes())
    cache = _VALUE_TWISTS.setdefault(pomdp, {})
    if key not in cache:
        if len(cache) >= _VALUE_CACHE_SIZE:
            cache.pop(next(iter(cache)))
        cache[key] = pc.ExactValueTwist(pomdp, b, int(horizon), beta=beta, kind=kind, mask=mask)
    return cache[key]


@overload
def plan(
    pomdp: DiscretePOMDP,
    belief: Any = None,
    key: Any = 0,
    num_particles: int = 256,
    horizon: int = 3,
    **options: Any,
) -> PlanResult: ...


@overload
def plan(
    task: str,
    memory: KnowledgeGraph | None,
    admissible_actions: Sequence[str],
    lm: LanguageModel | None = None,
    **options: Any,
) -> PlanResult: ...


def plan(
    pomdp_or_task: DiscretePOMDP | str | None = None, /, *args: Any, **options: Any
) -> PlanResult:
    """Plan one action by twisted SMC.  Dispatches on the first argument:

    * a :class:`~smcplan.pomdp.DiscretePOMDP` → :func:`plan_pomdp` (toy POMDPs);
    * a task string → :func:`smcplan.planning.text_components.plan_text` (text agents).

    The first argument may also be given by its entry's name (``pomdp=`` or ``task=``); the rest
    go to the entry as they are.  The two entries (``typing.overload``, listed by
    ``typing.get_overloads(plan)``; the keyword options are those of the function each one
    calls, documented there)::

        {entries}
    """
    if pomdp_or_task is None:
        first = options.get("pomdp", options.get("task"))
        head: tuple[Any, ...] = ()
    else:
        first = pomdp_or_task
        head = (pomdp_or_task,)
    if isinstance(first, DiscretePOMDP):
        return plan_pomdp(*head, *args, **options)
    if isinstance(first, str):
        return plan_text(*head, *args, **options)
    raise PlanningError(
        "plan() takes a DiscretePOMDP (toy planning) or a task string (text agents) first; got "
        f"{type(first).__name__}"
    )


def entry_signature(fn: Callable[..., Any], name: str = "plan") -> str:
    """``name(param: annotation = default, ...) -> return``, one parameter per line, annotations
    as written (they are strings under ``from __future__ import annotations``)."""
    params = []
    star = False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        label = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        text = label if p.annotation is p.empty else f"{label}: {p.annotation}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        params.append(text)
    ret = inspect.signature(fn).return_annotation
    body = ",\n".join(f"            {t}" for t in params)
    return f"{name}(\n{body},\n        ) -> {ret}"


def plan_pomdp(
    pomdp: DiscretePOMDP,
    belief: Any = None,
    key: Any = 0,
    num_particles: int = 256,
    horizon: int = 3,
    *,
    weighting: str = "twisted",
    lam: float = 1.0,
    proposal: str | Proposal = "uniform",
    world_model: str | WorldModel = WorldModelKind.EXACT,
    twist: str | Twist = "reward",
    beta: float = 1.0,
    proposal_beta: float = 1.0,
    actions: Sequence[int | str] | None = None,
    resampling: str | Callable = "systematic",
    ess_threshold: float = 1.0,
    choice: str = "sample",
    jit: bool = True,
) -> PlanResult:
    r"""Plan the next action of a discrete POMDP from ``belief`` (default :math:`b_0`).

    Components by name (or pass your own objects obeying the Protocols):

    * ``proposal``: ``"uniform"`` over ``actions`` (default: all), or ``"softmax"`` of the
      expected immediate reward with inverse temperature ``proposal_beta`` (importance-corrected
      to the uniform prior under ``weighting="twisted"``; keep it mild: an action proposed with
      probability q needs about 1/q particles before its weight is seen);
    * ``world_model``: ``"exact"`` (:math:`T`, :math:`O` and the exact belief update);
    * ``twist``: ``"reward"`` (:math:`\delta = [r_t > 0]`, terminal potential
      :math:`e^{\beta G_H}`: lookahead by simulated rollouts), ``"reward_cumulative"`` (the myopic
      twist :math:`e^{\beta G_t}` at every step), ``"value"`` (exact expectimax values from the
      belief tree: tiny problems only; its :math:`\delta` marks optimal actions),
      ``"soft_value"`` (the optimal twist of the twisted target) or ``"none"``
      (:math:`\psi \equiv 1`).

    The default is properly weighted twisted SMC for the target :math:`p_0\,e^{\beta G_H}`
    (planning as inference) with the reward potential; ``weighting="nesyfs"`` is the paper's
    rule (the default of the text-agent entry point).  ``lam`` is the NeSyFS :math:`\lambda`
    (a progressing step multiplies a weight by :math:`e^\lambda`; with the exact value twist,
    the optimal first action gets mass about :math:`e^\lambda / (e^\lambda + |A| - 1)`); ``beta``
    scales rewards and values in the twists.  The result's
    ``action`` is an action index (``result.action_name()`` gives its name).  See
    :func:`smcplan.planning.tsmc.tsmc` for ``weighting``, ``resampling``, ``ess_threshold``,
    ``choice`` and ``jit``.
    """
    if not isinstance(pomdp, DiscretePOMDP):
        raise PlanningError(f"plan_pomdp needs a DiscretePOMDP; got {type(pomdp).__name__}")
    validate_config(num_particles, horizon, weighting, lam, choice, ess_threshold, resampling)
    mask = pc.allowed_actions(pomdp, actions)
    key = as_key(key)
    key_init, key_plan = jax.random.split(key)
    particles = pc.init_particles(pomdp, belief, key_init, int(num_particles))

    if isinstance(proposal, str):
        if proposal == "uniform":
            proposal = pc.UniformProposal(mask)
        elif proposal == "softmax":
            proposal = pc.SoftmaxProposal(pomdp, mask, beta=proposal_beta)
        else:
            raise PlanningError(
                f"unknown proposal {proposal!r}; known: {', '.join(PROPOSALS)}, or a Proposal "
                "object"
            )
    if isinstance(world_model, str):
        if world_model != WorldModelKind.EXACT:
            raise PlanningError(
                f"unknown world model {world_model!r}; known: {WorldModelKind.EXACT}, or a "
                "WorldModel object"
            )
        world_model = pc.ExactWorldModel(pomdp)
    if isinstance(twist, str):
        if twist == "reward":
            twist = pc.RewardProgress(beta=beta)
        elif twist == "reward_cumulative":
            twist = pc.RewardProgress(beta=beta, cumulative=True)
        elif twist == "value":
            twist = _value_twist(pomdp, belief, int(horizon), beta, "expectimax", mask)
        elif twist == "soft_value":
            twist = _value_twist(pomdp, belief, int(horizon), beta, "soft", mask)
        elif twist == "none":
            twist = pc.NoTwist()
        else:
            raise PlanningError(
                f"unknown twist {twist!r}; known: {', '.join(TWISTS)}, or a Twist object"
            )
    return tsmc(
        particles,
        key_plan,
        proposal=proposal,
        world_model=world_model,
        twist=twist,
        horizon=int(horizon),
        weighting=weighting,
        lam=lam,
        resampling=resampling,
        ess_threshold=ess_threshold,
        choice=choice,
        jit=jit,
        action_names=list(pomdp.action_names),
    )


plan.__doc__ = (plan.__doc__ or "").replace(
    "{entries}", "\n\n        ".join(entry_signature(f) for f in (plan_pomdp, plan_text))
)
