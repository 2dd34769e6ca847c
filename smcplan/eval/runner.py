"""The evaluation harness: run an agent on a sweep of episodes, log every step, resume after a kill.

For each episode (see :mod:`smcplan.eval.episodes`) the harness builds a fresh agent seeded by
``episode_seed(run seed, episode id)``, reseeds the global RNGs (``random``, ``numpy`` and, when
already imported, ``torch``) with the same value, resets the environment with the episode's
seed and alternates ``agent.act`` / ``env.step`` until ``done`` or ``max_steps``. With
``trials > 1`` a lost episode is retried on the same task with the same agent (Reflexion's
protocol: ``end_episode`` lets it reflect between trials) until it wins or the trials run out.

Crash safety (see :mod:`smcplan.eval.records`): step lines are flushed as they happen, the
episode summary is written atomically last, and a rerun skips every episode that has a
summary. A backend that dies (``EnvError`` or any exception from the environment) or an agent
that raises is recorded as an error episode and the sweep goes on; ``KeyboardInterrupt`` stops it.

Layering: imports ``smcplan.envs``, ``smcplan.agents`` and ``smcplan.llm`` lazily, only when a
sweep needs them (the random agent loads no language model); nothing imports this module.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import inspect
import os
import platform
import random
import sys
import textwrap
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

import numpy as np

from smcplan.eval.episodes import EpisodeSpec, episode_seed, resolve_episodes
from smcplan.eval.metrics import EpisodeStats, episode_stats, group_metrics, step_count
from smcplan.eval.records import (
    CONFIG_SCHEMA,
    EPISODE_SCHEMA,
    STEP_SCHEMA,
    JsonlWriter,
    RunPaths,
    atomic_write_json,
    read_json,
)

__all__ = ["EvalConfig", "RunConfigMismatch", "run_eval", "run_episode", "load_summaries"]

#: Config fields that must match when a run directory is resumed (they change what an episode
#: means); the sweep fields (env, split, seeds, episodes) may change between invocations.
IDENTITY_FIELDS = (
    "agent",
    "model",
    "quantization",
    "seed",
    "max_steps",
    "trials",
    "agent_config",
)


class RunConfigMismatch(ValueError):
    """A run directory is being resumed with a configuration that changes its episodes' meaning."""


@dataclass
class EvalConfig:
    """One ``smcplan eval`` invocation.

    ``envs``: env names (``twx:coin``) or prefixes (``twx`` = every ``twx:*`` game of the split).
    ``seeds`` overrides ``split``. ``episodes``: at most this many per env. ``model``: name for
    ``smcplan.llm.load_model`` (``None`` = the packaged SmolLM2), loaded only for agents whose
    factory takes an ``lm`` argument. ``agent_config``/``env_config``: extra keyword arguments.
    """

    envs: list[str]
    agent: str
    out: str
    split: str | None = "dev"
    seeds: list[int] | None = None
    episodes: int | None = None
    model: str | None = None
    quantization: str | None = None
    seed: int = 0
    max_steps: int = 50
    trials: int = 1
    agent_config: dict[str, Any] = field(default_factory=dict)
    env_config: dict[str, Any] = field(default_factory=dict)
    retry_errors: bool = False
    fail_fast: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.envs, str):
            self.envs = [e for e in self.envs.split(",") if e]
        if self.max_steps <= 0:
            raise ValueError(f"max_steps must be positive, got {self.max_steps}")
        if self.trials <= 0:
            raise ValueError(f"trials must be positive, got {self.trials}")

    def identity(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in IDENTITY_FIELDS}


# ---------------------------------------------------------------------------------------------
# construction of agents, language models and environments (lazy imports)


def _agent_factory(name: str) -> Callable[..., Any]:
    from smcplan import agents

    if name not in agents.AGENTS:
        raise ValueError(f"unknown agent {name!r}; known: {', '.join(sorted(agents.AGENTS))}")
    module_name, factory_name = agents.AGENTS[name].split(":")
    return getattr(importlib.import_module(module_name), factory_name)


def _declares(func: Any, name: str) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in params and params[name].kind is not inspect.Parameter.POSITIONAL_ONLY


def _accepts(factory: Callable[..., Any], name: str) -> bool:
    """Whether ``factory`` takes the keyword ``name``: declared by it or, for a class, by the
    ``__init__`` of a base class that its ``**kwargs`` reach. A bare ``**kwargs`` does not count
    (a factory that only forwards ``**config`` may not know what to do with it)."""
    if _declares(factory, name):
        return True
    if isinstance(factory, type):
        return any(_declares(cls.__init__, name) for cls in factory.__mro__ if cls is not object)
    return False


def agent_needs_lm(name: str) -> bool:
    """True iff the registered agent's factory declares an ``lm`` parameter (or ``needs_lm``).

    Unregistered names (agents supplied through ``make_agent``) need none.
    """
    from smcplan import agents

    if name not in agents.AGENTS:
        return False
    factory = _agent_factory(name)
    flag = getattr(factory, "needs_lm", None)
    if flag is not None:
        return bool(flag)
    try:
        return "lm" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def default_make_agent(name: str, lm: Any, seed: int, config: dict[str, Any]) -> Any:
    """``smcplan.agents.make(name, lm=lm, seed=seed, **config)``; ``seed`` only if the factory
    declares it (all agents are also reproducible through the reseeded global generators)."""
    from smcplan import agents

    kwargs = dict(config)
    if "seed" not in kwargs and _accepts(_agent_factory(name), "seed"):
        kwargs["seed"] = seed
    return agents.make(name, lm=lm, **kwargs)


def default_make_env(name: str, **kwargs: Any) -> Any:
    from smcplan import envs

    return envs.make(name, **kwargs)


def default_load_lm(model: str | None, quantization: str | None) -> Any:
    from smcplan import llm

    if quantization is None:
        return llm.load_model(model)
    return llm.load_model(model, quantization=quantization)


def seed_everything(seed: int) -> None:
    """Seed ``random``, ``numpy`` and (only if already imported) ``torch`` global generators."""
    random.seed(seed)
    np.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _error(source: str, exc: BaseException) -> dict[str, Any]:
    return {
        "source": source,
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc))[-8000:],
    }


class _EpisodeFailed(Exception):
    def __init__(self, source: str, exc: BaseException) -> None:
        super().__init__(str(exc))
        self.source = source
        self.exc = exc


class _EnvPool:
    """One live environment per (name, kwargs), reused across episodes; dropped when it fails.

    ``defaults`` (the harness's ``max_steps``) are passed to the adapter unless the episode's own
    kwargs set them; an adapter that does not take one of them is built without it.
    """

    def __init__(
        self, make_env: Callable[..., Any], defaults: dict[str, Any] | None = None
    ) -> None:
        self._make = make_env
        self._defaults = dict(defaults or {})
        self._envs: dict[str, Any] = {}

    @staticmethod
    def _key(spec: EpisodeSpec) -> str:
        return f"{spec.env}|{sorted(spec.env_kwargs.items())!r}"

    def get(self, spec: EpisodeSpec) -> Any:
        key = self._key(spec)
        if key not in self._envs:
            extra = {k: v for k, v in self._defaults.items() if k not in spec.env_kwargs}
            try:
                env = self._make(spec.env, **extra, **spec.env_kwargs)
            except TypeError as exc:
                if not any(repr(k) in str(exc) for k in extra):
                    raise
                env = self._make(spec.env, **spec.env_kwargs)
            self._envs[key] = env
        return self._envs[key]

    def discard(self, spec: EpisodeSpec) -> None:
        env = self._envs.pop(self._key(spec), None)
        if env is not None:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - the backend is already broken
                pass

    def close(self) -> None:
        for key in list(self._envs):
            env = self._envs.pop(key)
            try:
                env.close()
            except Exception:  # noqa: BLE001 - best effort at shutdown
                pass


# ---------------------------------------------------------------------------------------------
# one episode


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x


def _usage(lm: Any) -> dict[str, int] | None:
    """The language model's cumulative counters (``LanguageModel.usage``), or None."""
    usage = getattr(lm, "usage", None)
    as_dict = getattr(usage, "as_dict", None)
    return dict(as_dict()) if callable(as_dict) else None


def _usage_delta(before: dict[str, int] | None, lm: Any) -> dict[str, int] | None:
    after = _usage(lm)
    if before is None or after is None:
        return None
    return {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in after}


def reseed_lm(lm: Any, seed: int) -> bool:
    """Restart the model's own stream of per-call seeds (``lm.reseed(seed)``) if it has one."""
    reseed = getattr(lm, "reseed", None)
    if callable(reseed):
        reseed(seed)
        return True
    return False


def _admissible(env: Any, info: dict[str, Any]) -> list[str]:
    actions = info.get("admissible_actions")
    if actions is None:
        actions = env.admissible_actions()
    return list(actions)


@dataclass
class _Progress:
    """Callbacks the sweep gives an episode (progress bars, trajectory printing)."""

    on_step: Callable[[dict[str, Any]], None] = lambda record: None
    on_trial_start: Callable[[int, str, str], None] = lambda trial, goal, obs: None


@dataclass
class EpisodeLog:
    """What an episode produced so far (kept by the caller, so it survives a failure)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    trials: list[dict[str, Any]] = field(default_factory=list)
    goal: str = ""


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
    progress: _Progress | None = None,
    lm: Any = None,
) -> EpisodeLog:
    """Play ``trials`` trials (stopping at the first win) of one episode; write each step.

    Fills ``log`` as it goes. With ``lm`` (a ``LanguageModel``), each step's LLM calls and tokens
    are measured from ``lm.usage`` around ``agent.act`` (tokens = prompt + generated + scored);
    otherwise they come from the agent's ``meta["llm_calls"]``/``meta["llm_tokens"]``. Raises ``_EpisodeFailed`` tagged with the failing side (``env`` or
    ``agent``) on any exception from either.
    """
    progress = progress or _Progress()
    records, trial_results = log.records, log.trials
    for trial in range(trials):
        try:
            obs, info = env.reset(spec.seed)
            info = dict(info or {})
            log.goal = goal = str(env.task)
            actions = _admissible(env, info)
        except Exception as exc:  # noqa: BLE001 - any backend failure is an error episode
            raise _EpisodeFailed("env", exc) from exc
        progress.on_trial_start(trial, goal, obs)
        try:
            agent.reset(goal, obs, actions)
        except Exception as exc:  # noqa: BLE001
            raise _EpisodeFailed("agent", exc) from exc
        won, score, ret, done, truncated = (
            False,
            float(info.get("score", 0.0) or 0.0),
            0.0,
            False,
            False,
        )
        for t in range(max_steps):
            usage0 = _usage(lm)
            t0 = time.perf_counter()
            try:
                step = agent.act(obs, actions, info)
            except Exception as exc:  # noqa: BLE001
                raise _EpisodeFailed("agent", exc) from exc
            t1 = time.perf_counter()
            try:
                feedback, reward, done, next_info = env.step(step.action)
                next_info = dict(next_info or {})
                next_actions = [] if done else _admissible(env, next_info)
            except Exception as exc:  # noqa: BLE001
                raise _EpisodeFailed("env", exc) from exc
            t2 = time.perf_counter()
            usage = _usage_delta(usage0, lm)
            meta = dict(step.meta or {})
            if usage is None:
                calls = _number(step_count({"meta": meta}, "llm_calls"))
                tokens = _number(step_count({"meta": meta}, "llm_tokens"))
            else:
                calls = usage.get("calls", 0)
                tokens = sum(v for k, v in usage.items() if k.endswith("_tokens"))
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
                "llm_usage": usage,
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
            episode_info = getattr(agent, "episode_info", None)
            if episode_info is not None:
                trial_results[-1]["agent"] = episode_info()
        except Exception as exc:  # noqa: BLE001
            raise _EpisodeFailed("agent", exc) from exc
        if won:
            break
    return log


# ---------------------------------------------------------------------------------------------
# the sweep


def load_summaries(out: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every finished episode summary of a run directory, sorted by sweep index."""
    paths = RunPaths(out)
    summaries = [read_json(p) for p in paths.summaries()]
    return sorted(summaries, key=lambda s: (s.get("index", 0), s.get("episode", "")))


def _check_config(paths: RunPaths, config: EvalConfig) -> None:
    if not paths.config.exists():
        return
    old = read_json(paths.config).get("identity", {})
    new = config.identity()
    diffs = [
        f"{k}: {old.get(k)!r} -> {new[k]!r}"
        for k in IDENTITY_FIELDS
        if k in old and _canon(old[k]) != _canon(new[k])
    ]
    if diffs:
        raise RunConfigMismatch(
            f"run directory {paths.root} was made with another configuration ({'; '.join(diffs)});"
            " use another --out, or the same settings to resume"
        )


def _canon(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _write_config(paths: RunPaths, config: EvalConfig, specs: Sequence[EpisodeSpec]) -> None:
    import smcplan

    atomic_write_json(
        paths.config,
        {
            "schema": CONFIG_SCHEMA,
            "identity": config.identity(),
            "config": asdict(config),
            "episodes": [s.id for s in specs],
            "smcplan_version": getattr(smcplan, "__version__", None),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "written_at": _now(),
        },
    )


def write_run_metrics(out: str | os.PathLike[str], *, seed: int = 0) -> dict[str, Any]:
    """Recompute ``metrics.json`` (per benchmark and over all episodes) from the summaries."""
    paths = RunPaths(out)
    stats = [EpisodeStats.from_dict(s["stats"]) for s in load_summaries(out)]
    per_env = group_metrics(stats, seed=seed)
    from smcplan.eval.metrics import aggregate

    result = {
        "per_env": {env: m.to_dict() for env, m in per_env.items()},
        "all": aggregate(stats, seed=seed).to_dict(),
    }
    atomic_write_json(paths.metrics, result)
    return result


class _Bars:
    """tqdm progress bars: episodes (with ETA) and the current episode's steps."""

    def __init__(
        self, total: int, done: int, max_steps: int, enabled: bool, show: TextIO | None
    ) -> None:
        from tqdm.auto import tqdm

        self._tqdm = tqdm
        self.enabled = enabled
        self.show = show
        self.max_steps = max_steps
        self.episodes = tqdm(
            total=total,
            initial=done,
            unit="ep",
            desc="episodes",
            disable=not enabled,
            dynamic_ncols=True,
        )
        self.steps = None
        self.total_steps = 0
        self.wins = 0
        self.finished = 0
        self.errors = 0

    def start_episode(self, spec: EpisodeSpec) -> None:
        self.steps = self._tqdm(
            total=self.max_steps,
            unit="step",
            desc=f"  {spec.id}",
            leave=False,
            disable=not self.enabled,
            dynamic_ncols=True,
        )

    def _write(self, text: str) -> None:
        if self.show is not None:
            self._tqdm.write(text, file=self.show)

    def on_trial_start(self, trial: int, goal: str, obs: str) -> None:
        if self.steps is not None:
            self.steps.reset(total=self.max_steps)
        self._write(f"\n== trial {trial} | task: {goal}\n{obs.strip()}")

    def on_step(self, record: dict[str, Any]) -> None:
        self.total_steps += 1
        if self.steps is not None:
            self.steps.update(1)
        tag = f"<{record['tag']}> " if record.get("tag") else ""
        thought = ""
        if record.get("thought"):
            thought = textwrap.indent(f"thought: {record['thought'].strip()}", "  ") + "\n"
        meta = record.get("meta") or {}
        flags = []
        if record["invalid"]:
            flags.append("invalid")
        if meta.get("rejections"):
            flags.append(f"{meta['rejections']} rejected")
        if meta.get("slow_thinking"):
            plan = meta.get("plan") or {}
            n = plan.get("num_particles")
            flags.append(f"slow thinking, N={n}" if n else "slow thinking")
        flag_text = f"  [{'; '.join(flags)}]" if flags else ""
        feedback = textwrap.indent(str(record["feedback"]).strip(), "      ")
        self._write(
            f"{thought}[{record['t']:>3}] {tag}> {record['action']}{flag_text}\n"
            f"{feedback}  (score {record['score']:.2f})"
        )

    def end_episode(self, summary: dict[str, Any]) -> None:
        if self.steps is not None:
            self.steps.close()
            self.steps = None
        self.finished += 1
        self.wins += bool(summary["won"])
        self.errors += summary["status"] == "error"
        self.episodes.update(1)
        self.episodes.set_postfix(
            steps=self.total_steps,
            SR=f"{self.wins}/{self.finished}",
            errors=self.errors,
            refresh=True,
        )
        status = (
            "ERROR " + summary["error"]["type"]
            if summary["status"] == "error"
            else ("won" if summary["won"] else "lost")
        )
        self._write(
            f"== {summary['episode']}: {status}, score {summary['score']:.2f}, "
            f"{summary['steps']} steps"
        )

    def close(self) -> None:
        if self.steps is not None:
            self.steps.close()
        self.episodes.close()


def run_eval(
    config: EvalConfig,
    *,
    specs: Sequence[EpisodeSpec] | None = None,
    make_env: Callable[..., Any] | None = None,
    make_agent: Callable[[str, Any, int, dict[str, Any]], Any] | None = None,
    load_lm: Callable[[str | None, str | None], Any] | None = None,
    progress: bool = True,
    show: TextIO | None = None,
    workers: int = 1,
    ray_address: str | None = None,
) -> list[dict[str, Any]]:
    """Run (or resume) the sweep of ``config`` into ``config.out``; return all episode summaries.

    ``specs`` overrides the episodes resolved from the config; ``make_env``/``make_agent``/
    ``load_lm`` replace ``smcplan.envs.make``/``smcplan.agents.make``/``smcplan.llm.load_model``
    (fault injection in tests, custom setups). ``show``: a stream that receives the trajectory
    (task, thoughts, actions, feedback) as it happens. ``workers > 1`` (or ``ray_address``) runs
    the episodes on Ray workers (:mod:`smcplan.eval.ray_sweep`), with the same records.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1; got {workers}")
    paths = RunPaths(config.out)
    if make_agent is None:
        _agent_factory(config.agent)  # unknown agent names fail before anything is written
    if specs is None:
        specs = resolve_episodes(
            config.envs,
            split=config.split,
            seeds=config.seeds,
            episodes=config.episodes,
            env_kwargs=config.env_config,
        )
    _check_config(paths, config)
    paths.episodes.mkdir(parents=True, exist_ok=True)
    _write_config(paths, config, specs)

    finished: dict[str, dict[str, Any]] = {}
    for p in paths.summaries():
        summary = read_json(p)
        finished[summary["episode"]] = summary
    todo = []
    for index, spec in enumerate(specs):
        done = finished.get(spec.id)
        if done is not None and done.get("status") == "error" and config.retry_errors:
            done = None
        if done is None:
            todo.append((index, spec))
    make_env = make_env or default_make_env
    make_agent = make_agent or default_make_agent
    load_lm = load_lm or default_load_lm

    bars = _Bars(len(specs), len(specs) - len(todo), config.max_steps, progress, show)
    pool = _EnvPool(make_env, {"max_steps": config.max_steps})
    lm: Any = None
    lm_loaded = False

    def episode_ended(summary: dict[str, Any]) -> None:
        bars.end_episode(summary)
        if config.fail_fast and summary["status"] == "error":
            raise RuntimeError(
                f"episode {summary['episode']} failed ({summary['error']['type']}: "
                f"{summary['error']['message']})"
            )

    try:
        if workers > 1 or ray_address:
            from smcplan.eval.ray_sweep import run_parallel

            run_parallel(
                config, paths, todo, workers=workers, address=ray_address, make_env=make_env,
                make_agent=make_agent, load_lm=load_lm, on_summary=episode_ended,
            )  # fmt: skip
            todo = []
        for index, spec in todo:
            if (
                not lm_loaded
            ):  # only when an episode is left to run, and only if the agent needs one
                if config.model != "none" and agent_needs_lm(config.agent):
                    lm = load_lm(config.model, config.quantization)
                lm_loaded = True
            episode_ended(_run_one(config, paths, index, spec, pool, make_agent, lm, bars))
    finally:
        bars.close()
        pool.close()
    write_run_metrics(config.out, seed=config.seed)
    wanted = {s.id for s in specs}
    return [s for s in load_summaries(config.out) if s["episode"] in wanted]


def _run_one(
    config: EvalConfig,
    paths: RunPaths,
    index: int,
    spec: EpisodeSpec,
    pool: _EnvPool,
    make_agent: Callable[[str, Any, int, dict[str, Any]], Any],
    lm: Any,
    bars: _Bars,
) -> dict[str, Any]:
    episode_id = spec.id
    agent_seed = episode_seed(config.seed, episode_id)
    seed_everything(agent_seed)
    reseed_lm(lm, agent_seed)
    usage0 = _usage(lm)
    started, t0 = _now(), time.perf_counter()
    bars.start_episode(spec)
    log = EpisodeLog()
    error = None
    writer = JsonlWriter(paths.steps(episode_id))
    try:
        try:
            try:
                env = pool.get(spec)
            except (ValueError, TypeError, ImportError):
                raise  # a bad env name or option, or a missing benchmark: fatal, not an episode error
            except Exception as exc:  # noqa: BLE001 - the backend failed to start
                raise _EpisodeFailed("env", exc) from exc
            try:
                agent = make_agent(config.agent, lm, agent_seed, dict(config.agent_config))
            except (ValueError, TypeError):
                raise  # a bad agent name or option: fatal for the sweep, not an episode error
            except Exception as exc:  # noqa: BLE001
                raise _EpisodeFailed("agent", exc) from exc
            run_episode(
                spec,
                env,
                agent,
                max_steps=config.max_steps,
                trials=config.trials,
                writer=writer,
                episode_id=episode_id,
                log=log,
                progress=_Progress(on_step=bars.on_step, on_trial_start=bars.on_trial_start),
                lm=lm,
            )
        except _EpisodeFailed as failed:
            error = _error(failed.source, failed.exc)
            if failed.source == "env":
                pool.discard(spec)
        writer.commit()  # not reached on KeyboardInterrupt: the partial file is left behind
    finally:
        writer.close()
    trials = log.trials
    last = (
        trials[-1]
        if trials
        else {
            "won": False,
            "score": 0.0,
            "steps": 0,
            "return": 0.0,
            "truncated": False,
        }
    )
    status = "error" if error else "ok"
    stats = episode_stats(
        log.records, env=spec.env, won=last["won"], score=last["score"], status=status
    )
    summary = {
        "schema": EPISODE_SCHEMA,
        "episode": episode_id,
        "index": index,
        "env": spec.env,
        "task": spec.task,
        "seed": spec.seed,
        "env_kwargs": spec.env_kwargs,
        "goal": log.goal,
        "agent": config.agent,
        "model": config.model,
        "agent_seed": agent_seed,
        "status": status,
        "error": error,
        "won": bool(last["won"]) and not error,
        "score": float(last["score"]),
        "steps": stats.steps,
        "return": float(last["return"]),
        "truncated": bool(last["truncated"]),
        "trials": trials,
        "stats": stats.to_dict(),
        "llm_usage": _usage_delta(usage0, lm),
        "wall_s": time.perf_counter() - t0,
        "started_at": started,
        "finished_at": _now(),
    }
    atomic_write_json(paths.summary(episode_id), summary)
    return summary
