"""What a map's batches run on: the executor checked against the program, its limits, its
host bridge and the threads that wait on its batches (ADRs 0110, 0111).

An executor that cannot install the program's packages, or cannot serve a forwarded call the
program makes, is refused before any batch runs (``UsageError``); a repaired program that
needs what the map's executor cannot serve leaves the map its program.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from recurgent._content_store import ContentReads
from recurgent._execution import BatchExecutor, ItemCall
from recurgent._lifecycle._attempt import Forwarding
from recurgent._lifecycle._continuity import retention_of
from recurgent._lifecycle._map_program import Program
from recurgent._lifecycle._map_request import MapRequest
from recurgent._map import make_executor
from recurgent._map._needs import program_needs
from recurgent._sandbox import ExecutionResult, HostBridge, SandboxLimits
from recurgent._sandbox._limits import attempt_deadline, enclosing_limits
from recurgent.errors import UsageError

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime

__all__ = [
    "batch_pool",
    "bridge_for",
    "default_batch",
    "executor_for",
    "in_callers_context",
    "limits_for",
    "successor_of",
]

#: The largest default batch (the first hundreds of items already amortise a round trip).
_MAX_DEFAULT_BATCH = 500


def limits_for(runtime: AgentRuntime, request: MapRequest) -> SandboxLimits:
    """Each item's limits: the map's per-item deadline, else the agent's."""
    options = runtime.options
    timeout = request.timeout_seconds or options.execution_timeout_seconds
    return SandboxLimits(timeout_seconds=timeout, max_forwarded_calls=options.forwarded_call_budget)


def bridge_for(runtime: AgentRuntime, method: str) -> HostBridge:
    """The host calls every item's attempt may make (delegate, tool, remember, content)."""
    role = runtime.role
    forwarding = Forwarding(runtime, (method, (), {}), role)
    return HostBridge(
        role=role,
        method_name=method,
        memory={},
        args=(),
        kwargs={},
        delegate=forwarding.delegate,
        tool=forwarding.tool,
        remember=forwarding.remember,
        handle_for_agent=runtime.handle_for_agent,
        content=runtime.content.reader(lambda: retention_of(runtime), ContentReads()),
    )


def executor_for(runtime: AgentRuntime, request: MapRequest, program: Program) -> BatchExecutor:
    """The executor chosen for ``request``, refused when it cannot run ``program``.

    Raises:
        UsageError: the program needs packages or forwarded calls the executor does not serve.
    """
    slot = runtime.workers
    confined = slot is not None and slot.confined
    dependencies = [
        {"name": d.name, "version": d.version} for d in program.generated.program.dependencies
    ]

    def process_batches() -> BatchExecutor:
        from recurgent._map._process import ProcessBatches
        from recurgent._worker._isolation import IsolationSettings

        environment = None
        isolation = IsolationSettings(
            mode="process" if confined else "in_process", network=runtime.options.network
        )
        if slot is not None and dependencies:
            lane = slot.lane()
            lane.select(dependencies, role=runtime.role)
            environment = lane.environment
        return ProcessBatches(isolation, environment)

    executor = make_executor(
        request.executor,
        dependencies=bool(dependencies),
        confined=confined,
        process_executor=process_batches,
    )
    capabilities = executor.capabilities
    if dependencies and not capabilities.dependencies:
        raise UsageError(
            f"the program of {runtime.role}.{request.method} needs packages "
            f"({', '.join(str(d['name']) for d in dependencies)}), which a "
            f"{capabilities.isolation} map cannot install; map with executor='process'"
        )
    missing = sorted(program_needs(program.generated.tree) - capabilities.serves)
    if missing:
        raise UsageError(
            f"the program of {runtime.role}.{request.method} uses {', '.join(missing)}, which "
            f"a {capabilities.isolation} map worker cannot serve; map it in process "
            "(executor='in_process' or 'process')"
        )
    return executor


def default_batch(items: int, workers: int) -> int:
    # About four batches per worker: work stays balanced, a round trip is amortised.
    return max(1, min(_MAX_DEFAULT_BATCH, math.ceil(items / (workers * 4))))


def successor_of(
    runtime: AgentRuntime, request: MapRequest, program: Program, repaired: Program | None
) -> BatchExecutor | None:
    """The executor of a repaired program, or ``None`` to keep the map's program: there is no
    other one, or the repaired one needs what this executor cannot serve."""
    if repaired is None or repaired.checksum == program.checksum:
        return None
    try:
        return executor_for(runtime, request, repaired)
    except UsageError:
        return None


class _Inline:
    """One worker: batches run on the calling thread (no hand-off to a pool's thread)."""

    def __enter__(self) -> _Inline:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def submit(
        self, work: Callable[[Sequence[ItemCall]], list[ExecutionResult]], items: Sequence[ItemCall]
    ) -> Future[list[ExecutionResult]]:
        done: Future[list[ExecutionResult]] = Future()
        try:
            done.set_result(work(items))
        except BaseException as error:  # noqa: BLE001 - re-raised by future.result()
            done.set_exception(error)
        return done


def in_callers_context(
    work: Callable[[Sequence[ItemCall]], list[ExecutionResult]],
) -> Callable[[Sequence[ItemCall]], list[ExecutionResult]]:
    """``work`` run under the deadline and memory budget of the attempt the caller runs inside,
    if any (host code mapping in a program's host section): a batch run on the pool's thread
    is then bounded as one run inline is (ADR 0141). Only those two are carried: the caller's
    other context (its attempt's memory views) stays with the caller's thread."""
    carried = enclosing_limits()
    if carried is None:
        return work
    remaining, memory = carried

    def bounded(items: Sequence[ItemCall]) -> list[ExecutionResult]:
        with attempt_deadline(remaining, memory):
            return work(items)

    return bounded


def batch_pool(workers: int) -> ThreadPoolExecutor | _Inline:
    """The threads that wait on running batches: none of its own for one worker."""
    if workers == 1:
        return _Inline()
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="recurgent-map")
