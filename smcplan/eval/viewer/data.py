"""The JSON the viewer embeds: per run, per episode, per step what the page draws.

Every text goes through one string table (:class:`Strings`): a step refers to its action, facts,
proposals and imagined observations by index, so the retrieved facts repeated at every step and
the particles' repeated actions are stored once (this keeps a 50-step, 20-episode run well under
5 MB; docs/eval.md has the measurement). Texts are cut to fixed bounds.

Records of every agent are read; missing keys are simply not drawn (older runs, agents without a
planner or a graph). Keys read from ``meta`` (:mod:`smcplan.agents.record` and the agents):
``proposals``, ``rejected_proposals``, ``reflection_votes``, ``critic_scores``, ``executed``,
``slow_thinking``, ``plan``, ``kg_added`` / ``kg_removed`` / ``kg_retrieved`` / ``kg_size``,
``belief``, RLAW's ``r_critique`` / ``regenerations`` / ``rlaw_return``, RLVMR's ``rlvmr_*``,
Reflexion's ``reflections_in_context``; everything else is kept, clipped, under "more".

Pure standard library; must not import envs, agents or llm.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from smcplan.eval.records import to_jsonable
from smcplan.eval.viewer.plan import plan_view

__all__ = ["Strings", "RunLike", "step_view", "viewer_data", "TEXT_CHARS"]

#: Bounds (characters) on feedback and first observations, thoughts, proposals' thoughts and
#: judges' reasons, and the JSON of the meta keys the viewer does not draw ("more").
TEXT_CHARS, THOUGHT_CHARS, SHORT_CHARS, MORE_CHARS = 1000, 600, 300, 800
#: No bound is scaled below this (:func:`viewer_data` scales bounds down to fit its byte budget).
MIN_CHARS = 60

# meta keys drawn by the page (everything else goes to "more")
_DRAWN = {
    "agent", "context", "proposals", "rejected_proposals", "rejections", "reflection_votes",
    "reflection_yes_fraction", "critic_scores", "slow_thinking", "plan", "executed",
    "kg_added", "kg_removed", "kg_retrieved", "kg_size", "kg_extractor", "belief",
    "r_critique", "regenerations", "rlaw_return", "rlaw_r_env_previous",
    "rlvmr_tag", "rlvmr_reward", "rlvmr_return", "rlvmr_well_formed", "rlvmr_format_problem",
    "rlvmr_tag_cut", "rlvmr_response", "guided", "tag_guided", "model_choice",
    "reflections_in_context", "reflexion_trial", "llm_calls", "llm_tokens", "llm_usage",
    "llm_usage_between",
}  # fmt: skip


class RunLike(Protocol):
    """What the viewer needs of a run (``smcplan.eval`` ``Run``): label, path, summaries, steps."""

    label: str
    path: Path
    summaries: list[dict[str, Any]]

    def steps(self, episode: str) -> list[dict[str, Any]]: ...


def clip(text: Any, limit: int) -> str:
    """``text`` as a string of at most ``limit`` characters (cut ones end with "…")."""
    s = "" if text is None else str(text)
    return s if len(s) <= limit else s[: max(0, limit - 1)] + "…"


class Strings:
    """An interning table: :meth:`ref` returns the index of a text clipped to ``limit * scale``
    characters (at least :data:`MIN_CHARS`), adding it once."""

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = float(scale)
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: Any, limit: int = TEXT_CHARS) -> int | None:
        if text is None:
            return None
        s = clip(text, max(MIN_CHARS, int(limit * self.scale)))
        k = self._index.get(s)
        if k is None:
            k = self._index[s] = len(self.items)
            self.items.append(s)
        return k


def _fact(x: Any) -> str:
    """A KG fact as ``(s, p, o)`` whether logged as a string or as a list."""
    if isinstance(x, list | tuple) and len(x) == 3:
        return f"({x[0]}, {x[1]}, {x[2]})"
    return str(x)


def _float(x: Any) -> float | None:
    try:
        return round(float(x), 4)
    except (TypeError, ValueError):
        return None


def _proposals(meta: dict[str, Any], S: Strings) -> list[dict[str, Any]]:
    """Proposals in order, each marked rejected (matched in order against ``rejected_proposals``)
    and given its reflection votes / critic score (one judge call per proposal when counts agree).
    """
    props = [p for p in meta.get("proposals") or [] if isinstance(p, dict)]
    rejected = [r for r in meta.get("rejected_proposals") or [] if isinstance(r, dict)]
    votes = meta.get("reflection_votes") or []
    yes = meta.get("reflection_yes_fraction") or []
    critic = meta.get("critic_scores") or []
    if not props:  # records with rejections only
        props = list(rejected)
    out, r = [], 0
    for k, p in enumerate(props):
        rej = rejected[r] if r < len(rejected) else None
        is_rej = rej is not None and rej.get("action") == p.get("action")
        r += is_rej
        info = rej or {}
        v = votes[k] if len(votes) == len(props) and isinstance(votes[k], list) else None
        y = yes[k] if len(yes) == len(props) else (info.get("yes_fraction") if is_rej else None)
        c = critic[k] if len(critic) == len(props) else None
        if c is None and is_rej and info.get("by") == "critic":
            c = info.get("score")
        out.append(
            {
                "a": S.ref(p.get("action"), 300),
                "th": S.ref(p.get("thought"), SHORT_CHARS) if p.get("thought") else None,
                "rej": bool(is_rej),
                "by": info.get("by") if is_rej else None,
                "why": S.ref(info.get("reason"), SHORT_CHARS)
                if is_rej and info.get("reason")
                else None,
                "votes": [bool(b) for b in v] if v is not None else None,
                "yes": _float(y),
                "critic": _float(c),
                "tag": p.get("tag"),
                "src": p.get("source"),
            }
        )
    return out


def _kg(meta: dict[str, Any], S: Strings) -> dict[str, Any] | None:
    keys = ("kg_added", "kg_removed", "kg_retrieved")
    if not any(k in meta for k in (*keys, "kg_size")):
        return None
    facts = {k[3:]: [S.ref(_fact(f), 300) for f in meta.get(k) or []] for k in keys}
    return {**facts, "size": meta.get("kg_size"), "extractor": meta.get("kg_extractor")}


def _agent_extras(meta: dict[str, Any], S: Strings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if any(k in meta for k in ("r_critique", "regenerations", "rlaw_return")):
        out["rlaw"] = {
            "r_critique": _float(meta.get("r_critique")),
            "regenerations": meta.get("regenerations"),
            "return": _float(meta.get("rlaw_return")),
            "r_env_prev": _float(meta.get("rlaw_r_env_previous")),
        }
    if any(k.startswith("rlvmr_") for k in meta):
        reward = meta.get("rlvmr_reward") if isinstance(meta.get("rlvmr_reward"), dict) else {}
        out["rlvmr"] = {
            "tag": meta.get("rlvmr_tag"),
            "reward": {k: reward.get(k) for k in ("meta", "format", "total", "pending", "rule")},
            "return": _float(meta.get("rlvmr_return")),
            "well_formed": meta.get("rlvmr_well_formed"),
            "problem": meta.get("rlvmr_format_problem"),
            "guided": meta.get("guided"),
            "model_choice": S.ref(meta.get("model_choice"), 300),
        }
    if meta.get("reflections_in_context"):
        out["notes"] = [S.ref(m, THOUGHT_CHARS) for m in meta["reflections_in_context"]]
    if meta.get("belief"):
        out["belief"] = S.ref(meta["belief"], THOUGHT_CHARS)
    return out


def step_view(record: dict[str, Any], S: Strings) -> dict[str, Any]:
    """The drawable form of one step line (module docstring)."""
    meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
    more = {k: v for k, v in meta.items() if k not in _DRAWN}
    props = _proposals(meta, S)
    view = {
        "trial": record.get("trial", 0),
        "t": record.get("t"),
        "tag": record.get("tag"),
        "action": S.ref(record.get("action"), 300),
        "thought": S.ref(record.get("thought"), THOUGHT_CHARS) if record.get("thought") else None,
        "feedback": S.ref(record.get("feedback")),
        "invalid": bool(record.get("invalid")),
        "score": _float(record.get("score")),
        "won": bool(record.get("won")),
        "done": bool(record.get("done")),
        "executed": meta.get("executed"),
        "props": props,
        "rejections": sum(p["rej"] for p in props) or int(meta.get("rejections") or 0),
        "kg": _kg(meta, S),
        "plan": plan_view(meta.get("plan"), S.ref) if meta.get("plan") else None,
        "llm": meta.get("llm_calls", record.get("llm_calls")),
        **_agent_extras(meta, S),
    }
    if more:
        view["more"] = S.ref(json.dumps(to_jsonable(more), ensure_ascii=False), MORE_CHARS)
    return view


def viewer_data(
    runs: Sequence[RunLike], *, max_episodes: int = 200, scale: float = 1.0
) -> dict[str, Any]:
    """``{"strings": [...], "scale": scale, "runs": [{label, path, agent, episodes}]}`` for
    ``runs`` (at most ``max_episodes`` episodes each; text bounds multiplied by ``scale``)."""
    S = Strings(scale)
    out = []
    for run in runs:
        episodes = []
        for s in run.summaries[:max_episodes]:
            records = run.steps(s["episode"])
            episodes.append(
                {
                    "id": s["episode"],
                    "env": s.get("env"),
                    "goal": S.ref(s.get("goal")),
                    "status": s.get("status"),
                    "won": s.get("won"),
                    "score": s.get("score"),
                    "steps": s.get("steps"),
                    "error": S.ref((s.get("error") or {}).get("message")),
                    "first_observation": S.ref(records[0].get("observation")) if records else None,
                    "trajectory": [step_view(r, S) for r in records],
                }
            )
        agent = getattr(run, "agent", None)
        out.append(
            {"label": run.label, "path": str(run.path), "agent": agent, "episodes": episodes}
        )
    return {"strings": S.items, "scale": scale, "runs": out}
