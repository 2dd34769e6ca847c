"""Episodes on Ray: one actor per worker, each with its own environments and model (or client).

The executor knows nothing about agents or environments. It is handed

* ``jobs``: ``(index, spec)`` pairs, each one episode of the sweep;
* ``make_runner``: a picklable zero-argument factory, called once *inside* each worker
  process, that returns ``run(index, spec) -> outcome`` (the worker builds its own
  environments and language model there, as verl-agent's env workers do);
* ``on_result(index, spec, outcome)``: called in the driver as each episode finishes, in
  completion order (the driver writes the run directory; a finished episode is on disk before
  the next result is taken);
* ``on_failure(index, spec, exc)``: called when a worker died twice on the same episode.

Scheduling is Ray's: each of the ``N`` actors holds at most one episode at a time and gets the
next job as soon as it returns. A worker process that dies mid-episode (killed, out of memory)
surfaces as ``RayActorError``; the actor is replaced and the episode retried once on the new
one, then reported to ``on_failure`` and the sweep goes on. Results do not depend on ``N`` or
on completion order as long as ``run`` derives all randomness from the episode itself (the
harness seeds each episode from ``episode_seed(run seed, episode id)``).

Shutdown: on return, on an exception and on SIGINT / SIGTERM every actor is killed and a local
cluster started here is shut down (``ray.shutdown`` stops its raylet, GCS and workers); then any
process the cluster started that is still alive (``ray::DashboardAgent``,
``ray::RuntimeEnvAgent``, a worker's JVM) is killed and the cluster's temporary folder removed,
so no Ray process outlives the sweep.  ``ray.init`` replaces the SIGTERM handler (Ray's Python
one calls ``sys.exit``, its C++ one prints a stack and exits 15, skipping this cleanup), so
the driver puts :mod:`smcplan.interrupts`' handlers back right after it
(:func:`~smcplan.interrupts.rearm`), and the shutdown itself runs shielded (a second signal
waits for it).  The local cluster has no dashboard (``include_dashboard=False``).  With
``address`` the driver connects to an existing cluster (``ray start --head`` ...) and only its
own actors are killed.

Ray is imported lazily, only here; nothing else in smcplan imports it.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from smcplan import interrupts
from smcplan.interrupts import rearm, shielded

__all__ = ["run_on_ray", "RayUnavailable", "WorkerDied"]

#: object store for a local cluster: outcomes are small JSON, Ray's minimum is 75 MB
_OBJECT_STORE_BYTES = 96 * 1024 * 1024
#: how long each worker may take to close its environments at the end of a sweep
_CLOSE_TIMEOUT_S = 30.0


class RayUnavailable(ImportError):
    """Ray is not installed (``pip install 'smcplan[scale]'``)."""


class WorkerDied(RuntimeError):
    """The worker process running an episode died (twice); the episode is recorded as an error."""


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(
            "--workers > 1 runs episodes on Ray, which is not installed; fix: "
            "pip install 'smcplan[scale]' (or pip install ray)"
        ) from exc
    return ray


class _Worker:
    """The actor body: builds its episode runner once, then runs episodes one at a time."""

    def __init__(self, make_runner: Callable[[], Callable[[int, Any], Any]]) -> None:
        self._run = make_runner()

    def pid(self) -> int:
        return os.getpid()

    def run(self, index: int, spec: Any) -> Any:
        return self._run(index, spec)

    def close(self) -> None:
        close = getattr(self._run, "close", None)
        if callable(close):
            close()


class _Cluster:
    """What :func:`_start` did: ``started`` a local cluster (in ``temp``) or connected to one;
    ``before``: the ids of this process's children before it started (not Ray's)."""

    def __init__(self, started: bool, temp: str | None = None, before: set[int] | None = None):
        self.started, self.temp, self.before = started, temp, before or set()

    def __bool__(self) -> bool:  # ``if _start(...)``: a cluster was started here
        return self.started


def _children() -> list[Any]:
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil comes with ray
        return []
    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def _start(ray, workers: int, address: str | None) -> _Cluster:
    """Connect (``address``) or start a local cluster of ``workers`` CPUs; the signal handlers
    of :mod:`smcplan.interrupts` are put back after ``ray.init`` (module docstring)."""
    if ray.is_initialized():
        return _Cluster(False)
    if address:
        ray.init(address=address, configure_logging=False, log_to_driver=False)
        rearm()
        return _Cluster(False)
    before = {p.pid for p in _children()}
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Unix socket paths <= 107 bytes
    cluster = _Cluster(True, temp, before)
    try:
        with shielded():  # a signal during the start is raised once it is up, then cleaned up
            try:
                ray.init(
                    num_cpus=workers,
                    include_dashboard=False,
                    configure_logging=False,
                    log_to_driver=False,
                    object_store_memory=_OBJECT_STORE_BYTES,
                    _temp_dir=temp,
                )
            finally:
                rearm()
    except SystemExit as exc:  # Ray's own SIGTERM handler (sys.exit(15)) ran before rearm()
        _stop(ray, [], [], cluster)
        if exc.code == signal.SIGTERM and interrupts.active():
            raise interrupts.SweepInterrupted(signal.SIGTERM) from None
        raise
    except BaseException:
        _stop(ray, [], [], cluster)
        raise
    return cluster


def _reap(cluster: _Cluster, processes: list[Any], grace_s: float = 5.0) -> None:
    """After ``ray.shutdown``: SIGKILL the cluster's ``processes`` still alive after
    ``grace_s`` (the agents the raylet started, a worker's JVM), then remove its folder."""
    import psutil

    mine = [p for p in processes if p.pid not in cluster.before]
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        alive = [p for p in mine if _alive(p)]
        if not alive:
            break
        time.sleep(0.1)
    for process in mine:
        if _alive(process):
            try:
                process.send_signal(signal.SIGKILL)
            except psutil.Error:
                pass
    psutil.wait_procs(mine, timeout=grace_s)
    if cluster.temp:
        shutil.rmtree(cluster.temp, ignore_errors=True)


def _alive(process: Any) -> bool:
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def run_on_ray(
    jobs: Sequence[tuple[int, Any]],
    make_runner: Callable[[], Callable[[int, Any], Any]],
    *,
    workers: int,
    on_result: Callable[[int, Any, Any], None],
    on_failure: Callable[[int, Any, BaseException], None],
    address: str | None = None,
    max_attempts: int = 2,
    on_started: Callable[[list[int]], None] | None = None,
) -> None:
    """Run every job on ``workers`` Ray actors (module docstring); return when all are done.

    ``max_attempts``: tries per episode when its worker dies (2 = retried once).
    ``on_started(pids)``: called with the worker process ids once the actors are up (tests
    use it to kill one). Exceptions raised by ``run`` itself (a bad configuration) stop the
    sweep and are re-raised as their original type.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1; got {workers}")
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1; got {max_attempts}")
    ray = _ray()
    from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

    died = (RayActorError, WorkerCrashedError)
    cluster = _start(ray, workers, address)
    actor_cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(_Worker)
    actors: list[Any] = []
    running: dict[Any, tuple[Any, int, Any, int]] = {}
    try:
        queue = deque((index, spec, 1) for index, spec in jobs)
        size = min(workers, len(queue))
        actors = [actor_cls.remote(make_runner) for _ in range(size)]
        if on_started is not None and actors:
            on_started(ray.get([a.pid.remote() for a in actors]))

        def submit(actor: Any) -> None:
            if queue:
                index, spec, attempt = queue.popleft()
                running[actor.run.remote(index, spec)] = (actor, index, spec, attempt)

        for actor in actors:
            submit(actor)
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            ref = ready[0]
            actor, index, spec, attempt = running.pop(ref)
            try:
                outcome = ray.get(ref)
            except died as exc:
                ray.kill(actor, no_restart=True)
                actors.remove(actor)
                actor = actor_cls.remote(make_runner)
                actors.append(actor)
                if attempt < max_attempts:
                    queue.appendleft((index, spec, attempt + 1))
                else:
                    on_failure(index, spec, WorkerDied(f"worker died {attempt} times: {exc}"))
                submit(actor)
                continue
            except RayTaskError as exc:
                raise exc.as_instanceof_cause() from None
            on_result(index, spec, outcome)
            submit(actor)
    finally:
        _stop(ray, actors, list(running), cluster)


def _stop(ray, actors: list[Any], running: list[Any], cluster: _Cluster) -> None:
    """Cancel unfinished episodes, let each worker close its environments (JVMs) for up to
    ``_CLOSE_TIMEOUT_S``, kill the actors, and shut a cluster started here down, leaving no
    process of it (:func:`_reap`).  Shielded: a signal that arrives meanwhile is raised after."""
    with shielded():
        _stop_now(ray, actors, running, cluster)


def _stop_now(ray, actors: list[Any], running: list[Any], cluster: _Cluster) -> None:
    processes = _children() if cluster.started else []
    try:
        for ref in running:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 - already finished or gone
                pass
        closing = [a.close.remote() for a in actors]
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=_CLOSE_TIMEOUT_S)
        for actor in actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
    finally:
        if cluster.started:
            try:
                ray.shutdown()
            finally:
                _reap(cluster, processes)
