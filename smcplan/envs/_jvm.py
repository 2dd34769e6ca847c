"""Java backends under supervision: one py4j gateway JVM per handle, every call time-bounded.

What this module guarantees (issue 7, "robustness"):

* **Start under a timeout.**  The JVM is launched with ``subprocess`` (the command py4j's own
  ``launch_gateway`` builds) and must print its port within ``start_timeout_s``, or it is killed.
* **Every call under a timeout.**  The gateway's socket has ``read_timeout``; a call that does
  not answer in time raises, and the caller (``Supervised``) kills the JVM.
* **Restart once, then a typed error.**  ``Supervised.call`` runs an operation; on a dead or
  hung JVM it kills it, starts a fresh one, lets the adapter rebuild its state (replay), and
  retries once; a second failure raises ``BackendTimeout`` (hang) or ``EnvError`` (crash).
* **No leaked java processes.**  Every PID started here is recorded (``spawned_pids``); a
  handle whose refcount reaches zero, that is garbage-collected, or that is still alive at
  interpreter exit is shut down and, failing that, killed.  ``live_pids()`` lists those still
  running, for tests.  The JVM also runs ``--die-on-broken-pipe``: it exits when this process
  dies and its stdin closes.

Several adapter instances may share one JVM (a clone creates a second simulator object in the
same JVM rather than a second 0.3-0.5 GB process); handles are reference-counted.

Imports py4j lazily (it comes with the benchmark packages); nothing from other smcplan layers
except ``smcplan.envs.base`` and ``smcplan.interrupts``.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import select
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from smcplan.envs.base import BackendTimeout, EnvError, MissingBenchmark
from smcplan.interrupts import shielded

__all__ = ["JavaProcess", "JvmBacked", "Supervised", "spawned_pids", "live_pids",
           "BackendFailure", "classify_failure"]

T = TypeVar("T")

_SPAWNED: set[int] = set()
_HANDLES: weakref.WeakValueDictionary[int, JavaProcess] = weakref.WeakValueDictionary()
_LOCK = threading.Lock()

#: Default time limit (seconds) for one backend call; generous because a first ScienceWorld
#: ``load`` with gold-path generation takes ~2 s on a warm-up JVM of a loaded 2-core machine.
DEFAULT_CALL_TIMEOUT_S = 60.0
DEFAULT_START_TIMEOUT_S = 60.0


class BackendFailure(Exception):
    """Internal: the JVM died or did not answer in time (``hung`` tells which)."""

    def __init__(self, message: str, hung: bool) -> None:
        super().__init__(message)
        self.hung = hung


def spawned_pids() -> set[int]:
    """PIDs of every JVM this Python process started through this module."""
    with _LOCK:
        return set(_SPAWNED)


def live_pids() -> set[int]:
    """PIDs started here that still run (zombies excluded)."""
    import psutil

    alive = set()
    for pid in spawned_pids():
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.NoSuchProcess:
            continue
    return alive


class _DropPy4JRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}py4j{os.sep}" not in record.pathname


_ROOT_FILTER = _DropPy4JRecords()


def _quiet_py4j() -> None:
    # py4j logs every refused or timed-out connection with a traceback, partly through its own
    # loggers and partly through the *root* logger (``logging.exception``); this module turns
    # those failures into typed errors, so the records are noise.  The root-logger filter
    # drops only records whose source file lies inside the py4j package.
    for name in ("py4j", "py4j.java_gateway", "py4j.clientserver"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    root = logging.getLogger()
    if _ROOT_FILTER not in root.filters:
        root.addFilter(_ROOT_FILTER)


def _terminate(proc: subprocess.Popen, gateway: Any) -> None:
    """Stop the gateway and make sure the JVM process is gone (wait, then SIGKILL)."""
    with contextlib.suppress(Exception):
        if gateway is not None:
            gateway.close(keep_callback_server=False, close_callback_server_connections=True)
    if proc.poll() is None:
        with contextlib.suppress(Exception):
            proc.stdin.close()  # --die-on-broken-pipe: the JVM exits on EOF
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
    for stream in (proc.stdout, proc.stdin):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.close()


class JavaProcess:
    """A JVM running ``py4j.GatewayServer`` with ``jar`` on its classpath.

    ``new(class_name, *args)`` constructs a Java object (e.g. a simulator's ``PythonInterface``).
    ``call_timeout_s`` bounds every call through this gateway.
    """

    def __init__(
        self,
        jar: str,
        *,
        cwd: str | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        java_opts: Sequence[str] = ("-XX:+UseSerialGC",),
    ) -> None:
        try:
            from py4j.java_gateway import GatewayParameters, JavaGateway, find_jar_path
        except ImportError as exc:  # pragma: no cover - py4j ships with the benchmarks
            raise MissingBenchmark(
                "py4j is not installed (it comes with textworld-express / scienceworld): "
                "pip install 'smcplan[bench]'"
            ) from exc
        _quiet_py4j()
        java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get(
            "JAVA_HOME"
        ) else "java"
        classpath = os.pathsep.join((find_jar_path(), jar))
        command = [java, "-classpath", classpath, *java_opts, "py4j.GatewayServer",
                   "--die-on-broken-pipe", "0"]
        try:
            # own session: Ctrl-C reaches Python only (smcplan.interrupts), not the JVM mid-call
            proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=cwd,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise EnvError(f"cannot start java ({java!r}); Java 17 is required") from exc
        with _LOCK:
            _SPAWNED.add(proc.pid)
        self.proc = proc
        self.pid = proc.pid
        self.jar = jar
        self.call_timeout_s = float(call_timeout_s)
        self._gateway: Any = None
        self._refs = 1
        self._closed = False
        self._finalizer = weakref.finalize(self, _terminate, proc, None)
        try:
            port = self._read_port(start_timeout_s)
            self._gateway = JavaGateway(
                gateway_parameters=GatewayParameters(
                    port=port, auto_field=True, read_timeout=self.call_timeout_s
                ),
                java_process=proc,
            )
        except BaseException:
            self.kill()
            raise
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _terminate, proc, self._gateway)
        threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
        with _LOCK:
            _HANDLES[self.pid] = self

    def _read_port(self, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        buf = b""
        fd = self.proc.stdout.fileno()
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise BackendTimeout(f"JVM for {os.path.basename(self.jar)} did not start "
                                     f"within {timeout_s:.0f} s; killed")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 64)
                if not chunk:
                    code = self.proc.wait()
                    raise EnvError(f"JVM for {os.path.basename(self.jar)} exited with code "
                                   f"{code} before it started")
                buf += chunk
        return int(buf.split(b"\n", 1)[0])

    # -- objects --------------------------------------------------------------------------
    def new(self, class_name: str, *args: Any) -> Any:
        """Construct ``class_name`` (dotted Java name) in this JVM."""
        obj: Any = self._gateway.jvm
        for part in class_name.split("."):
            obj = getattr(obj, part)
        return obj(*args)

    # -- life cycle -----------------------------------------------------------------------
    def alive(self) -> bool:
        return not self._closed and self.proc.poll() is None

    def acquire(self) -> JavaProcess:
        if not self.alive():
            raise EnvError("cannot share a JVM that is not running")
        self._refs += 1
        return self

    def release(self) -> None:
        """Drop one reference; the last one shuts the JVM down."""
        self._refs -= 1
        if self._refs <= 0:
            self.shutdown()

    def shutdown(self) -> None:
        """Close the gateway and end the process (idempotent)."""
        self._closed = True
        self._finalizer()

    def kill(self) -> None:
        """SIGKILL the process at once (a hung JVM does not answer a polite shutdown)."""
        self._closed = True
        if self.proc.poll() is None:
            self.proc.kill()
        self._finalizer()


def _drain(stream: Any) -> None:
    """Read the JVM's stdout to EOF so that it never blocks on a full pipe."""
    with contextlib.suppress(Exception):
        while stream.read(4096):
            pass


@atexit.register
def _shutdown_all() -> None:
    with _LOCK:
        handles = list(_HANDLES.values())
    for handle in handles:
        handle.kill()


def classify_failure(
    exc: BaseException, jvm_alive: bool, timed_out: bool = False
) -> BackendFailure | None:
    """Is ``exc`` a dead or hung JVM (-> ``BackendFailure``) rather than a Java-side error?

    A Java exception (``Py4JJavaError``) or a py4j protocol error that carries a Java trace
    (e.g. "Method ... does not exist") from a live JVM that answered in time is the request's
    fault, not the backend's.  Anything else from py4j -- a socket timeout (``TimeoutError`` in
    the chain), a refused or reset connection, an empty answer, a dead process -- is a backend
    failure; ``hung`` when the call ran into its time limit.
    """
    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:  # pragma: no cover
        return None
    hung = timed_out
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        hung = hung or isinstance(cur, TimeoutError)
        cur = cur.__cause__ or cur.__context__
    if jvm_alive and not hung:
        if isinstance(exc, Py4JJavaError) or "Trace:" in str(exc):
            return None
    return BackendFailure(str(exc) or type(exc).__name__, hung=hung)


def _is_py4j(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("py4j") or isinstance(exc, OSError)


class Supervised:
    """Runs backend operations with one restart: ``call(op, what)`` -> ``op()`` or typed error.

    ``start()`` must (re)create the backend and bring it to the adapter's current state (the
    adapter replays its recorded actions); it is called once after a failure, then ``op`` is
    retried.  ``stop()`` kills the current backend.  ``alive()`` says whether the JVM process
    still runs.  A Java-side exception from a live JVM becomes an ``EnvError`` at once, without
    a restart (retrying a refused request would not help).
    """

    def __init__(
        self,
        label: str,
        start: Callable[[], None],
        stop: Callable[[], None],
        alive: Callable[[], bool],
        timeout_s: float,
    ) -> None:
        self.label = label
        self._start = start
        self._stop = stop
        self._alive = alive
        self.timeout_s = float(timeout_s)
        self.restarts = 0

    def _timed_out(self, began: float) -> bool:
        # py4j sometimes reports a socket timeout as a bare "error while calling" with no
        # chained cause; the elapsed time tells a hang from an instant failure.
        return time.monotonic() - began >= 0.9 * self.timeout_s

    def call(self, op: Callable[[], T], what: str) -> T:
        began = time.monotonic()
        try:
            with shielded():
                return op()
        except Exception as exc:
            if not _is_py4j(exc):
                raise  # our own errors (EnvError, ValueError) pass through untouched
            first = classify_failure(exc, self._alive(), self._timed_out(began))
            if first is None:
                raise EnvError(f"{self.label}: {what} failed: {exc}") from exc
        # The JVM died or hung: kill it, start a fresh one, rebuild state, retry once.
        self._stop()
        try:
            self._start()
            self.restarts += 1
            began = time.monotonic()
            with shielded():
                return op()
        except Exception as exc:
            if isinstance(exc, EnvError):
                failure: BackendFailure | None = BackendFailure(
                    str(exc), isinstance(exc, BackendTimeout)
                )
            elif _is_py4j(exc):
                failure = classify_failure(exc, self._alive(), self._timed_out(began))
            else:
                failure = None
            if failure is None:
                raise EnvError(f"{self.label}: {what} failed after a restart: {exc}") from exc
            self._stop()
            hung = failure.hung or first.hung
            kind = BackendTimeout if hung else EnvError
            raise kind(
                f"{self.label}: backend {'hung' if hung else 'crashed'} during {what}; "
                f"restarted once, failed again ({failure}); first failure: {first}"
            ) from exc


class JvmBacked:
    """Mixin: the JVM life cycle shared by the py4j adapters (TextWorldExpress, ScienceWorld).

    The adapter sets ``name``, ``call_timeout_s``, ``_jvm = None``, ``_sim = None`` and
    ``_closed = False``, defines ``_start()`` (which begins with ``_ensure_jvm``), then calls
    ``_init_backend``.  ``close()``, ``__del__`` and ``java_pid`` come from here.
    """

    name: str
    call_timeout_s: float
    _jvm: JavaProcess | None
    _sim: Any
    _closed: bool
    _sup: Supervised

    def _start(self) -> None:  # pragma: no cover - every adapter defines it
        raise NotImplementedError

    def _init_backend(self, call_timeout_s: float, share: JavaProcess | None) -> None:
        """Supervise the backend, join ``share`` if it still runs, and start under supervision.

        A failed start closes the adapter (releasing any JVM) before the error propagates.
        """
        self._sup = Supervised(
            self.name, self._start, self._kill, self._jvm_alive, call_timeout_s
        )
        if share is not None and share.alive():
            self._jvm = share.acquire()
        try:
            self._sup.call(self._start, "start")
        except BaseException:
            self.close()
            raise

    def _jvm_alive(self) -> bool:
        return self._jvm is not None and self._jvm.alive()

    def _kill(self) -> None:
        if self._jvm is not None:
            self._jvm.kill()
            self._jvm.release()
        self._jvm = None
        self._sim = None

    def _ensure_jvm(
        self,
        locate: Callable[[], tuple[str, str]],
        factory: Callable[..., JavaProcess] = JavaProcess,
    ) -> JavaProcess:
        """The prologue of ``_start``: refuse when closed, (re)start the JVM if it is dead.

        ``locate()`` gives ``(jar, cwd)`` and is called only when a new JVM is needed;
        ``factory`` builds it (the adapter passes its module's ``JavaProcess``, so tests can
        substitute one there).
        """
        if self._closed:
            raise EnvError(f"{self.name}: the environment is closed")
        if not self._jvm_alive():
            if self._jvm is not None:
                self._jvm.release()
            jar, cwd = locate()
            self._jvm = factory(jar, cwd=cwd, call_timeout_s=self.call_timeout_s)
        return self._jvm

    def close(self) -> None:
        """Release this adapter's JVM (the process ends with its last user); idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._jvm is not None:
            self._jvm.release()
        self._jvm = None
        self._sim = None

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    @property
    def java_pid(self) -> int | None:
        """PID of the JVM this environment currently uses (``None`` once closed)."""
        return self._jvm.pid if self._jvm is not None else None
