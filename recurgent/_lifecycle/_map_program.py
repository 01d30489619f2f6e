"""A map's one program, obtained once: its first item's ordinary call (ADRs 0110, 0111).

The first item runs as an ordinary dynamic call (:func:`~recurgent._lifecycle.call_state`), and
the program that call ends with is the map's. Concurrent maps of the same method on the same
agent wait for that one call (single flight) and share its program when it is reusable for
other inputs. The map's one repair (:mod:`recurgent._lifecycle._map`) runs its item through
:func:`call_item` too.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from recurgent._forksafe import fork_safe_lock
from recurgent._lifecycle import _persistence
from recurgent._lifecycle._generation import Generated
from recurgent._lifecycle._map_request import MapRequest
from recurgent._lifecycle._state import CallState
from recurgent._store import checksum
from recurgent.errors import RecurgentError

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime
    from recurgent._lifecycle._map_log import MapRun

__all__ = ["Program", "call_item", "obtain_program", "program_of"]


@dataclass(frozen=True, slots=True)
class Program:
    """The map's program: compiled once, shared by every batch while it is the map's."""

    generated: Generated
    source: str
    cacheable: bool
    checksum: str


@dataclass(slots=True)
class _Flight:
    """One program being obtained for one agent and method; later maps wait for it."""

    done: threading.Event = field(default_factory=threading.Event)
    program: Program | None = None


_FLIGHTS: dict[tuple[int, str], tuple[object, _Flight]] = {}
_FLIGHTS_LOCK = fork_safe_lock()


def program_of(state: CallState) -> Program | None:
    """The program ``state``'s call ended with, when there is one the map can run."""
    code = state.code
    if not code or code.isspace():
        return None
    try:
        generated = _persistence._prepare(code, state.program_dependencies or [], state.method)
    except RecurgentError:
        # The first call's last program breaks the policy (its Outcome says so): nothing to
        # share, and the map answers each item rather than raising the program's fault.
        return None
    if generated.compiled is None:
        return None
    cacheable = state.cacheable is not False
    return Program(generated, state.program_source, cacheable, checksum(code))


def obtain_program(
    runtime: AgentRuntime, request: MapRequest, run: MapRun
) -> tuple[Program | None, CallState | None]:
    """The map's program, from its own first call or from a concurrent map's (single flight).

    Returns the program and, when this map made the call, its state (item 0 is then done).
    """
    key = (id(runtime), request.method)
    while True:
        with _FLIGHTS_LOCK:
            entry = _FLIGHTS.get(key)
            leader = entry is None
            if entry is None:
                # The runtime is held with its flight: its id names no other object meanwhile.
                entry = _FLIGHTS[key] = (runtime, _Flight())
        flight = entry[1]
        if leader:
            break
        flight.done.wait()
        if flight.program is not None and flight.program.cacheable:
            run.shared = True
            return flight.program, None
        # The other map got no program this one may use: this one asks on its own.
    try:
        state = call_item(runtime, request, run, 0)
        run.first_call_id = state.frame.call_id
        run.trace_id = state.frame.trace_id
        flight.program = program_of(state)
        return flight.program, state
    finally:
        with _FLIGHTS_LOCK:
            _FLIGHTS.pop(key, None)
        flight.done.set()


def call_item(runtime: AgentRuntime, request: MapRequest, run: MapRun, index: int) -> CallState:
    """One item as an ordinary call, under the map's per-item deadline when it has one."""
    from recurgent._lifecycle import call_state

    args, kwargs = request.calls[index]
    timeout = request.timeout_seconds
    if timeout is not None and timeout != runtime.options.execution_timeout_seconds:
        # The same agent (memory, lock, store, log), its attempts under the item's deadline.
        options = dataclasses.replace(runtime.options, execution_timeout_seconds=timeout)
        runtime = dataclasses.replace(runtime, options=options)
    return call_state(
        runtime,
        request.method,
        tuple(args),
        dict(kwargs),
        host_call=request.host_call,
        map_id=run.map_id,
    )
