"""The parent side of a worker: one long-lived process per environment, killed and restarted on failure.

A :class:`WorkerSupervisor` runs requests on one :class:`WorkerProcess` at a time: it answers
forwarded calls through a handler, kills the whole process group when the run outlives its
deadline or the child breaks the protocol, and starts a fresh child for the next run. Its worker
belongs to a :class:`WorkerPool` (checked out for each run, in again after it), which may stop
it while idle (idle timeout, cap on live workers); the next run then starts a new one. It
returns values and raises typed errors; it decides nothing about retries.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from recurgent._worker import _pool
from recurgent._worker._env import host_paths as runtime_paths
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
from recurgent.errors import ExecutionTimeoutError, WorkerCrashError

__all__ = ["WorkerExited", "WorkerProcess", "WorkerSupervisor", "WorkerTimedOut"]

#: Extra time a run on a freshly started worker gets before the parent kills it (start-up).
STARTUP_ALLOWANCE_SECONDS = 10.0

ForwardHandler = Callable[[ForwardRequest], ForwardReply]


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

    @property
    def backend(self) -> str:
        """``"bwrap"``, ``"rlimits"`` or ``"none"``."""
        return self._backend

    @property
    def restarts(self) -> int:
        """Workers started after the first one (each after a kill)."""
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
        read_only = [*interpreter_paths(self._python), *self._host_paths]
        if self._env_dir is not None:
            read_only.append(str(self._env_dir))
        return bwrap_command(
            bwrap,
            command,
            read_only=read_only,
            scratch=scratch,
            network=network_allowed(self._isolation.network),
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
        """Start the worker now (so the first run is warm); returns its pid."""
        with self._lock:
            self._last_pid = self._ensure().pid
            self._checkin()
            return self._last_pid

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
    ) -> RunResult:
        """Run one request and return the worker's result.

        Raises:
            ExecutionTimeoutError: no result by ``timeout_seconds + grace_seconds``; the worker
                was killed.
            WorkerCrashError: the worker died or broke the protocol (message ends with its
                stderr tail); it was killed.
            DependencyActivationError: the worker could not be started.
        """
        if self._owner == threading.get_ident():
            # A forwarded call of the running program called back into this worker's agent:
            # the worker is waiting for that call, so the nested run gets a worker of its own.
            nested = self._sibling()
            try:
                return nested.run(
                    request, handler, timeout_seconds=timeout_seconds, grace_seconds=grace_seconds
                )
            finally:
                nested.shutdown()
        with self._lock:
            self._owner = threading.get_ident()
            try:
                return self._run_locked(request, handler, timeout_seconds, grace_seconds)
            finally:
                self._owner = None
                self._checkin()
                if self._close_after_run:
                    self._close_after_run = False
                    self._stop()

    def _sibling(self) -> WorkerSupervisor:
        return WorkerSupervisor(
            python=self._python,
            site_packages=self._site,
            env_dir=self._env_dir,
            isolation=self._isolation,
            host_paths=self._host_paths,
            test_hooks=self._test_hooks,
            pool=self._pool,
        )

    def _run_locked(
        self,
        request: RunRequest | RawExecRequest,
        handler: ForwardHandler,
        timeout_seconds: float,
        grace_seconds: float,
    ) -> RunResult:
        starts = self._starts
        worker = self._ensure()
        self._last_pid = worker.pid
        deadline = time.monotonic() + timeout_seconds + grace_seconds
        if self._starts != starts:
            # A worker started for this run still has to import the runtime (seconds on a busy
            # host) before the program's clock starts inside it; that start-up is not the
            # program's time. The worker's own deadline and its CPU rlimit still bound the run.
            deadline += STARTUP_ALLOWANCE_SECONDS
        try:
            worker.send(request)
            while True:
                message = worker.receive(deadline - time.monotonic())
                if isinstance(message, RunResult) and message.call_id == request.call_id:
                    return message
                if isinstance(message, ForwardRequest) and message.call_id == request.call_id:
                    worker.send(handler(message))
                    continue
                raise WorkerExited(f"worker sent an unexpected {type(message).__name__}")
        except WorkerTimedOut:
            self._discard()
            raise ExecutionTimeoutError(
                f"Execution timeout: the worker ran past {timeout_seconds:g}s and was killed"
            ) from None
        except WorkerExited as exited:
            tail = self._discard().strip()
            message = f"worker_crash: {exited}"
            if tail:
                message += f"; stderr tail:\n{tail}"
            raise WorkerCrashError(message) from None

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


def _release(held: list[WorkerProcess | None]) -> None:
    """Finalizer of a dropped supervisor: its worker goes too (killed now, reaped by its reader)."""
    worker = held[0]
    if worker is not None:
        held[0] = None
        worker.abandon()
