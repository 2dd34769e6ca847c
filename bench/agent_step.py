"""Agent-loop throughput: ReAct, NeSyFS and RLAW steps, two modes side by side: the prefix KV
cache off and on (``--compare cache``, in-process transformers), or llama-server with one slot
against P slots (``--compare parallel``: batched decoding of the n votes and N particles).

    nice -n 10 .venv/bin/python bench/agent_step.py                       # the full run (long)
    nice -n 10 .venv/bin/python bench/agent_step.py --seeds 10000 --steps 5 --agents react nesyfs
    .venv/bin/python bench/agent_step.py --compare parallel --parallel 5 --agents react nesyfs

With ``--compare parallel`` each worker starts its own ``llama-server`` (the packaged GGUF,
``--threads`` threads) with ``--parallel 1`` or ``--parallel P`` and plays through it; the CPU
seconds of a step then include the server's.  One slot decodes the 5 reflection votes, the N
particles' calls and the scored rows one after another; P slots decode them as one batch
(:mod:`smcplan.llm.backends.remote.llamaserver`, "Batching").

Each (agent, cache mode) runs in its own process (clean peak RSS; ``--jobs`` of them at a time,
which changes wall seconds but not the CPU seconds of each) on twx:coin dev seeds, the
same agent seed and model seed in both modes, so the two runs make the same calls and differ
only by the cache (and fp32 rounding). Per step it records the wall and CPU seconds of ``act``,
the model's counters (prompt, cached, generated, scored tokens) and, per model call, the role
that made it (the first object on the call stack that is not the language model), its seconds
and tokens. The parent then compares the two modes step by step: the same action while the two
trajectories are still identical (after the first different action they see different games),
and the largest |difference| of the proposals' recorded log-probabilities (``logq``, ``logp``).

Prefilled tokens = prompt tokens - cached tokens (prompt tokens the model actually ran);
decode tokens = generated tokens; scored tokens (continuations scored by ``logprob``) are run
in one batched pass per call. Hit rate = cached / prompt tokens. Writes
``bench/results/agent_step.json`` and prints a side-by-side table.

**A planner step against the machine's matmul rate** (``--planner``, issue 53 item 4):

    OMP_NUM_THREADS=1 .venv/bin/python bench/agent_step.py --planner --steps 4 --react-steps 2

plays ``--seeds`` with ``smcplan.plan``'s text defaults (the learned world model imagines every
admissible action once: N = |A|, H = 1, greedy; one batched ``sample`` of |A| prompts per step,
their shared context prefilled once) and, in the same process, measures the machine's fp32
matmul rate (``torch.matmul`` of two 1024 x 1024 fp32 matrices, 2 * 1024^3 FLOP, median of
``--matmul-repeats``, with 1 thread and with ``--threads``, before and after the steps). Per
planner step it reports the tokens the world model processed (prefilled prompt tokens + decoded
tokens) per second of the step, and the step's achieved rate at 2 x parameters FLOP per token
(the forward pass's multiply-adds; attention over the context adds about 4 x layers x width x
context, counted separately in ``computed_gflop``, which also counts the padded and finished
rows the batch ran) set against the matmul rate at the same thread count.  ``--react-steps K``
adds K ReAct steps on the same seed (SmolLM2, the same threads) for their seconds.  Writes
``bench/results/<name>.json`` (default ``agent_step_planner``).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("TORCH_COMPILE_DISABLE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS, print_table, write_json  # noqa: E402

COUNTERS = ("prompt_tokens", "cached_tokens", "generated_tokens", "scored_tokens")


# ---------------------------------------------------------------------- worker
def _role_of_caller() -> str:
    """Class name of the first caller on the stack that is not the language model."""
    frame = inspect.currentframe()
    try:
        frame = frame.f_back.f_back if frame and frame.f_back else None
        while frame is not None:
            owner = frame.f_locals.get("self")
            if owner is not None and type(owner).__name__ != "TransformersLanguageModel":
                return type(owner).__name__
            frame = frame.f_back
        return "other"
    finally:
        del frame


class _Profiler:
    """Wraps ``lm.sample`` and ``lm.logprob``: seconds and token counters per calling role."""

    def __init__(self, lm, clock=time.process_time) -> None:
        self.lm = lm
        self.clock = clock
        self.calls: list[dict[str, Any]] = []
        for name in ("sample", "logprob"):
            setattr(lm, name, self._wrap(name, getattr(lm, name)))

    def _wrap(self, name, fn):
        def wrapped(*args, **kwargs):
            role = _role_of_caller()
            before = self.lm.usage.as_dict()
            t0, c0 = time.perf_counter(), self.clock()
            try:
                return fn(*args, **kwargs)
            finally:
                after = self.lm.usage.as_dict()
                self.calls.append(
                    {
                        "role": role,
                        "op": name,
                        "wall_s": time.perf_counter() - t0,
                        "cpu_s": self.clock() - c0,
                        **{k: after[k] - before[k] for k in COUNTERS},
                    }
                )

        return wrapped

    def take(self) -> list[dict[str, Any]]:
        out, self.calls = self.calls, []
        return out


def _server_cpu_seconds() -> float:
    """CPU seconds of the llama-server processes this worker started."""
    import psutil

    total = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            if "llama-server" in " ".join(child.cmdline()):
                t = child.cpu_times()
                total += t.user + t.system
        except psutil.Error:
            pass
    return total


def worker(args: argparse.Namespace) -> None:
    import contextlib

    if args.cpu is not None:  # one core per worker process (its CPU seconds stay its own)
        os.sched_setaffinity(0, {args.cpu})
    with contextlib.ExitStack() as stack:
        if args.cache.startswith("p"):  # --compare parallel: this worker's own llama-server
            from smcplan.llm.backends.llamacpp_server import serve_llama_server

            url = stack.enter_context(
                serve_llama_server(
                    args.model or "smollm2-135m", threads=args.threads,
                    parallel=int(args.cache[1:]),
                )
            )
            args.model = f"openai:{url}#{args.model or 'smollm2-135m'}"
        _play(args)


def _play(args: argparse.Namespace) -> None:
    from smcplan.agents import make
    from smcplan.envs import make as make_env
    from smcplan.llm import load_model

    remote = str(args.model or "").startswith("openai:")
    lm = (
        load_model(args.model, seed=args.model_seed, timeout=600)
        if remote
        else load_model(
            args.model, threads=args.threads, prefix_cache=args.cache == "on",
            seed=args.model_seed,
        )
    )
    clock = (lambda: time.process_time() + _server_cpu_seconds()) if remote else time.process_time
    rss_model = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    prof = _Profiler(lm, clock)
    episodes: list[dict[str, Any]] = []

    def save() -> None:  # after every step, so that a run cut by --deadline keeps its steps
        cache = getattr(lm, "prefix_cache", None)
        out = {
            "agent": args.agent,
            "cache": args.cache,
            "rss_after_model_bytes": rss_model,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "cache_bytes": cache.nbytes if cache is not None else 0,
            "cache_bound_bytes": cache.max_bytes if cache is not None else 0,
            "cache_stats": cache.stats.as_dict() if cache is not None else None,
            "slots": getattr(lm, "slots", None),
            "episodes": episodes,
        }
        Path(args.out + ".part").write_text(json.dumps(out))
        os.replace(args.out + ".part", args.out)

    for seed in args.seeds:
        agent = make(args.agent, lm=lm, seed=args.agent_seed)
        env = make_env(args.env)
        try:
            obs, info = env.reset(seed)
            actions = list(info["admissible_actions"])
            agent.reset(env.task, obs, actions)
            prof.take()
            steps: list[dict[str, Any]] = []
            episodes.append({"seed": seed, "won": False, "steps": steps})
            for t in range(args.steps):
                before = lm.usage.as_dict()
                t0, c0 = time.perf_counter(), clock()
                step = agent.act(obs, actions, info)
                wall, cpu = time.perf_counter() - t0, clock() - c0
                after = lm.usage.as_dict()
                meta = step.meta
                steps.append(
                    {
                        "t": t,
                        "action": step.action,
                        "wall_s": wall,
                        "cpu_s": cpu,
                        "calls": prof.take(),
                        "proposals": [
                            {k: p.get(k) for k in ("action", "logq", "logp")}
                            for p in meta.get("proposals", [])
                        ],
                        "slow_thinking": bool(meta.get("slow_thinking")),
                        "rejections": int(meta.get("rejections", 0)),
                        **{k: after[k] - before[k] for k in COUNTERS},
                    }
                )
                obs, _reward, done, info = env.step(step.action)
                episodes[-1]["won"] = bool(info.get("won"))
                save()
                if done:
                    break
                actions = list(info["admissible_actions"])
        finally:
            env.close()
    save()


# ---------------------------------------------------------------------- parent
def _summary(run: dict[str, Any]) -> dict[str, Any]:
    steps = [s for e in run["episodes"] for s in e["steps"]]
    n = max(len(steps), 1)
    tot = {k: sum(s[k] for s in steps) for k in COUNTERS}
    roles: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for s in steps:
        for c in s["calls"]:
            r = roles[c["role"]]
            r["calls"] += 1
            r["wall_s"] += c["wall_s"]
            r["cpu_s"] += c["cpu_s"]
            for k in COUNTERS:
                r[k] += c[k]
    return {
        "steps": len(steps),
        "wall_s_per_step": sum(s["wall_s"] for s in steps) / n,
        "cpu_s_per_step": sum(s["cpu_s"] for s in steps) / n,
        "calls_per_step": sum(len(s["calls"]) for s in steps) / n,
        "prompt_tokens_per_step": tot["prompt_tokens"] / n,
        "prefilled_tokens_per_step": (tot["prompt_tokens"] - tot["cached_tokens"]) / n,
        "decode_tokens_per_step": tot["generated_tokens"] / n,
        "scored_tokens_per_step": tot["scored_tokens"] / n,
        "hit_rate": tot["cached_tokens"] / max(tot["prompt_tokens"], 1),
        "slow_thinking_steps": sum(s["slow_thinking"] for s in steps),
        "peak_rss_mb": run["peak_rss_bytes"] / 2**20,
        "rss_after_model_mb": run["rss_after_model_bytes"] / 2**20,
        "cache_mb": run["cache_bytes"] / 2**20,
        "roles": {
            name: {k: v / n for k, v in r.items()} | {"total_wall_s": r["wall_s"]}
            for name, r in sorted(roles.items())
        },
    }


def _compare(off: dict[str, Any], on: dict[str, Any]) -> dict[str, Any]:
    """Same action per step while both trajectories are identical; max |delta log-prob|."""
    same, compared, diverged, max_delta = 0, 0, 0, 0.0
    for e_off, e_on in zip(off["episodes"], on["episodes"], strict=False):
        for s_off, s_on in zip(e_off["steps"], e_on["steps"], strict=False):
            compared += 1
            for p, q in zip(s_off["proposals"], s_on["proposals"], strict=False):
                if p["action"] != q["action"]:
                    break
                for key in ("logq", "logp"):
                    if p[key] is not None and q[key] is not None:
                        max_delta = max(max_delta, abs(float(p[key]) - float(q[key])))
            if s_off["action"] != s_on["action"]:
                diverged += 1
                break
            same += 1
    return {"same_action": same, "compared": compared, "diverged_episodes": diverged,
            "max_abs_dlogprob": max_delta}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", nargs="+", default=["react", "nesyfs", "rlaw"])
    parser.add_argument("--env", default="twx:coin")
    parser.add_argument("--seeds", nargs="+", type=int, default=[10000, 10001, 10002])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--agent-seed", type=int, default=0)
    parser.add_argument("--model-seed", type=int, default=0)
    parser.add_argument("--name", default="agent_step", help="bench/results/<name>.json")
    parser.add_argument("--agent-steps", nargs="*", default=[], metavar="AGENT=N",
                        help="steps for one agent (overrides --steps)")
    parser.add_argument("--from-runs", action="store_true",
                        help="only summarise bench/results/<name>_runs/ (e.g. after a cut run)")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds; then stop the workers and report the steps they finished")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes at a time (CPU seconds are per process)")
    parser.add_argument("--cores", nargs="+", type=int, default=None, metavar="CPU",
                        help="pin each worker to one of these cores (a free one, else the "
                        "least used)")
    parser.add_argument("--compare", choices=("cache", "parallel"), default="cache",
                        help="the two modes: the prefix cache off/on (in-process), or "
                        "llama-server --parallel 1 against --parallel P")
    parser.add_argument("--parallel", type=int, default=5, metavar="P",
                        help="llama-server slots of the batched mode (--compare parallel)")
    parser.add_argument("--planner", action="store_true",
                        help="time smcplan.plan's text steps against the machine's fp32 matmul "
                        "rate measured in the same run (module docstring)")
    parser.add_argument("--react-steps", type=int, default=2,
                        help="--planner: ReAct steps on the same seed, for comparison")
    parser.add_argument("--matmul-repeats", type=int, default=10)
    parser.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                        help="--planner: an env keyword (e.g. split=train), repeatable")
    parser.add_argument("--world-model", default=None, metavar="DIR",
                        help="--planner: the learned world model's adapter folder "
                        "(default: plan()'s shipped one)")
    parser.add_argument("--progress", default=None,
                        help="--planner: plan()'s progress twist (default: its text default)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cpu", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--agent", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)  # the mode: off/on or p1/pP
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if args.planner:
        from _planner_step import planner_main

        planner_main(args)
        return
    if args.parallel < 2:
        parser.error(f"--parallel must be >= 2 (the batched mode); got {args.parallel}")
    modes = ("off", "on") if args.compare == "cache" else ("p1", f"p{args.parallel}")
    results: dict[str, Any] = {
        "compare": args.compare, "modes": list(modes),
        "env": args.env, "seeds": args.seeds, "steps": args.steps, "threads": args.threads,
        "jobs": args.jobs, "cores": args.cores, "load_average_start": os.getloadavg(),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "agents": {},
    }
    rows = []
    tmp = RESULTS / f"{args.name}_runs"
    tmp.mkdir(parents=True, exist_ok=True)
    steps_of = {a: args.steps for a in args.agents}
    for item in args.agent_steps:
        name, _, n = item.partition("=")
        steps_of[name] = int(n)
    stop_at = time.perf_counter() + args.deadline if args.deadline else None
    if True:
        todo = [(agent, mode) for agent in args.agents for mode in modes]
        running: list[tuple[str, str, subprocess.Popen, float, int | None]] = []
        runs: dict[str, dict[str, Any]] = defaultdict(dict)
        if args.from_runs:  # summarise the run files already there (no new runs)
            todo = []
        for agent, mode in todo:
            (tmp / f"{agent}-{mode}.json").unlink(missing_ok=True)
        while todo or running:
            while todo and len(running) < args.jobs:
                agent, mode = todo.pop(0)
                cmd = [
                    sys.executable, __file__, "--worker", "--agent", agent, "--cache", mode,
                    "--out", str(tmp / f"{agent}-{mode}.json"), "--env", args.env,
                    "--steps", str(steps_of[agent]), "--threads", str(args.threads),
                    "--agent-seed", str(args.agent_seed), "--model-seed", str(args.model_seed),
                    "--seeds", *map(str, args.seeds),
                ] + (["--model", args.model] if args.model else [])
                busy = [item[4] for item in running]
                cores = args.cores or []
                cpu = next((c for c in cores if c not in busy), None)
                if cpu is None and cores:  # every core busy: share the least used one
                    cpu = min(cores, key=busy.count)
                cmd += ["--cpu", str(cpu)] if cpu is not None else []
                running.append((agent, mode, subprocess.Popen(cmd), time.perf_counter(), cpu))
            time.sleep(1.0)
            late = stop_at is not None and time.perf_counter() > stop_at
            for item in list(running):
                agent, mode, proc, t0, _cpu = item
                if proc.poll() is None and not late:
                    continue
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait()
                    print(f"{agent} cache {mode}: cut at the deadline", flush=True)
                    results["cut"] = sorted({*results.get("cut", []), f"{agent}-{mode}"})
                elif proc.returncode != 0:
                    raise SystemExit(f"{agent} cache {mode} failed (exit {proc.returncode})")
                running.remove(item)
                print(f"{agent} cache {mode}: {time.perf_counter() - t0:.0f} s", flush=True)
            if late:
                todo = []
        for agent, mode in [(a, m) for a in args.agents for m in modes]:
            path = tmp / f"{agent}-{mode}.json"
            if path.is_file():
                runs[agent][mode] = json.loads(path.read_text())
        args.agents = [a for a in args.agents if len(runs[a]) == 2]
        for agent in args.agents:  # compare the same steps (a run cut at the deadline has fewer)
            off, on = runs[agent][modes[0]], runs[agent][modes[1]]
            n = min(len(off["episodes"]), len(on["episodes"]))
            off["episodes"], on["episodes"] = off["episodes"][:n], on["episodes"][:n]
            for e_off, e_on in zip(off["episodes"], on["episodes"], strict=True):
                k = min(len(e_off["steps"]), len(e_on["steps"]))
                e_off["steps"], e_on["steps"] = e_off["steps"][:k], e_on["steps"][:k]
        for agent in args.agents:
            first, second = runs[agent][modes[0]], runs[agent][modes[1]]
            s_off, s_on = _summary(first), _summary(second)
            cmp = _compare(first, second)
            results["agents"][agent] = {"off": s_off, "on": s_on, "compare": cmp,
                                        "cache_stats": second["cache_stats"]}
            for label, s in ((modes[0], s_off), (modes[1], s_on)):
                rows.append([
                    agent, label, s["steps"], f"{s['wall_s_per_step']:.2f}",
                    f"{s['cpu_s_per_step']:.2f}", f"{s['calls_per_step']:.1f}",
                    f"{s['prompt_tokens_per_step']:.0f}", f"{s['prefilled_tokens_per_step']:.0f}",
                    f"{s['decode_tokens_per_step']:.0f}", f"{s['scored_tokens_per_step']:.0f}",
                    f"{100 * s['hit_rate']:.0f}%", f"{s['peak_rss_mb']:.0f}",
                    f"{cmp['same_action']}/{cmp['compared']}" if label == modes[1] else "",
                    f"{cmp['max_abs_dlogprob']:.1e}" if label == modes[1] else "",
                ])
    results["load_average_end"] = os.getloadavg()
    react = results["agents"].get("react")
    for r in results["agents"].values():
        r["speedup_wall"] = r["off"]["wall_s_per_step"] / max(r["on"]["wall_s_per_step"], 1e-9)
        r["speedup_cpu"] = r["off"]["cpu_s_per_step"] / max(r["on"]["cpu_s_per_step"], 1e-9)
        if react is not None:
            react_on = max(react["on"]["cpu_s_per_step"], 1e-9)
            r["cpu_vs_react_on"] = r["on"]["cpu_s_per_step"] / react_on
    backend = "SmolLM2 fp32 CPU" if args.compare == "cache" else "SmolLM2 Q4_1 on llama-server"
    print(f"\n{args.env} seeds {args.seeds}, {backend}, {args.threads} thread(s); per "
          "step, over the steps both modes finished ('steps')")
    print_table(
        ["agent", "mode", "steps", "wall s", "CPU s", "calls", "prompt tok", "prefilled",
         "decode", "scored", "hit", "peak RSS MB", "same action", "max |dlogp|"],
        rows,
    )
    for agent, r in results["agents"].items():
        print(f"\n{agent}: speed-up {r['speedup_wall']:.2f}x wall, {r['speedup_cpu']:.2f}x CPU;"
              f" per-role s/step ({modes[0]} -> {modes[1]}):")
        names = sorted(set(r["off"]["roles"]) | set(r["on"]["roles"]))
        print_table(
            ["role", "calls", f"wall s {modes[0]}", f"wall s {modes[1]}", f"CPU s {modes[0]}",
             f"CPU s {modes[1]}", f"prefilled {modes[0]}", f"prefilled {modes[1]}", "decode"],
            [[n, f"{r['on']['roles'].get(n, {}).get('calls', 0):.1f}",
              f"{r['off']['roles'].get(n, {}).get('wall_s', 0):.2f}",
              f"{r['on']['roles'].get(n, {}).get('wall_s', 0):.2f}",
              f"{r['off']['roles'].get(n, {}).get('cpu_s', 0):.2f}",
              f"{r['on']['roles'].get(n, {}).get('cpu_s', 0):.2f}",
              f"{_prefilled(r['off']['roles'].get(n, {})):.0f}",
              f"{_prefilled(r['on']['roles'].get(n, {})):.0f}",
              f"{r['on']['roles'].get(n, {}).get('generated_tokens', 0):.0f}"] for n in names],
        )
    print("wrote", write_json(args.name, results))


def _prefilled(role: dict[str, float]) -> float:
    return role.get("prompt_tokens", 0.0) - role.get("cached_tokens", 0.0)


if __name__ == "__main__":
    main()
