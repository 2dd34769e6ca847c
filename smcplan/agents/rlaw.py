r"""RLAW (arXiv 2607.17038): an actor proposes JSON, a critic scores it, low scores are retried.

One step:

1. **memory** — the serialised graph memory: the facts the task retrieves from the agent's
   :class:`smcplan.memory.KnowledgeGraph`, updated every step (``context="kg"``,
   :class:`~smcplan.agents.beliefs.KGBelief`); the ablation ``graph_memory=False`` shows the
   recent trajectory instead (``context="history"``; ``history_tokens=0`` shows nothing);
2. **actor** — writes ``{"thought": z, "action": b}`` at temperature 0.2 with top-p 0.9
   (``decoding="json"``, the paper's setting; :class:`JSONActor`). The free action ``b`` is mapped
   onto the admissible set: itself or its case/space-folded form when admissible, else the
   admissible action with the highest log-probability in the answer's action slot after the same
   thought (``mapping="logprob"``; every proposal records ``raw_action``, ``mapping`` and
   ``mapped``). With ``action_mode="free"`` the action slot is written under the benchmark's
   verb grammar and executed as written (``mapping="written"``; an answer cut before its action
   gets the action written alone after its thought, ``"written_after_cut"``): the environment
   may reject it. ``decoding="scored"`` uses :class:`smcplan.llm.RLAWActor` instead (the action
   drawn over the admissible set by exact scoring; no nucleus);
3. **critic** — :class:`smcplan.llm.Critic` answers ``{logic_check, safety_check,
   critique_score, reason}``; the proposal is accepted iff ``critique_score >= tau`` (0.7).
   Otherwise the reason is fed back to the actor, which proposes again — at most
   ``max_regenerations`` = 3 times (4 proposals in all); if none is accepted the best-scored
   proposal is executed (the first among equals; ``executed="fallback"``). This is
   :meth:`LLMAgent.generate_and_test` with the actor as proposer and the critic as judge;
4. **return** — the critique of the executed proposal is the step's
   :math:`R^{\mathrm{crit}}_t` (its ``critique_score``; 0 without a critic) and the agent keeps

   .. math:: G = \sum_t \gamma^t \left(R^{\mathrm{env}}_t + \lambda R^{\mathrm{crit}}_t\right),
      \qquad \gamma = 0.95,\ \lambda = 0.5,

   with :math:`R^{\mathrm{env}}_t = s_{t+1} - s_t` the change of the environment's normalised
   score after action :math:`a_t` (known at the next step, or at ``end_episode`` for the last).

Step records add ``r_critique``, ``rlaw_r_env_previous`` (R_env of the previous step, ``None``
at the first), ``rlaw_return`` (G over the steps whose R_env is known) and ``kg_retrieved``.
After ``end_episode``, :attr:`RLAWAgent.episode_return` is the full G and
:attr:`RLAWAgent.episode_rewards` the per-step terms.

Ablations: ``use_critic=False`` (execute the actor's first proposal), ``graph_memory=False``.

Extension (off by default, not in the paper): ``distinct_regenerations=True`` removes the
actions the critic rejected this step from the admissible set the actor sees and maps onto, so
each regeneration is a different action (when one is left). The paper's actor reads the
critique and writes again; a 135M actor at T = 0.2 writes the same action again after its
rejection (docs/train_rlaw_rlvmr.md), and then 4 proposals are 1 candidate and the critic has
nothing to choose from. With it the critic chooses among up to 4 distinct admissible actions.
``fallback="critic"`` (also off by default) goes one step further when no proposal is accepted:
the critic scores every admissible action not proposed this step (thought slot ``"I will
<action>."``, one batched call) and the best-scored action of all, proposals included, is
executed (``executed="critic"`` when it is one the actor did not propose; the first among
equals). The paper's fallback (``"best"``) executes the best-scored proposal.

The actors and the return live in :mod:`smcplan.agents.rlaw_actors`.  Imports the agents'
shared parts and, lazily, ``smcplan.llm``; never ``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from smcplan.agents.beliefs import KGBelief
from smcplan.agents.extractors import game_rules
from smcplan.agents.llm_agent import Candidate, Decision, Judgement, LLMAgent
from smcplan.agents.map_notes import MapNotes
from smcplan.agents.record import StepRecord
from smcplan.agents.rlaw_actors import JSONActor, ScoredActor, discounted_return

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["RLAWAgent", "JSONActor", "ScoredActor", "discounted_return"]

DECODINGS = ("json", "scored")
FALLBACKS = ("best", "critic")


class RLAWAgent(LLMAgent):
    """The RLAW agent (module docstring).

    Parameters (beyond :class:`~smcplan.agents.llm_agent.LLMAgent`'s)
    ----------------------------------------------------------------
    use_critic, graph_memory
        Ablation switches (both on by default).
    tau, max_regenerations
        Acceptance threshold of the critique score (0.7) and the number of retries after the
        first proposal (3).
    gamma, lam
        Discount and critique weight of the recorded return (0.95, 0.5).
    decoding, actor_temperature, actor_top_p, thought_tokens, action_tokens
        The actor: ``"json"`` (free JSON at T = 0.2, top-p 0.9 within a token budget, action
        mapped) or ``"scored"``.
    critic_temperature, critic_lm
        The critic's decoding temperature (0: greedy) and its model (default: ``lm``).
    critic_path, critic_model
        A trained critic: ``smcplan train critic``'s LoRA adapter folder, loaded as the
        critic's model with ``load_model(critic_model, adapter=critic_path)`` (``critic_model``:
        the adapter's base, default the packaged SmolLM2), or ``smcplan train critic-head``'s
        head folder (:class:`smcplan.llm.roles.score_head.ScoreCritic`: the score is read off
        a logistic head on the model's hidden state; the actor's ``lm`` serves it when it is
        the model the head was fitted on), or a shipped artifact's name
        (``"twx-coin-critic-head"``, :mod:`smcplan.llm.artifacts`). The actor stays ``lm``,
        frozen.
    fallback
        When no proposal is accepted: ``"best"`` (the paper: the best-scored proposal) or
        ``"critic"`` (the critic also scores the admissible actions not proposed, and the best
        of all is executed; module docstring, extension). Needs ``action_mode="admissible"``.
    distinct_regenerations
        Regenerations may not propose an action the critic rejected this step (module
        docstring, extension); needs ``action_mode="admissible"`` (a free action is not mapped).
    critic_notes
        Give the critic, with each action, what the agent's place map (read from the episode's
        real observations) says about it (:mod:`smcplan.agents.map_notes`). ``None``
        (default): on when the trained critic's manifest (a shipped artifact's
        ``manifest.json``, or ``<critic_path>/../train.json``) says it was trained with them
        (``smcplan train critic --opt map_notes=true``; a score head fitted on noted prompts),
        else off.
    actor, critic
        Replace the actor (``actor(task, context, admissible, critique, seed) -> Candidate``) or
        the critic role (``critic(tasks, contexts, thoughts, actions, seed=) -> [Critique]``).
    """

    name = "rlaw"
    default_context = "kg"

    def __init__(
        self,
        lm: LanguageModel | None = None,
        *,
        use_critic: bool = True,
        graph_memory: bool = True,
        tau: float = 0.7,
        max_regenerations: int = 3,
        gamma: float = 0.95,
        lam: float = 0.5,
        decoding: str = "json",
        actor_temperature: float = 0.2,
        actor_top_p: float = 0.9,
        thought_tokens: int = 64,
        action_tokens: int = 24,
        critic_temperature: float = 0.0,
        critic_lm: LanguageModel | None = None,
        critic_path: str | None = None,
        critic_model: str | None = None,
        critic_notes: bool | None = None,
        distinct_regenerations: bool = False,
        fallback: str = "best",
        actor: Any = None,
        critic: Any = None,
        context: str | None = None,
        **config: Any,
    ) -> None:
        wanted = "kg" if graph_memory else "history"
        if context is not None and context != wanted:
            raise ValueError(
                f"context={context!r} contradicts graph_memory={graph_memory}; "
                f"use graph_memory=True for 'kg' and False for 'history'"
            )
        super().__init__(lm, context=wanted, action_tokens=action_tokens, **config)
        if decoding not in DECODINGS:
            raise ValueError(f"unknown decoding {decoding!r}; known: {', '.join(DECODINGS)}")
        if self.free and decoding != "json" and actor is None:
            raise ValueError(
                "decoding='scored' scores the admissible set; action_mode='free' needs "
                "decoding='json' (the actor writes its action)"
            )
        if not 0.0 <= tau <= 1.0 or max_regenerations < 0:
            raise ValueError(
                f"need 0 <= tau <= 1 and max_regenerations >= 0; got {tau}, {max_regenerations}"
            )
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {gamma}")
        head = None
        if critic_path is not None:
            if critic_lm is not None:
                raise ValueError("give critic_lm or critic_path, not both")
            from smcplan.llm import load_model
            from smcplan.llm.artifacts import resolve_artifact
            from smcplan.llm.roles.score_head import ScoreHead, is_score_head

            critic_path = str(resolve_artifact(critic_path, "critic_path"))
            if is_score_head(critic_path):
                head = ScoreHead.load(critic_path)
                base = critic_model or head.info.get("model")
                same = critic_model is None and head.info.get("adapter") is None
                if not (same and getattr(self.lm, "name", None) == head.info.get("model_name")):
                    critic_lm = load_model(base, adapter=head.info.get("adapter"))
            else:
                critic_lm = load_model(critic_model, adapter=critic_path)
        self.critic_path = None if critic_path is None else str(critic_path)
        if critic_notes is None:
            critic_notes = trained_with_notes(critic_path)
        elif not isinstance(critic_notes, bool):
            raise ValueError(f"critic_notes must be true or false; got {critic_notes!r}")
        self.critic_notes = critic_notes
        if not isinstance(distinct_regenerations, bool):
            raise ValueError(
                f"distinct_regenerations must be true or false; got {distinct_regenerations!r}"
            )
        if distinct_regenerations and self.free:
            raise ValueError(
                "distinct_regenerations=True removes rejected actions from the admissible set, "
                "which action_mode='free' does not map onto; use action_mode='admissible'"
            )
        self.distinct_regenerations = distinct_regenerations
        if fallback not in FALLBACKS:
            raise ValueError(f"unknown fallback {fallback!r}; known: {', '.join(FALLBACKS)}")
        if fallback == "critic" and self.free:
            raise ValueError(
                "fallback='critic' ranks the admissible set, which action_mode='free' does not "
                "choose from; use action_mode='admissible'"
            )
        self.fallback = fallback
        self._map_notes: MapNotes | None = None
        self.use_critic = bool(use_critic)
        self.tau = float(tau)
        self.max_regenerations = int(max_regenerations)
        self.gamma, self.lam = float(gamma), float(lam)
        self.decoding = decoding
        if actor is None:
            actor = (
                JSONActor(
                    lm, actor_temperature, actor_top_p, thought_tokens, action_tokens, self.free
                )
                if decoding == "json"
                else ScoredActor(lm, actor_temperature)
            )
        self.actor = actor
        if self.use_critic and critic is None and head is not None:
            from smcplan.llm.roles.score_head import ScoreCritic

            critic = ScoreCritic(critic_lm if critic_lm is not None else self.lm, head)
        elif self.use_critic and critic is None:
            from smcplan.llm import Critic

            critic = Critic(
                critic_lm if critic_lm is not None else lm, temperature=critic_temperature
            )
        self.critic = critic
        if critic_lm is not None:
            self.register_lm(critic_lm)
        self.episode_rewards: list[dict[str, float]] = []
        self.episode_return = 0.0
        self._score = 0.0
        self._pending: float | None = None  # R_crit of the step whose R_env is not known yet

    # ------------------------------------------------------------------ return bookkeeping
    def on_reset(self, task: str, observation: str, admissible: list[str]) -> None:
        if self.critic_notes:
            self._map_notes = MapNotes(game_rules(getattr(self.belief, "extractor", None)))
            self._map_notes.reset(observation)
        self.episode_rewards = []
        self.episode_return = 0.0
        self._score = 0.0
        self._pending = None

    def _close_step(self, score: float) -> float | None:
        """Book R_env of the previous step (score change) with its R_crit; returns R_env."""
        if self._pending is None:
            self._score = score
            return None
        r_env = score - self._score
        t = len(self.episode_rewards)
        self.episode_rewards.append({"t": t, "r_env": r_env, "r_critique": self._pending})
        self.episode_return += self.gamma**t * (r_env + self.lam * self._pending)
        self._score, self._pending = score, None
        return r_env

    def on_episode_end(self, won: bool, score: float) -> None:
        self._close_step(float(score))

    def episode_info(self) -> dict[str, Any]:
        """``{"rlaw_return": G}`` of the episode just ended (module docstring)."""
        return {"rlaw_return": float(self.episode_return)}

    # ------------------------------------------------------------------ the step
    def decide(
        self, observation: str, admissible: list[str], info: dict[str, Any], rec: StepRecord
    ) -> Decision:
        r_env_prev = self._close_step(float(info.get("score", self._score) or 0.0))
        if self._map_notes is not None and self.last_action is not None:
            self._map_notes.update(self.last_action, observation)
        ctx = self.context(observation)
        if isinstance(self.belief, KGBelief):
            rec.extra["kg_retrieved"] = [f"({s}, {r}, {o})" for s, r, o in ctx.triplets]
        situation = ctx.situation()

        free = {"verbs": self.action_verbs} if self.free else {}

        rejected: list[str] = []

        def propose(feedback: list[str]) -> Candidate:
            pool = admissible
            if self.distinct_regenerations:
                pool = [a for a in admissible if a not in rejected] or admissible
            return self.actor(
                self.task,
                situation,
                pool,
                feedback[-1] if feedback else None,
                self.next_seed(),
                **free,
            )

        def judge(cand: Candidate) -> Judgement:
            verdict = self.judge(situation, cand, rec)
            if not verdict.accept:
                rejected.append(cand.action)
            return verdict

        if not self.use_critic:
            chosen = propose([])
            rec.proposed(
                chosen.action,
                chosen.thought,
                chosen.logq,
                chosen.logp,
                chosen.source,
                **chosen.info,
            )
            r_crit = 0.0
        else:
            outcome = self.generate_and_test(
                propose,
                judge,
                1 + self.max_regenerations,
                rec,
            )
            if outcome.accepted is not None:
                chosen, rec.executed = outcome.accepted, "proposal"
                r_crit = outcome.tried[-1][1].score
            else:
                chosen, rec.executed = outcome.best(), "fallback"
                r_crit = next(j.score for c, j in outcome.tried if c is chosen)
                if self.fallback == "critic":
                    ranked = self.rank_unproposed(situation, admissible, outcome.tried, rec)
                    if ranked is not None and ranked.score > r_crit:
                        chosen, r_crit, rec.executed = ranked.candidate, ranked.score, "critic"
        self._pending = r_crit
        rec.extra.update(
            r_critique=r_crit,
            rlaw_r_env_previous=r_env_prev,
            rlaw_return=self.episode_return,
            regenerations=max(0, len(rec.proposals) - 1),
        )
        return Decision(chosen.action, chosen.thought)

    def rank_unproposed(
        self,
        situation: str,
        admissible: list[str],
        tried: list[tuple[Candidate, Judgement]],
        rec: StepRecord,
    ) -> RankedAction | None:
        """``fallback="critic"``: the critic's scores of the admissible actions not proposed this
        step (one batched call; recorded as ``critic_ranked``, ``{action: score}``), and the
        best of them (the first among equals), or None when every action was proposed."""
        from smcplan.llm.roles.score_head import action_thought

        proposed = {c.action for c, _ in tried}
        rest = [a for a in admissible if a not in proposed]
        if not rest:
            return None
        thoughts = [action_thought(a) for a in rest]
        notes = {} if self._map_notes is None else {"notes": self._map_notes.notes(rest)}
        critiques = self.critic(
            [self.task] * len(rest),
            [situation] * len(rest),
            thoughts,
            rest,
            seed=self.next_seed(),
            **notes,
        )
        scores = [float(c.critique_score) for c in critiques]
        rec.extra["critic_ranked"] = dict(zip(rest, scores, strict=True))
        k = max(range(len(rest)), key=lambda i: (scores[i], -i))
        info = {"raw_action": None, "mapping": "critic", "mapped": False}
        nan = float("nan")
        return RankedAction(Candidate(rest[k], thoughts[k], nan, nan, "critic", info), scores[k])

    def judge(self, situation: str, cand: Candidate, rec: StepRecord) -> Judgement:
        """The critic on one proposal: accept iff ``critique_score >= tau``."""
        notes = {}
        if self._map_notes is not None:
            notes["notes"] = self._map_notes.notes([cand.action])
            rec.extra.setdefault("critic_notes", []).append(notes["notes"][0])
        (c,) = self.critic(
            [self.task],
            [situation],
            [cand.thought],
            [cand.action],
            seed=self.next_seed(),
            **notes,
        )
        score = float(c.critique_score)
        rec.critiqued(score)
        return Judgement(
            score >= self.tau,
            score,
            str(c.reason).strip(),
            "critic",
            {"logic_check": bool(c.logic_check), "safety_check": bool(c.safety_check)},
        )


class RankedAction(NamedTuple):
    """The critic's best action among those the actor did not propose, and its score."""

    candidate: Candidate
    score: float


def trained_with_notes(critic_path: str | None) -> bool:
    """Whether the trained critic at ``critic_path`` was trained with map notes: a shipped
    artifact's ``<critic_path>/manifest.json`` (``settings.map_notes``), or the trainer's
    ``<critic_path>/../train.json`` (``map_notes``), says so; False without a path or either."""
    if critic_path is None:
        return False
    shipped = Path(critic_path) / "manifest.json"
    if shipped.is_file():
        settings = json.loads(shipped.read_text(encoding="utf-8")).get("settings", {})
        return bool(settings.get("map_notes", False))
    manifest = Path(critic_path).parent / "train.json"
    if not manifest.is_file():
        return False
    return bool(json.loads(manifest.read_text(encoding="utf-8")).get("map_notes", False))
