"""Triplet extraction for agents: the rule-based reader, the LLM extractor, or "auto", one
interface.

An extractor maps a batch of observations (with the actions that produced them and the agent's
location in each graph) to one list of triplets per observation, so that NeSyFS's per-step update
G_{t+1} = Update(G_t, o_t, a_t) and the planner's per-particle KG updates use the same code:

* ``"rule"`` — :func:`smcplan.memory.extract_triplets` (deterministic sentence templates of
  ALFWorld, TextWorldExpress, ScienceWorld); the benchmark is detected from the episode's first
  observation unless ``env_kind`` is given;
* ``"llm"`` — :class:`smcplan.llm.TripletExtractor` (NeSyFS's constrained LLM extraction), one
  batched model call for the whole batch;
* ``"auto"`` — ``"rule"`` when the episode's first observation is in a known benchmark format,
  else ``"llm"`` (decided once per episode, at :meth:`Extractor.start`).

LLM triplets whose subject, relation or object is empty after normalisation ("the") are dropped
(and counted), never passed to the graph.

The rule set an episode reads with (pinned or detected, :attr:`Extractor.rule_set`) also names
the game's home (:attr:`Extractor.rules`, :func:`smcplan.games.rules_for`), resolved once per
episode; :func:`game_rules` is what agents hand to the planner and the twists.

Imports ``smcplan.memory``, ``smcplan.games`` and (lazily) ``smcplan.llm``; never
``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from smcplan.errors import InvalidArgumentError
from smcplan.games import GENERIC, GameRules, rules_for
from smcplan.memory import Extraction, Triplet, detect_env_kind, extract_triplets
from smcplan.memory.extract import ENV_KINDS

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = ["Extractor", "EXTRACTORS", "clean_triplets", "game_rules"]

EXTRACTORS = ("rule", "llm", "auto")


def clean_triplets(raw: Sequence[Sequence[str]]) -> tuple[list[Triplet], int]:
    """``raw`` ``(s, r, o)`` tuples as :class:`Triplet` s, minus the malformed ones; and how many
    were dropped."""
    out: list[Triplet] = []
    dropped = 0
    for item in raw:
        try:
            s, r, o = item
            out.append(Triplet(str(s), str(r), str(o)))
        except (TypeError, ValueError):
            dropped += 1
    return out, dropped


def check_env_kind(env_kind: Any) -> str | None:
    """``env_kind`` if it names a rule set (``None``: detect it from the first observation;
    ``"auto"``; ``"generic"``; a benchmark or env name such as ``"twx:coin"``), else an
    :class:`~smcplan.errors.InvalidArgumentError` naming it and the known ones."""
    if env_kind is None:
        return None
    if isinstance(env_kind, str):
        from smcplan.memory.extract import _ALIASES

        head = env_kind.strip().lower().split(":", 1)[0]
        if head in (GENERIC, "auto") or _ALIASES.get(head, head) in ENV_KINDS:
            return env_kind
    known = ", ".join([GENERIC, "auto", *ENV_KINDS])
    raise InvalidArgumentError(
        f"env_kind={env_kind!r}: unknown rule set; give one of {known} (or an env name such as "
        f"'twx:coin'), or leave it unset to detect it from the first observation"
    )


class Extractor:
    """``extractor(observations, actions, locations) -> [Extraction]`` (module docstring).

    ``kind``: one of :data:`EXTRACTORS`; ``lm`` is needed for ``"llm"`` (and for ``"auto"`` when
    the format is unknown); ``env_kind`` pins the rule set (e.g. ``"textworld_express"``, or
    ``"generic"``: no game knowledge, :data:`smcplan.games.GENERIC`, triplets read with the
    ``auto`` grammar; an unknown one is an :class:`~smcplan.errors.InvalidArgumentError`);
    ``llm_extractor`` replaces the default :class:`smcplan.llm.TripletExtractor` (same call
    signature), e.g. with other templates.
    """

    def __init__(
        self,
        kind: str = "auto",
        lm: LanguageModel | None = None,
        env_kind: str | None = None,
        llm_extractor: Any = None,
    ) -> None:
        if kind not in EXTRACTORS:
            raise ValueError(f"unknown extractor {kind!r}; known: {', '.join(EXTRACTORS)}")
        if kind == "llm" and lm is None and llm_extractor is None:
            raise ValueError("extractor='llm' needs lm= (a smcplan.llm.LanguageModel)")
        self.kind = kind
        self.lm = lm
        self.env_kind = check_env_kind(env_kind)
        self._llm = llm_extractor
        self.active = "llm" if kind == "llm" else "rule"
        self._rules = env_kind or "auto"
        self.dropped = 0

    def start(self, first_observation: str) -> str:
        """Fix the rule set (and, for ``"auto"``, rule vs LLM) from the first observation.

        Returns the extractor in use for this episode: ``"rule"`` or ``"llm"``.
        """
        detected = self.env_kind or detect_env_kind(first_observation)
        self._rules = detected or "auto"
        if self.kind == "auto":
            has_llm = self.lm is not None or self._llm is not None
            self.active = "llm" if detected is None and has_llm else "rule"
        return self.active

    @property
    def rule_set(self) -> str:
        """The rule set the episode reads with: ``env_kind`` if pinned, else the one
        :meth:`start` detected from the first observation, else ``"auto"``."""
        return self._rules

    @property
    def grammar(self) -> str:
        """The triplet grammar of :attr:`rule_set` (``"auto"`` for ``"generic"``)."""
        return "auto" if self._rules == GENERIC else self._rules

    @property
    def rules(self) -> GameRules:
        """The game's home for :attr:`rule_set` (:func:`smcplan.games.rules_for`)."""
        return rules_for(self._rules)

    @property
    def llm(self) -> Any:
        if self._llm is None:
            if self.lm is None:
                raise ValueError(
                    "the LLM triplet extractor needs lm= (a smcplan.llm.LanguageModel)"
                )
            from smcplan.llm import TripletExtractor

            self._llm = TripletExtractor(self.lm)
        return self._llm

    def __call__(
        self,
        observations: Sequence[str],
        actions: Sequence[str | None],
        locations: Sequence[str | None] | None = None,
        seed: int | None = None,
    ) -> list[Extraction]:
        if len(observations) != len(actions):
            raise ValueError(f"got {len(observations)} observations but {len(actions)} actions")
        locs = list(locations) if locations is not None else [None] * len(observations)
        if self.active == "rule":
            return [
                extract_triplets(o, a, env_kind=self.grammar, location=loc)
                for o, a, loc in zip(observations, actions, locs, strict=True)
            ]
        raw = self.llm(list(observations), list(actions), seed=seed)
        out = []
        for triples in raw:
            good, dropped = clean_triplets(triples)
            self.dropped += dropped
            out.append(Extraction(tuple(dict.fromkeys(good))))
        return out


def game_rules(extractor: Any = None) -> GameRules:
    """The game's home an agent hands to the planner: ``extractor.rules`` for an
    :class:`Extractor` (resolved at :meth:`Extractor.start`), the home of another extractor's
    ``rule_set`` string, else the ``auto`` home (every text game's rules, as the planner reads an
    episode of unknown format)."""
    if isinstance(extractor, Extractor):
        return extractor.rules
    rule_set = getattr(extractor, "rule_set", None)
    return rules_for(rule_set if isinstance(rule_set, str) else "auto")
