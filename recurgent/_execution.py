"""The execution port: one protocol for every place a generated program can run.

The lifecycle hands an executor the program, the call's inputs, the attempt's limits and the
host bridge, and gets back an ``ExecutionResult``; it never needs to know whether the program ran
in this process (:class:`InProcessExecutor`, the ``_sandbox``) or in a worker process
(``recurgent._worker.ProcessExecutor``). ``capabilities`` lets it refuse an incompatible choice
before any side effect (a program with dependencies cannot run in process).

``Agent.map`` runs one program over many items through a :class:`BatchExecutor` (ADR 0111):
started once with a :class:`BatchJob` (the program, a snapshot of memory, the limits), it runs
batches of items, each item its own attempt, and reports one ``ExecutionResult`` per item. Its
executors live in ``recurgent._map`` (in process, worker processes, Ray actors).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from recurgent._sandbox import (
    ExecutionResult,
    ExecutionSandbox,
    HostBridge,
    SandboxLimits,
    compile_program,
)
from recurgent.errors import InvalidCodeError
from recurgent.program import Program

__all__ = [
    "FORWARDED",
    "BatchExecutor",
    "BatchJob",
    "Capabilities",
    "ExecutionInputs",
    "Executor",
    "InProcessExecutor",
    "ItemCall",
]

#: The ways out of an attempt an executor may or may not serve (``Capabilities.serves``).
FORWARDED = frozenset({"delegate", "tool", "remember", "content", "network"})


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an executor can do.

    Attributes:
        dependencies: Can run programs that declare pip packages.
        isolation: ``"in_process"``, ``"process"`` (a separate OS process) or ``"remote"``.
        interrupts_c_calls: Can stop a program stuck in one long C call (by killing it).
        serves: The forwarded calls it can answer (:data:`FORWARDED`): an executor far from
            the agent (a Ray actor) reaches no agent and no content store.
    """

    dependencies: bool
    isolation: Literal["in_process", "process", "remote"]
    interrupts_c_calls: bool
    serves: frozenset[str] = FORWARDED


@dataclass(frozen=True, slots=True)
class ExecutionInputs:
    """What one call passes to its program.

    Attributes:
        memory: The memory the program sees; with ``commit_memory`` the executor applies the
            program's writes to it.
        args: Positional arguments.
        kwargs: Keyword arguments.
        network: The agent's network policy (``"allow"``, ``"deny"`` or host names).
        commit_memory: Apply the program's writes to ``memory`` (the default); when False they
            come back uncommitted in ``ExecutionResult.writes`` for the lifecycle to commit only
            if it accepts the attempt (ADR 0027).
    """

    memory: dict[str, Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    network: Any = "allow"
    commit_memory: bool = True


@runtime_checkable
class Executor(Protocol):
    """Runs one attempt of a generated program and reports what happened."""

    @property
    def capabilities(self) -> Capabilities:
        """What this executor can do."""
        ...

    def run(
        self,
        program: Program,
        inputs: ExecutionInputs,
        limits: SandboxLimits,
        bridge: HostBridge,
    ) -> ExecutionResult:
        """Run ``program`` once; failures of the program are reported in the result, not raised.

        ``bridge`` supplies role, method and the forwarded operations; its memory, args and
        kwargs are replaced by ``inputs``.
        """
        ...


class InProcessExecutor:
    """Today's sandbox behind the port: compile under the policy, run in this process."""

    capabilities = Capabilities(
        dependencies=False, isolation="in_process", interrupts_c_calls=False
    )

    def run(
        self,
        program: Program,
        inputs: ExecutionInputs,
        limits: SandboxLimits,
        bridge: HostBridge,
    ) -> ExecutionResult:
        """Compile and run ``program`` in a fresh :class:`ExecutionSandbox`."""
        try:
            compiled = compile_program(program.code)
        except InvalidCodeError as error:
            return ExecutionResult(error=error)
        bound = dataclasses.replace(
            bridge, memory=inputs.memory, args=tuple(inputs.args), kwargs=dict(inputs.kwargs)
        )
        sandbox = ExecutionSandbox(
            bound, limits=limits, network=inputs.network, commit_memory=inputs.commit_memory
        )
        return sandbox.run(compiled)


#: One item of a map: the positional and keyword arguments of its call.
ItemCall = tuple[tuple[Any, ...], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class BatchJob:
    """What every item of one map shares (ADR 0111).

    Attributes:
        program: The one program every item runs.
        memory: The snapshot of the agent's memory items read; no item's writes reach it.
        limits: Each item's own limits (its own deadline).
        bridge: Role, method and the forwarded operations (its memory and arguments are
            replaced per item).
        network: The agent's network policy.
    """

    program: Program
    memory: dict[str, Any]
    limits: SandboxLimits
    bridge: HostBridge
    network: Any = "allow"


@runtime_checkable
class BatchExecutor(Protocol):
    """Runs batches of items of one program; each item is its own attempt."""

    @property
    def capabilities(self) -> Capabilities:
        """What this executor can do."""
        ...

    def start(self, job: BatchJob, workers: int | None) -> int:
        """Get ready to run ``job`` on up to ``workers`` workers (``None``: its own choice);
        returns how many batches may run at once.

        Raises:
            UsageError: the job cannot run here (its memory cannot cross, the engine is absent).
        """
        ...

    def run_batch(self, items: Sequence[ItemCall]) -> list[ExecutionResult]:
        """Run one batch and return one result per item, in order; thread-safe for as many
        callers as :meth:`start` returned. Failures of an item are in its result."""
        ...

    def stop(self) -> None:
        """Release the workers (idempotent)."""
        ...
