r"""Benchmark-free text features of a rendered state, read beside the hidden state by a value
head (``smcplan train value-head --opt text_features=true``).

Why: a logistic head on a frozen 135M model's last-token state ranks states by what they look
like (holding *something*, a short reply), not by whether they concern the task. On
ALFWorld-engine ``pick_and_place`` (session 33) the head scored "You are carrying: a knife 1"
above the reply that showed the kettle the task asked for, and the planner looped on taking
and putting back things the task never named. Whether the latest observation names the
task's words is one number a head can weigh, and it needs no game's words:

.. math:: f_1(x) = \frac{|W(\text{task}) \cap W(\text{observation})|}{|W(\text{task})|},\quad
   f_2(x) = \frac{|W(\text{task}) \cap W(\text{facts})|}{|W(\text{task})|},\quad
   f_3(x) = \log\big(1 + |\text{observation}|_{\text{words}}\big),

with :math:`W(\cdot)` the set of lower-cased alphanumeric words of at least 3 letters that are
not in :data:`STOP_WORDS` (English function words only; no game's vocabulary). The state is the
text :func:`smcplan.planning.text_particle.render_context` writes (``Task:``, ``Known facts:``
lines, ``Observation:``). A head records the version it was fitted with (:data:`VERSION`) in
``info["text_features"]``; :class:`~smcplan.llm.roles.value_head.ValueModel` appends the same
columns, after the hidden-state columns.

Imports numpy only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

__all__ = ["VERSION", "STOP_WORDS", "NAMES", "split_context", "content_words", "text_features"]

#: the feature set's name and version, recorded in a head's ``info["text_features"]``
VERSION = "task_overlap/1"
#: the columns, in order
NAMES = ("task_words_in_observation", "task_words_in_facts", "log_observation_words")
#: English function words left out of :math:`W` (no benchmark's words)
STOP_WORDS = frozenset(
    "the and your task that this with from into onto then them they their there what when "
    "where which while for are was were has have had you its it's not but all any can".split()
)
_WORD = re.compile(r"[a-z0-9]+")


def content_words(text: str) -> set[str]:
    """:math:`W(\\text{text})`: lower-cased alphanumeric words of 3+ letters, not stop words."""
    return {w for w in _WORD.findall(str(text).lower()) if len(w) >= 3 and w not in STOP_WORDS}


def split_context(context: str) -> tuple[str, str, str]:
    """``(task, facts, observation)`` of a rendered state (``Task:`` line, the ``- s p o``
    lines under ``Known facts:``, and everything from ``Observation:`` on); a part the text
    does not have is ``""``."""
    task, facts, obs, part = [], [], [], None
    for line in str(context).splitlines():
        if part != "obs" and line.startswith("Task:"):
            part = "task"
            task.append(line[len("Task:") :])
        elif part != "obs" and line.startswith("Known facts:"):
            part = "facts"
        elif line.startswith("Observation:") and part != "obs":
            part = "obs"
            obs.append(line[len("Observation:") :])
        elif part == "facts":
            facts.append(line.lstrip("- "))
        elif part in ("obs", "task"):
            (obs if part == "obs" else task).append(line)
    return " ".join(task).strip(), "\n".join(facts), "\n".join(obs).strip()


def text_features(contexts: Sequence[str]) -> np.ndarray:
    """The ``(len(contexts), 3)`` float64 matrix of :math:`(f_1, f_2, f_3)` (module docstring);
    a task with no content word gives :math:`f_1 = f_2 = 0`."""
    rows = []
    for context in contexts:
        task, facts, obs = split_context(context)
        want = content_words(task)
        n = max(len(want), 1)
        words = len(_WORD.findall(obs.lower()))
        rows.append(
            (
                len(want & content_words(obs)) / n,
                len(want & content_words(facts)) / n,
                math.log1p(words),
            )
        )
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(NAMES))
