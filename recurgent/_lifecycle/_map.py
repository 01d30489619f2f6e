"""``Agent.map``/``Agent.starmap``: one program over many items (ADRs 0110-0113).

The sequence, decided here and nowhere else:

1. **Check** the request, the executor choice and the items before anything runs
   (``UsageError``).
2. **Obtain the program once.** The first item runs as an ordinary dynamic call
   (:func:`~recurgent._lifecycle.call_state`): stored, repaired or generated exactly as any call
   would be, through the same lanes, with one difference: its program may not write memory.
   Concurrent maps of the same method on the same agent wait for that one call (single
   flight) and share its program.
3. **Run the other items** in batches on the executor, each item its own attempt against a
   read-only snapshot of memory with its own deadline; each result becomes its Outcome
   (:mod:`._map_items`).
4. **Repair once** when the program fails intrinsically on many items
   (:meth:`~._map_items.Tally.needs_repair`): one failing item runs again as an ordinary call
   (the store's repair path; a fresh generation without a store), and the failed and remaining
   items run the program that call ends with.
5. **Log** one summary line, and one line for each failed item up to a cap; never a line per
   item. The calls of steps 2 and 4 write their own ordinary lines, marked with the map's id.

A program that is not reusable for other inputs (it ignores or hard-codes its arguments,
ADR 0037) is not mapped: every item is then an ordinary call.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any

from recurgent._cancellation import raise_if_cancelled
from recurgent._content_store import ContentReads
from recurgent._execution import BatchExecutor, BatchJob, ItemCall
from recurgent._guardrails import is_external_fetch
from recurgent._history import HISTORY_KEY
from recurgent._lifecycle import _persistence
from recurgent._lifecycle._attempt import vet_remember
from recurgent._lifecycle._continuity import retention_of
from recurgent._lifecycle._generation import Generated
from recurgent._lifecycle._map_items import ItemChecks, Tally
from recurgent._lifecycle._map_request import MapRequest
from recurgent._lifecycle._state import CallState
from recurgent._map import check_choice, check_items, make_executor
from recurgent._map._needs import program_needs
from recurgent._map._progress import Progress, open_progress
from recurgent._sandbox import ExecutionResult, HostBridge, SandboxLimits
from recurgent._store import checksum
from recurgent._values import utc_timestamp
from recurgent.errors import RecurgentError, UsageError
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime

__all__ = ["MAX_FAILED_ITEM_LINES", "run_map"]

#: Failed items logged one line each per map; the summary counts the rest (ADR 0113).
MAX_FAILED_ITEM_LINES = 20
#: The largest default batch (the first hundreds of items already amortise a round trip).
_MAX_DEFAULT_BATCH = 500


# --------------------------------------------------------------------- the one program


@dataclass(frozen=True, slots=True)
class _Program:
    generated: Generated
    source: str
    cacheable: bool
    checksum: str


@dataclass(slots=True)
class _Flight:
    """One program being obtained for one agent and method; later maps wait for it."""

    done: threading.Event = field(default_factory=threading.Event)
    program: _Program | None = None


_FLIGHTS: dict[tuple[int, str], tuple[object, _Flight]] = {}
_FLIGHTS_LOCK = threading.Lock()


def _program_of(state: CallState) -> _Program | None:
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
    return _Program(generated, state.program_source, cacheable, checksum(code))


@dataclass(slots=True)
class _Run:
    """What one map did, for its summary line."""

    map_id: str
    request: MapRequest
    started: float = field(default_factory=time.monotonic)
    program_ms: float = 0.0
    program: _Program | None = None
    first_call_id: str | None = None
    repair_call_id: str | None = None
    repair_attempted: bool = False
    repaired: bool = False
    shared: bool = False
    mode: str = "batches"
    executor: str | None = None
    workers: int = 0
    batches: int = 0
    batch_size: int = 0
    trace_id: str | None = None
    failed: dict[int, Outcome] = field(default_factory=dict)


def _obtain(
    runtime: AgentRuntime, request: MapRequest, run: _Run
) -> tuple[_Program | None, CallState | None]:
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
        state = _call(runtime, request, run, 0)
        run.first_call_id = state.frame.call_id
        run.trace_id = state.frame.trace_id
        flight.program = _program_of(state)
        return flight.program, state
    finally:
        with _FLIGHTS_LOCK:
            _FLIGHTS.pop(key, None)
        flight.done.set()


def _call(runtime: AgentRuntime, request: MapRequest, run: _Run, index: int) -> CallState:
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


# --------------------------------------------------------------------- the items


def run_map(runtime: AgentRuntime, request: MapRequest) -> list[Outcome]:
    """Run ``request`` and return one Outcome per item, in input order.

    Raises:
        UsageError: the executor cannot be used, an item cannot reach it, or the program
            needs a forwarded call the executor does not serve (before any batch runs).
    """
    slot = runtime.workers
    confined = slot is not None and slot.confined
    check_choice(request.executor, confined=confined)
    check_items(request.executor, request.calls)
    run = _Run(secrets.token_hex(8), request)
    total = len(request.calls)
    outcomes: list[Outcome | None] = [None] * total
    tally = Tally()
    progress = open_progress(request.progress, total, f"{runtime.role}.{request.method}")
    try:
        if total:
            _map_all(runtime, request, run, outcomes, tally, progress)
    finally:
        progress.close()
        _log_summary(runtime, run, tally, total)
    assert all(map(operator.is_not, outcomes, repeat(None)))
    return outcomes  # type: ignore[return-value]


def _map_all(
    runtime: AgentRuntime,
    request: MapRequest,
    run: _Run,
    outcomes: list[Outcome | None],
    tally: Tally,
    progress: Progress,
) -> None:
    with runtime.lock:
        snapshot = dict(runtime.memory)
        history = snapshot.get(HISTORY_KEY)
        if type(history) is list:
            # The map's own calls append to the live list in place while items read it.
            snapshot[HISTORY_KEY] = list(history)
    program, first = _obtain(runtime, request, run)
    run.program_ms = (time.monotonic() - run.started) * 1000
    run.program = program
    pending = list(range(len(outcomes)))
    if first is not None:
        _settle(run, outcomes, tally, progress, 0, first.outcome)
        pending = pending[1:]
    if program is None or not program.cacheable:
        # No program to share (the first call got none, or one only for its own input): each
        # other item is an ordinary call of its own.
        run.mode = "calls"
        for index in pending:
            state = _call(runtime, request, run, index)
            _settle(run, outcomes, tally, progress, index, state.outcome)
        return
    _run_batches(runtime, request, run, program, snapshot, pending, outcomes, tally, progress)


def _settle(
    run: _Run,
    outcomes: list[Outcome | None],
    tally: Tally,
    progress: Progress | None,
    index: int,
    outcome: Outcome | None,
    *,
    current: bool = True,
) -> bool:
    assert outcome is not None
    outcomes[index] = outcome
    intrinsic = tally.count(outcome, current=current)
    if outcome.is_error:
        run.failed[index] = outcome
    else:
        run.failed.pop(index, None)
    if progress is not None:
        progress.advance(1, tally.errors)
    return intrinsic


def _settle_batch(
    run: _Run,
    request: MapRequest,
    outcomes: list[Outcome | None],
    tally: Tally,
    progress: Progress,
    batch: list[int],
    results: list[ExecutionResult],
    checks: ItemChecks,
    seen: list[bool],
    *,
    current: bool,
) -> list[int]:
    """Settle a finished batch's items, as :func:`_settle` would one by one; the indexes of
    those the current program failed intrinsically.

    An ok item that never failed before (most of them) is only stored and counted; the bar
    advances once per batch by the items it had not yet counted.
    """
    calls, failed = request.calls, run.failed
    intrinsic: list[int] = []
    oks = fresh = 0
    for index, result in zip(batch, results, strict=True):
        args, kwargs = calls[index]
        outcome = checks.outcome(result, args, kwargs)
        if not seen[index]:
            seen[index] = True
            fresh += 1
        if outcome.status == "ok" and index not in failed:
            outcomes[index] = outcome
            oks += 1
        elif _settle(run, outcomes, tally, None, index, outcome, current=current) and current:
            intrinsic.append(index)
    tally.count_ok(oks, current=current)
    if fresh:
        progress.advance(fresh, tally.errors)
    return intrinsic


def _limits(runtime: AgentRuntime, request: MapRequest) -> SandboxLimits:
    options = runtime.options
    timeout = request.timeout_seconds or options.execution_timeout_seconds
    return SandboxLimits(timeout_seconds=timeout, max_forwarded_calls=options.forwarded_call_budget)


def _bridge(runtime: AgentRuntime, method: str) -> HostBridge:
    invocation: tuple[str, tuple[Any, ...], dict[str, Any]] = (method, (), {})
    role = runtime.role
    return HostBridge(
        role=role,
        method_name=method,
        memory={},
        args=(),
        kwargs={},
        delegate=lambda name, **opts: runtime.delegate(name, opts, invocation),
        tool=lambda name, **opts: runtime.tool(name, opts, invocation),
        remember=lambda entries: vet_remember(entries, role),
        handle_for_agent=runtime.handle_for_agent,
        content=runtime.content.reader(lambda: retention_of(runtime), ContentReads()),
    )


def _executor(runtime: AgentRuntime, request: MapRequest, program: _Program) -> BatchExecutor:
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


def _default_batch(items: int, workers: int) -> int:
    # About four batches per worker: work stays balanced, a round trip is amortised.
    return max(1, min(_MAX_DEFAULT_BATCH, math.ceil(items / (workers * 4))))


def _run_batches(
    runtime: AgentRuntime,
    request: MapRequest,
    run: _Run,
    program: _Program,
    snapshot: dict[str, Any],
    pending: list[int],
    outcomes: list[Outcome | None],
    tally: Tally,
    progress: Progress,
) -> None:
    executor = _executor(runtime, request, program)
    limits = _limits(runtime, request)
    bridge = _bridge(runtime, request.method)
    contract = runtime.options.contract
    deliverable = contract.get("deliverable") if contract else None

    def checks_for(current: _Program) -> ItemChecks:
        from recurgent._lifecycle import _outcome_from_error

        return ItemChecks(
            role=runtime.role,
            method=request.method,
            code=current.generated.program.code,
            tree=current.generated.tree,
            deliverable=deliverable,
            error_outcome=_outcome_from_error,
            external=is_external_fetch(current.generated.tree),
        )

    def start(current: _Program, chosen: BatchExecutor) -> int:
        job = BatchJob(current.generated.program, snapshot, limits, bridge, runtime.options.network)
        return chosen.start(job, request.concurrency)

    workers = start(program, executor)
    run.executor = executor.capabilities.isolation
    run.workers = workers
    size = request.batch_size or _default_batch(len(pending), workers)
    run.batch_size = size
    checks = checks_for(program)
    queue: deque[list[int]] = deque(pending[i : i + size] for i in range(0, len(pending), size))
    failed_now: list[int] = []
    seen = [False] * len(outcomes)
    try:
        with _pool(workers) as pool:
            running: dict[Future[list[ExecutionResult]], tuple[list[int], ItemChecks]] = {}
            hold = False
            while queue or running:
                while queue and len(running) < workers and not hold:
                    batch = queue.popleft()
                    items: Sequence[ItemCall] = [request.calls[i] for i in batch]
                    running[pool.submit(executor.run_batch, items)] = (batch, checks)
                    run.batches += 1
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                raise_if_cancelled()  # an awaited map whose task was cancelled (ADR 0096)
                for future in done:
                    batch, used = running.pop(future)
                    results = future.result()
                    failed_now += _settle_batch(
                        run,
                        request,
                        outcomes,
                        tally,
                        progress,
                        batch,
                        results,
                        used,
                        seen,
                        current=used is checks,
                    )
                if not run.repair_attempted and tally.needs_repair():
                    hold = True
                if hold and not running:
                    hold = False
                    run.repair_attempted = True
                    repaired = _repair(runtime, request, run, outcomes, tally, failed_now)
                    successor = _successor(runtime, request, program, repaired)
                    if repaired is not None and successor is not None:
                        executor.stop()
                        run.repaired = True
                        program = repaired
                        executor = successor
                        workers = start(program, executor)
                        checks = checks_for(program)
                        tally.restart()
                        again = [i for i in failed_now if _failed(outcomes[i])]
                        for index in again:
                            _unsettle(run, tally, index, outcomes)
                        queue.extendleft(
                            again[i : i + size] for i in reversed(range(0, len(again), size))
                        )
                    failed_now = []
    finally:
        executor.stop()


def _successor(
    runtime: AgentRuntime, request: MapRequest, program: _Program, repaired: _Program | None
) -> BatchExecutor | None:
    """The executor of a repaired program, or ``None`` to keep the map's program: there is no
    other one, or the repaired one needs what this executor cannot serve."""
    if repaired is None or repaired.checksum == program.checksum:
        return None
    try:
        return _executor(runtime, request, repaired)
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


def _pool(workers: int) -> ThreadPoolExecutor | _Inline:
    if workers == 1:
        return _Inline()
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="recurgent-map")


def _failed(outcome: Outcome | None) -> bool:
    return outcome is not None and outcome.is_error


def _unsettle(run: _Run, tally: Tally, index: int, outcomes: list[Outcome | None]) -> None:
    outcome = outcomes[index]
    assert outcome is not None
    tally.uncount(outcome)
    run.failed.pop(index, None)


def _repair(
    runtime: AgentRuntime,
    request: MapRequest,
    run: _Run,
    outcomes: list[Outcome | None],
    tally: Tally,
    failed: list[int],
) -> _Program | None:
    """Run one intrinsically failed item as an ordinary call: the store repairs the stored
    program (or, without a store, the provider writes a new one). Its program is the map's
    from then on."""
    if not failed:
        return None
    index = failed.pop(0)
    _unsettle(run, tally, index, outcomes)
    state = _call(runtime, request, run, index)
    run.repair_call_id = state.frame.call_id
    _settle(run, outcomes, tally, None, index, state.outcome, current=False)
    repaired = _program_of(state)
    if repaired is None or not repaired.cacheable:
        return None
    run.program = repaired
    return repaired


# --------------------------------------------------------------------- the log


def _log_summary(runtime: AgentRuntime, run: _Run, tally: Tally, total: int) -> None:
    logger = runtime.logger
    if logger is None:
        return
    request = run.request
    duration_ms = (time.monotonic() - run.started) * 1000
    items_ms = max(duration_ms - run.program_ms, 1e-6)
    program = run.program
    base = {
        "timestamp": utc_timestamp(),
        "runtime": "python",
        "role": runtime.role,
        "method": request.method,
        "map_id": run.map_id,
        "trace_id": run.trace_id or runtime.options.trace_id,
    }
    failed = sorted(run.failed.items())
    logged = failed[:MAX_FAILED_ITEM_LINES]
    for index, outcome in logged:
        logger.emit(
            {
                **base,
                "entry_kind": "map_item_failed",
                "item_index": index,
                "args": list(request.calls[index][0]),
                "outcome_error_type": outcome.error_type,
                "outcome_error_message": outcome.error_message,
            }
        )
    logger.emit(
        {
            **base,
            "entry_kind": "map",
            "map_kind": "starmap" if request.star else "map",
            "map_mode": run.mode,
            "map_items": total,
            "map_ok": tally.ok,
            "map_errors": tally.errors,
            "map_timeouts": tally.timeouts,
            "map_error_types": dict(sorted(tally.by_type.items())),
            "map_failed_items_logged": len(logged),
            "map_failed_items_omitted": len(failed) - len(logged),
            "map_executor": run.executor,
            "map_workers": run.workers,
            "map_batches": run.batches,
            "map_batch_size": run.batch_size,
            "map_program_source": "shared" if run.shared else (program.source if program else None),
            "map_program_checksum": program.checksum if program else None,
            "map_first_call_id": run.first_call_id,
            "map_repair_attempted": run.repair_attempted,
            "map_repaired": run.repaired,
            "map_repair_call_id": run.repair_call_id,
            "duration_ms": round(duration_ms, 1),
            "map_program_ms": round(run.program_ms, 1),
            "map_items_per_second": round(total / (items_ms / 1000), 1) if total else 0.0,
        }
    )
