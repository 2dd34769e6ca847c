r"""Reflexion (Shinn et al. 2023, "Reflexion: Language Agents with Verbal Reinforcement Learning").

The actor is ReAct (:class:`~smcplan.agents.react.ReactAgent`: a thought, then an admissible
action, the trajectory in context). After every *failed* trial (``end_episode(won=False, ...)``,
called by the harness) the model writes a verbal reflection :math:`m_k` on that trial's
trajectory — why it failed and what to do differently — and the agent keeps a sliding memory of
the last :math:`\Omega = 3` of them (the paper's bound, chosen to fit the context window). Every
role of the next trials sees that memory as notes ("Reflection on trial k: ..."), so the policy
becomes

.. math:: a_t \sim \pi(a \mid \text{task},\ m_{k-\Omega+1..k},\ h_t,\ o_t).

A won trial writes no reflection. The reflection is one greedy (``reflection_temperature=0``)
answer ``{"reflection": "..."}`` (escape-free text, at most ``reflection_tokens`` new tokens;
a reflection cut by that budget is kept as cut), conditioned on the task, the trial's trajectory
(newest turns within ``trajectory_tokens`` tokens) and its final score; its LLM cost lands in the
next step's ``llm_usage_between``.

Step records add ``reflexion_trial`` (0-based trial index since construction) and
``reflections_in_context`` (the memory shown, oldest first). :attr:`ReflexionAgent.reflections`
keeps every reflection written, with its trial.

Imports the agents' shared parts and, lazily, ``smcplan.llm``; never ``smcplan.eval`` /
``smcplan.cli``.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from smcplan.agents.llm_agent import Decision
from smcplan.agents.react import ReactAgent
from smcplan.agents.record import StepRecord
from smcplan.llm.fields import JSON_TEXT, field_text, regex
from smcplan.llm.templates import load_role

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["ReflexionAgent"]


class ReflexionAgent(ReactAgent):
    """ReAct plus verbal reflections carried across trials (module docstring).

    Parameters (beyond :class:`~smcplan.agents.react.ReactAgent`'s)
    ----------------------------------------------------------------
    max_reflections
        :math:`\\Omega`, how many of the latest reflections the next trials see (3).
    reflection_temperature, reflection_tokens, trajectory_tokens
        The reflection's decoding temperature (0: greedy), its token budget, and the token budget
        of the trajectory it reflects on.
    reflector
        Replaces the reflection call: ``reflector(task, trajectory, score, seed) -> str``.
    """

    name = "reflexion"

    def __init__(
        self,
        lm: LanguageModel | None = None,
        *,
        max_reflections: int = 3,
        reflection_temperature: float = 0.0,
        reflection_tokens: int = 96,
        trajectory_tokens: int = 768,
        reflector: Any = None,
        **config: Any,
    ) -> None:
        super().__init__(lm, **config)
        if max_reflections < 1 or reflection_tokens < 1 or trajectory_tokens < 1:
            raise ValueError(
                "need max_reflections, reflection_tokens and trajectory_tokens >= 1; got "
                f"{max_reflections}, {reflection_tokens}, {trajectory_tokens}"
            )
        self.memory: deque[dict[str, Any]] = deque(maxlen=int(max_reflections))
        self.reflections: list[dict[str, Any]] = []
        self.trial = -1
        self.reflection_temperature = float(reflection_temperature)
        self.trajectory_tokens = int(trajectory_tokens)
        self.assets = load_role("reflexion")
        self.reflection_tokens = int(reflection_tokens)
        self.reflector = reflector or self._reflect

    # ------------------------------------------------------------------ trials
    def on_reset(self, task: str, observation: str, admissible: list[str]) -> None:
        self.trial += 1

    def on_episode_end(self, won: bool, score: float) -> None:
        if won:
            return
        trajectory = self.history.render(self.trajectory_tokens, self.counter)
        if self.last_action is not None:  # the final action: the harness shows no observation
            end = f"> {self.last_action}\n(the trial ended here, score {score:.2f})"
            trajectory = f"{trajectory}\n{end}" if trajectory else end
        trajectory = trajectory or "(no steps)"
        text = " ".join(str(self.reflector(self.task, trajectory, score, self.next_seed())).split())
        entry = {"trial": self.trial, "score": float(score), "reflection": text}
        self.memory.append(entry)
        self.reflections.append(entry)

    def _reflect(self, task: str, trajectory: str, score: float, seed: int) -> str:
        prompt = self.assets.messages(task=task, trajectory=trajectory, score=f"{score:.2f}")
        ((s,),) = self.lm.sample(
            [prompt],
            regex(JSON_TEXT + r'"\}'),
            temperature=self.reflection_temperature,
            max_new_tokens=self.reflection_tokens,
            seed=seed,
            assistant_prefix='{"reflection": "',
        )
        return field_text(s.text, s.finished, '"}')

    def notes(self) -> list[str]:
        return [f"Reflection on trial {m['trial'] + 1}: {m['reflection']}" for m in self.memory]

    # ------------------------------------------------------------------ the step
    def decide(
        self, observation: str, admissible: list[str], info: dict[str, Any], rec: StepRecord
    ) -> Decision:
        rec.extra.update(
            reflexion_trial=self.trial,
            reflections_in_context=[m["reflection"] for m in self.memory],
        )
        return super().decide(observation, admissible, info, rec)
