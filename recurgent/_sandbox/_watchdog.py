"""The process's one watchdog thread, which visits every running attempt (ADRs 0030, 0089, 0140).

A batch of cheap ticks alone is not enough: code that runs a thousand fast iterations and then
slow ones (each a long C call) would go a thousand slow iterations between clock reads. One
long-lived watchdog thread per process (:data:`WATCHDOG`) therefore empties the ticker of every
running attempt every few milliseconds so the next tick reads the clock, and it sleeps while no
attempt runs (ADR 0030).

Library code never ticks. Once an attempt measured by the real clock is past its deadline (or
its memory cap), the watchdog therefore also stops the attempt's thread itself: it delivers the
stop as an asynchronous exception into whatever Python frame runs, and again every period while
the thread is inside the attempt (ADR 0089, :mod:`recurgent._async_stop`). What one visit does
is the attempt's own :meth:`~recurgent._sandbox._limits.Ticker.watch`.

An attempt that ends after the thread's sleep between two visits has ended hands the thread its
turn: it waits, at most ``_HANDOFF_SECONDS``, for the thread's visit (ADR 0140).
"""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Protocol

from recurgent._forksafe import fork_safe_condition
from recurgent._sandbox._limits import Ticker, monotonic_clock

__all__ = ["WATCHDOG", "Watchdog", "Watched"]


class Watched(Protocol):
    """What the watchdog visits: a :class:`Ticker`, or a batch's current item (ADR 0124)."""

    def watch(self) -> None: ...  # pragma: no cover - a protocol


class _WatchdogService:
    """One long-lived daemon thread that nudges every running attempt's ticker.

    Attempts register while they run. With none registered for a second the thread sleeps on a
    condition, so an idle process pays nothing; a forked child, whose copy has no thread, starts
    its own. An attempt that ends after the thread's sleep has ended waits for its visit, which
    hands it the interpreter lock at once (ADR 0140).
    """

    def __init__(self, period: float, linger_polls: int = 50) -> None:
        self._period = period
        self._linger_polls = linger_polls
        # Unheld and with no waiters in a forked child (ADR 0139).
        self._condition = fork_safe_condition()
        self._tickers: dict[int, Watched] = {}
        self._thread: threading.Thread | None = None
        # True while the thread sleeps on the condition: only then does a new attempt wake it.
        self._waiting = False
        # When the thread's sleep between two visits ends (monotonic seconds; infinity while it
        # sleeps on the condition or does not run): an attempt ending later hands it its turn.
        # Written and compared on the real clock, never one freezegun replaces: a frozen clock
        # on one thread and a real one on the other made every period's end wait 5 ms (R18).
        self._due = math.inf
        # Set by an attempt that handed the thread its turn: the process is busy, though the
        # thread then finds no attempt registered (the ending one left first).
        self._handed_off = False

    def forget_after_fork(self) -> None:
        """In a forked child: nothing watched and no thread (the parent's does not exist here);
        the condition is made unheld by the fork-safe locks' hook (ADR 0139)."""
        self._tickers = {}
        self._thread = None
        self._waiting = False
        self._due = math.inf
        self._handed_off = False

    def register(self, ticker: Watched) -> bool:
        """Watch ``ticker``; False when no thread can be started (the attempt runs unwatched)."""
        with self._condition:
            self._tickers[id(ticker)] = ticker
            # A forked child's copy of the thread is not alive there (threading marks it
            # stopped after fork): the child starts its own, with no pid read per attempt.
            if self._thread is None or not self._thread.is_alive():
                thread = threading.Thread(
                    target=self._watch, name="recurgent-watchdog", daemon=True
                )
                try:
                    thread.start()
                except RuntimeError:
                    del self._tickers[id(ticker)]
                    return False
                self._thread = thread
                self._waiting = False
            elif self._waiting:
                self._condition.notify_all()
        return True

    def unregister(self, ticker: Watched) -> None:
        """Stop watching ``ticker``; first let the thread visit when its sleep has ended."""
        condition = self._condition
        with condition:
            self._tickers.pop(id(ticker), None)
            due = self._due
            if monotonic_clock() < due:
                return
            thread = self._thread
            if thread is None or not thread.is_alive():
                return
            # The thread is awake and waits for the interpreter lock, which this thread holds.
            # Each time this thread releases it (a system call: the memory reading, a log
            # line), the thread is woken and mostly loses the race to take it, so it waits on
            # through many calls, each then paying for its wake (ADR 0140). Waiting here hands
            # it the lock at once; it visits, sets its next due time and notifies.
            self._handed_off = True
            if not condition.wait_for(lambda: self._due != due, _HANDOFF_SECONDS):
                # No visit came (a thread held up elsewhere): the next attempts do not wait
                # for it again before one more period has passed, and those already waiting
                # for the same visit stop now, not each at the end of its own wait (R18).
                self._due = monotonic_clock() + self._period
                condition.notify_all()

    @property
    def watching(self) -> int:
        """How many attempts are registered."""
        with self._condition:
            return len(self._tickers)

    def _watch(self) -> None:
        idle = 0
        while True:
            idle = self._round(idle)
            time.sleep(self._period)

    def _round(self, idle: int) -> int:
        """One round of the thread: visit every running attempt and set the next due time;
        return how many rounds in a row found the process idle.

        After the last attempt the thread keeps polling for linger_polls rounds (one second)
        before it sleeps on the condition: back-to-back calls then never pay for waking it (a
        futex wake and a context switch per call), and an idle process still sleeps. A round
        an ending attempt handed over is not idle, though that attempt has left (ADR 0140).
        """
        condition = self._condition
        with condition:
            if self._tickers or self._handed_off:
                idle = 0
                self._handed_off = False
            elif idle < self._linger_polls:
                idle += 1
            else:
                self._waiting = True
                self._due = math.inf
                condition.notify_all()  # an attempt waiting for a visit waits no longer
                while not self._tickers:
                    condition.wait()
                self._waiting = False
                idle = 0
            tickers = list(self._tickers.values())
        for ticker in tickers:
            try:
                ticker.watch()
            except Exception:  # noqa: BLE001 - one attempt's failure must not end the watch
                continue
        with condition:
            self._due = monotonic_clock() + self._period
            condition.notify_all()  # the attempts that handed this thread its turn
        return idle


# The longest an ending attempt waits for the watchdog's visit it handed the turn to.
_HANDOFF_SECONDS = 0.001

WATCHDOG = _WatchdogService(period=0.02)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WATCHDOG.forget_after_fork)


class Watchdog:
    """Makes one attempt's next tick read the clock every 20 ms, while it runs.

    It registers the ticker with the process's single watchdog thread (:data:`WATCHDOG`)
    between :meth:`start` and :meth:`stop`; no thread is started per attempt.
    """

    def __init__(self, ticker: Ticker) -> None:
        self._ticker = ticker

    def start(self) -> None:
        """Start watching (a process that cannot start threads runs on without a watchdog)."""
        WATCHDOG.register(self._ticker)

    def stop(self) -> None:
        """Stop watching."""
        WATCHDOG.unregister(self._ticker)
