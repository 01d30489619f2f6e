"""The execution port: one protocol for every place a generated program can run.

The lifecycle hands an executor the program, the call's inputs, the attempt's limits and the
host bridge, and gets back an ``ExecutionResult``; it never needs to know whether the program ran
in this process (:class:`InProcessExecutor`, the ``_sandbox``) or in a worker process
(``recurgent._worker.ProcessExecutor``). ``capabilities`` lets it refuse an incompatible choice
before any side effect (a program with dependencies cannot run in process).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
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

__all__ = ["Capabilities", "ExecutionInputs", "Executor", "InProcessExecutor"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an executor can do.

    Attributes:
        dependencies: Can run programs that declare pip packages.
        isolation: ``"in_process"``, ``"process"`` (a separate OS process) or ``"remote"``.
        interrupts_c_calls: Can stop a program stuck in one long C call (by killing it).
    """

    dependencies: bool
    isolation: Literal["in_process", "process", "remote"]
    interrupts_c_calls: bool


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
