"""An agent's mapped calls: ``map`` and ``starmap``, one program over many items (ADR 0110).

The methods check their arguments into a request (``_lifecycle._map_request``) and hand it, with
the agent's runtime, to ``_lifecycle._map``, which obtains the program once and runs the items
in batches on an executor (ADRs 0111-0113). Like a dynamic call reached without a handle, a map
called by generated code is refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from recurgent._agent_state import AgentState
from recurgent._option_types import MapExecutorOption
from recurgent._sandbox import generated_code_running
from recurgent.errors import GuardrailViolationError
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime

__all__ = ["MappedCalls"]


class MappedCalls:
    """The Agent facade's base: ``map`` and ``starmap``.

    It adds no slot and has no ``__init__``: the state lives in the facade's one slot,
    ``_agent``, which :class:`~recurgent._agent.Agent` sets.
    """

    __slots__ = ()
    _agent: AgentState

    if TYPE_CHECKING:
        # The facade's (``Agent._runtime``): the lifecycle's view of the agent, made on first use.
        def _runtime(self) -> AgentRuntime: ...

    def map(
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
        """Call ``method(item)`` for every item with one program; one Outcome per item, in order.

        The program is obtained once, by the first item's ordinary call (stored, repaired or
        generated); concurrent maps of the method share it. The other items run it in batches
        on ``executor`` (``"in_process"``, ``"process"`` or ``"ray"``; ``None``: as an ordinary
        call would), each its own attempt with its own deadline (``timeout_seconds``, default
        the agent's ``execution_timeout_seconds``) against a read-only snapshot of memory. A
        failed item is its error Outcome; a program that fails on many items is repaired once.
        ``progress=True`` shows a bar on stderr. The log gets one summary line (ADRs 0110-0113).

        Raises:
            UsageError: a bad argument, an executor that cannot be used (Ray not installed),
                items that cannot reach it, or a program needing what it cannot serve.
        """
        return self._map(
            method, items, False, executor, batch_size, concurrency, progress, timeout_seconds
        )

    def starmap(
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
        """:meth:`map`, calling ``method(*item)``: each item is the call's positional arguments."""
        return self._map(
            method, items, True, executor, batch_size, concurrency, progress, timeout_seconds
        )

    def _map(
        self,
        method: str,
        items: Iterable[Any],
        star: bool,
        executor: object,
        batch_size: int | None,
        concurrency: int | None,
        progress: bool,
        timeout_seconds: float | None,
    ) -> list[Outcome]:
        # Imported here, once per map: recurgent._agent imports this module (its base).
        from recurgent._agent import RESERVED_NAMES
        from recurgent._lifecycle._map import run_map
        from recurgent._lifecycle._map_request import map_request

        internals = self._agent
        if generated_code_running():
            raise GuardrailViolationError(
                f"Generated code called {internals.role}.map directly; agents are reachable "
                "only through tool()/delegate() handles",
                subtype="unforwarded_agent_call",
            )
        request = map_request(
            method,
            items,
            star=star,
            executor=executor,
            batch_size=batch_size,
            concurrency=concurrency,
            progress=progress,
            timeout_seconds=timeout_seconds,
            host_call=not internals.built_by_program,
            reserved=RESERVED_NAMES,
        )
        return run_map(self._runtime(), request)
