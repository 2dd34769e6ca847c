"""Trajectories from any environment into a resumable JSONL shard (:mod:`smcplan.train.data`).

Sources (``source=``):

* ``"oracle"``: NeSyFS planning every step with the simulator world model (per-particle clones
  of the real environment; ``ORACLE_CONFIG``, the ``make demo-oracle`` settings, wins coin
  18/20).  An oracle: its actions are good, its observations are the environment's own.
* ``"gold"``: the environment's gold action sequence (``env.gold_actions()``, where it has one).
  TextWorldExpress's coin and TWC gold paths are random walks of the house, seeded by the game's
  seed (the same path on every reset; up to 37 steps over the 3,000 coin seeds), so give
  ``max_steps`` room for the longest path.
* ``"agent"``: any registered agent (``agent=``, ``agent_config=``), e.g. ReAct rollouts.

**Branches** (``branches=K``, for world models): at every state of the episode, up to ``K``
other admissible actions (``"all"``: every one) are each taken once on a clone of the
environment and written as ``"branch"`` records (same fields as a transition), and the episode
goes on from the policy's action.  A policy's own transitions cover the actions it likes (an
oracle never walks into a closed door, closes one, or asks for its inventory); a world model
that is to tell a planner which action helps must also have seen what the others do.  The
``K`` actions of a state are a uniform draw without replacement seeded by ``(seed, t)``.

Every transition stores what a planner particle at the root sees (task, real observation, the
retrieved facts of a rule-extracted knowledge graph of the episode so far) and what happened
(action, next observation, reward, done, won, truncated, score).  The shard's header records the git
commit, env, split, seeds, source and configuration; with ``resume=True`` the episodes already
finished in the shard are skipped, a torn interrupted episode is dropped (also a torn last
line: a kill mid-write), and a header that disagrees with the request is refused
(:class:`CollectError`).  Seeds are counted before they are expanded (at most
:data:`~smcplan.options.MAX_SEEDS`, each at most :data:`~smcplan.options.MAX_SEED`).
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smcplan.errors import InvalidArgumentError, SmcplanError, check_int
from smcplan.games import rules_for
from smcplan.jsonfile import jsonl_line
from smcplan.options import seed_list
from smcplan.train.data import SHARD_SCHEMA, read_shard

__all__ = [
    "ORACLE_CONFIG",
    "SOURCES",
    "CollectError",
    "CollectResult",
    "collect",
    "git_commit",
    "branch_actions",
]

#: the ``make demo-oracle`` agent: NeSyFS, slow thinking every step, simulator world model
ORACLE_CONFIG: dict[str, Any] = {
    "slow_thinking": "always",
    "planner": {
        "world_model": "simulator",
        "progress": "env+task",
        "proposal": "uniform",
        "num_particles": 8,
        "horizon": 3,
        "lam": 3,
        "choice": "max_weight",
    },
}
SOURCES = ("oracle", "gold", "agent")
#: header fields that must agree when a shard is resumed
_IDENTITY = (
    "env", "env_kwargs", "split", "source", "agent", "agent_config", "max_steps", "branches",
)  # fmt: skip
#: the value a header written before the field existed means
_IDENTITY_DEFAULTS: dict[str, Any] = {"branches": 0}


class CollectError(SmcplanError, ValueError):
    """A collection request the collector cannot carry out (e.g. resuming a different shard)."""


@dataclass
class CollectResult:
    """The shard written, the episodes played now and skipped (already in the shard), the
    transitions added, the wins among the played episodes and the wall time."""

    path: Path
    played: int
    skipped: int
    transitions: int
    won: int
    seconds: float


def git_commit(start: str | os.PathLike[str] | None = None) -> str | None:
    """The current commit of the repository around ``start`` (default: this file), or None."""
    where = Path(start) if start is not None else Path(__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def _episode_id(env: str, seed: int) -> str:
    return f"{env}/{seed}"


def _header(
    env: str,
    env_kwargs: dict[str, Any],
    split: str | None,
    seeds: Sequence[int],
    source: str,
    agent: str | None,
    agent_config: dict[str, Any],
    max_steps: int,
    model: str | None,
    branches: int | str = 0,
) -> dict[str, Any]:
    return {
        "kind": "header",
        "schema": SHARD_SCHEMA,
        "commit": git_commit(),
        "env": env,
        "env_kwargs": env_kwargs,
        "split": split,
        "seeds": list(seeds),
        "source": source,
        "agent": agent,
        "agent_config": agent_config,
        "max_steps": max_steps,
        "branches": branches,
        "model": model,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _prepare(path: Path, header: dict[str, Any], resume: bool) -> set[str]:
    """Start a fresh shard, or (resume) keep its finished episodes and return their ids; a
    resume that asks for new seeds adds them to the header's ``seeds`` and records the commit
    that added them under ``resumes``."""
    if path.exists() and not resume:
        raise CollectError(f"{path} exists; pass --resume to continue it or choose another --out")
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(jsonl_line(header), encoding="utf-8")
        return set()
    shard = read_shard(path, torn_tail=True)  # a line torn by a kill is dropped, not fatal
    for key in _IDENTITY:
        had = shard.header.get(key, _IDENTITY_DEFAULTS.get(key))
        if had != header.get(key, _IDENTITY_DEFAULTS.get(key)):
            raise CollectError(
                f"{path} was collected with {key}={had!r}, not "
                f"{header.get(key)!r}; resume with the same settings or write a new --out"
            )
    # the header keeps every seed asked for and, per resume, the commit and seeds it added
    known = list(shard.header.get("seeds") or [])
    added = [s for s in header.get("seeds", []) if s not in set(known)]
    merged = dict(shard.header)
    if added:
        merged["seeds"] = known + added
        merged["resumes"] = [
            *shard.header.get("resumes", []),
            {"commit": header.get("commit"), "seeds": added, "at": header.get("created")},
        ]
    # rewrite (atomically), a torn episode and a torn last line dropped
    if shard.partial or shard.torn_line or merged != shard.header:
        tmp = path.with_suffix(path.suffix + ".tmp")
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(jsonl_line(merged))
            for t in shard.transitions + shard.branches:
                handle.write(jsonl_line(t))
            for e in shard.episodes.values():
                handle.write(jsonl_line(e))
        os.replace(tmp, path)
    return set(shard.episodes)


def _policy(source: str, env: Any, agent: Any) -> Callable[[int, str, list[str], dict], str]:
    if source == "gold":
        gold = list(env.gold_actions())
        return lambda t, obs, actions, info: gold[t] if t < len(gold) else "look"
    return lambda t, obs, actions, info: agent.act(obs, actions, info).action


def branch_actions(
    actions: Sequence[str], taken: str, branches: int | str, seed: int, t: int
) -> list[str]:
    """The admissible actions other than ``taken`` to branch on at step ``t`` of episode
    ``seed``: all of them (``branches="all"``) or a uniform draw of ``branches`` without
    replacement, seeded by ``(seed, t)`` (the same shard twice gives the same branches)."""
    others = [a for a in dict.fromkeys(actions) if a != taken]
    if branches == "all" or int(branches) >= len(others):
        return others
    return random.Random(seed * 1_000_003 + t).sample(others, int(branches))


def _record(kind: str, name: str, seed: int, t: int, task: str, obs: str, action: str,
            result: Any, facts: list, actions: list[str]) -> dict[str, Any]:  # fmt: skip
    nxt, reward, done, next_info = result
    next_info = dict(next_info or {})
    return {
        "kind": kind,
        "episode": _episode_id(name, seed),
        "seed": seed,
        "t": t,
        "task": task,
        "observation": obs,
        "action": action,
        "next_observation": nxt,
        "reward": float(reward or 0.0),
        "done": bool(done),
        "won": bool(next_info.get("won", False)),
        "truncated": bool(next_info.get("truncated", False)),
        "score": float(next_info.get("score", 0.0) or 0.0),
        "facts": facts,
        "admissible": actions,
    }


def _play(
    env: Any,
    name: str,
    seed: int,
    source: str,
    agent: Any,
    max_steps: int,
    write: Callable[[dict[str, Any]], None],
    branches: int | str = 0,
) -> tuple[int, bool, float]:
    from smcplan.memory import KnowledgeGraph

    obs, info = env.reset(seed)
    info = dict(info or {})
    task = str(env.task)
    actions = list(info.get("admissible_actions") or env.admissible_actions())
    if agent is not None:
        if getattr(agent, "needs_simulator", False):
            agent.attach_simulator(env.clone, env)
        agent.reset(task, obs, actions)
    policy = _policy(source, env, agent)
    kind = rules_for(name).env_kind  # the game's home reads its triplets ("auto" for WebShop)
    kg = KnowledgeGraph()
    kg.observe(obs, None, env_kind=kind, step=0)
    won, steps = False, 0
    for t in range(max_steps):
        facts = [list(f.as_tuple()) for f in kg.retrieve(task, 2, last_observation=obs, limit=24)]
        action = policy(t, obs, actions, info)
        if branches:
            for other in branch_actions(actions, action, branches, seed, t):
                twin = env.clone()
                try:
                    result = twin.step(other)
                finally:
                    twin.close()
                write(_record("branch", name, seed, t, task, obs, other, result, facts, actions))
        result = env.step(action)
        nxt, _reward, done, next_info = result
        next_info = dict(next_info or {})
        won = bool(next_info.get("won", False))
        write(_record("transition", name, seed, t, task, obs, action, result, facts, actions))
        steps = t + 1
        kg.observe(nxt, action, env_kind=kind, step=t + 1)
        obs, info = nxt, next_info
        actions = [] if done else list(info.get("admissible_actions") or env.admissible_actions())
        if done:
            break
    score = float(info.get("score", 0.0) or 0.0)
    if agent is not None:
        agent.end_episode(won, score)
    return steps, won, score


def collect(
    env: str,
    seeds: Sequence[int],
    out: str | os.PathLike[str],
    *,
    source: str = "oracle",
    agent: str | None = None,
    agent_config: dict[str, Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
    split: str | None = None,
    max_steps: int = 25,
    model: str | None = None,
    resume: bool = False,
    progress: bool = True,
    branches: int | str = 0,
) -> CollectResult:
    """Play ``seeds`` of ``env`` with ``source``'s policy and append them to the shard ``out``.

    ``model``: the language model of an LLM agent (registry name or folder); the oracle needs
    none and gets the tiny test model, which it never calls (its proposal is uniform and its
    twist reads the simulator).  ``branches``: 0 (none), ``K`` or ``"all"`` counterfactual
    steps per state (module docstring); the environment must support ``clone()``.
    """
    from smcplan import agents, envs

    if source not in SOURCES:
        raise InvalidArgumentError(f"unknown source {source!r}; known: {', '.join(SOURCES)}")
    max_steps = check_int(max_steps, "max_steps", minimum=1)
    if branches != "all":
        if isinstance(branches, str):
            raise InvalidArgumentError(
                f"branches must be an integer >= 0 or 'all'; got {branches!r}"
            )
        branches = check_int(branches, "branches", minimum=0)
    seeds = seed_list(seeds, "seeds")  # counted first: range(0, 3_000_000_000) is refused
    if not seeds:
        raise InvalidArgumentError("seeds is empty; give at least one episode seed")
    if source == "oracle":
        agent, agent_config = "nesyfs", {**ORACLE_CONFIG, **(agent_config or {})}
    elif source == "agent" and not agent:
        raise InvalidArgumentError("source='agent' needs agent= (e.g. 'react' or 'random')")
    elif source == "gold":
        agent, agent_config = None, {}
    agent_config = dict(agent_config or {})
    env_kwargs = dict(env_kwargs or ({"split": split} if split else {}))
    path = Path(out)
    # everything that can refuse the request does so before the shard is written
    if agent is not None:
        agents.check_agent_options(agent, agent_config)
        agents.check_settings(agent, agent_config)
    handle_env = envs.make(env, **env_kwargs)
    try:
        check_seed = getattr(handle_env, "check_seed", None)
        for seed in seeds if callable(check_seed) else ():
            try:
                check_seed(seed)
            except ValueError as err:
                raise InvalidArgumentError(f"seeds: {err}") from None
        lm = None
        if agent is not None and agents.uses_model(agent):
            from smcplan.llm import load_model
            from smcplan.llm.testing import tiny_model

            lm = tiny_model() if source == "oracle" and model is None else load_model(model)
        if branches and not callable(getattr(handle_env, "clone", None)):
            raise InvalidArgumentError(
                f"branches={branches!r} needs an environment that can clone itself; {env!r} "
                "cannot: collect with branches=0"
            )
        header = _header(
            env, env_kwargs, split, seeds, source, agent, agent_config, max_steps, model,
            branches,
        )  # fmt: skip
        done_ids = _prepare(path, header, resume)
        todo = [s for s in seeds if _episode_id(env, s) not in done_ids]
        from tqdm import tqdm

        t0, played, transitions, wins = time.perf_counter(), 0, 0, 0
        with open(path, "a", encoding="utf-8") as handle:

            def write(record: dict[str, Any]) -> None:
                handle.write(jsonl_line(record))
                handle.flush()

            for seed in tqdm(todo, desc=f"collect {env}", unit="ep", disable=not progress):
                actor = None
                if agent is not None:
                    opts = dict(agent_config)
                    if agents.spec(agent).seed:
                        opts["seed"] = seed
                    actor = agents.make(agent, lm=lm, **opts)
                steps, won, score = _play(
                    handle_env, env, seed, source, actor, max_steps, write, branches
                )
                write(
                    {
                        "kind": "episode",
                        "episode": _episode_id(env, seed),
                        "seed": seed,
                        "won": won,
                        "steps": steps,
                        "score": score,
                    }
                )
                played, transitions, wins = played + 1, transitions + steps, wins + int(won)
    finally:
        handle_env.close()
    return CollectResult(
        path, played, len(seeds) - len(todo), transitions, wins, time.perf_counter() - t0
    )
