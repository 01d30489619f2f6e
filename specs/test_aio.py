"""``agent.aio``: the async view of the same agent (ADR 0096).

No sleeps decide these specs: concurrency is shown by a barrier every call must reach before
any may go on, a free event loop by the loop itself releasing a blocked provider.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, Outcome, UsageError
from recurgent._aio import AsyncAgent
from recurgent.providers import ProviderRequest
from recurgent.testing import FunctionProvider, ScriptedProvider, read_log


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, timeout=60))


def _aio_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "recurgent-aio-call"]


class TestSameAgent:
    """Same memory, same log, same Outcome as the synchronous facade."""

    def test_await_a_call(self, log_path: Path) -> None:
        """``await agent.aio.add(5)`` returns the Outcome; memory and log are the agent's."""
        provider = ScriptedProvider(
            {
                "add": "context['total'] = context.get('total', 0) + args[0]\nresult = context['total']"
            }
        )
        calc = Agent("calculator", provider=provider, log=log_path)

        outcome = _run(calc.aio.add(5))

        assert (type(outcome), outcome.value, calc.runtime_context["total"]) == (Outcome, 5, 5)
        assert calc.add(2).value == 7
        assert [entry["method"] for entry in read_log(log_path)] == ["add", "add"]
        assert outcome.call_id == read_log(log_path)[0]["call_id"]

    def test_names_follow_the_facade(self) -> None:
        """Memory keys read as values; private, probe and the agent's own names are refused."""
        calc = Agent("calculator", provider=ScriptedProvider(), log=False)
        calc.value = 10

        assert calc.aio.value == 10
        for name in ("_secret", "for_", "prepare", "aio", "trait_names"):
            with pytest.raises(AttributeError):
                getattr(calc.aio, name)
        with pytest.raises(UsageError, match="'aio' is reserved by Agent"):
            calc.aio = 1  # type: ignore[misc, assignment]  # read-only, set on purpose
        assert "aio" in dir(calc) and not calc.responds_to("aio=")

    def test_delegate_and_tool_give_async_views(self) -> None:
        """``agent.aio.delegate(...)`` is the child's async view; awaiting its methods works."""
        provider = ScriptedProvider({("adder", "add"): "result = args[0] + 1"})
        parent = Agent("planner", provider=provider, log=False)

        child = parent.aio.delegate("adder", purpose="add one")

        assert isinstance(child, AsyncAgent)
        assert _run(child.add(1)).value == 2
        assert _run(parent.aio.tool("adder").add(2)).value == 3

    def test_programs_that_delegate_run_awaited(self) -> None:
        """A program calling a child through a handle runs the same under ``aio``."""
        provider = ScriptedProvider(
            {
                ("planner", "run"): "return delegate('adder').add(2).value * 10",
                ("adder", "add"): "result = args[0] + 1",
            }
        )
        planner = Agent("planner", provider=provider, log=False)

        assert _run(planner.aio.run()).value == 30


class TestConcurrency:
    """Awaited calls run at once, and the event loop stays free while they run."""

    def test_eight_calls_are_in_flight_together(self) -> None:
        """Each provider request waits on a barrier of eight: only concurrent calls pass it."""
        barrier = threading.Barrier(8, timeout=30)

        def reply(request: ProviderRequest) -> str:
            barrier.wait()
            return "result = args[0] * 2"

        calc = Agent("calc", provider=FunctionProvider(reply), log=False, toolstore_root=None)

        async def main() -> list[Any]:
            outcomes = await asyncio.gather(*(calc.aio.double(n) for n in range(8)))
            return [outcome.value for outcome in outcomes]

        assert _run(main()) == [0, 2, 4, 6, 8, 10, 12, 14]

    def test_the_loop_runs_while_a_call_waits(self) -> None:
        """A provider blocked on an event is released by a callback of the loop itself."""
        release = threading.Event()

        def reply(request: ProviderRequest) -> str:
            assert release.wait(30)
            return "result = 'done'"

        calc = Agent("calc", provider=FunctionProvider(reply), log=False)

        async def main() -> Any:
            call = asyncio.ensure_future(calc.aio.work())
            asyncio.get_running_loop().call_soon(release.set)
            return (await call).value

        assert _run(main()) == "done"


class _AsyncProvider:
    """An ``async def`` provider recording the loop it ran on."""

    def __init__(self, code: str = "result = 1") -> None:
        self.code = code
        self.loops: list[asyncio.AbstractEventLoop] = []
        self.cancelled = False
        self.started: asyncio.Event | None = None

    async def generate_program(self, request: ProviderRequest) -> object:
        self.loops.append(asyncio.get_running_loop())
        if self.started is not None:
            self.started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        return {"code": self.code}


class TestAsyncProviders:
    """A provider whose generate_program is async runs natively on the awaiting loop."""

    def test_runs_on_the_callers_loop(self) -> None:
        """The coroutine sees the test's own loop, so loop-bound clients work."""
        provider = _AsyncProvider()
        calc = Agent("calc", provider=provider, log=False)

        async def main() -> tuple[Any, asyncio.AbstractEventLoop]:
            return (await calc.aio.one()).value, asyncio.get_running_loop()

        value, loop = _run(main())
        assert (value, provider.loops) == (1, [loop])

    def test_sync_calls_still_use_the_helper_loop(self) -> None:
        """Without aio the same provider runs on the runtime's own loop thread."""
        provider = _AsyncProvider()

        assert Agent("calc", provider=provider, log=False).one().value == 1
        assert len(provider.loops) == 1


class TestCancellation:
    """A cancelled task cancels its call: nothing committed, no thread left behind."""

    def test_a_running_program_is_stopped_and_rolled_back(self, log_path: Path) -> None:
        """The program wrote memory and spins; cancelling ends it and memory is as before."""
        generated = threading.Event()

        def reply(request: ProviderRequest) -> str:
            generated.set()
            return "context['spent'] = True\nwhile True:\n    pass"

        agent = Agent("spinner", provider=FunctionProvider(reply), log=log_path)

        async def main() -> None:
            call = asyncio.ensure_future(agent.aio.spin())
            while not generated.is_set():
                await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call

        _run(main())

        assert ("spent" in agent.runtime_context, _aio_threads()) == (False, [])
        (entry,) = read_log(log_path)
        assert (entry["outcome_status"], entry["error_class"], entry["rollback_applied"]) == (
            "interrupted",
            "CallCancelled",
            True,
        )

    def test_a_provider_wait_is_given_up(self) -> None:
        """A sync provider that never answers: the call ends at once when cancelled."""
        asked, release = threading.Event(), threading.Event()

        def reply(request: ProviderRequest) -> str:
            asked.set()
            release.wait(30)
            return "result = 1"

        agent = Agent("stuck", provider=FunctionProvider(reply), log=False)

        async def main() -> None:
            call = asyncio.ensure_future(agent.aio.ask_it())
            while not asked.is_set():
                await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call

        try:
            _run(main())
            assert _aio_threads() == []
        finally:
            release.set()

    def test_an_async_provider_is_cancelled_on_the_callers_loop(self) -> None:
        """The provider's coroutine itself receives the cancellation."""
        provider = _AsyncProvider()
        agent = Agent("stuck", provider=provider, log=False)

        async def main() -> None:
            provider.started = asyncio.Event()
            call = asyncio.ensure_future(agent.aio.ask_it())
            await provider.started.wait()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call

        _run(main())

        assert (provider.cancelled, _aio_threads()) == (True, [])

    def test_a_child_call_is_stopped_with_its_parent(self) -> None:
        """Cancelling a parent stops the child program it waits on; neither commits."""
        child_running = threading.Event()

        def reply(request: ProviderRequest) -> str:
            if request.role == "worker":
                child_running.set()
                return "context['half'] = 1\nwhile True:\n    pass"
            return "context['asked'] = 1\nreturn delegate('worker').grind()"

        parent = Agent("boss", provider=FunctionProvider(reply), log=False, toolstore_root=None)

        async def main() -> None:
            call = asyncio.ensure_future(parent.aio.run())
            while not child_running.is_set():
                await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call

        _run(main())

        child = parent.tool("worker")
        assert ("asked" in parent.runtime_context, "half" in child.runtime_context) == (
            False,
            False,
        )
