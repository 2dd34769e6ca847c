"""The episode loop: ``agent.act`` / ``env.step`` until ``done`` or ``max_steps``, one JSONL
record per step, ``trials`` trials per episode (stopping at the first win).

Each step record (schema ``STEP_SCHEMA`` of :mod:`smcplan.eval.records`) holds the observation,
the action with the agent's thought, tag and meta, the feedback, reward, score, done/won/invalid
flags, the LLM calls and tokens of the step and the wall time of each side. Any exception from
the environment or the agent is re-raised as :class:`EpisodeFailed`, tagged with its side, so
that the sweep can record an error episode and go on.

Imports no other layer: the agent and the environment arrive as objects.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smcplan.eval.episodes import EpisodeSpec
from smcplan.eval.metrics import step_count
from smcplan.eval.records import STEP_SCHEMA, JsonlWriter

if TYPE_CHECKING:
    from smcplan.llm import LanguageModel

#: the usage counters that add up to a step's ``llm_tokens`` (``cached_tokens`` is a part of
#: ``prompt_tokens``: the prompt tokens the prefix cache served)
TOKEN_KEYS = ("prompt_tokens", "generated_tokens", "scored_tokens")

__all__ = [
    "Callbacks",
    "EpisodeFailed",
    "EpisodeLog",
    "error_record",
    "run_episode",
    "usage",
    "usage_delta",
]


class EpisodeFailed(Exception):
    """An episode stopped by an exception from ``source`` (``"env"`` or ``"agent"``)."""

    def __init__(self, source: str, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.source = source
        self.exc = exc


def error_record(source: str, exc: BaseException) -> dict[str, Any]:
    """The ``error`` entry of an episode summary: side, type, message, traceback (last 8 kB)."""
    return {
        "source": source,
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc))[-8000:],
    }


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def usage(lm: LanguageModel | None) -> dict[str, int] | None:
    """The language model's cumulative counters (``LanguageModel.usage``), or None."""
    counters = getattr(lm, "usage", None)
    as_dict = getattr(counters, "as_dict", None)
    return dict(as_dict()) if callable(as_dict) else None


def usage_delta(before: dict[str, int] | None, lm: LanguageModel | None) -> dict[str, int] | None:
    """``usage(lm) - before`` per counter, or None when either side is unknown."""
    after = usage(lm)
    if before is None or after is None:
        return None
    return {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in after}


def agent_models(agent: Any, lm: LanguageModel | None) -> list[Any]:
    """``lm`` and every further model the agent calls (``agent.language_models()``, e.g. a
    separate critic or a learned world model), each object once; empty without ``lm``."""
    if lm is None:
        return []
    listed = getattr(agent, "language_models", None)
    out: list[Any] = []
    for m in [lm, *(listed() if callable(listed) else ())]:
        if m is not None and usage(m) is not None and all(m is not o for o in out):
            out.append(m)
    return out


def _usage_sum(models: list[Any]) -> dict[str, int] | None:
    """The summed counters of ``models`` (:class:`smcplan.agents.record.UsageMeter`), or None
    when there are none."""
    from smcplan.agents.record import UsageMeter

    return UsageMeter(models).snapshot() if models else None


def _delta(before: dict[str, int] | None, after: dict[str, int] | None) -> dict[str, int] | None:
    if before is None or after is None:
        return None
    return {k: v - before.get(k, 0) for k, v in after.items()}


def _admissible(env: Any, info: dict[str, Any]) -> list[str]:
    actions = info.get("admissible_actions")
    if actions is None:
        actions = env.admissible_actions()
    return list(actions)


@dataclass
class Callbacks:
    """What the sweep hears from an episode (progress bars, trajectory printing)."""

    on_step: Callable[[dict[str, Any]], None] = lambda record: None
    on_trial_start: Callable[[int, str, str], None] = lambda trial, goal, obs: None


@dataclass
class EpisodeLog:
    """What an episode produced so far (kept by the caller, so it survives a failure)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    trials: list[dict[str, Any]] = field(default_factory=list)
    goal: str = ""
    #: the agent's models other than the harness's ``lm`` and their usage when the episode began
    extra_models: list[Any] = field(default_factory=list)
    extra_usage0: dict[str, int] | None = None

    def usage_since(self, before: dict[str, int] | None, lm: Any) -> dict[str, int] | None:
        """The episode's usage: ``lm``'s since ``before`` plus the agent's further models' since
        the episode began (None when ``lm``'s is unknown)."""
        used = usage_delta(before, lm)
        extra = _delta(self.extra_usage0, _usage_sum(self.extra_models))
        if used is None or extra is None:
            return used
        return {k: v + extra.get(k, 0) for k, v in used.items()}


def _start_trial(
    env: Any, spec: EpisodeSpec, log: EpisodeLog
) -> tuple[str, dict[str, Any], list[str]]:
    try:
        obs, info = env.reset(spec.seed)
        info = dict(info or {})
        log.goal = str(env.task)
        actions = _admissible(env, info)
    except Exception as exc:  # noqa: BLE001 - any backend failure is an error episode
        raise EpisodeFailed("env", exc) from exc
    return obs, info, actions


def run_episode(
    spec: EpisodeSpec,
    env: Any,
    agent: Any,
    *,
    max_steps: int,
    trials: int,
    writer: JsonlWriter,
    episode_id: str,
    log: EpisodeLog,
    progress: Callbacks | None = None,
    lm: LanguageModel | None = None,
) -> EpisodeLog:
    """Play ``trials`` trials (stopping at the first win) of one episode; write each step.

    Fills ``log`` as it goes. With ``lm`` (a ``LanguageModel``), each step's LLM calls and tokens
    are measured from the usage of ``lm`` and of the agent's further models
    (:func:`agent_models`) around ``agent.act`` (tokens = prompt + generated + scored);
    otherwise they come from the agent's ``meta["llm_calls"]``/``meta["llm_tokens"]``. Raises
    :class:`EpisodeFailed` tagged with the failing side (``env`` or ``agent``) on any exception
    from either. After each trial, ``agent.end_episode(won, score)``, then
    ``agent.episode_info()`` (stored as the trial's ``agent`` entry unless it is ``None``).
    """
    progress = progress or Callbacks()
    records, trial_results = log.records, log.trials
    models = agent_models(agent, lm)
    log.extra_models = [m for m in models if m is not lm]
    log.extra_usage0 = _usage_sum(log.extra_models)
    for trial in range(trials):
        obs, info, actions = _start_trial(env, spec, log)
        progress.on_trial_start(trial, log.goal, obs)
        try:
            agent.reset(log.goal, obs, actions)
        except Exception as exc:  # noqa: BLE001
            raise EpisodeFailed("agent", exc) from exc
        won, ret, done, truncated = False, 0.0, False, False
        score = float(info.get("score", 0.0) or 0.0)
        for t in range(max_steps):
            usage0 = _usage_sum(models)
            t0 = time.perf_counter()
            try:
                step = agent.act(obs, actions, info)
            except Exception as exc:  # noqa: BLE001
                raise EpisodeFailed("agent", exc) from exc
            t1 = time.perf_counter()
            try:
                feedback, reward, done, next_info = env.step(step.action)
                next_info = dict(next_info or {})
                next_actions = [] if done else _admissible(env, next_info)
            except Exception as exc:  # noqa: BLE001
                raise EpisodeFailed("env", exc) from exc
            t2 = time.perf_counter()
            used = _delta(usage0, _usage_sum(models))
            meta = dict(step.meta or {})
            if used is None:
                calls = _number(step_count({"meta": meta}, "llm_calls"))
                tokens = _number(step_count({"meta": meta}, "llm_tokens"))
            else:
                calls = used.get("calls", 0)
                # prompt + generated + scored (cached_tokens is a part of prompt_tokens)
                tokens = sum(used.get(k, 0) for k in TOKEN_KEYS)
            score = float(next_info.get("score", score) or 0.0)
            won = bool(next_info.get("won", False))
            truncated = bool(next_info.get("truncated", False))
            ret += float(reward or 0.0)
            record = {
                "schema": STEP_SCHEMA,
                "episode": episode_id,
                "trial": trial,
                "t": t,
                "observation": obs,
                "n_admissible": len(actions),
                "action": step.action,
                "thought": step.thought,
                "tag": step.tag,
                "meta": meta,
                "feedback": feedback,
                "reward": float(reward or 0.0),
                "score": score,
                "done": bool(done),
                "won": won,
                "invalid": bool(next_info.get("invalid", False)),
                "admissible": step.action in actions,
                "llm_calls": calls,
                "llm_tokens": tokens,
                "llm_usage": used,
                "agent_s": t1 - t0,
                "env_s": t2 - t1,
            }
            writer.write(record)
            records.append(record)
            progress.on_step(record)
            obs, info, actions = feedback, next_info, next_actions
            if done:
                break
        n_steps = sum(1 for r in records if r["trial"] == trial)
        trial_results.append(
            {
                "trial": trial,
                "won": won,
                "score": score,
                "steps": n_steps,
                "return": ret,
                "truncated": truncated or not done,
            }
        )
        try:
            agent.end_episode(won, score)
            about = agent.episode_info()
        except Exception as exc:  # noqa: BLE001
            raise EpisodeFailed("agent", exc) from exc
        if about is not None:
            trial_results[-1]["agent"] = about
        if won:
            break
    return log
