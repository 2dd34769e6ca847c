r"""RLAW's actors and its return (:mod:`smcplan.agents.rlaw`, steps 2 and 4): :class:`JSONActor`
writes ``{"thought": z, "action": b}`` under a JSON regular expression and maps the free action
onto the admissible set; :class:`ScoredActor` draws the action over the admissible set by exact
scoring (:class:`smcplan.llm.RLAWActor`); :func:`discounted_return` is
:math:`G = \sum_t \gamma^t r_t`.

Imports the agents' shared parts and, lazily, ``smcplan.llm``; never ``smcplan.eval`` /
``smcplan.cli``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smcplan.agents.llm_agent import Candidate
from smcplan.agents.matching import match_admissible
from smcplan.llm.fields import JSON_TEXT, field_text, regex

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["JSONActor", "ScoredActor", "discounted_return"]


def discounted_return(
    r_env: list[float], r_critique: list[float], gamma: float = 0.95, lam: float = 0.5
) -> float:
    r""":math:`\sum_t \gamma^t (R^{\mathrm{env}}_t + \lambda R^{\mathrm{crit}}_t)` (module
    docstring)."""
    if len(r_env) != len(r_critique):
        raise ValueError(f"got {len(r_env)} env rewards but {len(r_critique)} critique rewards")
    return float(sum(gamma**t * (e + lam * c) for t, (e, c) in enumerate(zip(r_env, r_critique))))


class JSONActor:
    """The RLAW actor with free JSON decoding (module docstring, step 2).

    ``actor(task, context, admissible, critique, seed) -> Candidate``: one sample of the
    ``rlaw_actor`` role's answer ``{"thought": z, "action": b}`` at ``temperature``/``top_p``,
    both strings escape-free (:data:`~smcplan.llm.fields.JSON_TEXT`) within
    ``thought_tokens + action_tokens`` new tokens; its action mapped onto ``admissible``. An answer
    cut by the budget keeps what it has (``cut`` is recorded; a missing action is mapped by
    log-probability). The candidate's ``logq``/``logp`` are those of the whole JSON answer.
    With ``free=True`` the action is written under the command ``verbs`` given to the call and
    not mapped (:mod:`smcplan.llm.roles.free_action`).
    """

    SEP = '", "action": "'

    def __init__(
        self,
        lm: LanguageModel,
        temperature: float = 0.2,
        top_p: float = 0.9,
        thought_tokens: int = 64,
        action_tokens: int = 24,
        free: bool = False,
    ) -> None:
        from smcplan.llm.templates import load_role

        if thought_tokens < 1 or action_tokens < 1:
            raise ValueError(
                f"need thought_tokens, action_tokens >= 1; got {thought_tokens}, {action_tokens}"
            )
        self.lm = lm
        self.assets = load_role("rlaw_actor")
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.regex = JSON_TEXT + self.SEP + JSON_TEXT + r'"\}'
        self.max_new_tokens = int(thought_tokens) + int(action_tokens) + len(self.SEP) + 3
        self.free, self.action_tokens = bool(free), int(action_tokens)

    def __call__(
        self,
        task: str,
        context: str,
        admissible: list[str],
        critique: str | None = None,
        seed: int | None = None,
        verbs: list[str] | None = None,
    ) -> Candidate:
        from smcplan.llm.roles.free_action import action_regex
        from smcplan.llm.roles.proposal import choose

        prompt = self.assets.messages(
            task=task, context=context, admissible=admissible, critique=critique
        )
        pattern = self.regex
        if self.free:
            pattern = JSON_TEXT + self.SEP + action_regex(verbs, '"}')
        ((sample,),) = self.lm.sample(
            [prompt],
            regex(pattern),
            temperature=self.temperature,
            top_p=self.top_p,
            max_new_tokens=self.max_new_tokens,
            seed=seed,
            assistant_prefix=self.assets.prefix(thought=None),  # '{"thought": "'
        )
        body = field_text(sample.text, sample.finished, '"}')
        thought, sep, rest = body.partition(self.SEP)
        raw = rest if sep else None
        logp_action = None
        if self.free:
            action, how = (raw.strip(), "written") if raw and raw.strip() else (None, "")
            if action is None:
                action, logp_action = self._write_after(prompt, thought, verbs, seed)
                how = "written_after_cut"
        else:
            action, how = match_admissible(raw, admissible)
        if action is None:
            ((k, _logq, logp_action, _),) = choose(
                self.lm,
                [prompt],
                [self.assets.prefix(thought=thought)],
                [admissible],
                0.0,
                None if seed is None else seed + 1,
                self.assets.settings["action_suffix"],
                escape_json=True,
            )
            action, how = admissible[k], "logprob"
        return Candidate(
            action,
            thought.strip(),
            float(sample.logq),
            float(sample.logp),
            "actor",
            {
                "raw_action": raw,
                "mapping": how,
                "mapped": how == "logprob",
                "mapped_logp": logp_action,
                "cut": not sample.finished,
                **({"admissible": action in admissible} if self.free else {}),
            },
        )

    def _write_after(
        self, prompt: list[dict[str, str]], thought: str, verbs: list[str] | None, seed: int | None
    ) -> tuple[str, float]:
        """Free mode, answer cut before its action: the action written after the thought."""
        from smcplan.llm.roles.free_action import generate_actions

        (w,) = generate_actions(
            self.lm,
            [prompt],
            [self.assets.prefix(thought=thought)],
            verbs,
            suffix='"}',
            temperature=self.temperature,
            top_p=self.top_p,
            max_new_tokens=self.action_tokens,
            seed=None if seed is None else seed + 1,
        )
        return w.text, w.logp


class ScoredActor:
    """The RLAW actor by :class:`smcplan.llm.RLAWActor` (``decoding="scored"``): same call."""

    def __init__(self, lm: LanguageModel, temperature: float = 0.2) -> None:
        from smcplan.llm import RLAWActor

        self.role = RLAWActor(lm, temperature=temperature, thought_temperature=temperature)

    def __call__(
        self,
        task: str,
        context: str,
        admissible: list[str],
        critique: str | None = None,
        seed: int | None = None,
    ) -> Candidate:
        (out,) = self.role([task], [context], [admissible], [critique], seed=seed)
        info = {"raw_action": out.action, "mapping": "exact", "mapped": False}
        return Candidate(out.action, out.thought, float(out.logq), float(out.logp), "actor", info)
