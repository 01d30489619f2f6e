"""Long-lived helper threads for provider requests: a bounded worker pool and one event loop.

The runtime enforces ``provider_timeout_seconds`` itself, so a provider request runs off the
calling thread (ADR 0030):

* A synchronous ``generate_program`` runs on a :class:`ProviderPool` worker: daemon threads,
  reused from request to request, at most :data:`MAX_WORKERS` of them. A provider whose request
  outlives its timeout is *stuck*: the caller gets its timeout on time, the worker stays with
  the request (a thread cannot be stopped), and later requests to that same provider wait in
  its own backlog instead of taking more workers. So a provider that hangs forever holds at
  most one worker, and every later request to it still times out on time.
* An ``async def generate_program`` runs as a task on one long-lived event loop thread
  (:class:`AsyncRunner`), from a plain script and from inside a running event loop (a Jupyter
  cell) alike. A timed-out coroutine is cancelled, so it holds no thread at all.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextvars
import os
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any

from recurgent._cancellation import CancelScope, current_scope
from recurgent._forksafe import fork_safe_condition, fork_safe_lock

__all__ = ["MAX_WORKERS", "AsyncRunner", "ProviderPool", "RequestTimedOut"]

#: Most worker threads the pool keeps; requests beyond wait for a free worker (and time out).
MAX_WORKERS = 16


class RequestTimedOut(Exception):
    """Internal: no reply within the timeout."""


class _Done:
    """A one-shot completion flag for one waiting caller: a lock held until :meth:`set`.

    ``threading.Event`` builds a Condition per job and a waiter lock per wait; one plain lock is
    about ten times cheaper, and every provider request of every call pays for one.
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()

    def set(self) -> None:
        if self._lock.locked():
            self._lock.release()

    def is_set(self) -> bool:
        return not self._lock.locked()

    def wait(self, timeout: float | None = None) -> bool:
        if self._lock.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
            self._lock.release()
            return True
        return False


class _Job:
    __slots__ = ("abandoned", "done", "error", "fn", "key", "reply", "started")

    def __init__(self, fn: Callable[[], object], key: int) -> None:
        self.fn = fn
        self.key = key
        self.done = _Done()
        self.reply: object = None
        self.error: BaseException | None = None
        self.started = False
        self.abandoned = False


class _Lane:
    """A provider's requests that outlived their timeout, and the requests waiting behind them."""

    __slots__ = ("backlog", "owner", "stuck")

    def __init__(self, owner: object) -> None:
        self.owner = owner  # keeps the provider alive, so its id is not reused
        self.stuck = 0
        self.backlog: collections.deque[_Job] = collections.deque()


#: How often a wait inside an awaited call looks at its cancellation (ADR 0096).
CANCEL_POLL_SECONDS = 0.02


def _wait(done: _Done, timeout: float | None, scope: CancelScope) -> bool:
    """``done.wait(timeout)`` that also returns (False) once ``scope`` is cancelled."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not scope.cancelled:
        left = CANCEL_POLL_SECONDS if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return done.is_set()
        if done.wait(min(left, CANCEL_POLL_SECONDS)):
            return True
    return done.is_set()


def _given_up(job: _Job) -> bool:
    # Set by the waiting caller while the job ran (a separate read, for the type checker).
    return job.abandoned


class ProviderPool:
    """Runs blocking provider requests on reused daemon threads, with a per-request timeout."""

    def __init__(self, max_workers: int = MAX_WORKERS) -> None:
        self._max = max_workers
        # Fork-safe (ADR 0139): a child forked while a worker held them reaches _after_fork.
        self._lock = fork_safe_lock()
        self._queue: collections.deque[_Job] = collections.deque()
        self._ready = fork_safe_condition(self._lock)
        self._workers = 0
        self._idle = 0
        self._lanes: dict[int, _Lane] = {}
        self._pid = os.getpid()

    @property
    def workers(self) -> int:
        """Worker threads alive now."""
        with self._lock:
            return self._workers

    def run(self, owner: object, fn: Callable[[], object], timeout: float | None) -> object:
        """``fn()`` on a worker; its reply, or its exception re-raised here.

        Inside an awaited call (a :class:`~recurgent._cancellation.CancelScope`), the wait also
        ends when the awaiting task is cancelled: the request is abandoned as a timed-out one
        is, and :class:`~recurgent._cancellation.CallCancelled` is raised (ADR 0096).

        Raises:
            RequestTimedOut: no reply within ``timeout`` seconds (``None``: no limit).
            CallCancelled: the awaited call was cancelled while waiting.
        """
        context = contextvars.copy_context()
        job = _Job(lambda: context.run(fn), id(owner))
        with self._lock:
            self._after_fork()
            lane = self._lanes.get(job.key)
            if lane is not None and lane.stuck:
                lane.backlog.append(job)
            else:
                self._dispatch(job)
        scope = current_scope()
        finished = job.done.wait(timeout) if scope is None else _wait(job.done, timeout, scope)
        if not finished:
            with self._lock:
                if not job.done.is_set():
                    job.abandoned = True
                    if job.started:
                        lane = self._lanes.get(job.key)
                        if lane is None:
                            lane = self._lanes[job.key] = _Lane(owner)
                        lane.stuck += 1
            if job.abandoned:
                if scope is not None and scope.cancelled:
                    raise scope.error()
                raise RequestTimedOut
        if job.error is not None:
            raise job.error
        return job.reply

    def _after_fork(self) -> None:
        # A forked child inherits the counters but none of the threads.
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._workers = self._idle = 0
            self._queue.clear()
            self._lanes.clear()

    def _dispatch(self, job: _Job) -> None:
        self._queue.append(job)
        # An idle worker that was notified counts as idle until it wakes and takes a job, so
        # compare with the jobs still queued: two jobs dispatched back to back with one idle
        # worker must start a second worker, or the second job waits behind the first (and
        # forever, when the first waits for the second).
        if self._idle < len(self._queue) and self._workers < self._max:
            thread = threading.Thread(target=self._work, name="recurgent-provider", daemon=True)
            self._workers += 1
            try:
                thread.start()
            except RuntimeError:
                self._workers -= 1
                raise
        else:
            self._ready.notify()

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._queue:
                    self._idle += 1
                    self._ready.wait()
                    self._idle -= 1
                job = self._queue.popleft()
                if job.abandoned:
                    continue  # its caller has given up before it started
                job.started = True
            try:
                job.reply = job.fn()
            except BaseException as error:  # noqa: BLE001 - handed back to the waiting caller
                job.error = error
            with self._lock:
                job.done.set()
                if _given_up(job):
                    self._release(job.key)

    def _release(self, key: int) -> None:
        lane = self._lanes.get(key)
        if lane is None:
            return
        lane.stuck -= 1
        if lane.stuck:
            return
        del self._lanes[key]
        for waiting in lane.backlog:
            if not waiting.abandoned:
                self._dispatch(waiting)


class AsyncRunner:
    """One event loop on a daemon thread, started on first use, running provider coroutines."""

    def __init__(self) -> None:
        self._lock = fork_safe_lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="recurgent-provider-loop", daemon=True
                )
                thread.start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, object], timeout: float | None) -> object:
        """Run ``coroutine`` on the helper loop; a timed-out one is cancelled.

        Inside an awaited call (``agent.aio``) it runs natively on the awaiting task's own loop
        instead, where the caller's async clients live, and a cancelled call cancels it
        (ADR 0096).

        Raises:
            RequestTimedOut: no result within ``timeout`` seconds.
            CallCancelled: the awaited call was cancelled.
        """
        scope = current_scope()
        if scope is not None and scope.loop is not None and scope.loop.is_running():
            return _on_awaiting_loop(coroutine, timeout, scope, scope.loop)
        loop = self._running_loop()
        context = contextvars.copy_context()
        future: concurrent.futures.Future[object] = concurrent.futures.Future()

        def start() -> None:
            if future.cancelled():
                coroutine.close()
                return
            task = loop.create_task(coroutine, context=context)

            def finished(done: asyncio.Task[object]) -> None:
                if future.done():
                    return
                if done.cancelled():
                    future.cancel()
                elif done.exception() is not None:
                    future.set_exception(done.exception())
                else:
                    future.set_result(done.result())

            task.add_done_callback(finished)
            future.add_done_callback(
                lambda _: loop.call_soon_threadsafe(task.cancel) if future.cancelled() else None
            )

        loop.call_soon_threadsafe(start)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise RequestTimedOut from None


def _on_awaiting_loop(
    coroutine: Coroutine[Any, Any, object],
    timeout: float | None,
    scope: CancelScope,
    loop: asyncio.AbstractEventLoop,
) -> object:
    """Run ``coroutine`` on the loop of the task awaiting the call; this thread waits for it."""
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    done = _Done()
    future.add_done_callback(lambda _: done.set())

    def cancel() -> None:
        future.cancel()

    with scope.hook(cancel):
        finished = _wait(done, timeout, scope)
    if not finished:
        future.cancel()
        if scope.cancelled:
            raise scope.error()
        raise RequestTimedOut
    if future.cancelled():
        raise scope.error() if scope.cancelled else RequestTimedOut()
    return future.result()
