"""The parent side of a worker: one long-lived process per environment, killed and restarted on failure.

A :class:`WorkerProcess` owns one child started in its own process group: a reader thread turns
its protocol lines into a queue (so a wait has a real timeout even on a partial line) and a
drain thread keeps the last 64 KiB of its stderr. A :class:`WorkerSupervisor` runs requests on
it: it answers forwarded calls through a handler, kills the whole process group when the run
outlives its deadline or the child breaks the protocol, and starts a fresh child for the next
run. It returns values and raises typed errors; it decides nothing about retries.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

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
from recurgent._worker._protocol import (
    ForwardReply,
    ForwardRequest,
    RawExecRequest,
    RunRequest,
    RunResult,
    dump_line,
    parse_line,
)
from recurgent.errors import DependencyActivationError, ExecutionTimeoutError, WorkerCrashError

__all__ = ["WorkerExited", "WorkerProcess", "WorkerSupervisor", "WorkerTimedOut"]

#: Extra time a run on a freshly started worker gets before the parent kills it (start-up).
STARTUP_ALLOWANCE_SECONDS = 10.0

_STDERR_TAIL_BYTES = 64 * 1024
#: Largest protocol line accepted from a worker; a longer one is a protocol breach.
MAX_LINE_BYTES = 64 * 1024 * 1024
_EOF = object()
_TOO_LONG = object()
_LIVE: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()
# bubblewrap's --die-with-parent follows the *thread* that started it (PR_SET_PDEATHSIG): a
# worker started from a short-lived request thread would die with that thread. Every worker is
# therefore started from this one long-lived thread.
_SPAWNER = concurrent.futures.ThreadPoolExecutor(
    max_workers=1, thread_name_prefix="recurgent-spawn"
)


class WorkerExited(Exception):
    """The child ended or broke the protocol before answering."""


class WorkerTimedOut(Exception):
    """The child did not answer before the deadline."""


class WorkerProcess:
    """One worker child and its two reader threads.

    Args:
        command: argv of the child (already wrapped in bubblewrap when confined).
        environment: The child's complete environment.
        cwd: Its working directory.
        preexec: Applied in the child before exec (rlimits), or ``None``.
    """

    def __init__(
        self,
        command: list[str],
        *,
        environment: dict[str, str],
        cwd: Path,
        preexec: Callable[[], None] | None,
    ) -> None:
        self._lines: queue.Queue[Any] = queue.Queue()
        self._stderr: deque[bytes] = deque()
        self._stderr_size = 0
        self._stderr_lock = threading.Lock()
        try:
            self._process: subprocess.Popen[bytes] = _SPAWNER.submit(
                subprocess.Popen,
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=environment,
                start_new_session=True,
                preexec_fn=preexec,
                close_fds=True,
            ).result()
        except OSError as error:
            raise DependencyActivationError(
                f"worker could not be started ({command[0]}): {type(error).__name__}: {error}"
            ) from None
        self._threads = [
            threading.Thread(target=self._read_lines, name="recurgent-worker-out", daemon=True),
            threading.Thread(target=self._drain_stderr, name="recurgent-worker-err", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        _LIVE.add(self)

    @property
    def pid(self) -> int:
        """The child's process id (the process group id too)."""
        return self._process.pid

    def alive(self) -> bool:
        """True while the child runs."""
        return self._process.poll() is None

    def _read_lines(self) -> None:
        stream = self._process.stdout
        assert stream is not None
        while True:
            line = stream.readline(MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > MAX_LINE_BYTES:
                # A subverted worker must not make the parent buffer without bound.
                self._lines.put(_TOO_LONG)
                return
            self._lines.put(line)
        self._lines.put(_EOF)

    def _drain_stderr(self) -> None:
        stream = self._process.stderr
        assert stream is not None
        for chunk in iter(lambda: os.read(stream.fileno(), 4096), b""):
            with self._stderr_lock:
                self._stderr.append(chunk)
                self._stderr_size += len(chunk)
                while self._stderr_size > _STDERR_TAIL_BYTES and len(self._stderr) > 1:
                    self._stderr_size -= len(self._stderr.popleft())

    def stderr_tail(self, limit: int = 2000) -> str:
        """The last ``limit`` characters the child wrote to stderr (``print`` of packages too)."""
        with self._stderr_lock:
            text = b"".join(self._stderr).decode("utf-8", "replace")
        return text[-limit:]

    def send(self, message: Any) -> None:
        """Write one message line.

        Raises:
            WorkerExited: the pipe is closed.
        """
        stdin: IO[bytes] | None = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(dump_line(message))
            stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as error:
            raise WorkerExited(f"worker pipe failure: {error}") from None

    def receive(self, timeout: float) -> Any:
        """The next message, waiting at most ``timeout`` seconds.

        Raises:
            WorkerTimedOut: nothing arrived in time.
            WorkerExited: the child closed its output or wrote something unreadable.
        """
        try:
            line = self._lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            raise WorkerTimedOut(f"worker did not answer within {timeout:.2f}s") from None
        if line is _TOO_LONG:
            raise WorkerExited(f"worker sent a message over {MAX_LINE_BYTES} bytes")
        if line is _EOF:
            self._process.wait()
            raise WorkerExited(
                f"worker exited without response (exit code {self._process.returncode})"
            )
        try:
            return parse_line(line)
        except (ValueError, ValidationError) as error:
            raise WorkerExited(f"worker returned an invalid message: {str(error)[:200]}") from None

    def kill(self) -> None:
        """Kill the child's whole process group and reap it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=5)
        for thread in self._threads:
            thread.join(timeout=1)
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        _LIVE.discard(self)

    def shutdown(self) -> None:
        """Close stdin so the child ends by itself, then make sure the group is gone."""
        stdin = self._process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError):
                stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=1)
        self.kill()


@atexit.register
def _reap_workers() -> None:
    for worker in list(_LIVE):
        worker.kill()


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
    ) -> None:
        self._python = python
        self._site = site_packages
        self._env_dir = env_dir
        self._isolation = isolation or IsolationSettings()
        self._host_paths = runtime_paths() if host_paths is None else host_paths
        self._test_hooks = test_hooks
        self._backend = backend_for(self._isolation)
        self._worker: WorkerProcess | None = None
        self._scratch: Path | None = None
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

    def _ensure(self) -> WorkerProcess:
        if self._worker is not None and self._worker.alive():
            return self._worker
        if self._worker is not None:
            self._discard()
        scratch = Path(tempfile.mkdtemp(prefix="recurgent-worker-"))
        extra = {"RECURGENT_WORKER_TEST_HOOKS": "1"} if self._test_hooks else {}
        try:
            self._worker = WorkerProcess(
                self._command(scratch),
                environment=scrubbed_environment(scratch, extra=extra),
                cwd=scratch,
                preexec=limit_resources(self._isolation) if self._isolation.confined else None,
            )
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        self._scratch = scratch
        self._starts += 1
        return self._worker

    def start(self) -> int:
        """Start the worker now (so the first run is warm); returns its pid."""
        with self._lock:
            self._last_pid = self._ensure().pid
            return self._last_pid

    def _discard(self) -> str:
        tail = ""
        if self._worker is not None:
            self._worker.kill()
            tail = self._worker.stderr_tail()
            self._worker = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
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
        if self._worker is not None:
            self._worker.shutdown()
        self._discard()
