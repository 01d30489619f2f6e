"""Batches in this process: one compiled program, a fresh attempt for every item (ADR 0111).

Each item is its own attempt on its batch's :class:`~recurgent._sandbox._batch.BatchSandbox`:
its own globals, journal, deadline and forwarded-call budget, so nothing one item's run leaves
behind (a global it set, a class it made, a copy of memory it changed) reaches the next. The memory every item reads is the map's snapshot; the journal
copies a value on first touch, so an item that changes what it read changes only its copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from recurgent._execution import BatchJob, Capabilities, ItemCall
from recurgent._sandbox import CompiledProgram, ExecutionResult, compile_program
from recurgent._sandbox._batch import BatchSandbox
from recurgent.errors import InvalidCodeError

__all__ = ["InProcessBatches"]


class InProcessBatches:
    """Items in a loop on the calling thread; every forwarded call is served (the agent is here)."""

    capabilities = Capabilities(
        dependencies=False, isolation="in_process", interrupts_c_calls=False
    )

    def __init__(self) -> None:
        self._job: BatchJob | None = None
        self._compiled: CompiledProgram | None = None
        self._invalid: InvalidCodeError | None = None

    def start(self, job: BatchJob, workers: int | None) -> int:
        """Compile the program once; ``workers`` threads may run batches (default 1: the GIL
        leaves more threads nothing to gain for a program that only computes)."""
        self._job = job
        try:
            self._compiled = compile_program(job.program.code)
        except InvalidCodeError as error:
            self._invalid = error
        return workers or 1

    def run_batch(self, items: Sequence[ItemCall]) -> list[ExecutionResult]:
        """Run each item in a fresh sandbox over the snapshot; writes are returned, never applied."""
        job, compiled = self._job, self._compiled
        assert job is not None
        if compiled is None:
            assert self._invalid is not None
            return [ExecutionResult(error=self._invalid) for _ in items]
        # One set-up per batch; each item a fresh attempt on it (ADR 0111).
        sandbox = BatchSandbox(
            dataclasses.replace(job.bridge, memory=job.memory),
            limits=job.limits,
            network=job.network,
        )
        return sandbox.run_items(compiled, items)

    def stop(self) -> None:
        """Nothing to release."""
        self._job = None
