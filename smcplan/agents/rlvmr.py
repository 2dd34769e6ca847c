r"""RLVMR (arXiv 2507.22844): one meta-reasoning tag, then the action; verifiable process rewards.

Each step the model answers in RLVMR's format,

    ``<planning>|<explore>|<reflection>|<monitor>`` one sentence ``</tag>`` ``<action>`` a ``</action>``

in two calls on the same prompt (task, memory, the current plan, admissible actions):

1. **tag** — one sampled block :math:`(g_t, z_t)`: constrained to exactly one tag around one
   line of text, within ``content_tokens`` new tokens (a block cut by that budget is closed with
   its tag, ``rlvmr_tag_cut``) (``constrained=True``); or, with ``constrained=False``, free text
   of at most ``content_tokens`` tokens that the format check
   (:func:`~smcplan.agents.rlvmr_rewards.parse_response`) may find malformed — the step is then
   untagged and pays RLVMR's format penalty;
2. **action** — every admissible action scored in the answer's ``<action>`` slot after that
   block, :math:`\ell(a) = \log p(a \mid x_t, g_t, z_t)` normalised over :math:`A_t`, and chosen
   with the step's verifiable reward as a guide,

   .. math:: a_t = \arg\max_{a \in A_t}\ \ell(a) + \beta\, r^{\mathrm{meta}}_t(g_t, a),

   where :math:`r^{\mathrm{meta}}_t` is the rule of :mod:`smcplan.agents.rlvmr_rewards` for that
   tag had the agent taken :math:`a` (explore: 1 for an action not taken before; reflection: 1
   for a changed action after an invalid one; planning and monitor: 0 — planning's reward waits
   for the outcome). :math:`\beta` = ``guidance`` uses the same rules at inference as a one-step
   twist, :math:`\pi(a) \propto p(a)\, e^{\beta r(a)}`: ``guidance=0`` is the paper's plain
   inference (the rewards only recorded); the default :math:`\beta = \infty` takes the most
   likely action among those the rule rewards (an explore step tries something new, a reflection
   after a failure changes the action) and the model's own choice when the rule rewards none.
   That is what lets an untrained small model break a "look around" loop once it says it
   explores: SmolLM2-135M's log-probability gaps between admissible actions often exceed the
   reward's 1 nat, so a finite :math:`\beta` of a few nats does not (measured: docs). With
   ``action_temperature > 0`` the action is sampled from that tempered distribution instead.

Validity of step t (admissible and accepted: ``info["invalid"]`` false at step t + 1) is filled
in when the next observation arrives. A planning block becomes the plan shown in later prompts.

Each step records ``rlvmr_tag``, ``rlvmr_response`` (the whole answer), ``rlvmr_well_formed``,
``rlvmr_format_problem``, ``rlvmr_reward`` (the step's reward, :class:`StepReward` as a dict;
planning stays ``pending``), ``rlvmr_return`` (the sum so far, pending planning counted 0),
``guided`` (the reward guide changed the model's argmax) and ``model_choice``. After
``end_episode(won, score)``, :attr:`RLVMRAgent.episode_rewards` holds every step's reward with the
planning rewards resolved by the outcome and :attr:`RLVMRAgent.episode_return` their sum.

Imports the agents' shared parts, :mod:`smcplan.agents.rlvmr_rewards` and, lazily,
``smcplan.llm``; never ``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from smcplan.agents.llm_agent import Decision, LLMAgent
from smcplan.agents.record import StepRecord
from smcplan.agents.rlvmr_rewards import (
    TAGS,
    RewardConfig,
    StepReward,
    TaggedStep,
    parse_response,
    step_reward,
    trajectory_rewards,
)
from smcplan.agents.zeroshot import inline_role

__all__ = ["RLVMRAgent"]

_SYSTEM = """\
You are an agent playing a text game. Each turn, think in exactly one of four modes and write one \
short sentence inside its tag, then give your action inside <action></action>:
<planning> break the whole task into steps (at the start, or when the plan no longer works)
<explore> list new places, objects or actions to try when information is missing
<reflection> find why an action failed or made no progress, and correct it
<monitor> check progress against the plan and take its next step
The action must be exactly one of the admissible actions."""

_USER = """\
Task: {{ task }}
{{ context }}
{% if plan %}Your current plan: {{ plan }}
{% endif %}Admissible actions: {{ admissible | join(", ") }}
Answer as <mode>one sentence</mode> then <action>one admissible action</action>."""


class RLVMRAgent(LLMAgent):
    """The RLVMR agent (module docstring).

    Parameters (beyond :class:`~smcplan.agents.llm_agent.LLMAgent`'s)
    ----------------------------------------------------------------
    guidance
        :math:`\\beta`, the weight of the verifiable reward in the action choice (0: none;
        ``math.inf``, the default: the rewarded actions first, the model's order among them).
    tag_temperature
        Temperature of the tag block's sampling (1: the model's own distribution).
    action_temperature
        0 (default): the argmax above; > 0: sample the tempered, reward-guided distribution.
    constrained, content_tokens
        The tag block's decoding (see the module docstring) and its token budget.
    rewards
        The :class:`~smcplan.agents.rlvmr_rewards.RewardConfig` (defaults: the paper's).
    tags
        The tags the model may choose from (default: all four; e.g. ``("explore",)``).
    """

    name = "rlvmr"
    default_context = "history"

    def __init__(
        self,
        lm: Any = None,
        *,
        guidance: float = math.inf,
        tag_temperature: float = 1.0,
        action_temperature: float = 0.0,
        constrained: bool = True,
        content_tokens: int = 40,
        rewards: RewardConfig | None = None,
        tags: tuple[str, ...] = TAGS,
        **config: Any,
    ) -> None:
        super().__init__(lm, **config)
        if guidance < 0 or tag_temperature < 0 or action_temperature < 0:
            raise ValueError(
                "guidance, tag_temperature and action_temperature must be >= 0; got "
                f"{guidance}, {tag_temperature}, {action_temperature}"
            )
        bad = [g for g in tags if g not in TAGS]
        if bad or not tags:
            raise ValueError(f"tags must be a non-empty subset of {', '.join(TAGS)}; got {tags!r}")
        self.tags = tuple(tags)
        if content_tokens < 1:
            raise ValueError(f"content_tokens must be >= 1; got {content_tokens}")
        self.guidance = float(guidance)
        self.tag_temperature = float(tag_temperature)
        self.action_temperature = float(action_temperature)
        self.constrained = bool(constrained)
        self.rewards = rewards or RewardConfig()
        self.assets = inline_role("rlvmr", _SYSTEM, _USER)
        # unbounded text (a maxLength would compile one automaton state per character)
        self.tag_regex = "|".join(rf"<{g}>[^<>\x00-\x1F\x7F]+</{g}>" for g in self.tags)
        self.content_tokens = int(content_tokens)
        # room for the longest pair of tags (a token is at least one byte)
        self.tag_tokens = self.content_tokens + max(2 * len(g) + 5 for g in self.tags) + 1
        self.trajectory: list[TaggedStep] = []
        self.step_rewards: list[StepReward] = []
        self.episode_rewards: list[StepReward] = []
        self.episode_return = 0.0
        self.plan = ""

    # ------------------------------------------------------------------ episode state
    def on_reset(self, task: str, observation: str, admissible: list[str]) -> None:
        self.trajectory, self.step_rewards, self.episode_rewards = [], [], []
        self.episode_return = 0.0
        self.plan = ""

    def on_episode_end(self, won: bool, score: float) -> None:
        self.episode_rewards = trajectory_rewards(self.trajectory, bool(won), self.rewards)
        self.episode_return = float(sum(r.total for r in self.episode_rewards))

    # ------------------------------------------------------------------ the step
    def _tag_block(self, prompt: list[dict[str, str]]) -> tuple[str, bool]:
        """The tag block and whether the budget cut it (module docstring)."""
        if not self.constrained:
            ((s,),) = self.lm.sample(
                [prompt], None, temperature=self.tag_temperature,
                max_new_tokens=self.content_tokens, seed=self.next_seed(),
            )
            return s.text.strip(), not s.finished
        from outlines.types import Regex

        ((s,),) = self.lm.sample(
            [prompt], Regex(self.tag_regex), temperature=self.tag_temperature,
            max_new_tokens=self.tag_tokens, seed=self.next_seed(),
        )
        if s.finished:
            return s.text, False
        tag = next((g for g in TAGS if s.text.startswith(f"<{g}>")), None)
        if tag is None:  # cut inside the opening tag: an empty block, which the format check rejects
            return s.text, True
        content = s.text[len(tag) + 2 :].split("<", 1)[0]  # drop a partial closing tag
        return f"<{tag}>{content}</{tag}>", True

    def decide(
        self, observation: str, admissible: list[str], info: dict[str, Any], rec: StepRecord
    ) -> Decision:
        from smcplan.llm.roles.proposal import choose

        if self.trajectory:  # the previous action's validity, now that its outcome is known
            prev = self.trajectory[-1]
            self.trajectory[-1] = TaggedStep(
                prev.tag, prev.action, prev.well_formed, not bool(info.get("invalid", False))
            )
        ctx = self.context(observation)
        prompt = self.assets.messages(
            task=self.task, context=ctx.situation(), plan=self.plan, admissible=admissible
        )
        block, cut = self._tag_block(prompt)
        prefix = block + "\n<action>"
        ((k_model, _, _, log_probs),) = choose(
            self.lm, [prompt], [prefix], [admissible], 0.0, self.next_seed(), "</action>"
        )
        head = parse_response(prefix + "x</action>")  # the format verdict of the tag block
        t = len(self.trajectory)

        def reward_if(a: str) -> StepReward:
            steps = [*self.trajectory, TaggedStep(head.tag, a, head.well_formed, True)]
            return step_reward(steps, t, None, self.rewards)

        bonus = np.array([reward_if(a).meta for a in admissible])
        if math.isinf(self.guidance):  # lexicographic: rewarded actions first
            scores = np.where(bonus == bonus.max(), np.asarray(log_probs), -np.inf)
        else:
            scores = np.asarray(log_probs) + self.guidance * bonus
        if self.action_temperature == 0:
            k = int(np.argmax(scores))
        else:
            z = scores / self.action_temperature
            p = np.exp(z - np.logaddexp.reduce(z))
            k = int(np.random.default_rng(self.next_seed()).choice(len(admissible), p=p / p.sum()))
        action = admissible[k]
        response = prefix + action + "</action>"
        parsed = parse_response(response)
        self.trajectory.append(TaggedStep(parsed.tag, action, parsed.well_formed, True))
        reward = step_reward(self.trajectory, t, None, self.rewards)
        self.step_rewards.append(reward)
        if parsed.tag == "planning":
            self.plan = parsed.content
        rec.proposed(
            action,
            parsed.content,
            None,
            float(log_probs[k]),
            "rlvmr",
            tag=parsed.tag,
            model_choice=admissible[k_model],
        )
        rec.extra.update(
            rlvmr_tag=parsed.tag,
            rlvmr_response=response,
            rlvmr_well_formed=parsed.well_formed,
            rlvmr_format_problem=parsed.problem,
            rlvmr_tag_cut=cut,
            rlvmr_reward=reward.to_dict(),
            rlvmr_return=float(sum(r.total for r in self.step_rewards)),
            guided=k != k_model,
            model_choice=admissible[k_model],
        )
        return Decision(action, parsed.content, parsed.tag)
