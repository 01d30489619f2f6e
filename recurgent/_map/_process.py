"""Batches on worker processes (``executor="process"``; ADR 0111).

Each worker is the worker room's own (``ProcessExecutor`` over a ``WorkerSupervisor``), under
the agent's isolation settings and, for a program with dependencies, in its environment: the
same process, limits, retirement and forwarded-call answers an ordinary call in a worker gets.
A batch is run item by item on one worker (one request each, the clock of each its own); the
map's workers run batches side by side and are shut down when the map ends.
"""

from __future__ import annotations

import queue
import sys
from collections.abc import Sequence
from typing import Any

from recurgent._execution import BatchJob, Capabilities, ExecutionInputs, ItemCall
from recurgent._sandbox import ExecutionResult
from recurgent._worker._env import Environment
from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._isolation import IsolationSettings
from recurgent._worker._supervisor import WorkerSupervisor

__all__ = ["ProcessBatches"]

#: Workers a map starts when it is not told how many.
_DEFAULT_WORKERS = 2


class ProcessBatches:
    """A few worker processes of one isolation and environment, for one map.

    Args:
        isolation: The agent's confinement (its workers' backend).
        environment: The program's dependency environment, or ``None``.
    """

    capabilities = Capabilities(dependencies=True, isolation="process", interrupts_c_calls=True)

    def __init__(self, isolation: IsolationSettings, environment: Environment | None) -> None:
        self._isolation = isolation
        self._environment = environment
        self._idle: queue.SimpleQueue[ProcessExecutor] = queue.SimpleQueue()
        self._supervisors: list[WorkerSupervisor] = []
        self._job: BatchJob | None = None

    def start(self, job: BatchJob, workers: int | None) -> int:
        """Start the workers (in the background: each run's clock starts once it is ready)."""
        self._job = job
        count = max(1, workers or _DEFAULT_WORKERS)
        environment = self._environment
        for _ in range(count):
            if environment is None:
                supervisor = WorkerSupervisor(python=sys.executable, isolation=self._isolation)
            else:
                supervisor = WorkerSupervisor(
                    python=str(environment.python),
                    site_packages=environment.site_packages,
                    env_dir=environment.env_dir,
                    isolation=self._isolation,
                )
            supervisor.prestart()
            self._supervisors.append(supervisor)
            self._idle.put(ProcessExecutor(supervisor, environment))
        return count

    def run_batch(self, items: Sequence[ItemCall]) -> list[ExecutionResult]:
        """Run the batch's items one after another on one idle worker."""
        job = self._job
        assert job is not None
        executor = self._idle.get()
        try:
            return [self._run(executor, job, args, kwargs) for args, kwargs in items]
        finally:
            self._idle.put(executor)

    @staticmethod
    def _run(
        executor: ProcessExecutor, job: BatchJob, args: tuple[Any, ...], kwargs: Any
    ) -> ExecutionResult:
        inputs = ExecutionInputs(
            memory=job.memory,
            args=tuple(args),
            kwargs=dict(kwargs),
            network=job.network,
            commit_memory=False,
        )
        return executor.run(job.program, inputs, job.limits, job.bridge)

    def stop(self) -> None:
        """Shut the map's workers down."""
        supervisors, self._supervisors = self._supervisors, []
        for supervisor in supervisors:
            supervisor.shutdown()
