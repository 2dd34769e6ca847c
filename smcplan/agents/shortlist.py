"""A bounded action set for the language model when the environment admits too many actions.

ScienceWorld admits about a thousand actions per state (every verb × every visible object); listing
them overflows SmolLM2's 8192-token window (14 k prompt tokens measured) and scoring them all costs
minutes per step on a CPU. :func:`shortlist_actions` keeps at most ``k`` of them, chosen by lexical
relevance to the task, the common practice of ScienceWorld agents that filter the valid-action
list. The language model then proposes, scores and plans over the
shortlist exactly as over a short admissible list; every shortlisted action is admissible.

Relevance of an action ``a`` with content words ``W(a)`` (lower-case, stop words removed) and
task words ``T``:

    r(a) = 2·|W(a) ∩ T| − |W(a) \\ T|

(actions about the task's objects first, then the short ones: every word the task does not
mention counts against an action, so "go to door" ranks above "pour cup containing blue paint in
cupboard into cup containing red paint in art studio"; the observation does not enter, since every
admissible action already names only what the agent can see). The most
relevant action of every verb (first word) is kept first, so no kind of action disappears; the
remaining places go by relevance, ties by the environment's order. The result keeps the
environment's order. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["shortlist_actions", "relevance", "DEFAULT_MAX_ACTIONS"]

DEFAULT_MAX_ACTIONS = 64

_STOP = frozenset(
    "a an the to in on of into with from at for and or is it its your you this that".split()
)


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOP)


def relevance(action: str, task: str) -> int:
    """``r(a) = 2·|W(a) ∩ T| − |W(a) \\ T|`` (module docstring)."""
    return _relevance(_words(action), _words(task))


def _relevance(w: frozenset[str], task: frozenset[str]) -> int:
    return 2 * len(w & task) - len(w - task)


def shortlist_actions(
    admissible: Sequence[str], task: str, k: int = DEFAULT_MAX_ACTIONS
) -> list[str]:
    """At most ``k`` of ``admissible`` (all of them when there are ``<= k``), in their order."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer; got {k!r}")
    actions = list(admissible)
    if len(actions) <= k:
        return actions
    task_w = _words(task)
    score = [_relevance(_words(a), task_w) for a in actions]
    order = sorted(range(len(actions)), key=lambda i: (-score[i], i))
    chosen: list[int] = []
    verbs: set[str] = set()
    for i in order:  # the best action of each verb first
        verb = actions[i].split(" ", 1)[0]
        if verb not in verbs:
            verbs.add(verb)
            chosen.append(i)
    chosen = chosen[:k]
    taken = set(chosen)
    chosen += [i for i in order if i not in taken][: k - len(chosen)]
    return [actions[i] for i in sorted(chosen)]
