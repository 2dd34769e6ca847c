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

Shutdown: on return, on an exception and on ``KeyboardInterrupt`` (Ctrl-C) every actor is
killed and a local cluster started here is shut down (``ray.shutdown`` stops its raylet, GCS
and workers), so no Ray process outlives the sweep. With ``address`` the driver connects to an
existing cluster (``ray start --head`` ...) and only its own actors are killed.

Ray is imported lazily, only here; nothing else in smcplan imports it.
"""

from __future__ import annotations

import os
import tempfile
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

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


def _start(ray, workers: int, address: str | None) -> bool:
    """Connect (``address``) or start a local cluster of ``workers`` CPUs; True if started here."""
    if ray.is_initialized():
        return False
    if address:
        ray.init(address=address, configure_logging=False, log_to_driver=False)
        return False
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Unix socket paths <= 107 bytes
    ray.init(
        num_cpus=workers,
        include_dashboard=False,
        configure_logging=False,
        log_to_driver=False,
        object_store_memory=_OBJECT_STORE_BYTES,
        _temp_dir=temp,
    )
    return True


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
    started = _start(ray, workers, address)
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
        _stop(ray, actors, list(running), started)


def _stop(ray, actors: list[Any], running: list[Any], started: bool) -> None:
    """Cancel unfinished episodes, let each worker close its environments (JVMs) for up to
    ``_CLOSE_TIMEOUT_S``, kill the actors, and shut a cluster started here down."""
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
        if started:
            ray.shutdown()
