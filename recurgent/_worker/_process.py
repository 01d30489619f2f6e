"""``WorkerProcess``: one worker child, its reader threads, its scratch directory, and its end.

The child runs in its own process group. A reader thread turns its protocol lines into a queue
(so a wait has a real timeout even on a partial line) and reaps the child as soon as its output
closes (a worker that dies while idle never lingers as a zombie); the queue holds at most
:data:`MAX_QUEUED_BYTES` of lines nobody has taken, after which the reader stops reading and the
child's writes block (red team R28). A drain thread keeps the last 64 KiB of its stderr. Lines
to the child are written under the caller's deadline: a child that stops reading cannot hold
the parent in a write. Killing is idempotent, removes the scratch directory, and never touches a
process that a forked interpreter inherited from its parent. Every live child is killed and
reaped at interpreter exit.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import os
import queue
import select
import shutil
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from recurgent._worker._protocol import Ready, dump_line, parse_line
from recurgent.errors import DependencyActivationError

__all__ = [
    "MAX_LINE_BYTES",
    "MAX_QUEUED_BYTES",
    "WorkerExited",
    "WorkerProcess",
    "WorkerTimedOut",
    "live_workers",
]

_STDERR_TAIL_BYTES = 64 * 1024
#: Largest protocol line accepted from a worker; a longer one is a protocol breach.
MAX_LINE_BYTES = 64 * 1024 * 1024
#: Bytes of a worker's lines the parent holds before anyone takes them. An honest worker has
#: one line outstanding at a time (it waits for each reply); a subverted one wrote 400 MB of
#: forwarded calls in 15 s into an unbounded queue (red team R28). One line always fits.
MAX_QUEUED_BYTES = MAX_LINE_BYTES
# How much of a line is written to the child per system call, at most.
_WRITE_CHUNK = 1024 * 1024
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
        scratch: A directory that belongs to this child and is removed when it is killed.
    """

    def __init__(
        self,
        command: list[str],
        *,
        environment: dict[str, str],
        cwd: Path,
        preexec: Callable[[], None] | None,
        scratch: Path | None = None,
    ) -> None:
        self._lines: queue.Queue[Any] = queue.Queue()
        # Bytes of the lines in the queue; the reader waits on this condition while it is full.
        self._queued = 0
        self._room = threading.Condition()
        self._stderr: deque[bytes] = deque()
        self._stderr_size = 0
        self._stderr_lock = threading.Lock()
        self._end_lock = threading.Lock()
        self._ended = False
        self._abandoned = False
        self._reader_done = False
        self._ready = False
        self._scratch = scratch
        # A forked interpreter inherits this object but not the child: it must never signal it.
        self._parent_pid = os.getpid()
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

    @property
    def ended(self) -> bool:
        """True once :meth:`kill` ran (the child is gone or going)."""
        return self._ended

    def alive(self) -> bool:
        """True while the child runs and has not been killed."""
        return not self._ended and self._process.poll() is None

    def _read_lines(self) -> None:
        stream = self._process.stdout
        assert stream is not None
        try:
            while True:
                try:
                    line = stream.readline(MAX_LINE_BYTES + 1)
                except (OSError, ValueError):  # closed under us by a kill that gave up waiting
                    line = b""
                if not line:
                    break
                if len(line) > MAX_LINE_BYTES:
                    # A subverted worker must not make the parent buffer without bound.
                    self._lines.put(_TOO_LONG)
                    return
                if not self._wait_for_room(len(line)):
                    break  # killed while the queue was full: reaped below like any end
                self._lines.put(line)
            self._lines.put(_EOF)
            if os.getpid() == self._parent_pid:
                # The child closed its output: it is exiting. Reap it now, so a worker that
                # dies while idle (nobody waiting on it) does not stay a zombie until its next
                # use, and one killed by :meth:`abandon` is reaped off the collector's thread.
                self._process.wait()
        finally:
            # Nothing else reads this pipe: closing it here leaves no file for the collector.
            stream.close()
            with self._end_lock:
                self._reader_done = True
                abandoned = self._abandoned
            if abandoned:
                self._clean_up()

    def _wait_for_room(self, size: int) -> bool:
        """Count ``size`` more queued bytes once they fit; False if the child was killed first.

        While the queue is full the reader reads nothing more: the child's writes fill the pipe
        and block, so a worker cannot make the parent hold more than one queue of its lines.
        """
        with self._room:
            while self._queued and self._queued + size > MAX_QUEUED_BYTES:
                if self._ended:
                    return False
                self._room.wait(0.5)
            self._queued += size
            return True

    def _taken(self, line: Any) -> None:
        if type(line) is bytes:
            with self._room:
                self._queued -= len(line)
                self._room.notify_all()

    def _drain_stderr(self) -> None:
        stream = self._process.stderr
        assert stream is not None
        try:
            for chunk in iter(lambda: os.read(stream.fileno(), 4096), b""):
                with self._stderr_lock:
                    self._stderr.append(chunk)
                    self._stderr_size += len(chunk)
                    while self._stderr_size > _STDERR_TAIL_BYTES and len(self._stderr) > 1:
                        self._stderr_size -= len(self._stderr.popleft())
        except (OSError, ValueError):  # closed under us by a kill that gave up waiting
            pass
        finally:
            stream.close()

    def stderr_tail(self, limit: int = 2000) -> str:
        """The last ``limit`` characters the child wrote to stderr (``print`` of packages too)."""
        with self._stderr_lock:
            text = b"".join(self._stderr).decode("utf-8", "replace")
        return text[-limit:]

    def send(self, message: Any, timeout: float | None = None) -> None:
        """Write one message line, within ``timeout`` seconds (``None``: as long as it takes).

        The child reads its input only when it wants to: a subverted worker that stops reading
        held the parent in a blocking write past every deadline, the run's lock with it (red
        team R28). The line is written in chunks as the pipe takes them, never more than
        ``timeout`` seconds in all.

        Raises:
            WorkerExited: the pipe is closed.
            WorkerTimedOut: the child did not take the line in time.
        """
        stdin: IO[bytes] | None = self._process.stdin
        assert stdin is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            _write_all(stdin.fileno(), dump_line(message), deadline)
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
        self._taken(line)
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

    @property
    def ready(self) -> bool:
        """True once the child said it is ready (its first line)."""
        return self._ready

    def wait_ready(self, timeout: float) -> None:
        """Wait for the child's ready line (once; later calls return at once).

        Raises:
            WorkerTimedOut: it did not come within ``timeout`` seconds.
            WorkerExited: the child ended first, or its first line was something else.
        """
        if self._ready:
            return
        message = self.receive(timeout)
        if not isinstance(message, Ready):
            raise WorkerExited(f"worker sent a {type(message).__name__} before it was ready")
        self._ready = True

    def kill(self) -> None:
        """Kill the child's whole process group, reap it and remove its scratch directory.

        Idempotent: a second call does nothing (the group id could belong to someone else by
        then). In a forked interpreter it only forgets the child, which is the parent's.
        """
        with self._end_lock:
            if self._ended:
                return
            self._ended = True
        self._wake_reader()
        _LIVE.discard(self)
        if os.getpid() != self._parent_pid:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=5)
        current = threading.current_thread()
        for thread in self._threads:
            # A garbage-collection finalizer may run this on one of the reader threads.
            if thread is not current:
                thread.join(timeout=1)
        for stream in (self._process.stdin, self._process.stdout, self._process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def abandon(self) -> None:
        """Kill the child's group without waiting for anything (a garbage-collection finalizer).

        A finalizer that blocks would stall whichever thread the collector ran on; the reader
        thread reaps the child when its output closes and then removes the scratch directory.
        """
        with self._end_lock:
            if self._ended:
                return
            self._ended = self._abandoned = True
            reader_done = self._reader_done
        self._wake_reader()
        _LIVE.discard(self)
        if os.getpid() != self._parent_pid:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        if reader_done:
            # The reader ended before: the child is already reaped, only the files remain.
            self._clean_up()

    def _wake_reader(self) -> None:
        # A reader waiting for room in the queue sees the end at once, not at its next check.
        # Never blocks for long: the condition is held only to count bytes.
        with self._room:
            self._room.notify_all()

    def _clean_up(self) -> None:
        # stdout and stderr are closed by their reader threads, which are the only readers.
        stdin = self._process.stdin
        if stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def shutdown(self) -> None:
        """Close stdin so the child ends by itself, then make sure the group is gone."""
        if self._ended:
            return
        stdin = self._process.stdin
        if stdin is not None and os.getpid() == self._parent_pid:
            with contextlib.suppress(OSError):
                stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=1)
        self.kill()


def _write_all(fd: int, data: bytes, deadline: float | None) -> None:
    """Write ``data`` to the pipe ``fd``, waiting for room in it until ``deadline`` at most.

    Raises:
        WorkerTimedOut: the reader did not take it all by ``deadline``.
        OSError: the pipe broke.
    """
    if deadline is None:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view[:_WRITE_CHUNK]) :]
        return
    os.set_blocking(fd, False)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    view = memoryview(data)
    while view:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WorkerTimedOut(
                f"worker did not read its input ({len(view)} of {len(data)} bytes unwritten)"
            )
        if not poller.poll(remaining * 1000.0):
            continue
        try:
            written = os.write(fd, view[:_WRITE_CHUNK])
        except BlockingIOError:
            continue  # the pipe had less room than the chunk: wait for more
        view = view[written:]


def live_workers() -> list[WorkerProcess]:
    """Every worker child of this interpreter that has not been killed (any pool, or none)."""
    return [worker for worker in list(_LIVE) if not worker.ended]


@atexit.register
def _reap_workers() -> None:
    for worker in list(_LIVE):
        worker.kill()


def _forget_after_fork() -> None:
    # The children belong to the parent interpreter; the forked one must not kill them at exit.
    _LIVE.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
