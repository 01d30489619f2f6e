"""The process's one watchdog thread: it lingers, then sleeps; an ending attempt hands it its
turn; a forked child's copy starts afresh (ADRs 0030, 0136, 0139, 0140)."""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any

import pytest

from recurgent._sandbox import _watchdog
from recurgent._sandbox._watchdog import _WatchdogService
from specs.forking import report_of_a_child_forked_while_held

from .support import value_of


class _CountingTicker:
    """Stands in for a Ticker: counts the watchdog's nudges and signals each one."""

    def __init__(self) -> None:
        self.nudged = threading.Event()
        self.count = 0

    def watch(self) -> None:
        self.count += 1
        self.nudged.set()


class TestWatchdogLinger:
    """The watchdog thread polls for a while after the last attempt, then sleeps (ADR 0140)."""

    def test_it_sleeps_after_lingering_and_a_new_attempt_wakes_it(self) -> None:
        """After linger_polls idle periods it waits; registering again wakes it to nudge."""
        service = _WatchdogService(period=0.001, linger_polls=3)
        first = _CountingTicker()
        assert service.register(first)
        assert first.nudged.wait(5)
        service.unregister(first)
        deadline = time.monotonic() + 5
        while not service._waiting and time.monotonic() < deadline:
            time.sleep(0.005)
        assert service._waiting is True

        second = _CountingTicker()
        assert service.register(second)

        assert second.nudged.wait(5)
        assert service.watching == 1
        service.unregister(second)

    def test_an_attempt_during_the_linger_is_watched_without_a_wake(self) -> None:
        """Registered while the thread still polls, a ticker is nudged and nothing waits."""
        service = _WatchdogService(period=0.001, linger_polls=2_000)
        first, second = _CountingTicker(), _CountingTicker()
        assert service.register(first)
        assert first.nudged.wait(5)
        service.unregister(first)

        assert service.register(second)

        assert second.nudged.wait(5)
        assert service._waiting is False
        service.unregister(second)


class TestWatchdogHandoff:
    """An attempt that ends after the watchdog's sleep has ended lets it visit first (ADR 0140):
    the thread is then waiting for the interpreter lock, and waiting for it here hands it over
    instead of waking it at every system call of the calls that follow."""

    def test_an_attempt_ending_before_the_due_time_does_not_wait(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With the thread asleep until a later moment, unregistering waits for nothing."""
        service, ticker = _asleep_after_a_visit()
        waits = _Waits(service, monkeypatch)

        service.unregister(ticker)

        assert waits.timeouts == []
        assert service.watching == 0

    def test_an_attempt_ending_after_the_due_time_returns_once_the_thread_has_visited(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Past the due time, unregistering waits until the thread has visited and set its next
        due time; the visit comes (the wait returns true) and the due time moved on."""
        monkeypatch.setattr(_watchdog, "_HANDOFF_SECONDS", 5.0)
        service = _WatchdogService(period=0.001, linger_polls=10_000)
        ticker = _CountingTicker()
        assert service.register(ticker)
        assert ticker.nudged.wait(5)
        waits = _Waits(service, monkeypatch)
        with service._condition:
            service._due = past = time.monotonic() - 1.0

        service.unregister(ticker)

        assert waits.visits == [True]
        assert service._due > past + 1.0

    def test_a_visit_that_does_not_come_stops_the_waiting_for_a_period(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A thread held up elsewhere (here: asleep for 30 s while its due time says it is
        awake) costs one short wait; the next attempts do not wait for it again."""
        monkeypatch.setattr(_watchdog, "_HANDOFF_SECONDS", 0.01)
        service, first = _asleep_after_a_visit()
        second = _CountingTicker()
        waits = _Waits(service, monkeypatch)
        with service._condition:
            service._due = 0.0
        before = time.monotonic()

        service.unregister(first)
        assert service.register(second)
        service.unregister(second)

        assert waits.timeouts == [0.01]
        assert service._due >= before + 30.0

    def test_a_round_an_attempt_handed_over_is_not_idle(self) -> None:
        """The ending attempt leaves before the visit it hands over: that round finds nothing
        registered, yet counts as busy. Counted idle, fifty such rounds put the thread to sleep
        on its condition in the middle of back-to-back calls, and each call's registration then
        had to wake it."""
        service = _WatchdogService(period=30.0, linger_polls=5)
        service._handed_off = True

        after_hand_off = service._round(3)
        after_nothing = service._round(3)

        assert (after_hand_off, after_nothing, service._handed_off) == (0, 4, False)
        assert service._due > time.monotonic() + 29.0

    def test_an_attempt_that_hands_over_says_so(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Unregistering past the due time marks the hand-off before it waits."""
        monkeypatch.setattr(_watchdog, "_HANDOFF_SECONDS", 0.01)
        service, ticker = _asleep_after_a_visit()
        waits = _Waits(service, monkeypatch)
        with service._condition:
            service._due = 0.0

        service.unregister(ticker)

        assert waits.marked == [True]

    def test_without_a_live_thread_nothing_waits(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A service with no thread (a forked child's copy before its first attempt) never
        waits for a visit, whatever its due time says."""
        service = _WatchdogService(period=0.001)
        ticker = _CountingTicker()
        waits = _Waits(service, monkeypatch)
        with service._condition:
            service._due = 0.0
            service._tickers[id(ticker)] = ticker

        service.unregister(ticker)

        assert waits.timeouts == []
        assert service.watching == 0

    def test_a_forked_childs_copy_has_no_due_time(self) -> None:
        """After a fork the copy's thread does not exist: its due time is cleared with it."""
        service = _WatchdogService(period=0.001)
        with service._condition:
            service._due = 12.5
            service._handed_off = True

        service.forget_after_fork()

        assert (service._due, service._handed_off) == (math.inf, False)


def _asleep_after_a_visit() -> tuple[_WatchdogService, _CountingTicker]:
    """A service with one ticker registered, whose thread has visited it once and now sleeps
    for 30 s (its due time set)."""
    service = _WatchdogService(period=30.0, linger_polls=0)
    ticker = _CountingTicker()
    assert service.register(ticker)
    assert ticker.nudged.wait(5)
    wait_until(lambda: service._due != math.inf)
    return service, ticker


class _Waits:
    """The hand-off waits of one service: each wait's limit, whether the attempt had marked its
    hand-off when it began, and whether the visit came."""

    def __init__(self, service: _WatchdogService, monkeypatch: pytest.MonkeyPatch) -> None:
        self.timeouts: list[float | None] = []
        self.marked: list[bool] = []
        self.visits: list[bool] = []
        real_wait_for = service._condition.wait_for

        def recording_wait_for(predicate: Any, timeout: float | None = None) -> bool:
            self.timeouts.append(timeout)
            self.marked.append(service._handed_off)
            self.visits.append(real_wait_for(predicate, timeout))
            return self.visits[-1]

        monkeypatch.setattr(service._condition, "wait_for", recording_wait_for)


def wait_until(condition: Any, seconds: float = 5.0) -> None:
    """Poll ``condition`` until it holds (a thread's first visit sets what the specs read)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the watchdog thread did not get there"
        time.sleep(0.001)


class TestForkedChild:
    """A child forked while the parent's watchdog was busy runs its attempts (ADRs 0136, 0139)."""

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
    def test_a_child_forked_while_the_watchdog_lock_was_held_still_runs_attempts(
        self,
    ) -> None:
        """The parent's thread holds the watchdog's condition at the fork: the child (where
        no thread would ever release it) registers and unregisters on a fresh one, and its
        attempt gets the answer."""
        assert value_of("result = 0") == 0  # the watchdog exists in the parent
        from recurgent._sandbox._watchdog import WATCHDOG

        report = report_of_a_child_forked_while_held(
            lambda: WATCHDOG._condition, lambda: str(value_of("result = 41 + 1"))
        )

        assert report == "42"
