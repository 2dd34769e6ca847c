r"""Stop a free-text reply at the end of its first line or sentence (``sample(stop_at=...)``).

A planner's twist often reads only the *event* of an imagined reply, its first sentence ("You
open the wood door, revealing the bathroom.", :func:`smcplan.train.world_model.first_sentence`),
or, from a world model that writes an outcome line first, only that line.  Decoding the rest
costs one batched model forward per token for nothing.  ``stop_at`` ends a row there:

* ``"line"``: at the first line break after some text;
* ``"sentence"``: at the first ``.``, ``!`` or ``?`` (closing quotes or brackets may follow)
  followed by whitespace, or at the first line break after some text: the sentence end of
  :func:`~smcplan.train.world_model.first_sentence` (a period inside ``+0.25`` or ``e.g``
  ends nothing);
* :class:`StopAt` ``(unit, after_lines=k)``: the same, applied from the ``k``-th line break
  on (``StopAt("sentence", 1)``: the outcome line of a reward/done world model, then the first
  sentence of its observation).

**The rule is a finite-state machine over the reply's bytes** (state: lines passed, some text
seen on this line, a sentence end pending), so that every token's effect is precomputed once
per model (:func:`stop_tables`: for each token and entering state, whether the reply ends inside
it and the state after it), and the decoding loop (:func:`smcplan.llm.decode.decode`) looks two
tables up per token and row.  A sentence end is confirmed by the character after it, so the row
draws one token past the period (" You"); that token is kept in ``token_ids`` and in ``logp`` /
``logq`` (the sample is the drawn token sequence, whose probability they are: the event "the
reply starts with these tokens" is decided there), and :func:`cut` removes its text.  The
end-of-turn token still ends a reply anywhere.

Imports torch lazily; must not import ``smcplan.memory`` or ``smcplan.envs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smcplan.errors import ArgumentTypeError, InvalidArgumentError, check_int

__all__ = ["UNITS", "StopAt", "check_stop_at", "cut", "stop_tables", "StopRule"]

#: the units a reply can stop at
UNITS = ("line", "sentence")
_ENDS = frozenset(".!?")
_CLOSERS = frozenset("\"')]")
_SPACE = frozenset(" \t\r\n\f\v")
#: the largest ``after_lines`` (each adds four states per token to the tables)
MAX_AFTER_LINES = 8


@dataclass(frozen=True)
class StopAt:
    """Where a reply ends: ``unit`` (``"line"`` or ``"sentence"``) counted after
    ``after_lines`` line breaks (module docstring)."""

    unit: str
    after_lines: int = 0

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise InvalidArgumentError(
                f"stop_at unit must be one of {', '.join(map(repr, UNITS))}; got {self.unit!r}"
            )
        check_int(self.after_lines, "after_lines", minimum=0, maximum=MAX_AFTER_LINES)

    @property
    def states(self) -> int:
        """States of the byte machine: (lines passed 0..after_lines) x text seen x end pending."""
        return 4 * (self.after_lines + 1)


def check_stop_at(stop_at: Any) -> StopAt | None:
    """``None``, or ``stop_at`` as a :class:`StopAt` (``"line"`` / ``"sentence"`` accepted)."""
    if stop_at is None or isinstance(stop_at, StopAt):
        return stop_at
    if isinstance(stop_at, str):
        return StopAt(stop_at)
    raise ArgumentTypeError(
        f"stop_at must be None, 'line', 'sentence' or a StopAt; got {type(stop_at).__name__} "
        f"{stop_at!r}"
    )


def _state(lines: int, text: bool, pending: bool) -> int:
    return 4 * lines + 2 * int(text) + int(pending)


def _run(chars: Any, stop: StopAt, state: int) -> tuple[int | None, int]:
    """Feed ``chars`` (an iterable of 1-character strings) from ``state``: ``(i, state)`` with
    ``i`` the index of the character at which the reply ends (``None``: it goes on)."""
    lines, text, pending = state // 4, bool(state & 2), bool(state & 1)
    for i, c in enumerate(chars):
        if c in _SPACE:
            if lines < stop.after_lines:
                if c == "\n":
                    lines, text, pending = lines + 1, False, False
                continue
            if (c == "\n" and text) or (pending and stop.unit == "sentence"):
                return i, _state(lines, text, pending)
            continue
        if lines < stop.after_lines:
            continue
        text = True
        if c in _ENDS:
            pending = True
        elif c not in _CLOSERS:
            pending = False
    return None, _state(lines, text, pending)


def cut(text: str, stop: StopAt | None) -> str:
    """``text`` up to where ``stop`` ends the reply (the character that confirms the end left
    out); the whole text when it does not end."""
    if stop is None:
        return text
    i, _ = _run(text, stop, 0)
    return text if i is None else text[:i]


def stop_tables(token_texts: dict[int, bytes], vocab_size: int, stop: StopAt):
    """``(ends, after)``: ``ends[v, s]`` whether the reply ends inside token ``v`` entered in
    state ``s``, ``after[v, s]`` the state after it (bool and int64 tensors ``[vocab_size,
    stop.states]``).  Tokens without bytes (special tokens) end nothing and keep the state."""
    import torch

    S = stop.states
    ends = torch.zeros((vocab_size, S), dtype=torch.bool)
    after = torch.arange(S, dtype=torch.long).repeat(vocab_size, 1)
    plain_after = [_state(s // 4, True, False) for s in range(S)]
    for v, raw in token_texts.items():
        if v >= vocab_size or not raw:
            continue
        chars = raw.decode("utf-8", errors="replace")
        if not any(c in _SPACE or c in _ENDS or c in _CLOSERS for c in chars):
            # plain text: text seen, no end pending (no state change while lines are skipped)
            for s in range(S):
                if s // 4 >= stop.after_lines:
                    after[v, s] = plain_after[s]
            continue
        for s in range(S):
            i, nxt = _run(chars, stop, s)
            ends[v, s] = i is not None
            after[v, s] = nxt
    return ends, after


class StopRule:
    """The tables of one :class:`StopAt` on one model's vocabulary, stepped per decoded token:
    ``state = rule.start(rows)``, then per token ``ended, state = rule.step(tokens, state)``."""

    def __init__(self, token_texts: dict[int, bytes], vocab_size: int, stop: StopAt) -> None:
        self.stop = stop
        self.ends, self.after = stop_tables(token_texts, vocab_size, stop)

    def to(self, device: Any) -> StopRule:
        self.ends, self.after = self.ends.to(device), self.after.to(device)
        return self

    def start(self, rows: int):
        import torch

        return torch.zeros(rows, dtype=torch.long, device=self.ends.device)

    def step(self, tokens, state):
        """Whether each row's reply ends inside its token ``tokens[i]``, and the new states."""
        return self.ends[tokens, state], self.after[tokens, state]
