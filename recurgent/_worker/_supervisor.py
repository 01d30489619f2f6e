"""The parent side of a worker: one long-lived process per environment, killed and restarted on failure.

A :class:`WorkerSupervisor` runs requests on one :class:`WorkerProcess` at a time: it answers
forwarded calls through a handler, kills the whole process group when the run outlives its
deadline or the child breaks the protocol, and starts a fresh child for the next run. A run's
clock starts only once its worker has said it is ready, so a worker's start-up is never the
program's time (ADR 0093); a worker the caller retires after a run (it timed out, hit a
resource cap, or imported a module with process-wide caches) is killed under the run's lock,
before any other run can use it, and its replacement starts at once. Its worker belongs to a
:class:`WorkerPool` (checked out for each run, in again after it), which may stop it while idle
(idle timeout, cap on live workers); the next run then starts a new one. It returns values and
raises typed errors; it decides nothing about retries.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from recurgent._worker import _pool
from recurgent._worker._env import host_binds, host_paths as runtime_paths
from recurgent._worker._isolation import (
    IsolationSettings,
    backend_for,
    bwrap_command,
    bwrap_path,
    interpreter_paths,
    limit_resources,
    network_allowed,
    scrubbed_environment,
)
from recurgent._worker._pool import WorkerPool
from recurgent._worker._process import WorkerExited, WorkerProcess, WorkerTimedOut
from recurgent._worker._protocol import (
    ForwardReply,
    ForwardRequest,
    RawExecRequest,
    RunRequest,
    RunResult,
)
from recurgent.errors import DependencyActivationError, ExecutionTimeoutError, WorkerCrashError

__all__ = ["RunStats", "WorkerExited", "WorkerProcess", "WorkerSupervisor", "WorkerTimedOut"]

#: How long a new worker may take to import the runtime and say it is ready. Waited for before
#: a run's clock starts, never counted against the run's deadline (ADR 0093).
STARTUP_TIMEOUT_SECONDS = 60.0

ForwardHandler = Callable[[ForwardRequest], ForwardReply]
#: Asked after a run whether its worker must go (a reason) or may serve the next run (None).
Retire = Callable[[RunResult], str | None]


@dataclass(slots=True)
class RunStats:
    """What one run's worker did, for its log line (filled in by :meth:`WorkerSupervisor.run`).

    Attributes:
        pid: The worker that ran it.
        restarts: Workers this supervisor started before that one.
        start_ms: Time spent waiting for the worker to be ready before the clock started
            (0.0 for a worker that was ready).
        retired: Why the worker was replaced after the run (``"timeout"``, ``"resource_limit"``,
            ``"module:<name>"``), or ``None`` when it serves the next run.
    """

    pid: int | None = None
    restarts: int = 0
    start_ms: float = 0.0
    retired: str | None = None


class WorkerSupervisor:
    """Runs requests on one worker bound to one environment (or to none, for isolation only).

    Args:
        python: Interpreter of the worker (an environment's ``venv/bin/python``).
        site_packages: The environment's own site-packages, or ``None`` without dependencies.
        env_dir: Directory of the environment (bound read-only into bubblewrap).
        isolation: The confinement settings.
        host_paths: Where ``recurgent`` and its own dependencies are imported from (bound
            read-only into bubblewrap); defaults to :func:`recurgent._worker._env.host_paths`.
        test_hooks: Enable ``raw_exec`` in the child (specs only).
        pool: The pool its workers belong to; the interpreter's (``_pool.WORKERS``) if omitted.
    """

    def __init__(
        self,
        *,
        python: str,
        site_packages: Path | None = None,
        env_dir: Path | None = None,
        isolation: IsolationSettings | None = None,
        host_paths: tuple[str, ...] | None = None,
        test_hooks: bool = False,
        pool: WorkerPool | None = None,
    ) -> None:
        self._python = python
        self._pool = _pool.WORKERS if pool is None else pool
        self._site = site_packages
        self._env_dir = env_dir
        self._isolation = isolation or IsolationSettings()
        self._host_paths = runtime_paths() if host_paths is None else host_paths
        self._test_hooks = test_hooks
        self._backend = backend_for(self._isolation)
        self._worker: WorkerProcess | None = None
        # Shared with the finalizer, which must not hold the supervisor itself: an agent that
        # is dropped takes its idle worker with it instead of leaving it to the idle timeout.
        self._held: list[WorkerProcess | None] = [None]
        # At exit the process module's hook kills and *waits for* every worker instead.
        weakref.finalize(self, _release, self._held).atexit = False
        self._starts = 0
        self._last_pid: int | None = None
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._close_after_run = False
        # A sibling for one nested run is shut down right after it: no replacement to start.
        self._one_run = False

    @property
    def backend(self) -> str:
        """``"bwrap"``, ``"rlimits"`` or ``"none"``."""
        return self._backend

    @property
    def restarts(self) -> int:
        """Workers started after the first one (after a kill, a crash, a retirement or an idle stop)."""
        return max(0, self._starts - 1)

    @property
    def pid(self) -> int | None:
        """The pid of the worker that ran the last request (it may since have been killed)."""
        return self._last_pid

    def _command(self, scratch: Path) -> list[str]:
        command = [self._python, "-I", "-m", "recurgent._worker"]
        if self._site is not None:
            command += ["--site-packages", str(self._site)]
        if self._backend != "bwrap":
            return command
        bwrap = bwrap_path()
        assert bwrap is not None
        read_only = [*interpreter_paths(self._python), *host_binds(self._host_paths)]
        if self._env_dir is not None:
            read_only.append(str(self._env_dir))
        return bwrap_command(
            bwrap,
            command,
            read_only=read_only,
            scratch=scratch,
            network=network_allowed(self._isolation.network),
            tmp_bytes=self._isolation.max_file_bytes,
        )

    @property
    def pool(self) -> WorkerPool:
        """The pool this supervisor's workers belong to."""
        return self._pool

    def _ensure(self) -> WorkerProcess:
        """The worker, checked out of the pool for a run; a new one if the pool stopped it."""
        worker = self._worker
        if worker is not None and self._pool.checkout(worker):
            return worker
        if worker is not None:
            self._discard()
        scratch = Path(tempfile.mkdtemp(prefix="recurgent-worker-"))
        extra = {"RECURGENT_WORKER_TEST_HOOKS": "1"} if self._test_hooks else {}
        self._pool.reserve()
        started: WorkerProcess | None = None
        try:
            started = WorkerProcess(
                self._command(scratch),
                environment=scrubbed_environment(scratch, extra=extra),
                cwd=scratch,
                preexec=limit_resources(self._isolation) if self._isolation.confined else None,
                scratch=scratch,
            )
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        finally:
            self._pool.admit(started)
        self._worker = self._held[0] = started
        self._starts += 1
        return started

    def _checkin(self) -> None:
        if self._worker is not None:
            self._pool.checkin(self._worker)

    def start(self) -> int:
        """Start the worker now and wait until it is ready (so the first run is warm); its pid."""
        with self._lock:
            worker = self._ensure()
            try:
                self._await_ready(worker)
            except WorkerExited as exited:
                raise self._crash(exited) from None
            finally:
                self._checkin()
            self._last_pid = worker.pid
            return worker.pid

    def prestart(self) -> None:
        """Start a worker in the background unless one is live; the first run waits for it.

        Returns at once (the child is spawned, not awaited): its start-up overlaps whatever the
        caller does next, such as asking the provider for the program it will run.
        """
        with self._lock:
            if self._worker is None or not self._worker.alive():
                self._ensure()
                self._checkin()

    def _await_ready(self, worker: WorkerProcess) -> float:
        """Wait until ``worker`` has imported the runtime; milliseconds waited.

        Raises:
            WorkerExited: it ended, broke the protocol or was not ready in time.
        """
        started = time.monotonic()
        try:
            worker.wait_ready(STARTUP_TIMEOUT_SECONDS)
        except WorkerTimedOut:
            raise WorkerExited(
                f"worker was not ready within {STARTUP_TIMEOUT_SECONDS:g}s of its start"
            ) from None
        return (time.monotonic() - started) * 1000.0

    @property
    def running(self) -> bool:
        """True while this supervisor holds a worker the pool has not stopped."""
        return self._worker is not None and self._worker.alive()

    def _discard(self) -> str:
        tail = ""
        worker = self._worker
        if worker is not None:
            self._pool.forget(worker)
            worker.kill()
            tail = worker.stderr_tail()
            self._worker = self._held[0] = None
        return tail

    def run(
        self,
        request: RunRequest | RawExecRequest,
        handler: ForwardHandler,
        *,
        timeout_seconds: float,
        grace_seconds: float = 0.5,
        on_clock: Callable[[], None] | None = None,
        retire: Retire | None = None,
        stats: RunStats | None = None,
    ) -> RunResult:
        """Run one request and return the worker's result.

        Args:
            request: What to run; its ``call_id`` is the only one an answer may carry.
            handler: Answers the worker's forwarded calls.
            timeout_seconds: The run's deadline, counted from the moment its worker is ready.
            grace_seconds: How much longer the parent waits before it kills the worker.
            on_clock: Called when the clock starts (the worker is ready, the request not sent).
            retire: Asked about the result: a reason kills the worker before any other run
                can use it and starts its replacement.
            stats: Filled in with the run's pid, restarts, start-up wait and retirement.

        Raises:
            ExecutionTimeoutError: no result by ``timeout_seconds + grace_seconds``; the worker
                was killed and its replacement started.
            WorkerCrashError: the worker died, broke the protocol or answered with another
                call id (message ends with its stderr tail); it was killed.
            DependencyActivationError: the worker could not be started.
        """
        stats = RunStats() if stats is None else stats
        if self._owner == threading.get_ident():
            # A forwarded call of the running program called back into this worker's agent:
            # the worker is waiting for that call, so the nested run gets a worker of its own.
            nested = self._sibling()
            try:
                return nested.run(
                    request,
                    handler,
                    timeout_seconds=timeout_seconds,
                    grace_seconds=grace_seconds,
                    on_clock=on_clock,
                    retire=retire,
                    stats=stats,
                )
            finally:
                nested.shutdown()
        with self._lock:
            self._owner = threading.get_ident()
            try:
                return self._run_locked(
                    request, handler, timeout_seconds, grace_seconds, on_clock, retire, stats
                )
            finally:
                self._owner = None
                self._checkin()
                if self._close_after_run:
                    self._close_after_run = False
                    self._stop()

    def _sibling(self) -> WorkerSupervisor:
        sibling = WorkerSupervisor(
            python=self._python,
            site_packages=self._site,
            env_dir=self._env_dir,
            isolation=self._isolation,
            host_paths=self._host_paths,
            test_hooks=self._test_hooks,
            pool=self._pool,
        )
        sibling._one_run = True
        return sibling

    def _run_locked(
        self,
        request: RunRequest | RawExecRequest,
        handler: ForwardHandler,
        timeout_seconds: float,
        grace_seconds: float,
        on_clock: Callable[[], None] | None,
        retire: Retire | None,
        stats: RunStats,
    ) -> RunResult:
        worker = self._ensure()
        self._last_pid = stats.pid = worker.pid
        stats.restarts = self.restarts
        try:
            # A new worker imports the runtime first (seconds on a busy host): that is not the
            # program's time, so the clock starts once it is ready (ADR 0093).
            stats.start_ms = self._await_ready(worker)
            if on_clock is not None:
                on_clock()
            deadline = time.monotonic() + timeout_seconds + grace_seconds
            # Every write has the run's deadline too: a worker that stops reading its input
            # held the parent in a blocking write for good (red team R28).
            worker.send(request, deadline - time.monotonic())
            while True:
                message = worker.receive(deadline - time.monotonic())
                # An answer counts only under this request's call id: a stale or forged line
                # from inside the worker is a broken worker, never a result (ADR 0095).
                if isinstance(message, RunResult) and message.call_id == request.call_id:
                    break
                if isinstance(message, ForwardRequest) and message.call_id == request.call_id:
                    if time.monotonic() >= deadline:
                        # A queued line is taken even at the deadline, so a worker that writes
                        # its calls ahead of the replies would be answered for ever: no call is
                        # answered past it (red team R28). A queued result still counts.
                        raise WorkerTimedOut("worker was still forwarding calls at its deadline")
                    try:
                        reply = handler(message)
                    except WorkerCrashError as broken:
                        # The handler found the request broken (an unknown handle or agent):
                        # the worker goes like any other that broke the protocol, never back
                        # to the pool mid-run (red team R28).
                        raise WorkerExited(str(broken)) from None
                    worker.send(reply, deadline - time.monotonic())
                    continue
                raise WorkerExited(_unexpected(message, request.call_id))
        except WorkerTimedOut:
            self._retire("timeout", stats)
            raise ExecutionTimeoutError(
                f"Execution timeout: the worker ran past {timeout_seconds:g}s and was killed"
            ) from None
        except WorkerExited as exited:
            raise self._crash(exited) from None
        reason = retire(message) if retire is not None else None
        if reason is not None:
            self._retire(reason, stats)
        return message

    def _crash(self, exited: WorkerExited) -> WorkerCrashError:
        tail = self._discard().strip()
        message = f"worker_crash: {exited}"
        if tail:
            message += f"; stderr tail:\n{tail}"
        return WorkerCrashError(message)

    def _retire(self, reason: str, stats: RunStats) -> None:
        """Kill the worker of the run that just ended and start its replacement at once.

        Called under the run's lock, so no other run can reach what the program left in that
        worker; the replacement imports the runtime while the caller finishes its call.
        """
        stats.retired = reason
        self._discard()
        if self._one_run:
            return
        try:
            self._ensure()
        except DependencyActivationError:
            pass  # the next run tries again, and reports it

    def shutdown(self) -> None:
        """Stop the worker (it ends when its stdin closes); deferred while this thread runs it."""
        if self._owner == threading.get_ident():
            # Called from a forwarded call of the running program: stop once the run returns.
            self._close_after_run = True
            return
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        worker = self._worker
        if worker is not None:
            self._pool.forget(worker)
            worker.shutdown()
        self._discard()


def _unexpected(message: object, call_id: str) -> str:
    sent = getattr(message, "call_id", None)
    if isinstance(sent, str) and sent != call_id:
        return f"worker answered call {sent[:32]!r} while {call_id!r} was running"
    return f"worker sent an unexpected {type(message).__name__}"


def _release(held: list[WorkerProcess | None]) -> None:
    """Finalizer of a dropped supervisor: its worker goes too (killed now, reaped by its reader)."""
    worker = held[0]
    if worker is not None:
        held[0] = None
        worker.abandon()
