"""The async view of an agent: ``await agent.aio.method(...)`` (ADR 0096).

``agent.aio`` is the same agent seen from ``async`` code: the same memory, log, tool store and
Outcome, only the calls are awaited. Each awaited call runs the ordinary (synchronous) call on
a thread of its own, so the event loop is never blocked and many calls run at once; a provider
whose ``generate_program`` is ``async def`` runs natively on the awaiting task's own loop (see
:mod:`recurgent._lifecycle._workers`). The sandbox attempt itself is synchronous CPU work under
its deadline and stays on the call's thread.

Cancelling the awaiting task cancels the call (:mod:`recurgent._cancellation`): its program
stops at the next tick, a provider wait gives up, nothing is committed, and the awaiting task
ends only once the call's thread has, so no thread outlives it. A cancellation that arrives
after the call committed finds its writes in memory (the call was over).

Names follow the synchronous facade's rules: ``agent.aio.x`` is the memory value ``x`` when
memory holds one, names starting with ``_`` and the probe names raise ``AttributeError``, the
agent's own names (``for_``, ``prepare``, ``aio``) are not dynamic methods, and every other
public name is an async dynamic method.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, Unpack, cast

from recurgent._cancellation import CallCancelled, CancelScope, enter_scope
from recurgent._option_types import AgentOptionsDict, AsyncDynamicAttribute, MapExecutorOption
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._agent import Agent

__all__ = ["AsyncAgent"]

_T = TypeVar("_T")


class AsyncAgent:
    """The async view of one :class:`~recurgent.Agent` (``agent.aio``).

    Example::

        calc = Agent.for_("calculator")
        outcome = await calc.aio.add(5)
        many = await asyncio.gather(*(calc.aio.square(n) for n in range(10)))
    """

    __slots__ = ("_agent_object",)

    def __init__(self, agent: Agent) -> None:
        object.__setattr__(self, "_agent_object", agent)

    @property
    def agent(self) -> Agent:
        """The agent itself (the synchronous facade)."""
        return cast("Agent", self._agent_object)

    @property
    def runtime_context(self) -> dict[str, Any]:
        """The agent's live memory dict (the same one ``agent.runtime_context`` is)."""
        return self.agent.runtime_context

    def remember(self, /, **entries: Any) -> AsyncAgent:
        """Write entries into the agent's memory; returns this view."""
        self.agent.remember(**entries)
        return self

    def delegate(self, role: str, **options: Unpack[AgentOptionsDict]) -> AsyncAgent:
        """The async view of ``agent.delegate(role, ...)``: the child is made at once."""
        return self.agent.delegate(role, **options).aio

    def tool(self, name: str, **options: Unpack[AgentOptionsDict]) -> AsyncAgent:
        """The async view of ``agent.tool(name, ...)``."""
        return self.agent.tool(name, **options).aio

    async def map(
        self,
        method: str,
        items: Iterable[Any],
        /,
        *,
        executor: MapExecutorOption = None,
        batch_size: int | None = None,
        concurrency: int | None = None,
        progress: bool = False,
        timeout_seconds: float | None = None,
    ) -> list[Outcome]:
        """``await agent.aio.map(...)``: :meth:`Agent.map` on a thread of its own (ADR 0110).

        Cancelling the awaiting task stops the map between batches (and its first call at
        its next tick); the items already done are dropped with it.
        """
        agent = self.agent
        return await awaited_call(
            lambda: agent.map(
                method,
                items,
                executor=executor,
                batch_size=batch_size,
                concurrency=concurrency,
                progress=progress,
                timeout_seconds=timeout_seconds,
            )
        )

    async def starmap(
        self,
        method: str,
        items: Iterable[Iterable[Any]],
        /,
        *,
        executor: MapExecutorOption = None,
        batch_size: int | None = None,
        concurrency: int | None = None,
        progress: bool = False,
        timeout_seconds: float | None = None,
    ) -> list[Outcome]:
        """``await agent.aio.starmap(...)``: :meth:`Agent.starmap` on a thread of its own."""
        agent = self.agent
        return await awaited_call(
            lambda: agent.starmap(
                method,
                items,
                executor=executor,
                batch_size=batch_size,
                concurrency=concurrency,
                progress=progress,
                timeout_seconds=timeout_seconds,
            )
        )

    def responds_to(self, name: object) -> bool:
        """As :meth:`Agent.responds_to`."""
        return self.agent.responds_to(name)

    def getdoc(self) -> str:
        """A short description (IPython's ``agent.aio?``)."""
        return f"The async view of {self.agent.getdoc()} Await its methods."

    def __getattr__(self, name: str) -> AsyncDynamicAttribute:
        from recurgent._agent import PROBE_NAMES, RESERVED_NAMES

        if name.startswith("_") or name in PROBE_NAMES or name in RESERVED_NAMES:
            raise AttributeError(name)
        memory = self.agent.runtime_context
        if name in memory:
            return cast("AsyncDynamicAttribute", memory[name])
        return cast("AsyncDynamicAttribute", _AsyncMethod(self.agent, name))

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.agent, name, value)

    def __dir__(self) -> list[str]:
        return sorted({*dir(self.agent), "agent"} - {"aio", "for_", "prepare"})

    def __repr__(self) -> str:
        return f"<AsyncAgent of {self.agent!r}>"


class _AsyncMethod:
    """``agent.aio.name`` for a name that is not in memory: calling it returns a coroutine."""

    __slots__ = ("_agent", "_name")

    def __init__(self, agent: Agent, name: str) -> None:
        self._agent = agent
        self._name = name

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        agent, name = self._agent, self._name
        return awaited_call(lambda: agent._dispatch(name, args, kwargs))

    @property
    def __name__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<async dynamic method {self._agent._agent.role}.{self._name}>"


async def awaited_call(call: Callable[[], _T]) -> _T:
    """Run ``call`` (one dynamic call) on a thread of its own and await its Outcome.

    The thread runs in a copy of the caller's context inside a fresh
    :class:`~recurgent._cancellation.CancelScope`. A cancelled task cancels the scope, waits
    (shielded) for the thread to end, and re-raises ``CancelledError``.
    """
    loop = asyncio.get_running_loop()
    scope = CancelScope(loop)
    finished: asyncio.Future[_T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(outcome: _T | None, error: BaseException | None) -> None:
        if finished.done():
            return
        if error is not None:
            finished.set_exception(error)
        else:
            finished.set_result(cast(_T, outcome))

    def work() -> None:
        outcome: _T | None = None
        error: BaseException | None = None
        try:
            outcome = context.run(_in_scope, scope, call)
        except BaseException as raised:  # noqa: BLE001 - handed to the awaiting task
            error = raised
        try:
            loop.call_soon_threadsafe(settle, outcome, error)
        except RuntimeError:
            pass  # the loop closed while the call ran: nobody is waiting any more

    thread = threading.Thread(target=work, name="recurgent-aio-call", daemon=True)
    thread.start()
    try:
        return await asyncio.shield(finished)
    except asyncio.CancelledError:
        scope.cancel()
        await _until_done(finished)
        while thread.is_alive():
            # It has handed over its result and is returning: a few turns of the loop.
            await asyncio.sleep(0.001)
        raise


def _in_scope(scope: CancelScope, call: Callable[[], _T]) -> _T:
    with enter_scope(scope):
        return call()


async def _until_done(finished: asyncio.Future[Any]) -> None:
    """Wait for the cancelled call's thread to end, whatever else is cancelled meanwhile."""
    while not finished.done():
        try:
            await asyncio.shield(finished)
        except asyncio.CancelledError:
            continue
        except (CallCancelled, Exception):  # noqa: BLE001 - the call's end is all we wait for
            return
    if not finished.cancelled():
        finished.exception()  # retrieved, so asyncio does not report it as never retrieved
