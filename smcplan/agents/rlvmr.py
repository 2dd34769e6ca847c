r"""RLVMR (arXiv 2507.22844): one meta-reasoning tag, then the action; verifiable process rewards.

Each step the model answers in RLVMR's format,

    ``<planning>|<explore>|<reflection>|<monitor>`` one sentence ``</tag>`` ``<action>`` a
    ``</action>``

in three model calls on the same prompt (task, memory, the current plan, admissible actions).
Both choices — the mode and the action — use the step's verifiable reward (the rules of
:mod:`smcplan.agents.rlvmr_rewards`) as a one-step twist on the model,

.. math:: \pi(c) \propto p(c)^{1/T}\, e^{\beta\, r(c)},

so that ``beta = 0`` (the default of ``rlvmr``) is the paper's plain inference: the rewards
are computed and recorded but choose nothing, since RLVMR uses them only as a *training* signal.
``beta = math.inf`` takes the most likely choice among those the rule rewards most (the model's
own choice when the rule rewards none; ``T = 0``: the argmax): an inference-time guide that is
this project's extension, registered as the agent ``rlvmr+guide``
(:class:`RLVMRGuidedAgent`: both betas infinite) and labelled "guided" in reports whenever a
beta is positive.

1. **tag** — each allowed tag's opening ``<g>`` is scored, :math:`\log p(g \mid x_t)`, with the
   best reward the tag can earn now, :math:`R(g) = \max_{a \in A_t} r^{\mathrm{meta}}_t(g, a)`
   (explore: 1 while some admissible action was never taken; reflection: 1 right after an
   invalid action; planning: pending, 0; monitor: 0), and :math:`g_t` is drawn with
   :math:`\beta_g` = ``tag_guidance`` at ``tag_temperature``; then its one line of text
   :math:`z_t` is sampled after ``<g_t>`` within ``content_tokens`` new tokens (a line cut by
   that budget is closed, ``rlvmr_tag_cut``). With ``constrained=False`` the model instead
   writes free text of at most ``content_tokens`` tokens, which the format check
   (:func:`~smcplan.agents.rlvmr_rewards.parse_response`) may find malformed — the step is then
   untagged and pays RLVMR's format penalty;
2. **action** — every admissible action scored in the answer's ``<action>`` slot after that
   block, :math:`\ell(a) = \log p(a \mid x_t, g_t, z_t)`, and :math:`a_t` drawn with
   :math:`\beta_a` = ``guidance`` at ``action_temperature`` (default 0: the argmax) and
   :math:`r = r^{\mathrm{meta}}_t(g_t, a)`: an explore step tries the most likely action not
   taken before, a reflection after a failure the most likely different action.

Free mode (``action_mode="free"``): the action is written in the ``<action>`` slot under the
benchmark's verb grammar (:mod:`smcplan.llm.roles.free_action`) at ``action_temperature``; a
written action cannot be reweighted by the rule, so ``guidance`` must be 0 (the tag guide still
works). An inadmissible action is rejected by the environment and the next step's reflection
reward applies, as in the paper.

Why both levels of the guide: measured with SmolLM2-135M on TextWorldExpress coin
(docs/agents_rlaw_rlvmr.md),
the model's own tags are mostly ``planning`` (about 60 %) and rarely ``explore`` (about 3 %), so
guiding the action alone left 12 of 20 actions repeated; guiding the mode as well is what breaks
the "open door to east" loop. The records show it: ``rlvmr_tag_logp`` (the model's tag scores),
``rlvmr_tag_bonus``, ``tag_guided`` and ``guided`` (the guide changed the model's choice).

Policy head (``policy_head=<folder or shipped artifact name>``, an extension:
:mod:`smcplan.train.grpo_mr_head`): the
tag and the action are chosen *together* by a linear-softmax head over the step's candidates
(tag, action) on the frozen model's hidden state
(:class:`~smcplan.llm.roles.policy_head.PolicyHead`), drawn at ``action_temperature`` (0: the
argmax); no text is generated, the tag's sentence is a fixed one (:data:`HEAD_SENTENCES`), and
the guides do not apply.  The answer, its parse and its process reward are recorded as above.
A head trained with map notes (``map_notes`` in its info) reads, for each candidate, what the
agent's own place map says about its action (:mod:`smcplan.agents.map_notes`: the map read from
this episode's real observations with the rules of :func:`~smcplan.agents.extractors.game_rules`,
as the RLAW agent's critic notes), the text it was trained on; the chosen action's note is
recorded as ``rlvmr_head_note``.

Validity of step t (admissible and accepted: ``info["invalid"]`` false at step t + 1) is filled
in when the next observation arrives. A planning block becomes the plan shown in later prompts.

Each step also records ``rlvmr_tag``, ``rlvmr_response`` (the whole answer),
``rlvmr_well_formed``, ``rlvmr_format_problem``, ``rlvmr_reward`` (the step's reward,
:class:`StepReward` as a dict; planning stays ``pending``), ``rlvmr_return`` (the sum so far,
pending planning counted 0) and ``model_choice`` (the model's own argmax action). After
``end_episode(won, score)``, :attr:`RLVMRAgent.episode_rewards` holds every step's reward with the
planning rewards resolved by the outcome and :attr:`RLVMRAgent.episode_return` their sum.

Imports the agents' shared parts, :mod:`smcplan.agents.rlvmr_rewards` and, lazily,
``smcplan.llm``; never ``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

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
from smcplan.llm.fields import TAG_TEXT, regex
from smcplan.llm.templates import load_role

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["RLVMRAgent", "RLVMRGuidedAgent", "HEAD_SENTENCES"]

#: the tag sentence of a step chosen by a policy head (the head scores "tag: action" only)
HEAD_SENTENCES = {
    "planning": "I plan the next steps toward the goal.",
    "explore": "I try something not tried before.",
    "reflection": "The last step failed, so I change course.",
    "monitor": "I follow the plan and check the progress.",
}


class RLVMRAgent(LLMAgent):
    """The RLVMR agent (module docstring).

    Parameters (beyond :class:`~smcplan.agents.llm_agent.LLMAgent`'s)
    ----------------------------------------------------------------
    guidance, tag_guidance
        :math:`\\beta_a` and :math:`\\beta_g`, the weight of the verifiable reward in the action
        and in the mode choice (0, the default: none, the paper's inference; ``math.inf``: the
        best-rewarded choices first, the model's order among them; ``--agent-arg
        guidance=Infinity`` on the command line).
    tag_temperature, action_temperature
        Temperatures of the two choices (defaults 1: the model's own distribution over the tags;
        0: the argmax action) and of the tag's text (``tag_temperature``).
    constrained, content_tokens
        The tag block's decoding (see the module docstring) and its token budget.
    rewards
        The :class:`~smcplan.agents.rlvmr_rewards.RewardConfig` (defaults: the paper's).
    policy_head
        A policy head folder (module docstring; ``None``: the model writes the answer).
    tags
        The tags the model may choose from (default: all four; e.g. ``("explore",)``).
    """

    name = "rlvmr"
    default_context = "history"

    def __init__(
        self,
        lm: LanguageModel | None = None,
        *,
        guidance: float = 0.0,
        tag_guidance: float = 0.0,
        tag_temperature: float = 1.0,
        action_temperature: float = 0.0,
        constrained: bool = True,
        content_tokens: int = 40,
        rewards: RewardConfig | None = None,
        tags: tuple[str, ...] = TAGS,
        policy_head: str | None = None,
        **config: Any,
    ) -> None:
        super().__init__(lm, **config)
        guidance, tag_guidance = float(guidance), float(tag_guidance)
        if min(guidance, tag_guidance, tag_temperature, action_temperature) < 0:
            raise ValueError(
                "guidance, tag_guidance, tag_temperature and action_temperature must be >= 0; "
                f"got {guidance}, {tag_guidance}, {tag_temperature}, {action_temperature}"
            )
        if self.free and guidance > 0:
            raise ValueError(
                f"guidance={guidance} reweights the admissible set, but action_mode='free' writes "
                "the action; use guidance=0 (tag_guidance may stay) or action_mode='admissible'"
            )
        bad = [g for g in tags if g not in TAGS]
        if bad or not tags:
            raise ValueError(f"tags must be a non-empty subset of {', '.join(TAGS)}; got {tags!r}")
        self.tags = tuple(tags)
        if content_tokens < 1:
            raise ValueError(f"content_tokens must be >= 1; got {content_tokens}")
        self.guidance = float(guidance)
        self.tag_guidance = float(tag_guidance)
        self.tag_temperature = float(tag_temperature)
        self.action_temperature = float(action_temperature)
        self.constrained = bool(constrained)
        self.rewards = rewards or RewardConfig()
        self.assets = load_role("rlvmr")
        # unbounded text (a maxLength would compile one automaton state per character)
        self.content_regex = {g: TAG_TEXT + f"</{g}>" for g in self.tags}
        self.content_tokens = int(content_tokens)
        self.trajectory: list[TaggedStep] = []
        self.step_rewards: list[StepReward] = []
        self.episode_rewards: list[StepReward] = []
        self.episode_return = 0.0
        self.plan = ""
        #: the chat messages of the last step's prompt (what a trainer scores the answer under)
        self.last_prompt: list[dict[str, str]] = []
        self.policy_head = None
        if policy_head is not None:
            from smcplan.llm.roles.policy_head import PolicyHead

            if guidance > 0 or tag_guidance > 0:
                raise ValueError(
                    f"policy_head={policy_head!r} chooses the tag and the action itself; the "
                    "guides (guidance, tag_guidance) must be 0 with it"
                )
            from smcplan.llm.artifacts import resolve_artifact

            self.policy_head = PolicyHead.load(resolve_artifact(policy_head, "policy_head"))
        self._head_features: Any = None
        self._head_steps: list[tuple[str, str, str]] = []
        #: whether the head reads map notes (its trainer's ``map_notes``), and this episode's map
        self.head_notes = bool(self.policy_head is not None
                               and self.policy_head.info.get("map_notes", False))  # fmt: skip
        self._head_map: Any = None

    # ------------------------------------------------------------------ episode state
    def on_reset(self, task: str, observation: str, admissible: list[str]) -> None:
        self.trajectory, self.step_rewards, self.episode_rewards = [], [], []
        self.episode_return = 0.0
        self.plan = ""
        self._head_steps = []
        if self.head_notes:
            from smcplan.agents.extractors import game_rules
            from smcplan.agents.map_notes import MapNotes

            self._head_map = MapNotes(game_rules(getattr(self.belief, "extractor", None)))
            self._head_map.reset(observation)

    def on_episode_end(self, won: bool, score: float) -> None:
        self.episode_rewards = trajectory_rewards(self.trajectory, bool(won), self.rewards)
        self.episode_return = float(sum(r.total for r in self.episode_rewards))

    def episode_info(self) -> dict[str, Any]:
        """The resolved process rewards of the episode just ended (planning steps settled by
        the outcome) and their sum: ``{"rlvmr_return": ..., "rlvmr_rewards": [...]}``."""
        return {
            "rlvmr_return": self.episode_return,
            "rlvmr_rewards": [r.to_dict() for r in self.episode_rewards],
        }

    # ------------------------------------------------------------------ the step
    def _choose(self, logp: np.ndarray, bonus: np.ndarray, beta: float, temperature: float) -> int:
        """Index drawn from pi(c) ∝ p(c)^(1/T) e^(beta r(c)) (module docstring)."""
        if math.isinf(beta):  # lexicographic: the best-rewarded choices, the model's order
            score = np.where(bonus == bonus.max(), logp, -np.inf)
            beta_term = np.zeros_like(logp)
        else:
            score, beta_term = logp, beta * bonus
        if temperature == 0:
            return int(np.argmax(score + beta_term))
        z = score / temperature + beta_term
        p = np.exp(z - np.logaddexp.reduce(z))
        return int(np.random.default_rng(self.next_seed()).choice(len(z), p=p / p.sum()))

    def _reward_if(self, tag: str | None, action: str, well_formed: bool = True) -> StepReward:
        """The rule's reward of the next step, had it been ``(tag, action)``."""
        steps = [*self.trajectory, TaggedStep(tag, action, well_formed, True)]
        return step_reward(steps, len(self.trajectory), None, self.rewards)

    def _tag_block(
        self, prompt: list[dict[str, str]], admissible: list[str], rec: StepRecord
    ) -> tuple[str, bool]:
        """The tag block (module docstring, step 1) and whether the budget cut it."""
        if not self.constrained:
            ((s,),) = self.lm.sample(
                [prompt], None, temperature=self.tag_temperature,
                max_new_tokens=self.content_tokens, seed=self.next_seed(),
            )
            return s.text.strip(), not s.finished
        openings = [f"<{g}>" for g in self.tags]
        logp = np.asarray(self.lm.logprob([prompt] * len(openings), openings, add_eos=False))
        bonus = np.array([max(self._reward_if(g, a).meta for a in admissible) for g in self.tags])
        k = self._choose(logp, bonus, self.tag_guidance, self.tag_temperature)
        tag = self.tags[k]
        ((s,),) = self.lm.sample(
            [prompt], regex(self.content_regex[tag]), temperature=self.tag_temperature,
            max_new_tokens=self.content_tokens + len(tag) + 4, seed=self.next_seed(),
            assistant_prefix=openings[k],
        )
        rec.extra.update(
            rlvmr_tag_logp=dict(zip(self.tags, logp.tolist())),
            rlvmr_tag_bonus=dict(zip(self.tags, bonus.tolist())),
            tag_guided=tag != self.tags[int(np.argmax(logp))],
        )
        content = s.text[: -len(f"</{tag}>")] if s.finished else s.text.split("<", 1)[0]
        return f"<{tag}>{content}</{tag}>", not s.finished

    def decide(
        self, observation: str, admissible: list[str], info: dict[str, Any], rec: StepRecord
    ) -> Decision:
        if self.trajectory:  # the previous action's validity, now that its outcome is known
            prev = self.trajectory[-1]
            self.trajectory[-1] = TaggedStep(
                prev.tag, prev.action, prev.well_formed, not bool(info.get("invalid", False))
            )
        if self.policy_head is not None:
            tag, content, action, logp_action, model_choice = self._head_choice(
                observation, admissible, rec
            )
            prefix, cut = f"<{tag}>{content}</{tag}>\n<action>", False
        else:
            prefix, cut, action, logp_action, model_choice = self._model_answer(
                observation, admissible, rec
            )
        response = prefix + action + "</action>"
        parsed = parse_response(response)
        t = len(self.trajectory)
        self.trajectory.append(TaggedStep(parsed.tag, action, parsed.well_formed, True))
        reward = step_reward(self.trajectory, t, None, self.rewards)
        self.step_rewards.append(reward)
        if parsed.tag == "planning":
            self.plan = parsed.content
        rec.proposed(
            action, parsed.content, None, logp_action, "rlvmr", tag=parsed.tag,
            model_choice=model_choice,
        )
        rec.extra.update(
            rlvmr_tag=parsed.tag,
            rlvmr_response=response,
            rlvmr_well_formed=parsed.well_formed,
            rlvmr_format_problem=parsed.problem,
            rlvmr_tag_cut=cut,
            rlvmr_reward=reward.to_dict(),
            rlvmr_return=float(sum(r.total for r in self.step_rewards)),
            guided=action != model_choice,
            model_choice=model_choice,
            rlvmr_guide=self.guidance > 0 or self.tag_guidance > 0,
        )
        return Decision(action, parsed.content, parsed.tag)

    def _model_answer(
        self, observation: str, admissible: list[str], rec: StepRecord
    ) -> tuple[str, bool, str, float, str]:
        """The model's tag block and action (module docstring, steps 1 and 2): the answer's
        prefix up to ``<action>``, whether the budget cut the tag, the action, its log-prob
        and the model's own choice."""
        from smcplan.llm.roles.proposal import choose

        ctx = self.context(observation)
        prompt = self.assets.messages(
            task=self.task, context=ctx.situation(), plan=self.plan, admissible=admissible
        )
        self.last_prompt = prompt
        block, cut = self._tag_block(prompt, admissible, rec)
        prefix = block + "\n<action>"
        if self.free:
            action, logp_action, model_choice = self._write_action(prompt, prefix)
        else:
            ((k_model, _, _, log_probs),) = choose(
                self.lm, [prompt], [prefix], [admissible], 0.0, self.next_seed(), "</action>"
            )
            head = parse_response(prefix + "x</action>")  # the format verdict of the tag block
            bonus = np.array(
                [self._reward_if(head.tag, a, head.well_formed).meta for a in admissible]
            )
            k = self._choose(np.asarray(log_probs), bonus, self.guidance, self.action_temperature)
            action, logp_action = admissible[k], float(log_probs[k])
            model_choice = admissible[k_model]
        return prefix, cut, action, logp_action, model_choice

    def _head_choice(
        self, observation: str, admissible: list[str], rec: StepRecord
    ) -> tuple[str, str, str, float, str]:
        """(tag, sentence, action, log pi, the head's argmax action) from the policy head."""
        from smcplan.llm.roles.policy_head import (
            LMFeatures,
            candidate_pairs,
            sample_index,
            state_text,
        )

        head = self.policy_head
        if self._head_features is None:
            self._head_features = LMFeatures(self.lm, head.layers or None)
        if self._head_steps:  # the observation after the previous action is this one
            tag, action, _ = self._head_steps[-1]
            self._head_steps[-1] = (tag, action, observation)
            if self._head_map is not None:
                self._head_map.update(action, observation)
        pairs = candidate_pairs(head.tags, admissible)
        state = state_text(
            self.task,
            self._head_steps,
            observation,
            head.info.get("recent", 3),
            context=head.info.get("context", "full"),
        )
        notes = None if self._head_map is None else self._head_map.notes([a for _, a in pairs])
        if notes is None:
            logp = head.log_probs(self._head_features(state, pairs))
        else:
            logp = head.log_probs(self._head_features(state, pairs, notes))
        rng = np.random.default_rng(self.next_seed())
        k = sample_index(logp, rng, self.action_temperature)
        tag, action = pairs[k]
        self._head_steps.append((tag, action, ""))
        rec.extra.update(rlvmr_head_logp=float(logp[k]), rlvmr_head_candidates=len(pairs))
        if notes is not None:
            rec.extra["rlvmr_head_note"] = notes[k]
        best = pairs[int(np.argmax(logp))][1]
        return tag, HEAD_SENTENCES.get(tag, f"{tag}."), action, float(logp[k]), best

    def _write_action(self, prompt: list[dict[str, str]], prefix: str) -> tuple[str, float, str]:
        """Free mode: the action written in the ``<action>`` slot under the verb grammar."""
        from smcplan.llm.roles.free_action import generate_actions

        (w,) = generate_actions(
            self.lm, [prompt], [prefix], self.action_verbs, suffix="</action>",
            temperature=self.action_temperature, max_new_tokens=self.action_tokens,
            seed=self.next_seed(),
        )
        return w.text, w.logp, w.text


class RLVMRGuidedAgent(RLVMRAgent):
    """``rlvmr+guide``: RLVMR with its verifiable rewards as an inference-time guide on both the
    mode and the action (``tag_guidance = guidance = math.inf``; module docstring). An extension
    of this project, not the paper's inference."""

    name = "rlvmr+guide"

    def __init__(
        self,
        lm: LanguageModel | None = None,
        *,
        guidance: float = math.inf,
        tag_guidance: float = math.inf,
        **config: Any,
    ) -> None:
        super().__init__(lm, guidance=guidance, tag_guidance=tag_guidance, **config)
