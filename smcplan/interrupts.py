"""Ctrl-C and ``kill``: how a sweep stops on SIGINT / SIGTERM, JVM-backed or not.

While :func:`stop_on_signals` is active (the eval runner wraps every sweep in it, serial or on
Ray), SIGINT and SIGTERM raise :class:`SweepInterrupted` (a ``KeyboardInterrupt``) in the main
thread, which unwinds the episode in flight: it is dropped, never recorded as an error, and the
command exits with ``128 + signum`` (130 for SIGINT, 143 for SIGTERM).

The one place where raising at once is wrong is inside a backend's socket call: py4j catches a
``KeyboardInterrupt`` in its socket read and fails while cleaning up (``AttributeError …
shutdown_socket`` in py4j 0.10.9), which looked like an environment error and let the sweep go
on.  Backend calls therefore run inside :func:`shielded`: a signal that arrives there is
recorded, the call (milliseconds) finishes, and :class:`SweepInterrupted` is raised as the
shield closes.  The JVMs themselves run in their own session (``start_new_session``), so a
terminal's Ctrl-C reaches Python only and the JVM is shut down by its owner, not killed mid-call.

Standard library only; any layer may import it.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "SweepInterrupted",
    "stop_on_signals",
    "stops_on_signals",
    "shielded",
    "stop_requested",
    "raise_if_stopped",
    "rearm",
    "active",
]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SweepInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the run; ``exit_code`` is ``128 + signum`` (130 / 143)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = int(signum)
        self.exit_code = 128 + int(signum)


class _State:
    active = 0  # nesting depth of stop_on_signals
    shield = 0  # nesting depth of shielded (main thread only)
    pending: int | None = None  # signal received inside a shield


_STATE = _State()


def _handler(signum: int, frame: Any) -> None:
    if _STATE.shield > 0:
        _STATE.pending = signum
        return
    raise SweepInterrupted(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGINT/SIGTERM into :class:`SweepInterrupted` inside the block (main thread only;
    elsewhere, and when nested, it does nothing).  The previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread() or _STATE.active:
        _STATE.active += 1
        try:
            yield
        finally:
            _STATE.active -= 1
        return
    previous = {s: signal.getsignal(s) for s in _SIGNALS}
    _STATE.active += 1
    _STATE.pending = None
    try:
        for s in _SIGNALS:
            signal.signal(s, _handler)
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        _STATE.active -= 1


def stops_on_signals(fn: F) -> F:
    """Decorator: run ``fn`` inside :func:`stop_on_signals` (the eval runner's entry point)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with stop_on_signals():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def shielded() -> Iterator[None]:
    """Defer :class:`SweepInterrupted` until the end of the block (a backend call that must not
    be torn in the middle).  Outside :func:`stop_on_signals`, or off the main thread, a no-op."""
    if not _STATE.active or threading.current_thread() is not threading.main_thread():
        yield
        return
    _STATE.shield += 1
    try:
        yield
    finally:
        _STATE.shield -= 1
        if _STATE.shield == 0 and _STATE.pending is not None:
            signum, _STATE.pending = _STATE.pending, None
            raise SweepInterrupted(signum)


def active() -> bool:
    """True inside :func:`stop_on_signals` (signals become :class:`SweepInterrupted`)."""
    return _STATE.active > 0


def rearm() -> None:
    """Put this module's handlers back while :func:`stop_on_signals` is active (main thread
    only; elsewhere a no-op), after a library replaced them: ``ray.init`` installs a SIGTERM
    handler that calls ``sys.exit`` and Ray's C++ core one that prints a stack and exits 15,
    skipping every ``finally`` (the local cluster's processes were left running)."""
    if _STATE.active and threading.current_thread() is threading.main_thread():
        for s in _SIGNALS:
            signal.signal(s, _handler)


def stop_requested() -> int | None:
    """The signal received inside a shield and not yet raised, if any."""
    return _STATE.pending


def raise_if_stopped() -> None:
    """Raise :class:`SweepInterrupted` now if a signal is pending (a checkpoint)."""
    if _STATE.pending is not None and _STATE.shield == 0:
        signum, _STATE.pending = _STATE.pending, None
        raise SweepInterrupted(signum)
