"""Red team R28: what a subverted worker can make the parent do.

A program that escaped the sandbox inside a worker owns the worker's stdout: every line of the
protocol, every forwarded call and every field of its answer. These specs play such a worker,
either as a small script speaking the line protocol (the parent's own ``WorkerSupervisor`` and
``WorkerProcess`` run it) or as crafted messages handed to the parent's ``ProcessExecutor`` and
its forwarded-call handler, and compare what the parent does with what the in-process sandbox
lets a program do.

Held: a 100 000- or million-digit integer on a line is refused by the parser in milliseconds,
``1e999`` arrives as ``inf`` (a program makes ``float('inf')`` in process too); a stale answer
under the previous run's call id is a ``worker_crash`` (ADR 0095); a line past 64 MiB is a
``worker_crash``; 100 MiB on stderr leave the parent a 64 KiB tail; a write to a handle's private
name is refused by ``Agent.__setattr__`` itself.

Broke, fixed:

* **The parent's writes had no deadline.** ``WorkerProcess.send`` wrote the request with a
  blocking write: a worker that stopped reading its input held the parent in ``write`` for good
  (the run's lock too, so every later call of the agent), once the line was larger than the
  pipe's 64 KiB (memory, code) or once 64 KiB of replies to forwarded calls were unread.
  Writes now wait for the pipe under the run's deadline: an ``ExecutionTimeoutError`` at
  ``timeout + grace``, the worker killed.
* **The parent queued a worker's lines without bound.** The reader thread put every line it
  read into an unbounded queue: a worker writing forwarded calls while the parent was busy
  grew the parent by 400 MB in 15 s. The queue now holds at most 64 MiB (one line always fits);
  past that the reader stops reading and the worker's writes block.
* **A worker that wrote its calls ahead was answered for ever.** A queued line is taken even at
  the deadline (``queue.get(timeout=0)``), so a worker that wrote forwarded calls without
  waiting for the replies (a thread draining them) was answered 691 734 times in 15 s and the
  run never ended. No forwarded call is answered past the run's deadline now.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from recurgent._worker._pool import WorkerPool
from recurgent._worker._process import MAX_LINE_BYTES, WorkerExited, WorkerProcess
from recurgent._worker._protocol import (
    ForwardReply,
    ForwardRequest,
    RawExecRequest,
    RunResult,
    parse_line,
)
from recurgent._worker._supervisor import WorkerSupervisor
from recurgent.errors import ExecutionTimeoutError, WorkerCrashError

# --- A worker played by a script ----------------------------------------------------------------

_PRELUDE = """\
import json, sys, threading, time
out = sys.stdout.buffer

def send(message):
    out.write(json.dumps(message).encode() + b"\\n")
    out.flush()

send({"ipc_version": 1, "kind": "ready"})
"""

# Reads nothing after saying it is ready.
DEAF = "time.sleep(600)\n"
# Takes the request, then writes forwarded calls without waiting for the replies, which a
# thread drains so the parent's writes never block.
AHEAD = """\
call = json.loads(sys.stdin.buffer.readline())["call_id"]

def drain():
    while sys.stdin.buffer.read(65536):
        pass

threading.Thread(target=drain, daemon=True).start()
number = 0
while True:
    number += 1
    send({"ipc_version": 1, "kind": "forward", "call_id": call, "forward_id": number,
          "op": "remember", "kwargs": {"k": number}})
"""
# Takes the request, then writes forwarded calls and reads no reply.
UNREAD = """\
call = json.loads(sys.stdin.buffer.readline())["call_id"]
for number in range(1, 100_000):
    send({"ipc_version": 1, "kind": "forward", "call_id": call, "forward_id": number,
          "op": "remember", "kwargs": {"k": number}})
time.sleep(600)
"""
# 200 lines of one MiB each, nobody asked (200 MiB if the parent kept them all).
FLOOD = """\
line = b'{"ipc_version":1,"kind":"ready","pad":"' + b"a" * (1 << 20) + b'"}\\n'
for _ in range(200):
    out.write(line)
    out.flush()
time.sleep(600)
"""
# 100 MiB on stderr, then an answer to the request.
STDERR = """\
call = json.loads(sys.stdin.buffer.readline())["call_id"]
chunk = b"e" * (1 << 20)
for _ in range(100):
    sys.stderr.buffer.write(chunk)
sys.stderr.buffer.write(b"\\nlast words")
sys.stderr.flush()
send({"ipc_version": 1, "kind": "result", "call_id": call, "status": "ok", "value": 1})
time.sleep(600)
"""
# Answers its first request, then writes a second answer under the same call id; its second
# request gets no answer of its own.
STALE = """\
call = json.loads(sys.stdin.buffer.readline())["call_id"]
answer = {"ipc_version": 1, "kind": "result", "call_id": call, "status": "ok", "value": 1}
send(answer)
time.sleep(0.2)
send(answer)
sys.stdin.buffer.readline()
time.sleep(600)
"""


def _script(tmp_path: Path, body: str) -> str:
    """A fake worker interpreter: the supervisor's ``-I -m recurgent._worker`` are ignored."""
    path = tmp_path / "fake-python"
    path.write_text(f"#!{sys.executable}\n{_PRELUDE}{body}")
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def pool() -> WorkerPool:
    return WorkerPool(idle_timeout_seconds=None, max_workers=None, reaper=False)


def _answer(_: ForwardRequest) -> ForwardReply:
    raise AssertionError("no forwarded call is expected")


def _remembered(request: ForwardRequest) -> ForwardReply:
    return ForwardReply(call_id=request.call_id, forward_id=request.forward_id, ok=True)


def _run_in_thread(
    supervisor: WorkerSupervisor, request: RawExecRequest, handler: Any, timeout: float
) -> tuple[bool, Any, float]:
    """Run ``request`` on a thread; (whether it ended within ``timeout``, its error, seconds).

    On the old code the run never ends: the caller kills the worker to free the thread.
    """
    found: dict[str, Any] = {}

    def go() -> None:
        started = time.monotonic()
        try:
            supervisor.run(request, handler, timeout_seconds=1.0, grace_seconds=0.5)
        except Exception as error:
            found["error"] = error
        found["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive(), found.get("error"), found.get("seconds", timeout)


def _kill(supervisor: WorkerSupervisor) -> None:
    worker = supervisor._worker
    if worker is not None:
        worker.kill()


def test_a_worker_that_stops_reading_cannot_hold_the_parent_in_a_write(
    tmp_path: Path, pool: WorkerPool
) -> None:
    """Payload: a worker that reads nothing after ``ready``, and a request of a million
    characters (memory or code past the pipe's 64 KiB). Before: ``send`` blocked in ``write``
    for good, under the run's lock (20 s and counting here). Now: ``ExecutionTimeoutError`` at
    the deadline plus the grace, the worker killed."""
    supervisor = WorkerSupervisor(python=_script(tmp_path, DEAF), pool=pool)
    request = RawExecRequest(call_id="r28-deaf", code="x" * 1_000_000)
    try:
        ended, error, seconds = _run_in_thread(supervisor, request, _answer, 20.0)
    finally:
        _kill(supervisor)

    assert ended
    assert isinstance(error, ExecutionTimeoutError)
    assert 1.4 < seconds < 5.0


def test_a_worker_that_reads_no_reply_cannot_hold_the_parent_in_a_write(
    tmp_path: Path, pool: WorkerPool
) -> None:
    """Payload: a worker that takes its request, then writes 100 000 forwarded ``remember``
    calls and reads no reply. Before: the parent answered about 450 of them, then blocked
    writing the next reply into the full pipe, for good. Now: ``ExecutionTimeoutError`` at the
    deadline plus the grace."""
    supervisor = WorkerSupervisor(python=_script(tmp_path, UNREAD), pool=pool)
    request = RawExecRequest(call_id="r28-unread", code="pass")
    try:
        ended, error, seconds = _run_in_thread(supervisor, request, _remembered, 20.0)
    finally:
        _kill(supervisor)

    assert ended
    assert isinstance(error, ExecutionTimeoutError)
    assert 1.4 < seconds < 5.0


def test_a_worker_that_writes_its_calls_ahead_is_stopped_at_its_deadline(
    tmp_path: Path, pool: WorkerPool
) -> None:
    """Payload: a worker that writes forwarded calls without waiting for their replies (a
    thread drains them, so no write of the parent blocks). Before: a queued line is taken even
    at the deadline, and the parent answered 691 734 calls in 15 s without end. Now: no call is
    answered past the deadline; ``ExecutionTimeoutError``."""
    answered = [0]

    def handler(request: ForwardRequest) -> ForwardReply:
        answered[0] += 1
        return _remembered(request)

    supervisor = WorkerSupervisor(python=_script(tmp_path, AHEAD), pool=pool)
    request = RawExecRequest(call_id="r28-ahead", code="pass")
    try:
        ended, error, seconds = _run_in_thread(supervisor, request, handler, 20.0)
    finally:
        _kill(supervisor)

    assert ended
    assert isinstance(error, ExecutionTimeoutError)
    assert 1.4 < seconds < 5.0


def _process(tmp_path: Path, body: str) -> WorkerProcess:
    return WorkerProcess(
        [_script(tmp_path, body)], environment={}, cwd=tmp_path, preexec=None, scratch=None
    )


def test_the_parent_holds_at_most_one_queue_of_a_workers_lines(tmp_path: Path) -> None:
    """Payload: 200 lines of one MiB each that nobody reads yet (a worker writing while the
    parent runs a forwarded call, or while it is idle). Before: the reader queued all 200 (200
    MiB; a flood of small forwarded calls grew the parent by 400 MB in 15 s). Now: at most 64
    MiB of lines wait, then the reader stops reading and the worker's writes block; a reader
    held so ends when the worker is killed."""
    worker = _process(tmp_path, FLOOD)
    try:
        worker.wait_ready(30.0)
        time.sleep(3.0)
        waiting = worker._lines.qsize()
    finally:
        worker.kill()

    assert waiting <= MAX_LINE_BYTES // (1 << 20) + 1
    assert not any(thread.is_alive() for thread in worker._threads)


def test_a_stderr_flood_leaves_a_bounded_tail(tmp_path: Path) -> None:
    """Held: 100 MiB on stderr before the answer; the parent keeps the last 64 KiB (the tail it
    reports is its last 2 000 characters) and still reads the answer."""
    worker = _process(tmp_path, STDERR)
    try:
        worker.wait_ready(30.0)
        worker.send(RawExecRequest(call_id="r28-err", code="pass"))
        answer = worker.receive(30.0)
        time.sleep(0.5)
        kept = worker._stderr_size
        tail = worker.stderr_tail()
    finally:
        worker.kill()

    assert isinstance(answer, RunResult) and answer.value == 1
    assert kept <= 64 * 1024 + 4096
    assert (len(tail), tail[-10:]) == (2000, "last words")


def test_a_stale_answer_is_no_answer_to_the_next_run(tmp_path: Path, pool: WorkerPool) -> None:
    """Held: a worker that writes its first run's answer twice; the second run reads the stale
    copy (the first run's call id) as a broken worker, never as its result."""
    supervisor = WorkerSupervisor(python=_script(tmp_path, STALE), pool=pool)
    try:
        first = supervisor.run(
            RawExecRequest(call_id="r28-one", code="pass"), _answer, timeout_seconds=5.0
        )
        time.sleep(0.5)
        with pytest.raises(WorkerCrashError, match="answered call 'r28-one'"):
            supervisor.run(
                RawExecRequest(call_id="r28-two", code="pass"), _answer, timeout_seconds=5.0
            )
    finally:
        _kill(supervisor)
    assert first.value == 1


def test_a_line_past_the_cap_is_a_broken_worker(tmp_path: Path) -> None:
    """Held: one line of 64 MiB and one byte is refused whole (``WorkerExited``)."""
    body = f"out.write(b'x' * {MAX_LINE_BYTES + 1} + b'\\n')\nout.flush()\ntime.sleep(600)\n"
    worker = _process(tmp_path, body)
    try:
        worker.wait_ready(30.0)
        with pytest.raises(WorkerExited, match="over"):
            worker.receive(30.0)
    finally:
        worker.kill()


# --- What a line holds --------------------------------------------------------------------------


@pytest.mark.parametrize("digits", [100_000, 1_000_000])
def test_a_long_integer_on_a_line_is_refused_fast(digits: int) -> None:
    """Held: a result of ``digits`` decimal digits is refused by the parser (a ``ValueError``,
    a broken worker) in well under a second, never converted."""
    line = b'{"ipc_version":1,"kind":"result","call_id":"x","status":"ok","value":'
    started = time.monotonic()
    with pytest.raises(ValueError):
        parse_line(line + b"7" * digits + b"}")
    assert time.monotonic() - started < 0.5


def test_an_overflowing_float_is_infinity_as_in_process() -> None:
    """Held: ``1e999`` is ``inf``, a value a program makes in process with ``float('inf')``."""
    line = b'{"ipc_version":1,"kind":"result","call_id":"x","status":"ok","value":1e999}'
    assert parse_line(line).value == float("inf")
