r"""RLVMR's verifiable meta-reasoning rewards (arXiv 2507.22844), as pure rules on a trajectory.

RLVMR (Zhang et al. 2025, "Reinforcement Learning with Verifiable Meta-Reasoning Rewards for
Robust Long-Horizon Agents") has the agent answer each step with exactly one meta-reasoning tag
and one action::

    <planning>|<explore>|<reflection>|<monitor> ... </tag>  <action> a_t </action>

and scores each step by rules that can be checked from the trajectory alone. With a trajectory
:math:`(g_s, a_s, f_s, v_s)_{s=0}^{T-1}` of tags :math:`g_s`, actions :math:`a_s`, format flags
:math:`f_s` (the answer parsed: one non-empty tag, before one ``<action>``) and validity flags
:math:`v_s` (the action was admissible and the environment accepted it), and the episode's
success :math:`S`, the reward of step :math:`t` is

.. math::

    r_t = -c_{\mathrm{fmt}}\,[\neg f_t] + [f_t]\cdot\begin{cases}
        R_{\mathrm{plan}}\,[S] & g_t = \text{planning} \\
        R_{\mathrm{explore}}\,[\forall s < t:\ \neg(f_s \wedge a_s = a_t)] & g_t = \text{explore} \\
        R_{\mathrm{reflect}}\,[t > 0 \wedge \neg(f_{t-1} \wedge v_{t-1}) \wedge a_{t-1} \ne a_t]
            & g_t = \text{reflection} \\
        0 & g_t = \text{monitor}
    \end{cases}

with the released configuration :math:`R_{\mathrm{plan}} = R_{\mathrm{explore}} =
R_{\mathrm{reflect}} = 1` and :math:`c_{\mathrm{fmt}} = 0.1` (``planning_reward``,
``exploration_reward``, ``reflection_reward`` and ``invalid_action_penalty_coef`` of the authors'
``ppo_trainer.yaml``; rules as in their ``process_trajectory_rlvmr_rewards``). In words:
planning is rewarded only if the episode succeeds; exploring only with an action not taken
before (by a well-formed step); reflecting only right after an invalid (or malformed) step and
with a different action; monitoring is not rewarded; a malformed answer costs
:math:`c_{\mathrm{fmt}}` and earns no meta reward.

One convention differs from the released code, which treats the missing step before
:math:`t = 0` as invalid and so rewards a reflection at the first step: here a first-step
reflection earns nothing (nothing has failed yet), unless ``RewardConfig(first_step_reflection=
True)`` asks for the released behaviour.

The same rules serve two purposes:

* **reward signal** — :func:`step_reward` / :func:`trajectory_rewards` (planning rewards stay
  *pending* while the outcome is unknown);
* **LLM-free progress / twist** for the planner — :class:`RLVMRTwist` implements
  :class:`smcplan.planning.components.Twist`: :math:`\delta_t = [r_t > 0]` and
  :math:`\log\psi_t = \beta \sum_{s \le t} r_s`, so that the twisted incremental weight
  :math:`\psi_t/\psi_{t-1} = e^{\beta r_t}` and the NeSyFS weight :math:`e^{\lambda\delta_t}`
  both favour imagined steps that explore something new or recover from a failure.

This module is pure: it imports only ``jax.numpy`` and the planner's component types — no
``smcplan.llm``, torch or transformers, and never ``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from smcplan.games import INVALID_REPLIES
from smcplan.planning.components import Score

__all__ = [
    "TAGS",
    "TaggedStep",
    "RewardConfig",
    "StepReward",
    "Parsed",
    "parse_response",
    "format_response",
    "is_repeat",
    "step_reward",
    "trajectory_rewards",
    "total_reward",
    "INVALID_FEEDBACK",
    "looks_invalid",
    "imagined_trajectory",
    "RLVMRTwist",
]

#: The four meta-reasoning tags, in the paper's order.
TAGS = ("planning", "explore", "reflection", "monitor")

#: Feedback prefixes that mean "the action was not understood": TextWorldExpress ("Unknown
#: action"), ScienceWorld ("No known action matches that input.") and ALFWorld ("Nothing
#: happens."), as the adapters in ``smcplan.envs`` detect them; each is listed once, in its
#: game's home (:data:`smcplan.games.INVALID_REPLIES`), and this name is an alias.
INVALID_FEEDBACK = INVALID_REPLIES


@dataclass(frozen=True)
class TaggedStep:
    """One step of a tagged trajectory.

    ``tag``: one of :data:`TAGS`, or ``None`` when the answer had no valid tag; ``action``: the
    action text (``None`` when missing); ``well_formed``: the answer passed the format check
    (:func:`parse_response`); ``valid``: the action was admissible and the environment accepted
    it (``info["invalid"]`` was False after it).
    """

    tag: str | None
    action: str | None
    well_formed: bool = True
    valid: bool = True

    def __post_init__(self) -> None:
        if self.tag is not None and self.tag not in TAGS:
            raise ValueError(f"unknown meta-reasoning tag {self.tag!r}; known: {', '.join(TAGS)}")


@dataclass(frozen=True)
class RewardConfig:
    """Reward sizes (defaults: the authors' released configuration) and the first-step convention.
    """

    planning: float = 1.0
    explore: float = 1.0
    reflection: float = 1.0
    format_penalty: float = 0.1
    first_step_reflection: bool = False

    def __post_init__(self) -> None:
        if self.format_penalty < 0:
            raise ValueError(
                f"format_penalty is a cost and must be >= 0; got {self.format_penalty}"
            )


@dataclass(frozen=True)
class StepReward:
    """The reward of one step: ``meta`` (the tag's rule), ``format`` (``-c_fmt`` or 0),
    ``pending`` (a planning step whose reward waits for the episode's outcome), ``rule`` (which
    condition decided, for the record)."""

    tag: str | None
    meta: float
    format: float
    pending: bool
    rule: str

    @property
    def total(self) -> float:
        return self.meta + self.format

    def to_dict(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "meta": self.meta,
            "format": self.format,
            "total": self.total,
            "pending": self.pending,
            "rule": self.rule,
        }


# ------------------------------------------------------------------------------ format
@dataclass(frozen=True)
class Parsed:
    """What :func:`parse_response` read: the tag and its text, the action, the format verdict
    and, when malformed, why."""

    tag: str | None
    content: str
    action: str | None
    well_formed: bool
    problem: str = ""


_ACTION = re.compile(r"<action>([\s\S]*?)</action>", re.IGNORECASE)
_TAG = {g: re.compile(rf"<{g}>([\s\S]*?)</{g}>", re.IGNORECASE) for g in TAGS}


def parse_response(text: str) -> Parsed:
    """Check one answer against RLVMR's format and read its tag and action.

    Well-formed iff there is exactly one ``<action>...</action>`` block (non-empty), exactly one
    meta-reasoning tag block, its text is non-empty, and it comes before ``<action>``.
    """
    actions = _ACTION.findall(text)
    found = [(g, m) for g, rx in _TAG.items() for m in rx.finditer(text)]
    tag = found[0][0] if len(found) == 1 else None
    content = found[0][1].group(1).strip() if len(found) == 1 else ""
    action = actions[0].strip() if len(actions) == 1 else None
    problem = ""
    if len(actions) != 1:
        problem = f"expected one <action> block, found {len(actions)}"
    elif not action:
        problem = "empty <action> block"
    elif len(found) != 1:
        problem = f"expected one meta-reasoning tag ({', '.join(TAGS)}), found {len(found)}"
    elif not content:
        problem = f"empty <{tag}> block"
    elif found[0][1].start() > text.lower().find("<action>"):
        problem = f"<{tag}> must come before <action>"
    return Parsed(tag if not problem else None, content, action or None, not problem, problem)


def format_response(tag: str, content: str, action: str) -> str:
    """The well-formed answer ``<tag>content</tag>\\n<action>action</action>``."""
    if tag not in TAGS:
        raise ValueError(f"unknown meta-reasoning tag {tag!r}; known: {', '.join(TAGS)}")
    return f"<{tag}>{content}</{tag}>\n<action>{action}</action>"


# ------------------------------------------------------------------------------ rules
def is_repeat(steps: Sequence[TaggedStep], t: int) -> bool:
    """Whether a well-formed step before ``t`` took the same action as step ``t``."""
    return any(s.well_formed and s.action == steps[t].action for s in steps[:t])


def step_reward(
    steps: Sequence[TaggedStep],
    t: int,
    success: bool | None = None,
    config: RewardConfig | None = None,
) -> StepReward:
    """:math:`r_t` of the module docstring for step ``t`` of ``steps``.

    It depends only on steps ``0..t`` and, for planning, on ``success`` (``None``: not known
    yet, the reward is 0 and ``pending``).
    """
    cfg = config or RewardConfig()
    if not 0 <= t < len(steps):
        raise IndexError(f"step {t} out of range for a trajectory of {len(steps)} steps")
    step = steps[t]
    if not step.well_formed or step.tag is None:
        return StepReward(None, 0.0, -cfg.format_penalty, False, "malformed")
    if step.tag == "planning":
        if success is None:
            return StepReward("planning", 0.0, 0.0, True, "outcome unknown")
        return StepReward(
            "planning", cfg.planning if success else 0.0, 0.0, False,
            "episode succeeded" if success else "episode failed",
        )
    if step.tag == "explore":
        if is_repeat(steps, t):
            return StepReward("explore", 0.0, 0.0, False, "repeated action")
        return StepReward("explore", cfg.explore, 0.0, False, "new action")
    if step.tag == "reflection":
        if t == 0:
            ok = cfg.first_step_reflection
            return StepReward(
                "reflection", cfg.reflection if ok else 0.0, 0.0, False,
                "first step (released-code convention)" if ok else "first step: nothing failed",
            )
        prev = steps[t - 1]
        if prev.well_formed and prev.valid:
            return StepReward("reflection", 0.0, 0.0, False, "previous action was valid")
        if prev.action == step.action:
            return StepReward("reflection", 0.0, 0.0, False, "action unchanged after failure")
        return StepReward("reflection", cfg.reflection, 0.0, False, "changed action after failure")
    return StepReward("monitor", 0.0, 0.0, False, "monitor is not rewarded")


def trajectory_rewards(
    steps: Sequence[TaggedStep], success: bool | None = None, config: RewardConfig | None = None
) -> list[StepReward]:
    """:func:`step_reward` of every step."""
    return [step_reward(steps, t, success, config) for t in range(len(steps))]


def total_reward(
    steps: Sequence[TaggedStep], success: bool | None = None, config: RewardConfig | None = None
) -> float:
    r""":math:`\sum_t r_t` (pending planning rewards count 0)."""
    return float(sum(r.total for r in trajectory_rewards(steps, success, config)))


# ------------------------------------------------------------------------------ twist
def looks_invalid(observation: str, markers: Sequence[str] = INVALID_FEEDBACK) -> bool:
    """Whether ``observation`` starts with one of the "not understood" ``markers``."""
    text = observation.strip()
    return any(text.startswith(m) for m in markers)


def imagined_trajectory(
    prefix: Sequence[TaggedStep] = (),
    untagged: str = "explore",
    invalid: Callable[[str], bool] = looks_invalid,
) -> Callable[[Any], list[TaggedStep]]:
    """An accessor from a planner particle to its tagged trajectory.

    The particle must have ``steps``: a sequence of ``(action, observation)`` pairs (as
    :class:`~smcplan.planning.text_particle.TextParticle` has) and may have ``tags`` (one per
    step).  The trajectory is ``prefix`` (the real steps so far) followed by one
    :class:`TaggedStep` per imagined step, tagged ``tags[i]`` or ``untagged``, and ``valid``
    unless its observation ``invalid(observation)`` says the action was not understood.
    """
    if untagged not in TAGS:
        raise ValueError(f"unknown meta-reasoning tag {untagged!r}; known: {', '.join(TAGS)}")
    head = list(prefix)

    def trajectory(particle: Any) -> list[TaggedStep]:
        steps = list(particle.steps)
        tags = list(getattr(particle, "tags", ()) or ())
        out = list(head)
        for i, (action, observation) in enumerate(steps):
            tag = tags[i] if i < len(tags) and tags[i] is not None else untagged
            out.append(TaggedStep(tag, action, True, not invalid(str(observation))))
        return out

    return trajectory


class RLVMRTwist:
    r"""The rules as an LLM-free twist for :func:`smcplan.planning.tsmc` (module docstring).

    ``twist(key, particles, t, horizon) -> Score(delta, log_psi)`` with, for each particle's
    trajectory :math:`x` (``trajectory(particle)``), :math:`\delta_t = [r_{\mathrm{last}} > 0]`
    and :math:`\log\psi_t = \beta\sum_s r_s`; ``success(particle)`` (optional) supplies the
    outcome for planning rewards (``None``: pending, counted 0).
    """

    def __init__(
        self,
        trajectory: Callable[[Any], Sequence[TaggedStep]],
        *,
        beta: float = 1.0,
        config: RewardConfig | None = None,
        success: Callable[[Any], bool | None] | None = None,
    ) -> None:
        if beta < 0:
            raise ValueError(f"beta must be >= 0; got {beta}")
        self.trajectory = trajectory
        self.beta = float(beta)
        self.config = config or RewardConfig()
        self.success = success

    def rewards(self, particle: Any) -> list[StepReward]:
        """The step rewards of one particle's trajectory."""
        outcome = self.success(particle) if self.success is not None else None
        return trajectory_rewards(list(self.trajectory(particle)), outcome, self.config)

    def __call__(self, key: jax.Array, particles: Any, t: int, horizon: int) -> Score:
        deltas, log_psi = [], []
        for p in particles:
            rs = self.rewards(p)
            if not rs:
                raise ValueError("RLVMRTwist: a particle has an empty trajectory")
            deltas.append(1.0 if rs[-1].total > 0 else 0.0)
            log_psi.append(self.beta * sum(r.total for r in rs))
        return Score(jnp.asarray(deltas), jnp.asarray(log_psi))
