"""What a language agent shows its model: task, memory (history, KG facts or a belief summary),
notes (feedback, reflections) and the current observation, cut to a token budget.

No context is ever longer than the model's window: :meth:`Context.fit` cuts the whole view to
``W - reserve_tokens`` tokens (history first, then notes, facts, belief, observation, task), and
the agent's step record says what it cut (``extra["context_truncated"]``), so the language
model never sees a prompt past its window (it would refuse one, :mod:`smcplan.llm.inputs`).

The model's window ``W`` (``max_position_embeddings``) bounds everything; the history gets

    B_hist = min(history_tokens, W - reserve_tokens)

tokens, where ``reserve_tokens`` keeps room for the role's template, the admissible actions and
the answer. :meth:`History.render` keeps the *newest* turns whose token counts sum to at most
``B_hist`` (ReAct, Yao et al. 2023, keeps the trajectory in context and drops the oldest part when
it no longer fits) and says how many older turns it left out. It drops old turns in blocks of
``block`` turns (the first turn shown is always turn ``s`` with ``s`` a multiple of ``block``),
so that the rendered history keeps its beginning for several steps and only grows at its end:
the model's prefix cache then reuses it (:mod:`smcplan.llm.prefix_cache`).

Layout (stable first, volatile last, so that consecutive prompts share the longest prefix):
notes (e.g. Reflexion's memories, fixed during a trial), facts, history (append-only between
block drops), belief summary (rewritten each step), the current observation, and last the
step's ``feedback`` (why earlier proposals of this step were rejected, the reasoning under
review), which changes within a step.

:class:`Context` is one step's view; the roles take it in two shapes:

* :meth:`Context.for_proposal` — the text of the proposal role's ``observation`` slot (the role
  gets the retrieved triplets in its own slot);
* :meth:`Context.situation` — one block with every section, for the roles with a ``context``
  slot (reflection, critic, observation model, RLAW actor).

Imports nothing from ``smcplan.llm`` (the token counter only needs ``lm.encode_continuation``),
nor ``smcplan.eval`` / ``smcplan.cli``.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

__all__ = [
    "Turn",
    "History",
    "Context",
    "TokenCounter",
    "model_window",
    "history_budget",
    "clip_text",
    "clip_tokens",
]

#: Window assumed when the model's config does not say (SmolLM2-135M has 8192).
DEFAULT_WINDOW = 2048


def model_window(lm: LanguageModel) -> int:
    """The model's context window ``W`` in tokens (``max_position_embeddings`` of its config)."""
    config = getattr(getattr(lm, "model", None), "config", None)
    window = getattr(config, "max_position_embeddings", None)
    return int(window) if isinstance(window, int) and window > 0 else DEFAULT_WINDOW


def history_budget(lm: LanguageModel, history_tokens: int, reserve_tokens: int) -> int:
    """``B_hist = min(history_tokens, W - reserve_tokens)`` (at least 0); see the module docstring.
    """
    if history_tokens < 0 or reserve_tokens < 0:
        raise ValueError(
            f"history_tokens and reserve_tokens must be >= 0; got {history_tokens}, "
            f"{reserve_tokens}"
        )
    return max(0, min(int(history_tokens), model_window(lm) - int(reserve_tokens)))


class TokenCounter:
    """``counter(text) -> number of tokens`` with the model's tokenizer, memoised (LRU).

    Without a model (``lm=None``) it counts whitespace-separated words, an upper-bound proxy used
    only by tests that run without a tokenizer.
    """

    def __init__(self, lm: LanguageModel | None = None, cache_size: int = 4096) -> None:
        self._encode: Callable[[str], Sequence[int]] | None = (
            getattr(lm, "encode_continuation", None) if lm is not None else None
        )
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._size = cache_size

    def __call__(self, text: str) -> int:
        hit = self._cache.get(text)
        if hit is not None:
            self._cache.move_to_end(text)
            return hit
        n = len(self._encode(text)) if self._encode is not None else len(text.split())
        self._cache[text] = n
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return n


def clip_text(text: str, max_chars: int) -> str:
    """``text`` cut to ``max_chars`` characters (with " ..." when cut); whitespace collapsed."""
    flat = " ".join(text.split())
    if max_chars <= 0 or len(flat) <= max_chars:
        return flat
    return flat[: max(0, max_chars - 4)].rstrip() + " ..."


@dataclass(frozen=True)
class Turn:
    """One executed action and the observation the environment answered with."""

    action: str
    observation: str

    def render(self, max_chars: int) -> str:
        return f"> {self.action}\n{clip_text(self.observation, max_chars)}"


class History:
    """The episode so far: the first observation, then one :class:`Turn` per executed action."""

    def __init__(self, max_observation_chars: int = 400, block: int = 1) -> None:
        if isinstance(block, bool) or not isinstance(block, int) or block < 1:
            raise ValueError(f"history block must be a positive number of turns; got {block!r}")
        self.max_observation_chars = int(max_observation_chars)
        self.block = block
        self.initial = ""
        self.turns: list[Turn] = []

    def reset(self, observation: str) -> None:
        self.initial = observation
        self.turns = []

    def add(self, action: str, observation: str) -> None:
        self.turns.append(Turn(action, observation))

    def __len__(self) -> int:
        return len(self.turns)

    def actions(self) -> list[str]:
        return [t.action for t in self.turns]

    def render(
        self, budget_tokens: int, count: Callable[[str], int], last: int | None = None
    ) -> str:
        """The newest turns that fit in ``budget_tokens`` (oldest dropped first), one per block.

        ``last`` caps the number of turns considered (``None``: all). The first observation is
        included when every turn fits and room is left; a line "(k earlier steps not shown)"
        marks a cut, made at a multiple of ``block`` turns (module docstring). The whole
        rendered text, marks included, counts at most ``budget_tokens`` (checked on the joined
        text, since tokenisation is not additive across blocks).
        Returns ``""`` when nothing fits or nothing happened yet.
        """
        turns = self.turns if last is None else self.turns[max(0, len(self.turns) - last) :]
        texts = [turn.render(self.max_observation_chars) for turn in turns]
        k, used = 0, 0
        for text in reversed(texts):  # estimate: newest first while the sum fits
            cost = count(text) + 1
            if used + cost > budget_tokens:
                break
            used += cost
            k += 1
        k = self._aligned(k, len(texts))
        start = "(start)\n" + clip_text(self.initial, self.max_observation_chars)

        def assemble(k: int, with_start: bool) -> str:
            omitted = len(self.turns) - k
            head = [f"({omitted} earlier steps not shown)"] if omitted and k else []
            return "\n".join(head + ([start] if with_start else []) + texts[len(texts) - k :])

        with_start = k == len(self.turns) and bool(self.initial)
        text = assemble(k, with_start)
        while text and count(text) > budget_tokens:  # exact check on the joined text
            if with_start:
                with_start = False
            else:
                k = self._aligned(k - 1, len(texts))
            text = assemble(k, with_start) if k > 0 or with_start else ""
        return text

    def _aligned(self, k: int, available: int) -> int:
        """The largest ``k' <= k`` newest turns whose first turn index is a multiple of
        ``block`` (or all ``available`` turns when ``k`` covers them)."""
        if k >= available or self.block == 1:
            return k
        first = len(self.turns) - k
        first = -(-first // self.block) * self.block
        return max(0, len(self.turns) - first)


def clip_tokens(text: str, max_tokens: int, count: Callable[[str], int], keep: str = "head") -> str:
    """The longest head (``keep="head"``) or tail of ``text`` counting at most ``max_tokens``
    (by binary search over its length in characters); ``""`` when ``max_tokens <= 0``."""
    if max_tokens <= 0:
        return ""
    if count(text) <= max_tokens:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # the largest n with count(piece(n)) <= max_tokens
        mid = (lo + hi + 1) // 2
        piece = text[:mid] if keep == "head" else text[len(text) - mid :]
        if count(piece) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] if keep == "head" else text[len(text) - lo :]


def _section_tokens(ctx: Context, section: str, count: Callable[[str], int]) -> int:
    value = getattr(ctx, section)
    if section == "notes":
        return count("\n".join(value)) if value else 0
    if section == "triplets":
        return count("\n".join(f"{s} {r} {o}" for s, r, o in value)) if value else 0
    return count(value) if value else 0


def _shrink(ctx: Context, section: str, target: int, count: Callable[[str], int]) -> None:
    """Make ``section`` count at most ``target`` tokens (lists lose items, text is clipped);
    always removes something, so a loop over it ends."""
    value = getattr(ctx, section)
    if section in ("notes", "triplets"):
        keep = list(value)
        drop_first = section == "notes"  # oldest note first; least relevant (last) fact first
        while keep:
            keep = keep[1:] if drop_first else keep[:-1]
            probe = (
                Context("", "", notes=keep)
                if section == "notes"
                else Context("", "", triplets=keep)
            )
            if _section_tokens(probe, section, count) <= target:
                break
        setattr(ctx, section, keep)
        return
    keep_end = "tail" if section == "history" else "head"  # history: the newest part is last
    clipped = clip_tokens(value, target, count, keep_end)
    if clipped == value:
        clipped = value[1:] if keep_end == "tail" else value[:-1]
    setattr(ctx, section, clipped)


@dataclass
class Context:
    """One step's view for the model roles (see the module docstring for the two shapes).

    ``triplets``: retrieved facts ``(subject, relation, object)`` (KG context), ``history``:
    the rendered history (history context), ``belief``: a belief summary (ABBEL-style context),
    ``notes``: lines that hold for the whole episode (Reflexion memories), ``feedback``: lines
    about this step only (why earlier proposals were rejected, the reasoning under review),
    newest last. Rendering order: see the module docstring.
    """

    task: str
    observation: str
    triplets: list[tuple[str, str, str]] = field(default_factory=list)
    history: str = ""
    belief: str = ""
    notes: list[str] = field(default_factory=list)
    feedback: list[str] = field(default_factory=list)

    def with_notes(self, notes: Sequence[str]) -> Context:
        """A copy with episode-long ``notes`` appended (the original is not changed)."""
        return dataclasses.replace(
            self, triplets=list(self.triplets), notes=[*self.notes, *notes],
            feedback=list(self.feedback),
        )

    def with_feedback(self, lines: Sequence[str]) -> Context:
        """A copy with this step's feedback ``lines`` appended (the original is not changed)."""
        return dataclasses.replace(
            self, triplets=list(self.triplets), notes=list(self.notes),
            feedback=[*self.feedback, *lines],
        )

    def _render(self, facts: bool) -> str:
        out = []
        if self.notes:
            out.append("Notes:\n" + "\n".join(f"- {n}" for n in self.notes))
        if facts and self.triplets:
            out.append("Known facts:\n" + "\n".join(f"- {s} {r} {o}" for s, r, o in self.triplets))
        if self.history:
            out.append("What happened so far:\n" + self.history)
        if self.belief:
            out.append("What you believe:\n" + self.belief)
        if not out and not self.feedback and not facts:
            return self.observation
        out.append("Current observation:\n" + self.observation)
        if self.feedback:
            out.append("Feedback:\n" + "\n".join(f"- {n}" for n in self.feedback))
        return "\n".join(out)

    def for_proposal(self) -> str:
        """The proposal role's ``observation`` text: notes, history and belief, the current
        observation, then feedback (the facts go to the role's own triplet slot)."""
        return self._render(facts=False)

    def situation(self) -> str:
        """Everything as one block (facts included) for roles with a ``context`` slot."""
        return self._render(facts=True)

    def fit(self, budget_tokens: int, count: Callable[[str], int]) -> dict[str, list[int]]:
        """Cut this context in place until :meth:`situation` counts at most ``budget_tokens``.

        Sections are cut in this order, each only as far as needed: the history (oldest lines
        first), the notes (oldest first), the facts (last first), the belief, the current
        observation and the task (their ends first).  Returns ``{section: [tokens before,
        tokens after]}`` for every section it cut (empty when everything fitted), for the step
        record.  Both :meth:`situation` and :meth:`for_proposal` fit afterwards (the latter is a
        subset of the former).
        """
        cuts: dict[str, list[int]] = {}
        for section in ("history", "notes", "triplets", "belief", "observation", "task"):
            over = count(self.situation()) - budget_tokens
            if over <= 0:
                break
            before = _section_tokens(self, section, count)
            if before == 0:
                continue
            while over > 0 and _section_tokens(self, section, count) > 0:
                _shrink(self, section, max(0, _section_tokens(self, section, count) - over), count)
                over = count(self.situation()) - budget_tokens
            cuts[section] = [before, _section_tokens(self, section, count)]
        return cuts
