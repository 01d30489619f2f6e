"""Calls that neither deadlock, leak threads, nor lose interrupts; async and non-retriable providers."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._cli import render_entry
from recurgent._sandbox._watchdog import WATCHDOG
from recurgent.errors import ProviderAuthError, ProviderError, UsageError
from recurgent.providers import ProviderRequest
from recurgent.testing import FunctionProvider, ScriptedProvider, read_log


def _provider_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "recurgent-provider")


class TestNoDeadlock:
    """Agents calling each other from two threads both finish."""

    def test_a_calls_b_while_b_calls_a(self) -> None:
        """A.run(B) in one thread and B.run(A) in another both return 'pong' in time."""
        both_generating = threading.Barrier(2, timeout=10)

        def reply(request: ProviderRequest) -> str:
            if request.method_name == "run":
                # Both calls are inside their agents when either one calls the other.
                both_generating.wait()
                return "result = args[0].ping().value"
            return "result = 'pong'"

        provider = FunctionProvider(reply)
        a = Agent("a", provider=provider, log=False, execution_timeout_seconds=10)
        b = Agent("b", provider=provider, log=False, execution_timeout_seconds=10)
        results: dict[str, Any] = {}
        threads = [
            threading.Thread(target=lambda: results.update(a=a.run(b)), daemon=True),
            threading.Thread(target=lambda: results.update(b=b.run(a)), daemon=True),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)

        assert {name: outcome.value for name, outcome in results.items()} == {
            "a": "pong",
            "b": "pong",
        }


class TestInterrupts:
    """Ctrl-C during a call propagates, after rolling the attempt back and logging it."""

    def _interrupted(self, tmp_path: Path) -> tuple[Agent, Path]:
        log = tmp_path / "calls.jsonl"

        def interrupt(request: ProviderRequest) -> str:
            raise KeyboardInterrupt

        gate = Agent("gate", provider=FunctionProvider(interrupt), log=False)
        code = "context['half'] = 1\ncontext['rows'].append(2)\nargs[0].wait()\nresult = 1"
        agent = Agent("worker", provider=ScriptedProvider({"work": code}), log=log)
        agent.rows = [1]
        with pytest.raises(KeyboardInterrupt):
            agent.work(gate)
        return agent, log

    def test_interrupt_propagates_and_rolls_back(self, tmp_path: Path) -> None:
        """The caller gets KeyboardInterrupt and memory holds none of the attempt's writes."""
        agent, _ = self._interrupted(tmp_path)

        memory = agent.runtime_context
        assert ("half" in memory, memory["rows"], memory["conversation_history"]) == (
            False,
            [1],
            [],
        )

    def test_interrupt_is_logged_as_interrupted(self, tmp_path: Path) -> None:
        """The log line says outcome_status 'interrupted', with the rollback applied."""
        _, log = self._interrupted(tmp_path)

        [entry] = read_log(log)
        assert (entry["outcome_status"], entry["rollback_applied"], entry["method"]) == (
            "interrupted",
            True,
            "work",
        )

    def test_watch_shows_interrupted(self, tmp_path: Path) -> None:
        """``recurgent watch`` renders the call as interrupted, not ok."""
        _, log = self._interrupted(tmp_path)

        [entry] = read_log(log)
        assert render_entry(entry)[0].split("  ")[2] == "interrupted"


class TestProviderThreads:
    """Provider requests run on long-lived helpers; a hung provider holds one worker at most."""

    def test_hung_provider_leaves_no_thread_per_attempt(self) -> None:
        """Five calls to a provider that never answers time out and add at most one thread."""
        released = threading.Event()

        def hang(request: ProviderRequest) -> str:
            released.wait(60)
            return "result = 1"

        agent = Agent(
            "stuck", provider=FunctionProvider(hang), log=False, provider_timeout_seconds=0.2
        )
        before = _provider_threads()
        try:
            outcomes = [agent.run() for _ in range(5)]
            after = _provider_threads()
        finally:
            released.set()

        assert ({o.error_type for o in outcomes}, after - before <= 1) == ({"timeout"}, True)

    def test_other_providers_still_answer_while_one_hangs(self) -> None:
        """A hung provider does not hold the workers another provider needs."""
        released = threading.Event()

        def hang(request: ProviderRequest) -> str:
            released.wait(60)
            return "result = 1"

        stuck = Agent("s", provider=FunctionProvider(hang), log=False, provider_timeout_seconds=0.1)
        fine = Agent(
            "f",
            provider=ScriptedProvider({"run": "result = 7"}),
            log=False,
            provider_timeout_seconds=5,
        )
        try:
            for _ in range(3):
                stuck.run()
            value = fine.run().value
        finally:
            released.set()

        assert value == 7


class TestOneWatchdog:
    """The deadline watchdog is one long-lived thread, not a thread per attempt."""

    def test_calls_share_one_watchdog_thread(self) -> None:
        """Three calls are watched by the process's one watchdog thread, and no other watchdog
        thread is started for them. (Other specs in the same worker process build watchdog
        services of their own under the same thread name: counting threads by name alone
        failed when one of them had run first.)"""
        agent = Agent("w", provider=ScriptedProvider({"run": "result = 1"}), log=False)
        before = {t.ident for t in threading.enumerate() if t.name == "recurgent-watchdog"}
        seen = []
        for _ in range(3):
            agent.run()
            thread = WATCHDOG._thread
            assert thread is not None
            seen.append((thread.ident, thread.is_alive()))
        after = {t.ident for t in threading.enumerate() if t.name == "recurgent-watchdog"}

        assert (len(set(seen)), seen[0][1], after - before - {seen[0][0]}) == (1, True, set())


class _AsyncProvider:
    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.cancelled = threading.Event()

    async def generate_program(self, request: ProviderRequest) -> dict[str, str]:
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return {"code": "result = 41 + 1"}


class TestAsyncProviders:
    """``async def generate_program`` works from scripts and inside a running event loop."""

    def test_async_provider_in_a_script(self) -> None:
        """A plain synchronous call awaits the provider's coroutine."""
        agent = Agent("calc", provider=_AsyncProvider(), log=False)

        assert agent.answer().value == 42

    def test_async_provider_inside_a_running_loop(self) -> None:
        """A synchronous call made inside a running loop (a notebook cell) still works."""
        agent = Agent("calc", provider=_AsyncProvider(), log=False)

        async def cell() -> Any:
            return agent.answer().value

        assert asyncio.run(cell()) == 42

    def test_async_provider_timeout_cancels_the_coroutine(self) -> None:
        """A coroutine past provider_timeout_seconds is a timeout Outcome and is cancelled."""
        provider = _AsyncProvider(delay=30)
        agent = Agent(
            "calc",
            provider=provider,
            log=False,
            provider_timeout_seconds=0.2,
            max_generation_attempts=1,
        )

        outcome = agent.answer()

        assert (outcome.error_type, provider.cancelled.wait(10)) == ("timeout", True)

    def test_provider_without_generate_program_is_refused_at_construction(self) -> None:
        """An object whose generate_program is not callable raises UsageError from Agent()."""

        class NotAProvider:
            generate_program = "not a function"

        with pytest.raises(UsageError, match="generate_program"):
            Agent("calc", provider=NotAProvider(), log=False)  # type: ignore[arg-type]  # on purpose


class TestProviderRetriable:
    """A provider error's class decides whether generation retries (``retriable``, ADR 0003)."""

    def test_non_retriable_provider_error_is_not_retried(self) -> None:
        """A ProviderAuthError (not retriable) ends the call after one request, with retriable
        False."""
        error = ProviderAuthError("401 Unauthorized: check OPENAI_API_KEY")
        provider = FunctionProvider(lambda request: error)
        agent = Agent("calc", provider=provider, log=False, max_generation_attempts=3)

        outcome = agent.add(1)

        assert (outcome.error_type, outcome.retriable, provider.calls) == ("provider", False, 1)

    def test_retriable_provider_error_is_retried(self) -> None:
        """A retriable provider error is asked again up to max_generation_attempts."""
        provider = FunctionProvider(lambda request: ProviderError("503"))
        agent = Agent("calc", provider=provider, log=False, max_generation_attempts=3)

        outcome = agent.add(1)

        assert (outcome.error_type, provider.calls) == ("provider", 3)


class TestStopSignalsNeverEscape:
    """An internal stop signal raised late becomes a typed Outcome."""

    def test_leaked_view_with_looping_repr_is_a_typed_outcome(self) -> None:
        """``result = {1: K()}.values()`` with a looping __repr__ fails typed, at once."""
        code = (
            "class K:\n"
            "    def __repr__(self):\n"
            "        while True:\n"
            "            pass\n"
            "result = {1: K()}.values()"
        )
        agent = Agent("leaky", provider=ScriptedProvider({"run": code}), log=False)
        started = time.monotonic()

        outcome = agent.run()

        assert (outcome.error_type, time.monotonic() - started < 20) == (
            "non_serializable_result",
            True,
        )
