"""Hard limits: the deadline stops runaway code from any thread, sizes, output and calls are capped."""

from __future__ import annotations

import math
import os
import threading
import time
from typing import Any

import freezegun
import pytest

from recurgent import Agent
from recurgent._sandbox import ExecutionResult, SandboxLimits, _limits
from recurgent._sandbox._limits import MemoryMeter, _WatchdogService
from recurgent.errors import ExecutionTimeoutError, ResourceLimitError, UsageError
from recurgent.testing import ScriptedProvider
from specs.forking import report_of_a_child_forked_while_held

from .support import FakeClock, Host, execute, value_of

RUNAWAYS = {
    "while-true": "while True:\n    pass",
    "deep-recursion": (
        "def dive(n):\n"
        "    try:\n"
        "        return dive(n + 1)\n"
        "    except RecursionError:\n"
        "        return dive(0)\n"
        "dive(0)"
    ),
    "infinite-generator": (
        "def numbers():\n    n = 0\n    while True:\n        yield n\n        n += 1\n"
        "for value in numbers():\n    pass"
    ),
    "swallowing-loop": (
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n"
        "        pass"
    ),
    "exponential-lambda": "f = lambda n: n and (f(n - 1), f(n - 1))\nf(60)",
    "method-of-generated-class": (
        "class Spinner:\n    def spin(self):\n        while True:\n            pass\nSpinner().spin()"
    ),
}


def _new_threads(before: set[threading.Thread]) -> list[str]:
    """Names of the threads alive now that were not alive at ``before`` (a spec's own threads
    count; threads of earlier specs that end meanwhile do not)."""
    return sorted(thread.name for thread in threading.enumerate() if thread not in before)


def _timed(source: str, **options: Any) -> tuple[ExecutionResult, float]:
    """The result and the processor time it took: every runaway here spins the processor, so a
    missed deadline shows as processor time, and a loaded machine cannot fail the bound."""
    started = time.process_time()
    result = execute(source, **options)
    return result, time.process_time() - started


class TestDeadline:
    """Runaway code ends in ExecutionTimeoutError (error_type ``timeout``)."""

    @pytest.mark.parametrize("source", RUNAWAYS.values(), ids=RUNAWAYS.keys())
    def test_runaway_stops_under_a_fake_clock(self, source: str) -> None:
        """Each runaway stops with a timeout as soon as the injected clock passes the deadline."""
        clock = FakeClock(step=0.05)

        result = execute(source, limits=SandboxLimits(timeout_seconds=1.0), clock=clock)

        assert (type(result.error), result.error.error_type if result.error else None) == (
            ExecutionTimeoutError,
            "timeout",
        )
        assert clock.now - 1000.0 <= 1.0 + 0.5

    def test_real_clock_deadline_is_met_within_half_a_second(self) -> None:
        """With the real clock and a 1 s deadline, ``while True: pass`` stops within 1.5 s of
        processor time."""
        result, elapsed = _timed("while True:\n    pass", limits=SandboxLimits(timeout_seconds=1.0))

        assert (result.error.error_type if result.error else None, elapsed <= 1.5) == (
            "timeout",
            True,
        )

    def test_slow_iterations_after_fast_ones_still_stop(self) -> None:
        """A loop that turns slow after thousands of fast iterations stops by the deadline."""
        source = (
            "big = list(range(100000))\n"
            "for i in range(10**6):\n"
            "    if i > 20000:\n"
            "        sorted(big, reverse=True)"
        )

        result, elapsed = _timed(source, limits=SandboxLimits(timeout_seconds=1.0))

        assert (result.error.error_type if result.error else None, elapsed <= 1.5) == (
            "timeout",
            True,
        )

    def test_a_worker_thread_is_stopped_and_no_thread_remains(self) -> None:
        """Run in a non-main thread, a runaway stops by deadline + 0.5 s and leaves no thread."""
        value_of("result = 1")  # the process's one watchdog thread exists from here on (ADR 0030)
        before = set(threading.enumerate())
        outcome: dict[str, Any] = {}

        def work() -> None:
            outcome["result"], outcome["elapsed"] = _timed(
                RUNAWAYS["swallowing-loop"], limits=SandboxLimits(timeout_seconds=1.0)
            )

        worker = threading.Thread(target=work)
        worker.start()
        worker.join(timeout=10)

        assert (
            worker.is_alive(),
            outcome["result"].error.error_type,
            outcome["elapsed"] <= 1.5,
            _new_threads(before),
        ) == (False, "timeout", True, [])

    def test_no_thread_outlives_an_attempt(self) -> None:
        """No thread per attempt: after the first, attempts start no thread (ADR 0030)."""
        value_of("result = 1")  # starts the process's one watchdog thread, if not yet running
        before = set(threading.enumerate())

        value_of("result = 1")
        execute(
            "while True:\n    pass", limits=SandboxLimits(timeout_seconds=1.0), clock=FakeClock()
        )

        assert _new_threads(before) == []

    def test_frozen_time_does_not_hang_a_runaway(self) -> None:
        """Under freezegun the default clock still advances, so the deadline still fires."""
        with freezegun.freeze_time("2030-01-01"):
            result, _ = _timed("while True:\n    pass", limits=SandboxLimits(timeout_seconds=1.0))

        assert (result.error.error_type if result.error else None) == "timeout"

    def test_comprehension_steps_tick(self) -> None:
        """A comprehension doing slow C work per item stops at the deadline."""
        source = "result = [sorted(range(2000)) for _ in range(10**7)]"

        result = execute(source, limits=SandboxLimits(timeout_seconds=1.0), clock=FakeClock())

        assert (result.error.error_type if result.error else None) == "timeout"


class TestDeadlineThroughAgent:
    """The ``execution_timeout_seconds`` option bounds each attempt of an agent."""

    def test_timeout_outcome_and_agent_stays_usable(self) -> None:
        """A runaway call gives a ``timeout`` Outcome within 1.5 s of processor time; the next
        call succeeds."""
        provider = ScriptedProvider(
            {"spin": "while True:\n    pass", "add": "result = args[0] + 1"}
        )
        agent = Agent("tester", provider=provider, log=False, execution_timeout_seconds=1)
        agent.add(0)  # the long-lived helper threads exist from the first call on (ADR 0030)
        before = set(threading.enumerate())

        started = time.process_time()  # processor time: the machine may be shared
        spun = agent.spin()
        elapsed = time.process_time() - started
        added = agent.add(1)

        assert (spun.error_type, spun.retriable, elapsed <= 1.5, added.value) == (
            "timeout",
            True,
            True,
            2,
        )
        assert _new_threads(before) == []

    @pytest.mark.parametrize("seconds", [0, 0.5, 601, "30"])
    def test_out_of_range_timeouts_are_refused_at_construction(self, seconds: Any) -> None:
        """``execution_timeout_seconds`` outside 1..600 raises UsageError when the agent is built."""
        with pytest.raises(UsageError, match="execution_timeout_seconds"):
            Agent("tester", log=False, execution_timeout_seconds=seconds)


class TestSizeCaps:
    """One oversized operation is a ResourceLimitError (``resource_limit``), not a MemoryError."""

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            ("'a' * 10**10", "sequence repetition would create 10000000000 items"),
            ("[0] * 10**10", "sequence repetition would create 10000000000 items"),
            ("2 ** 10**10", "exponentiation would create a number of about 20000000000 bits"),
            ("1 << 10**10", "left shift would create a number of about 10000000001 bits"),
            ("pow(10, 10**8)", "exponentiation would create a number of about 400000000 bits"),
            ("range(10**12)", "range() would create 1000000000000 items"),
            ("'x'.ljust(10**10)", "str.ljust would create 10000000000 items"),
            ("'{:>10000000000}'.format(1)", "format width 10000000000 exceeds"),
            ("bytes(10**10)", "bytes() would create 10000000000 items"),
        ],
    )
    def test_breach_is_a_resource_limit(self, source: str, message: str) -> None:
        """The breach names the operation and the size it would have built."""
        result = execute(f"result = {source}")

        assert (type(result.error), message in str(result.error)) == (ResourceLimitError, True)

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "class S(str):\n    def twice(self, n):\n        return super().__mul__(n)\n"
                "result = S('ab').twice(10**8)",
                "would create 200000000 items",
            ),
            (
                "class L(list):\n    def times(self, n):\n        return super().__mul__(n)\n"
                "result = L([0]).times(10**9)",
                "would create 1000000000 items",
            ),
            (
                "import math\nclass N(int):\n    def __gt__(self, other):\n        return False\n"
                "result = math.factorial(N(30000))",
                "math.factorial(30000) exceeds the sandbox limit of 20000",
            ),
            (
                "import textwrap\nclass S(str):\n    def __len__(self):\n        return 1\n"
                "result = textwrap.indent('a\\n' * 3000, S('x' * 5000))",
                "textwrap.indent() would create",
            ),
        ],
    )
    def test_subclasses_cannot_slip_past_a_cap(self, source: str, message: str) -> None:
        """super() dunders and int/str subclasses that lie about their size still hit the cap."""
        result = execute(source)

        assert (type(result.error), message in str(result.error)) == (ResourceLimitError, True)

    def test_memory_growth_stops_the_attempt(self) -> None:
        """A loop that keeps doubling a string stops once the process has grown past the cap."""
        result = execute(
            "s = 'a' * 1000\nwhile True:\n    s = s + s",
            limits=SandboxLimits(timeout_seconds=30.0, max_memory_bytes=64 * 2**20),
        )

        assert (type(result.error), str(result.error)) == (
            ResourceLimitError,
            "Resource limit in tester.run: generated code grew the process by more than 64 MiB",
        )

    def test_values_within_the_caps_are_built(self) -> None:
        """Large but allowed values are built normally."""
        assert value_of("result = [len('a' * 10**6), 2 ** 1000 > 0, len(range(10**6))]") == [
            10**6,
            True,
            10**6,
        ]


class TestOutputCapture:
    """``print`` is captured per attempt, capped at 64 KiB, and never reaches host stdout."""

    def test_print_is_captured_not_written(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Printed text lands in ``stdout`` of the result and nowhere else."""
        result = execute("print('hello', 42, sep='-')\nprint('bye', end='!')")

        assert (result.stdout, capsys.readouterr()) == ("hello-42\nbye!", ("", ""))

    def test_output_is_capped_with_a_marker(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Output beyond 64 KiB is dropped after a truncation marker."""
        result = execute("for i in range(100000):\n    print('x' * 99)")

        assert (
            len(result.stdout.encode()) <= 64 * 1024 + 64,
            result.stdout.endswith("\n[output truncated at 64 KiB]\n"),
            result.stdout.startswith("x" * 99 + "\n"),
            capsys.readouterr().out,
        ) == (True, True, True, "")

    def test_each_attempt_has_its_own_output(self) -> None:
        """A new sandbox starts with empty output."""
        execute("print('first')")

        assert execute("x = 1").stdout == ""


class TestForwardedCallBudget:
    """More than ``max_forwarded_calls`` forwarded calls in one attempt is a resource limit."""

    def test_calls_up_to_the_budget_succeed(self) -> None:
        """Exactly the budget's number of calls is fine."""
        host = Host()

        result = execute(
            "for i in range(3):\n    remember(n=i)",
            host=host,
            limits=SandboxLimits(max_forwarded_calls=3),
        )

        assert (result.error, result.forwarded_calls, host.memory) == (None, 3, {"n": 2})

    def test_one_call_over_the_budget_is_a_resource_limit(self) -> None:
        """The call after the budget raises ResourceLimitError naming the budget."""
        host = Host()

        result = execute(
            "h = delegate('helper')\nfor i in range(10):\n    h.work(i)",
            host=host,
            limits=SandboxLimits(max_forwarded_calls=4),
        )

        assert (
            type(result.error),
            "more than 4 forwarded calls" in str(result.error),
            len(host.children["helper"].calls),
        ) == (ResourceLimitError, True, 3)


class TestMemoryMeter:
    """The resident-memory meter shares one /proc/self/statm descriptor per process (ADR 0063)."""

    @pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
    def test_meters_share_one_descriptor_and_attempts_open_none(self) -> None:
        """Two meters read the same descriptor; 20 attempts leave the open-descriptor count as is."""
        first, second = MemoryMeter(), MemoryMeter()
        value_of("result = 1")
        before = len(os.listdir("/proc/self/fd"))

        for _ in range(20):
            assert value_of("result = [1] * 10") == [1] * 10

        assert first._fd is not None
        assert first._fd == second._fd
        assert len(os.listdir("/proc/self/fd")) == before

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
    def test_a_forked_child_reads_its_own_process(self) -> None:
        """After fork the child's meter reads the child's statm, not the parent's (inherited) one."""
        assert MemoryMeter()._fd is not None
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report which file its meter reads, then leave at once
            meter = MemoryMeter()
            target = os.readlink(f"/proc/self/fd/{meter._fd}") if meter._fd is not None else ""
            os.write(write_end, target.encode())
            os._exit(0)
        os.close(write_end)
        report = os.read(read_end, 4096).decode()
        os.close(read_end)
        os.waitpid(pid, 0)

        assert report == f"/proc/{pid}/statm"


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
        assert service.register(first)  # type: ignore[arg-type]
        assert first.nudged.wait(5)
        service.unregister(first)  # type: ignore[arg-type]
        deadline = time.monotonic() + 5
        while not service._waiting and time.monotonic() < deadline:
            time.sleep(0.005)
        assert service._waiting is True

        second = _CountingTicker()
        assert service.register(second)  # type: ignore[arg-type]

        assert second.nudged.wait(5)
        assert service.watching == 1
        service.unregister(second)  # type: ignore[arg-type]

    def test_an_attempt_during_the_linger_is_watched_without_a_wake(self) -> None:
        """Registered while the thread still polls, a ticker is nudged and nothing waits."""
        service = _WatchdogService(period=0.001, linger_polls=2_000)
        first, second = _CountingTicker(), _CountingTicker()
        assert service.register(first)  # type: ignore[arg-type]
        assert first.nudged.wait(5)
        service.unregister(first)  # type: ignore[arg-type]

        assert service.register(second)  # type: ignore[arg-type]

        assert second.nudged.wait(5)
        assert service._waiting is False
        service.unregister(second)  # type: ignore[arg-type]


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

        service.unregister(ticker)  # type: ignore[arg-type]

        assert waits.timeouts == []
        assert service.watching == 0

    def test_an_attempt_ending_after_the_due_time_returns_once_the_thread_has_visited(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Past the due time, unregistering waits until the thread has visited and set its next
        due time; the visit comes (the wait returns true) and the due time moved on."""
        monkeypatch.setattr(_limits, "_HANDOFF_SECONDS", 5.0)
        service = _WatchdogService(period=0.001, linger_polls=10_000)
        ticker = _CountingTicker()
        assert service.register(ticker)  # type: ignore[arg-type]
        assert ticker.nudged.wait(5)
        waits = _Waits(service, monkeypatch)
        with service._condition:
            service._due = past = time.monotonic() - 1.0

        service.unregister(ticker)  # type: ignore[arg-type]

        assert waits.visits == [True]
        assert service._due > past + 1.0

    def test_a_visit_that_does_not_come_stops_the_waiting_for_a_period(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A thread held up elsewhere (here: asleep for 30 s while its due time says it is
        awake) costs one short wait; the next attempts do not wait for it again."""
        monkeypatch.setattr(_limits, "_HANDOFF_SECONDS", 0.01)
        service, first = _asleep_after_a_visit()
        second = _CountingTicker()
        waits = _Waits(service, monkeypatch)
        with service._condition:
            service._due = 0.0
        before = time.monotonic()

        service.unregister(first)  # type: ignore[arg-type]
        assert service.register(second)  # type: ignore[arg-type]
        service.unregister(second)  # type: ignore[arg-type]

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
        monkeypatch.setattr(_limits, "_HANDOFF_SECONDS", 0.01)
        service, ticker = _asleep_after_a_visit()
        waits = _Waits(service, monkeypatch)
        with service._condition:
            service._due = 0.0

        service.unregister(ticker)  # type: ignore[arg-type]

        assert waits.marked == [True]

    def test_without_a_live_thread_nothing_waits(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A service with no thread (a forked child's copy before its first attempt) never
        waits for a visit, whatever its due time says."""
        service = _WatchdogService(period=0.001)
        ticker = _CountingTicker()
        waits = _Waits(service, monkeypatch)
        with service._condition:
            service._due = 0.0
            service._tickers[id(ticker)] = ticker  # type: ignore[assignment]

        service.unregister(ticker)  # type: ignore[arg-type]

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
    assert service.register(ticker)  # type: ignore[arg-type]
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


class TestNoPidPerAttempt:
    """An attempt reads no pid (ADR 0136): a ``getpid`` is a system call each time, and the
    meter and the watchdog learn of a fork from the at-fork hooks instead."""

    def test_an_attempt_makes_no_getpid_call(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Two attempts in a row (the second with the meter's descriptor and the watchdog's
        thread already there) call ``os.getpid`` zero times."""
        assert value_of("result = 1") == 1  # opens statm, starts the watchdog
        real_getpid = os.getpid
        calls: list[int] = []

        def counting_getpid() -> int:
            calls.append(1)
            return real_getpid()

        monkeypatch.setattr(os, "getpid", counting_getpid)

        assert value_of("result = 2") == 2
        assert value_of("result = 3") == 3
        assert calls == []

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
    def test_a_child_forked_while_the_watchdog_lock_was_held_still_runs_attempts(
        self,
    ) -> None:
        """The parent's thread holds the watchdog's condition at the fork: the child (where
        no thread would ever release it) registers and unregisters on a fresh one, and its
        attempt gets the answer."""
        assert value_of("result = 0") == 0  # the watchdog exists in the parent
        from recurgent._sandbox._limits import WATCHDOG

        report = report_of_a_child_forked_while_held(
            lambda: WATCHDOG._condition, lambda: str(value_of("result = 41 + 1"))
        )

        assert report == "42"
