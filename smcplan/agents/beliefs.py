"""What an agent remembers between steps and shows its model: history, KG belief, or a summary.

One interface, three implementations (``context=`` of the LLM agents):

* :class:`HistoryBelief` (``"history"``) — the trajectory itself, newest turns cut to the token
  budget (ReAct, Yao et al. 2023);
* :class:`KGBelief` (``"kg"``) — NeSyFS (arXiv 2607.28942): G_{t+1} = Update(G_t, o_t, a_t) with
  triplets from an :class:`~smcplan.agents.extractors.Extractor`, read through the task retrieval
  tau_t = R(G_t, eta, k) (:func:`smcplan.memory.retrieve`, ``k`` hops, at most ``limit`` facts);
* :class:`SummaryBelief` (``"belief"``) — a belief bottleneck in language (ABBEL, "Acting through
  Belief Bottlenecks Expressed in Language"): b_{t+1} = LLM(task, b_t, a_t, o_{t+1}), a rewritten
  summary of at most 240 characters; the policy sees only (task, b_t, o_t).

Each has ``reset(task, observation) -> dict`` and ``update(action, observation, step) -> dict``
(what changed, recorded in the next step's meta) and ``fill(context)`` (writes its part of a
:class:`~smcplan.agents.context.Context`).

Imports ``smcplan.memory`` and ``smcplan.llm`` (roles); never ``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from smcplan.agents.context import Context, History
from smcplan.agents.extractors import Extractor
from smcplan.memory import KnowledgeGraph

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = [
    "Belief",
    "HistoryBelief",
    "KGBelief",
    "SummaryBelief",
    "BeliefSummarizer",
    "CONTEXTS",
]

CONTEXTS = ("history", "kg", "belief")

@runtime_checkable
class Belief(Protocol):
    """The memory an agent conditions its model on (module docstring)."""

    mode: str

    def reset(self, task: str, observation: str) -> dict[str, Any]: ...

    def update(self, action: str, observation: str, step: int) -> dict[str, Any]: ...

    def fill(self, context: Context) -> None: ...


class HistoryBelief:
    """The trajectory, rendered newest-first into ``budget`` tokens (``counter`` counts them)."""

    mode = "history"

    def __init__(self, history: History, budget: int, counter: Callable[[str], int]) -> None:
        self.history = history
        self.budget = int(budget)
        self.counter = counter

    def reset(self, task: str, observation: str) -> dict[str, Any]:
        """Nothing to do: the agent owns and resets the :class:`History`."""
        return {}

    def update(self, action: str, observation: str, step: int) -> dict[str, Any]:
        return {}

    def fill(self, context: Context) -> None:
        context.history = self.history.render(self.budget, self.counter)


class KGBelief:
    """The NeSyFS knowledge-graph belief (module docstring); ``kg`` is the current graph."""

    mode = "kg"

    def __init__(self, extractor: Extractor, hops: int = 2, limit: int = 24) -> None:
        if hops < 0 or limit < 1:
            raise ValueError(f"need hops >= 0 and limit >= 1; got hops={hops}, limit={limit}")
        self.extractor = extractor
        self.hops = int(hops)
        self.limit = int(limit)
        self.kg = KnowledgeGraph()
        self.task = ""

    def reset(self, task: str, observation: str) -> dict[str, Any]:
        self.task = task
        self.kg = KnowledgeGraph()
        self.extractor.start(observation)
        return self._ingest(observation, None, 0)

    def _ingest(self, observation: str, action: str | None, step: int) -> dict[str, Any]:
        (extraction,) = self.extractor([observation], [action], [self.kg.location_of("agent")])
        report = self.kg.update(extraction, step=step, source="observed")
        return {
            "kg_extractor": self.extractor.active,
            "kg_added": [str(t) for t in report.added],
            "kg_removed": [str(t) for t in report.removed],
            "kg_size": len(self.kg),
        }

    def update(self, action: str, observation: str, step: int) -> dict[str, Any]:
        return self._ingest(observation, action, step)

    def retrieve(self, kg: KnowledgeGraph, observation: str | None) -> list[tuple[str, str, str]]:
        """tau = R(kg, task, hops) as plain tuples (also used on the planner's particle graphs).

        The retrieval chooses *which* facts (the most relevant ``limit``); they are listed in
        the order they entered the graph, so that a new fact extends the list at its end and
        the prompt before it stays the same (the prefix cache reuses it).
        """
        facts = kg.retrieve(
            self.task, self.hops, last_observation=observation, limit=self.limit, fill=True
        )
        facts.sort(key=lambda t: kg.provenance(t).seq)
        return [t.as_tuple() for t in facts]

    def fill(self, context: Context) -> None:
        context.triplets = self.retrieve(self.kg, context.observation)


class BeliefSummarizer:
    """``summarizer(tasks, beliefs, actions, observations) -> [new belief]``: one batched,
    schema-constrained call (greedy by default) with the ``belief`` role's templates (from
    ``roles_dir``, default the packaged ``models/roles``)."""

    def __init__(
        self, lm: LanguageModel, temperature: float = 0.0, roles_dir: str | Path | None = None
    ):
        from smcplan.llm.roles.base import Role

        class _Role(Role):
            asset_name = "belief"

        self.role = _Role(lm, roles_dir=roles_dir)
        self.lm = lm
        self.temperature = temperature

    def __call__(
        self,
        tasks: list[str],
        beliefs: list[str],
        actions: list[str | None],
        observations: list[str],
        seed: int | None = None,
    ) -> list[str]:
        assets = self.role.assets
        prompts = [
            assets.messages(task=t, belief=b, action=a, observation=o)
            for t, b, a, o in zip(tasks, beliefs, actions, observations, strict=True)
        ]
        outs = self.lm.generate(prompts, assets.schema, temperature=self.temperature, seed=seed)
        return [str(o["belief"]).strip() for o in outs]


class SummaryBelief:
    """The ABBEL-style belief bottleneck (module docstring); ``summary`` is the current belief."""

    mode = "belief"

    def __init__(self, summarizer: Callable[..., list[str]], seed_fn: Callable[[], int]) -> None:
        self.summarizer = summarizer
        self.seed_fn = seed_fn
        self.summary = ""
        self.task = ""

    def reset(self, task: str, observation: str) -> dict[str, Any]:
        self.task = task
        self.summary = ""
        self._rewrite(None, observation)
        return {"belief": self.summary}

    def _rewrite(self, action: str | None, observation: str) -> None:
        (self.summary,) = self.summarizer(
            [self.task], [self.summary], [action], [observation], seed=self.seed_fn()
        )

    def update(self, action: str, observation: str, step: int) -> dict[str, Any]:
        self._rewrite(action, observation)
        return {"belief": self.summary}

    def fill(self, context: Context) -> None:
        context.belief = self.summary
