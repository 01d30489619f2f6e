"""``Agent.map``/``Agent.starmap``: one program over many items (ADRs 0110-0113).

The sequence, decided here and nowhere else:

1. **Check** the request, the executor choice and the items before anything runs
   (``UsageError``).
2. **Obtain the program once.** The first item runs as an ordinary dynamic call
   (:func:`~recurgent._lifecycle.call_state`): stored, repaired or generated exactly as any call
   would be, through the same lanes, with one difference: its program may not write memory.
   Concurrent maps of the same method on the same agent wait for that one call (single
   flight) and share its program (:mod:`._map_program`).
3. **Run the other items** in batches on the executor, each item its own attempt against a
   read-only snapshot of memory with its own deadline (:mod:`._map_executor`); each result
   becomes its Outcome (:mod:`._map_items`).
4. **Repair once** when the program fails intrinsically on many items
   (:meth:`~._map_items.Tally.needs_repair`): one failing item runs again as an ordinary call
   (the store's repair path; a fresh generation without a store), and the failed and remaining
   items run the program that call ends with.
5. **Log** one summary line, and one line for each failed item up to a cap; never a line per
   item (:mod:`._map_log`). The calls of steps 2 and 4 write their own ordinary lines, marked
   with the map's id.

A program that is not reusable for other inputs (it ignores or hard-codes its arguments,
ADR 0037) is not mapped: every item is then an ordinary call.
"""

from __future__ import annotations

import operator
import secrets
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from itertools import repeat
from typing import TYPE_CHECKING, Any

from recurgent._cancellation import raise_if_cancelled
from recurgent._execution import BatchExecutor, BatchJob, ItemCall
from recurgent._guardrails import is_external_fetch
from recurgent._history import HISTORY_KEY
from recurgent._lifecycle._map_executor import (
    batch_pool,
    bridge_for,
    default_batch,
    executor_for,
    in_callers_context,
    limits_for,
    successor_of,
)
from recurgent._lifecycle._map_items import ItemChecks, Tally
from recurgent._lifecycle._map_log import MapRun, log_summary
from recurgent._lifecycle._map_program import Program, call_item, obtain_program, program_of
from recurgent._lifecycle._map_request import MapRequest
from recurgent._map import check_choice, check_items
from recurgent._map._progress import Progress, open_progress
from recurgent._sandbox import ExecutionResult
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime

__all__ = ["run_map"]


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
    run = MapRun(secrets.token_hex(8), request)
    total = len(request.calls)
    outcomes: list[Outcome | None] = [None] * total
    tally = Tally()
    progress = open_progress(request.progress, total, f"{runtime.role}.{request.method}")
    try:
        if total:
            _map_all(runtime, request, run, outcomes, tally, progress)
    finally:
        progress.close()
        log_summary(runtime, run, tally, total)
    assert all(map(operator.is_not, outcomes, repeat(None)))
    return outcomes  # type: ignore[return-value]


def _map_all(
    runtime: AgentRuntime,
    request: MapRequest,
    run: MapRun,
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
    program, first = obtain_program(runtime, request, run)
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
            state = call_item(runtime, request, run, index)
            _settle(run, outcomes, tally, progress, index, state.outcome)
        return
    _run_batches(runtime, request, run, program, snapshot, pending, outcomes, tally, progress)


def _settle(
    run: MapRun,
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
    run: MapRun,
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


def _run_batches(
    runtime: AgentRuntime,
    request: MapRequest,
    run: MapRun,
    program: Program,
    snapshot: dict[str, Any],
    pending: list[int],
    outcomes: list[Outcome | None],
    tally: Tally,
    progress: Progress,
) -> None:
    executor = executor_for(runtime, request, program)
    limits = limits_for(runtime, request)
    bridge = bridge_for(runtime, request.method)
    contract = runtime.options.contract
    deliverable = contract.get("deliverable") if contract else None

    def checks_for(current: Program) -> ItemChecks:
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

    def start(current: Program, chosen: BatchExecutor) -> int:
        job = BatchJob(current.generated.program, snapshot, limits, bridge, runtime.options.network)
        return chosen.start(job, request.concurrency)

    workers = start(program, executor)
    run.executor = executor.capabilities.isolation
    run.workers = workers
    size = request.batch_size or default_batch(len(pending), workers)
    run.batch_size = size
    checks = checks_for(program)
    queue: deque[list[int]] = deque(pending[i : i + size] for i in range(0, len(pending), size))
    failed_now: list[int] = []
    seen = [False] * len(outcomes)
    try:
        with batch_pool(workers) as pool:
            running: dict[Future[list[ExecutionResult]], tuple[list[int], ItemChecks]] = {}
            hold = False
            while queue or running:
                while queue and len(running) < workers and not hold:
                    batch = queue.popleft()
                    items: Sequence[ItemCall] = [request.calls[i] for i in batch]
                    job = in_callers_context(executor.run_batch)
                    running[pool.submit(job, items)] = (batch, checks)
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
                    successor = successor_of(runtime, request, program, repaired)
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


def _failed(outcome: Outcome | None) -> bool:
    return outcome is not None and outcome.is_error


def _unsettle(run: MapRun, tally: Tally, index: int, outcomes: list[Outcome | None]) -> None:
    outcome = outcomes[index]
    assert outcome is not None
    tally.uncount(outcome)
    run.failed.pop(index, None)


def _repair(
    runtime: AgentRuntime,
    request: MapRequest,
    run: MapRun,
    outcomes: list[Outcome | None],
    tally: Tally,
    failed: list[int],
) -> Program | None:
    """Run one intrinsically failed item as an ordinary call: the store repairs the stored
    program (or, without a store, the provider writes a new one). Its program is the map's
    from then on."""
    if not failed:
        return None
    index = failed.pop(0)
    _unsettle(run, tally, index, outcomes)
    state = call_item(runtime, request, run, index)
    run.repair_call_id = state.frame.call_id
    _settle(run, outcomes, tally, None, index, state.outcome, current=False)
    repaired = program_of(state)
    if repaired is None or not repaired.cacheable:
        return None
    run.program = repaired
    return repaired
