"""``WorkerPool``: how many worker processes may live at once, and for how long they may sit idle.

Every supervisor checks its worker out of a pool before a run and back in after it. The pool
stops an idle worker once it has been idle longer than ``idle_timeout_seconds`` (one daemon
reaper thread per pool, alive only while the pool holds workers, never one thread per worker),
and keeps at most ``max_workers`` live: starting one more first stops the least recently used
idle worker. When every worker is busy the new one runs over the cap, and the pool trims back
to the cap as soon as a run ends (ADR 0061). A stopped worker is replaced by its supervisor at
its next run, which the log shows as a new ``worker_pid`` and one more ``worker_restarts``.

The pool decides nothing about retries and logs nothing; it only starts no thread and holds no
lock while a worker is being stopped.
"""

from __future__ import annotations

import math
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from recurgent._worker._process import WorkerProcess
from recurgent.errors import UsageError

__all__ = [
    "DEFAULT_IDLE_TIMEOUT_SECONDS",
    "DEFAULT_MAX_WORKERS",
    "WORKERS",
    "WorkerPool",
    "configure_workers",
]

#: A worker idle this long is stopped; the next run of its agent starts a new one.
DEFAULT_IDLE_TIMEOUT_SECONDS = 300.0
#: Live workers per interpreter; one more stops the least recently used idle one.
DEFAULT_MAX_WORKERS = 8


class _Unset:
    """Marks a ``configure`` setting that is left as it is."""


_UNSET = _Unset()


@dataclass(slots=True)
class _Entry:
    """What the pool knows of one worker."""

    busy: bool
    last_used: float


class WorkerPool:
    """The live workers of one interpreter (or of one spec), with their idle timeout and cap.

    Args:
        idle_timeout_seconds: Stop a worker idle longer than this; ``None``: never.
        max_workers: Live workers at most (over it only while every worker is busy); ``None``:
            no cap.
        clock: Monotonic seconds.
        reaper: Run the reaper thread; specs with a fake ``clock`` turn it off and call
            :meth:`reap_idle` themselves.
    """

    def __init__(
        self,
        *,
        idle_timeout_seconds: float | None = DEFAULT_IDLE_TIMEOUT_SECONDS,
        max_workers: int | None = DEFAULT_MAX_WORKERS,
        clock: Callable[[], float] = time.monotonic,
        reaper: bool = True,
    ) -> None:
        self._use_reaper = reaper
        self._idle = _checked_timeout(idle_timeout_seconds)
        self._max = _checked_cap(max_workers)
        self._clock = clock
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._entries: dict[WorkerProcess, _Entry] = {}
        self._starting = 0
        self._reaper: threading.Thread | None = None
        self._reaper_pid = 0
        # True while the reaper sleeps with no expiry in sight (no idle worker): only then does
        # a check-in need to wake it, since a worker idle from now expires after any other.
        self._reaper_unbounded = False
        _POOLS.add(self)

    @property
    def idle_timeout_seconds(self) -> float | None:
        """The idle timeout in force."""
        return self._idle

    @property
    def max_workers(self) -> int | None:
        """The cap in force."""
        return self._max

    def configure(
        self,
        *,
        idle_timeout_seconds: float | _Unset | None = _UNSET,
        max_workers: int | _Unset | None = _UNSET,
    ) -> None:
        """Change the idle timeout or the cap; workers already over a new cap stop when idle.

        Raises:
            UsageError: a negative, zero or non-numeric setting.
        """
        idle = self._idle if isinstance(idle_timeout_seconds, _Unset) else idle_timeout_seconds
        cap = self._max if isinstance(max_workers, _Unset) else max_workers
        idle, cap = _checked_timeout(idle), _checked_cap(cap)
        with self._lock:
            self._idle, self._max = idle, cap
            victims = self._over_cap_locked()
            self._wake.notify_all()
        _stop(victims)

    # -- the supervisor's side

    def checkout(self, worker: WorkerProcess) -> bool:
        """Mark ``worker`` busy for a run; ``False`` when the pool stopped it (start a new one)."""
        with self._lock:
            entry = self._entries.get(worker)
            if entry is None or not worker.alive():
                self._entries.pop(worker, None)
                return False
            entry.busy = True
            return True

    def reserve(self) -> None:
        """Make room for one worker about to start: stop least recently used idle ones."""
        with self._lock:
            self._starting += 1
            victims = self._over_cap_locked()
        _stop(victims)

    def admit(self, worker: WorkerProcess | None) -> None:
        """Register a worker started after :meth:`reserve` (busy), or ``None`` if it failed."""
        with self._lock:
            self._starting = max(0, self._starting - 1)
            if worker is not None:
                self._entries[worker] = _Entry(busy=True, last_used=self._clock())
                self._ensure_reaper_locked()

    def checkin(self, worker: WorkerProcess) -> None:
        """The run ended: ``worker`` is idle from now; trim back to the cap if over it."""
        with self._lock:
            entry = self._entries.get(worker)
            if entry is None:
                return
            entry.busy = False
            entry.last_used = self._clock()
            victims = self._over_cap_locked()
            if self._reaper_unbounded:
                self._wake.notify_all()
        _stop(victims)

    def forget(self, worker: WorkerProcess) -> None:
        """Drop a worker its supervisor killed (deadline, crash, shutdown)."""
        with self._lock:
            self._entries.pop(worker, None)

    # -- what the pool does by itself

    def reap_idle(self) -> int:
        """Stop every worker idle past the timeout now; returns how many were stopped."""
        with self._lock:
            victims = self._expired_locked(self._clock())
        _stop(victims)
        return len(victims)

    def live(self) -> int:
        """Workers of this pool that have not been stopped (busy or idle)."""
        with self._lock:
            return sum(1 for worker in self._entries if not worker.ended)

    def close(self) -> None:
        """Stop every worker of the pool (specs; the interpreter's exit kills them too)."""
        with self._lock:
            victims = list(self._entries)
            self._entries.clear()
            self._wake.notify_all()
        _stop(victims)

    def _prune_locked(self) -> None:
        for worker in [worker for worker in self._entries if worker.ended]:
            del self._entries[worker]

    def _over_cap_locked(self) -> list[WorkerProcess]:
        """Idle workers to stop, least recently used first, so live and starting fit the cap."""
        self._prune_locked()
        if self._max is None:
            return []
        excess = len(self._entries) + self._starting - self._max
        if excess <= 0:
            return []
        idle = sorted(
            (entry.last_used, id(worker), worker)
            for worker, entry in self._entries.items()
            if not entry.busy
        )
        victims = [worker for _, _, worker in idle[:excess]]
        for worker in victims:
            # Removed before it is stopped: a checkout from now on finds it gone.
            del self._entries[worker]
        return victims

    def _expired_locked(self, now: float) -> list[WorkerProcess]:
        self._prune_locked()
        if self._idle is None:
            return []
        victims = [
            worker
            for worker, entry in self._entries.items()
            if not entry.busy and now - entry.last_used >= self._idle
        ]
        for worker in victims:
            del self._entries[worker]
        return victims

    def _next_expiry_locked(self) -> float | None:
        if self._idle is None:
            return None
        idle = [entry.last_used for entry in self._entries.values() if not entry.busy]
        return min(idle) + self._idle if idle else None

    def _ensure_reaper_locked(self) -> None:
        if not self._use_reaper:
            return
        running = self._reaper is not None and self._reaper.is_alive()
        if running and self._reaper_pid == os.getpid():
            return
        # One daemon thread per pool, and only while it holds workers (again after a fork).
        self._reaper = threading.Thread(
            target=_reap_forever, args=(weakref.ref(self),), name="recurgent-worker-reaper"
        )
        self._reaper.daemon = True
        self._reaper_pid = os.getpid()
        self._reaper.start()

    def _reaper_step(self) -> bool:
        """Wait for the next expiry and stop what expired; ``False`` once the pool is empty."""
        with self._lock:
            self._prune_locked()
            if not self._entries:
                self._reaper = None
                return False
            now = self._clock()
            victims = self._expired_locked(now)
            if not victims:
                expiry = self._next_expiry_locked()
                # The clock may be a spec's fake one: never sleep long on its word alone.
                wait = None if expiry is None else min(max(expiry - now, 0.0), 60.0)
                self._reaper_unbounded = wait is None
                self._wake.wait(wait)
                self._reaper_unbounded = False
                return True
        _stop(victims)
        return True

    def _after_fork(self) -> None:
        # The forked interpreter has none of the parent's children and none of its threads;
        # a lock some other thread held at fork time would stay held forever.
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._entries = {}
        self._starting = 0
        self._reaper = None
        self._reaper_unbounded = False


def _reap_forever(pool_ref: weakref.ref[WorkerPool]) -> None:
    while True:
        pool = pool_ref()
        if pool is None or not pool._reaper_step():
            return
        del pool


def _stop(workers: list[WorkerProcess]) -> None:
    for worker in workers:
        # An idle worker holds nothing to flush: killing it costs a few milliseconds, where
        # closing its stdin and waiting for the interpreter to finalize costs a hundred or more,
        # paid by the call whose start made room.
        worker.kill()


def _checked_timeout(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"idle_timeout_seconds must be a positive number or None, not {value!r}")
    if value <= 0:
        raise UsageError(f"idle_timeout_seconds must be positive, not {value!r}")
    return float(value)


def _checked_cap(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"max_workers must be an integer of at least 1 or None, not {value!r}")
    return value


_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


def _pools_after_fork() -> None:
    for pool in list(_POOLS):
        pool._after_fork()


os.register_at_fork(after_in_child=_pools_after_fork)

#: The interpreter's pool: every worker a supervisor starts belongs to it unless told otherwise.
WORKERS = WorkerPool()


def configure_workers(
    *,
    idle_timeout_seconds: float | _Unset | None = _UNSET,
    max_workers: int | _Unset | None = _UNSET,
) -> None:
    """Set this interpreter's worker idle timeout and cap (defaults 300 s and 8).

    ``None`` turns either off. Affects workers already running: an idle one past a shorter
    timeout is stopped by the reaper, and idle ones over a smaller cap are stopped at once.

    Raises:
        UsageError: a setting that is not a positive number (or integer, for the cap).
    """
    WORKERS.configure(idle_timeout_seconds=idle_timeout_seconds, max_workers=max_workers)
