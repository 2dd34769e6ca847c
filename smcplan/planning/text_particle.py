r"""The text planner's particle: one imagined future of a text agent, and what it reads.

A :class:`TextParticle` :math:`x^i_{\le t}` holds its own copy of the agent's knowledge graph
:math:`G^i_t` (copy on write, :meth:`smcplan.memory.KnowledgeGraph.copy`), the real observation
at the root, the imagined steps :math:`(a^i_s, o^i_s)_{s \le t}` with their
:class:`~smcplan.planning.outcome.Outcome` and triplets, and, under the simulator world model,
its own environment.  It reads its graph as :math:`\tau^i = R(G^i_t, \text{task})`
(:meth:`TextParticle.facts`, the retrieval of :class:`~smcplan.planning.config.Retrieval`) and
shows the observation model the text it continues (:meth:`TextParticle.context`).

:func:`known_actions` is a particle's next admissible set under the LM world model (the real set
filtered to the actions whose objects :math:`G^i_t` knows); :func:`key_to_seed` turns a
``jax.random`` key into the int seed of one batched model call, so the same key gives the same
text.  Imports ``smcplan.memory``; never ``smcplan.llm``, agents, eval or cli.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jax

from smcplan.memory import KnowledgeGraph
from smcplan.planning.config import DEFAULT_RETRIEVAL, Retrieval
from smcplan.planning.outcome import Outcome

__all__ = [
    "TextParticle",
    "Triple",
    "known_actions",
    "key_to_seed",
    "clip_observation",
    "first_sentence",
    "render_context",
    "ELISION",
    "OBS_CHARS",
]

Triple = tuple[str, str, str]


def key_to_seed(key: jax.Array) -> int:
    """An int seed for one model call, drawn from a ``jax.random`` key (same key, same seed)."""
    return int(jax.random.randint(key, (), 0, 2**31 - 1))


#: characters of each observation a particle's context keeps (:func:`clip_observation`)
OBS_CHARS = 300

#: what stands for the dropped middle of a clipped observation
ELISION = " ... "


def clip_observation(text: str, limit: int) -> str:
    """``text`` with runs of whitespace made one space and, when longer than ``limit``
    characters, its middle replaced by :data:`ELISION`: the head (where the agent is, the first
    things it sees) and the tail (the exits and doors, which text games list last) are kept,
    ``limit`` characters in all.  A head-only clip dropped TextWorldExpress's door line from
    every room with more than a few things in it (median observation 435 characters on
    twx:coin), so neither world model could tell a move through an open door from one into a
    closed door at depth 1."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    keep = limit - len(ELISION)
    if keep < 2:
        return text[:limit]
    head = (keep + 1) // 2
    return text[:head] + ELISION + text[len(text) - (keep - head) :]


@dataclass(frozen=True)
class TextParticle:
    r"""One imagined future :math:`x^i_{\le t}` of a text agent: what the text planner's
    proposal, world model and twist get, a batch of N at a time.

    The planner starts N copies of one root particle (``kg`` = the agent's graph, ``steps``
    empty); a world model returns each particle one step further with :meth:`extend` (a new
    object: particles are immutable and shared after resampling, copy on write).  Your own
    components read the fields and properties below (:mod:`smcplan.planning.custom`): the
    properties :attr:`observation` (the latest observation), :attr:`previous` (the one before
    it), :attr:`score` (after the latest step) and :attr:`done` (the episode ended on this
    path), and the methods :meth:`facts` (the retrieved graph facts) and :meth:`context` (the
    text an observation model continues) read the fields.

    Attributes
    ----------
    kg
        The particle's own :class:`~smcplan.memory.KnowledgeGraph` (a copy of the agent's,
        updated from its imagined observations), or ``None`` when the planner runs without a
        graph.
    root_observation
        The real observation the plan starts from.
    steps
        The imagined ``(action, observation)`` pairs, one per planning step so far
        (``steps[-1]`` is the latest; empty at the root).
    outcomes
        One :class:`~smcplan.planning.outcome.Outcome` per step (score, gain, won, lost, done,
        invalid), aligned with ``steps``.
    triplets
        Per step, the ``(subject, predicate, object)`` triplets read from its observation into
        ``kg`` (empty tuples without a graph or extractor).
    admissible
        The particle's own admissible actions for its next proposal: at the root the real set
        given to the planner, after a step the simulator's reply (empty once the episode
        ended), under the LM world model the real set filtered by :func:`known_actions`, and
        the parent's set where a world model gives none.  ``None`` only on a particle built by
        hand without one (the proposals then use the real set).
    env
        Its own copy of the environment (the simulator world model; ``None`` at the root and
        for the other world models).  The one mutable field: only the simulator world model
        steps it, after copying a shared one.
    root_score
        The real score at the root (``score`` before any step).
    maps
        The particle's own place map after each step (:class:`~smcplan.planning.places.PlaceMap`,
        aligned with ``steps``), carried by the language-model world models, which keep the
        reply the map already fixes (:mod:`smcplan.planning.map_replies`); empty where the world
        model carries none (the simulator's, a custom one, a particle built by hand).
    memo
        What twists carry for this particle (a dict per particle object, keyed by the twist;
        not an argument, not compared, not shown): a twist stores its summary of the path here
        and reads its parent's from ``parent_memo`` (the ``memo`` of the particle this one was
        :meth:`extend` ed from; ``None`` at the root or for a particle made otherwise), so a
        planner step costs it one step, whatever the path's length
        (:mod:`smcplan.planning.twist_carry`).
    """

    kg: KnowledgeGraph | None
    root_observation: str
    steps: tuple[tuple[str, str], ...] = ()
    outcomes: tuple[Outcome, ...] = ()
    triplets: tuple[tuple[Triple, ...], ...] = ()
    admissible: tuple[str, ...] | None = None
    env: Any = field(default=None, compare=False, repr=False)
    root_score: float = 0.0
    maps: tuple[Any, ...] = ()
    memo: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    parent_memo: dict | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def observation(self) -> str:
        """The latest observation (imagined after step 1)."""
        return self.steps[-1][1] if self.steps else self.root_observation

    @property
    def previous(self) -> str:
        """The observation before the latest one ("" at the root)."""
        if not self.steps:
            return ""
        return self.steps[-2][1] if len(self.steps) >= 2 else self.root_observation

    @property
    def score(self) -> float:
        """The score after the latest step (``root_score`` at the root)."""
        return self.outcomes[-1].score if self.outcomes else self.root_score

    @property
    def done(self) -> bool:
        """True once an outcome on this path ended the episode."""
        return any(o.done for o in self.outcomes)

    def extend(
        self,
        action: str,
        observation: str,
        *,
        kg: Any = None,
        env: Any = None,
        outcome: Outcome | None = None,
        admissible: Sequence[str] | None = None,
        triplets: Sequence[Any] = (),
        place_map: Any = None,
    ) -> TextParticle:
        """A new particle one imagined step further (this one is left as it is): ``steps`` gains
        ``(action, observation)``, ``outcomes`` gains ``outcome`` (default: the score carried
        over, nothing else known), ``triplets`` gains ``triplets``; ``kg`` replaces the graph
        (default: this one's), ``admissible`` sets the next proposal's actions (default: this
        one's) and ``env`` the environment copy (default: none); ``maps`` gains ``place_map``
        where given (else it is left as it is); its ``parent_memo`` is this one's ``memo``."""
        kg_triples = tuple(
            tuple(t.as_tuple()) if hasattr(t, "as_tuple") else tuple(t) for t in triplets
        )
        child = replace(
            self,
            kg=self.kg if kg is None else kg,
            steps=(*self.steps, (action, observation)),
            outcomes=(
                *self.outcomes,
                outcome if outcome is not None else Outcome(score=self.score),
            ),
            triplets=(*self.triplets, kg_triples),
            admissible=self.admissible if admissible is None else tuple(admissible),
            env=env,
            maps=self.maps if place_map is None else (*self.maps, place_map),
        )
        object.__setattr__(child, "parent_memo", self.memo)  # the twists' summaries, one step back
        return child

    def facts(self, task: str, retrieval: Retrieval = DEFAULT_RETRIEVAL) -> list[Triple]:
        r""":math:`\tau = R(G, \text{task})` as ``(s, p, o)`` tuples (empty without a graph)."""
        if self.kg is None:
            return []
        return [
            t.as_tuple()
            for t in self.kg.retrieve(
                task, retrieval.hops, last_observation=self.observation, limit=retrieval.limit
            )
        ]

    def context(
        self, task: str, retrieval: Retrieval = DEFAULT_RETRIEVAL, obs_chars: int = OBS_CHARS
    ) -> str:
        """The text the observation model continues: task, retrieved facts, the root observation
        and the imagined steps (each observation clipped to ``obs_chars`` characters)."""
        return render_context(
            task, self.facts(task, retrieval), self.root_observation, self.steps, obs_chars
        )


_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (whitespace made single spaces): up to and including the
    first ``.``, ``!`` or ``?`` that ends a word; the whole text when there is none.  It is the
    part of a text-game observation that says what the action did — "You are in the corridor.",
    "You can't move there, the door is closed.", "You open the wood door, revealing the
    bathroom." — which is what the planner's twists read from an imagined observation
    (:func:`smcplan.train.world_model_eval.observation_event`); the room description after it
    is what a world model cannot know before it has been there.  World models trained with
    ``target="head"`` write it (:mod:`smcplan.train.world_model`), and a value head that reads
    the path (:class:`smcplan.planning.twist_value.LearnedProgress`) cuts each imagined reply
    to it, so that it reads the same text whichever world model imagined the step."""
    flat = " ".join(str(text).split())
    m = _SENTENCE_END.search(flat)
    return flat[: m.end()] if m else flat


def render_context(
    task: str,
    facts: Sequence[Sequence[str]],
    root_observation: str,
    steps: Sequence[tuple[str, str]] = (),
    obs_chars: int = OBS_CHARS,
) -> str:
    """The text an observation model continues, from plain data: ``Task:``, the retrieved
    ``(s, p, o)`` facts as ``- s p o`` lines under ``Known facts:`` (none, no header), the root
    ``Observation:`` and each imagined step as ``> action`` then its observation, every
    observation clipped to ``obs_chars`` characters (:func:`clip_observation`).  The planner's
    particles (:meth:`TextParticle.context`) and the world-model training examples
    (``smcplan.train.world_model``) both render through it, so a model is trained on exactly the
    text it is later asked to continue."""
    lines = [f"Task: {task}"]
    if facts:
        lines.append("Known facts:")
        lines += [f"- {s} {p} {o}" for s, p, o in facts]
    lines.append(f"Observation: {clip_observation(root_observation, obs_chars)}")
    for a, o in steps:
        lines += [f"> {a}", clip_observation(o, obs_chars)]
    return "\n".join(lines)


def known_actions(admissible: Sequence[str], kg: KnowledgeGraph | None) -> list[str]:
    """The admissible actions whose objects the graph knows: an action is kept when it names no
    object (one word, e.g. ``look``) or some entity of ``kg`` occurs in it; the whole set when
    nothing is left or there is no graph (the LM world model's per-particle admissible set)."""
    if kg is None:
        return list(admissible)
    names = [e for e in kg.entities() if len(e) > 2 and e not in ("agent", "you")]
    kept = [a for a in admissible if len(a.split()) == 1 or any(e in a.lower() for e in names)]
    return kept or list(admissible)
