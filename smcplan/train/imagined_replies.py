r"""The learned world model's own replies to sibling steps, for a value head that reads them.

A value head that reads the path (:func:`smcplan.planning.twist_value.path_text`) is fitted on
``(task, page, > action, reply)``.  Fitted on the environment's real replies, it is then read by
the planner on the replies its world model *imagines*; with a learned world model those differ
(another first sentence, a page it guessed), and the head reads text it never saw
(docs/train.md, session 37: with the oracle simulator the sibling head scored 0.61 on WebShop,
with the learned simulator 0.08).  This module gives the trainer the text the planner will
read: for every state of :func:`smcplan.train.value_siblings.sibling_steps`, the learned world
model's greedy reply to each sibling action, asked exactly as the planner asks it at depth 1
(:func:`smcplan.planning.learned.learned_observation_model` at temperature 0 on the context
:func:`smcplan.train.world_model.context_text` of the real state, every sibling in one batch).

The labels do not change: :math:`\hat v(s, a)` is still the share of real rollouts from the
real successor that win.  Only the text the head reads does, so the head learns
:math:`\mathbb{E}[\hat v \mid s, a, \hat o]` with :math:`\hat o` the reply the planner will
imagine.  Replies are cached, one line per state (``--resume`` continues after a kill).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from smcplan.errors import InvalidArgumentError, check_int
from smcplan.jsonfile import jsonl_line

__all__ = [
    "DEFAULT_REPLY_TOKENS",
    "state_groups",
    "imagine_replies",
    "with_replies",
    "imagined_steps",
]

#: the planner's default ``observation_tokens`` (:class:`smcplan.planning.PlannerConfig`)
DEFAULT_REPLY_TOKENS = 32


def state_groups(steps: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Indices of ``steps`` in runs of one ``state`` (the order
    :func:`~smcplan.train.value_siblings.sibling_steps` writes them in)."""
    groups: list[list[int]] = []
    for i, step in enumerate(steps):
        if groups and steps[groups[-1][0]]["state"] == step["state"]:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _read_cache(cache: Path, groups: list[list[int]], steps: Sequence[dict]) -> list[list[str]]:
    """The cached replies of the leading groups that match ``steps`` (state and actions); a
    torn last line is dropped; a line that names another state is an error."""
    done: list[list[str]] = []
    if not cache.is_file():
        return done
    with open(cache, encoding="utf-8") as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                break  # a torn last line: imagine that state again
            if len(done) >= len(groups):
                break
            g = groups[len(done)]
            want = (steps[g[0]]["state"], [steps[i]["action"] for i in g])
            if (row.get("state"), row.get("actions")) != want or len(row["replies"]) != len(g):
                raise InvalidArgumentError(
                    f"{cache}: cached replies of {row.get('state')!r} are not this run's "
                    f"state {want[0]!r}; start without resume (or another --out)"
                )
            done.append([str(r) for r in row["replies"]])
    return done


def imagine_replies(
    steps: Sequence[dict[str, Any]],
    world_model: str,
    cache: str | Path,
    *,
    tokens: int = DEFAULT_REPLY_TOKENS,
    threads: int | None = None,
    resume: bool = False,
    progress: bool = True,
) -> list[str]:
    """The learned world model at ``world_model`` (an adapter folder or a shipped name)'s
    greedy reply to every step (module docstring), in ``steps`` order.  Each step needs
    ``state``, ``task``, ``facts``, ``observation`` and ``action``; the siblings of a state are
    asked in one batch.  ``cache`` gets one JSON line per state, written as it is done;
    ``resume`` keeps the lines of an earlier run of the same steps."""
    from smcplan.interrupts import raise_if_stopped
    from smcplan.planning.learned import learned_observation_model
    from smcplan.train.world_model import context_text

    tokens = check_int(tokens, "world_model_tokens", minimum=1)
    groups = state_groups(steps)
    cache = Path(cache)
    done = _read_cache(cache, groups, steps) if resume else []
    model = learned_observation_model(
        world_model, tokens, like=SimpleNamespace(threads=threads), temperature=0.0
    )
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(groups), initial=len(done), desc="imagined replies", unit="state")
    cache.parent.mkdir(parents=True, exist_ok=True)
    with open(cache, "w", encoding="utf-8") as handle:
        for g, replies in zip(groups, done):  # rewrite the kept lines (drops a torn tail)
            handle.write(_line(steps, g, replies))
        handle.flush()
        for g in groups[len(done) :]:
            raise_if_stopped()
            first = steps[g[0]]
            context = context_text(
                first["task"], first.get("facts") or [], first["observation"], []
            )
            samples = model([context] * len(g), [steps[i]["action"] for i in g], seed=0)
            replies = [str(s.value) for s in samples]
            done.append(replies)
            handle.write(_line(steps, g, replies))
            handle.flush()
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return [r for replies in done for r in replies]


def _line(steps: Sequence[dict[str, Any]], group: list[int], replies: list[str]) -> str:
    return jsonl_line(
        {
            "state": steps[group[0]]["state"],
            "actions": [steps[i]["action"] for i in group],
            "replies": replies,
        }
    )


def with_replies(
    steps: Sequence[dict[str, Any]], replies: Sequence[str], obs_chars: int
) -> list[dict[str, Any]]:
    """``steps`` with each step's text (``context``, ``prompt``) rendered on its imagined
    reply in place of the real one, and the reply kept as ``imagined``."""
    from smcplan.llm.roles.value_head import value_prompts
    from smcplan.planning.twist_value import path_text

    if len(replies) != len(steps):
        raise InvalidArgumentError(
            f"replies: {len(replies)} for {len(steps)} steps; imagine one per step"
        )
    out = []
    for step, reply in zip(steps, replies, strict=True):
        context = path_text(step["task"], step["observation"], [(step["action"], reply)], obs_chars)
        out.append({**step, "context": context, "imagined": reply})
    for step, prompt in zip(out, value_prompts([s["context"] for s in out]), strict=True):
        step["prompt"] = prompt
    return out


def imagined_steps(
    steps: Sequence[dict[str, Any]], world_model: str, cache: str | Path, tokens: int,
    threads: int | None, resume: bool, progress: bool, obs_chars: int,
) -> list[dict[str, Any]]:  # fmt: skip
    """:func:`with_replies` of :func:`imagine_replies`: the steps as the planner with that
    learned world model will read them."""
    replies = imagine_replies(
        steps, world_model, cache, tokens=tokens, threads=threads, resume=resume,
        progress=progress,
    )  # fmt: skip
    return with_replies(steps, replies, obs_chars)
