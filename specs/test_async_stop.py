"""The attempt's stop delivered to its thread, and the host sections shielded from it (ADR 0089).

Library code generated code calls never ticks; these specs pin that it stops at the deadline
anyway, that host code run on the attempt's behalf is never interrupted, that nested attempts
on one thread each get their own stop, and that no stop reaches a thread after its attempt.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from recurgent._async_stop import Interrupter, _in_unsafe_code, host_section, innermost
from recurgent._sandbox import SandboxLimits
from specs.sandbox.support import Host, execute

_SPIN = "def spin():\n    n = 0\n    while True:\n        n += 1\n"


class _Stop(BaseException):
    """What the specs deliver by hand."""


def _spin_python(seconds: float) -> int:
    """A plain Python loop of the host (no tick): runs ``seconds``, returns its count."""
    end = time.monotonic() + seconds
    count = 0
    while time.monotonic() < end:
        count += 1
    return count


class TestLibraryCodeStopsAtTheDeadline:
    """Pure-Python library code called by a program ends at the attempt's deadline."""

    @pytest.mark.parametrize(
        "call",
        [
            "urllib.parse.parse_qsl('a=1&' * 2_000_000)",
            "urllib.parse.parse_qs('a=1&' * 2_000_000)",
            "html.unescape('&#60;' * 1_900_000)",
        ],
    )
    def test_a_long_library_call_ends_as_timeout(self, call: str) -> None:
        """The attempt ends as ``timeout`` without running the call to its end: it takes far
        less processor time than the call does (about 2 s alone). Processor time, because a
        shared machine stretches wall-clock time for reasons of its own."""
        started = time.process_time()

        result = execute(
            f"import urllib.parse, html\nresult = len({call})",
            limits=SandboxLimits(timeout_seconds=0.3),
        )

        assert result.error is not None and result.error.error_type == "timeout"
        assert "execution_timeout_seconds=0.3" in str(result.error)
        assert time.process_time() - started < 1.0

    def test_a_stop_wrapped_by_a_codec_reads_as_the_deadline(self) -> None:
        """A codec's Python code stopped at the deadline is reported by CPython as "encoding
        with 'punycode' codec failed (DeadlineExceeded: )": the timeout says what the ticker
        says instead (ADR 0151)."""
        result = execute(
            "s = chr(0x10FFFF) * 900_000\nresult = len(s.encode('punycode'))",
            limits=SandboxLimits(timeout_seconds=0.2),
        )

        assert result.error is not None
        assert (result.error.error_type, str(result.error)) == (
            "timeout",
            "Execution timeout in tester.run: generated code exceeded "
            "execution_timeout_seconds=0.2",
        )

    def test_a_program_that_swallows_the_stop_still_ends(self) -> None:
        """``except BaseException: pass`` around the library call does not keep it running."""
        source = (
            "import urllib.parse\n"
            "while True:\n"
            "    try:\n"
            "        urllib.parse.parse_qsl('a=1&' * 1_000_000)\n"
            "    except BaseException:\n"
            "        pass\n"
        )

        result = execute(source, limits=SandboxLimits(timeout_seconds=0.3))

        assert result.error is not None and result.error.error_type == "timeout"


class TestHostSectionsAreNotInterrupted:
    """Host code the attempt's thread runs for the program completes; the stop comes after."""

    def test_a_host_function_in_memory_runs_to_its_end(self) -> None:
        """A host function that runs past the deadline finishes, then the attempt times out."""
        finished: list[int] = []

        def slow() -> str:
            finished.append(_spin_python(0.5))
            return "done"

        host = Host(memory={"slow": slow})

        result = execute(
            "x = context['slow']()\nwhile True:\n    pass",
            host=host,
            limits=SandboxLimits(timeout_seconds=0.2),
        )

        assert result.error is not None and result.error.error_type == "timeout"
        assert len(finished) == 1 and finished[0] > 0

    def test_a_forwarded_call_runs_to_its_end(self) -> None:
        """A child's call (a forwarded call) that outlives the deadline is not cut short."""
        host = Host()
        child = host.child("slow")
        replies: list[str] = []

        def reply(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            _spin_python(0.5)
            replies.append(method)
            from recurgent.outcome import Outcome

            return Outcome.ok(1, tool_role="slow")

        child.reply = reply

        result = execute(
            "delegate('slow').work()\nwhile True:\n    pass",
            host=host,
            limits=SandboxLimits(timeout_seconds=0.2),
        )

        assert result.error is not None and result.error.error_type == "timeout"
        assert replies == ["work"]


class TestNestedAttemptsOnOneThread:
    """An attempt run inside another's host call gets its own stop; the outer one goes on."""

    def test_the_inner_attempt_stops_and_the_outer_completes(self) -> None:
        """The inner attempt ends as ``timeout`` in library code; the outer returns its type."""

        def inner() -> str:
            nested = execute(
                "import urllib.parse\nwhile True:\n    urllib.parse.parse_qsl('a=1&' * 500_000)",
                limits=SandboxLimits(timeout_seconds=0.2),
            )
            assert nested.error is not None
            return nested.error.error_type

        result = execute(
            "kind = context['inner']()\nresult = [kind, sum(range(1000))]",
            host=Host(memory={"inner": inner}),
            limits=SandboxLimits(timeout_seconds=10.0),
        )

        assert (result.error, result.value) == (None, ["timeout", 499500])


class TestNoStopAfterTheAttempt:
    """Once ``run`` returns, no stop is pending or delivered for the thread."""

    def test_host_code_after_many_stopped_attempts_runs_undisturbed(self) -> None:
        """Twenty attempts stopped inside library code; the host's loop after each completes."""
        for _ in range(20):
            result = execute(
                "import urllib.parse\nurllib.parse.parse_qsl('a=1&' * 2_000_000)",
                limits=SandboxLimits(timeout_seconds=0.1),
            )
            assert result.error is not None and result.error.error_type == "timeout"
            assert _spin_python(0.05) > 0
        assert innermost() is None


class TestTheInterrupter:
    """The interrupter by itself, on a thread of the spec's own."""

    def _run_on_thread(self, interrupter: Interrupter, main: Any) -> list[Any]:
        outcome: list[Any] = []

        def target() -> None:
            try:
                outcome.append(interrupter.run(main))
            except _Stop:
                outcome.append("stopped")
            outcome.append(_spin_python(0.1))  # nothing left pending for the host's code

        thread = threading.Thread(target=target)
        thread.start()
        return [thread, outcome]

    def test_a_stop_is_delivered_again_after_being_swallowed(self) -> None:
        """A loop that swallows the first stop meets the second."""
        interrupter = Interrupter()
        swallowed: list[int] = []

        def main() -> str:
            try:
                _spin_python(30.0)
            except _Stop:
                swallowed.append(1)
            _spin_python(30.0)
            return "ran out"

        thread, outcome = self._run_on_thread(interrupter, main)
        deadline = time.monotonic() + 10.0
        while thread.is_alive() and time.monotonic() < deadline:
            interrupter.deliver(_Stop)
            time.sleep(0.02)
        thread.join(1.0)

        assert swallowed == [1]
        assert outcome[0] == "stopped" and outcome[1] > 0

    def test_nothing_is_delivered_inside_a_host_section(self) -> None:
        """Deliveries while the section is open are refused; the section's work completes."""
        interrupter = Interrupter()
        inside = threading.Event()
        refused: list[bool] = []

        def main() -> int:
            with host_section():
                inside.set()
                return _spin_python(0.3)

        thread, outcome = self._run_on_thread(interrupter, main)
        inside.wait(5.0)
        refused.append(interrupter.deliver(_Stop))
        thread.join(5.0)

        assert refused == [False]
        assert isinstance(outcome[0], int) and outcome[0] > 0

    def test_a_host_section_outside_any_attempt_does_nothing(self) -> None:
        """On a thread with no attempt the section is a no-op."""
        with host_section():
            assert innermost() is None

    def test_no_delivery_before_or_after_the_run(self) -> None:
        """``deliver`` refuses an interrupter that is not running a program."""
        interrupter = Interrupter()
        assert interrupter.deliver(_Stop) is False
        assert interrupter.run(lambda: 5) == 5
        assert interrupter.deliver(_Stop) is False

    def test_a_thread_inside_a_weak_sets_code_is_not_interrupted(self) -> None:
        """A WeakSet's code (its removal callback runs wherever the collector frees a member)
        counts as unsafe: a stop raised there would reach the host's unraisable hook. Here the
        thread waits inside ``WeakSet.__contains__``, in its member's ``__hash__``."""
        import weakref

        release = threading.Event()
        started = threading.Event()

        class Member:
            def __hash__(self) -> int:
                started.set()
                while not release.is_set():  # waits outside threading's own code
                    time.sleep(0.001)
                return 1

        members: weakref.WeakSet[Member] = weakref.WeakSet()
        probe = Member()
        inside = Interrupter()
        thread = threading.Thread(target=inside.run, args=(lambda: probe in members,))
        thread.start()
        started.wait(5.0)
        try:
            assert _in_unsafe_code(thread.ident or 0) is True
        finally:
            release.set()
            thread.join()

    def test_threads_in_the_import_machinery_or_threading_are_not_interrupted(self) -> None:
        """Inside its attempt, a thread waiting in ``threading`` counts as unsafe; a plain loop
        does not, though every thread starts in ``threading`` (below the attempt)."""
        release = threading.Event()
        started = threading.Event()
        waiting = Interrupter()
        spinning = Interrupter()

        def wait_for_release() -> bool:
            started.set()
            return release.wait()

        threads = [
            threading.Thread(target=waiting.run, args=(wait_for_release,)),
            threading.Thread(target=spinning.run, args=(lambda: _spin_python(0.5),)),
        ]
        for thread in threads:
            thread.start()
        started.wait(5.0)
        time.sleep(0.05)
        try:
            assert _in_unsafe_code(threads[0].ident or 0) is True
            assert _in_unsafe_code(threads[1].ident or 0) is False
        finally:
            release.set()
            for thread in threads:
                thread.join()
