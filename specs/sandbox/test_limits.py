"""Hard limits: the deadline stops runaway code from any thread, sizes, output and calls are capped."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import freezegun
import pytest

from recurgent import Agent
from recurgent._sandbox import ExecutionResult, SandboxLimits
from recurgent.errors import ExecutionTimeoutError, ResourceLimitError, UsageError
from recurgent.testing import ScriptedProvider

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
