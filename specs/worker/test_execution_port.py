"""The execution port: the in-process sandbox behind the same protocol as the worker."""

from __future__ import annotations

from recurgent._execution import ExecutionInputs, Executor, InProcessExecutor
from recurgent._sandbox import SandboxLimits
from recurgent.program import Program
from specs.sandbox.support import Host


def test_in_process_executor_is_an_executor_without_dependencies() -> None:
    """InProcessExecutor satisfies Executor and says it cannot run dependencies or stop C calls."""
    executor = InProcessExecutor()
    assert isinstance(executor, Executor)
    caps = executor.capabilities
    assert (caps.dependencies, caps.isolation, caps.interrupts_c_calls) == (
        False,
        "in_process",
        False,
    )


def test_in_process_executor_runs_with_the_inputs_it_is_given() -> None:
    """Memory, args and kwargs come from the inputs, not from the bridge."""
    host = Host(memory={"ignored": True})
    memory = {"n": 1}
    result = InProcessExecutor().run(
        Program(code="memory['n'] += args[0]\nreturn kwargs['k']"),
        ExecutionInputs(memory=memory, args=(4,), kwargs={"k": "v"}),
        SandboxLimits(timeout_seconds=5.0),
        host.bridge(),
    )
    assert (result.error, result.value, memory) == (None, "v", {"n": 5})
    assert host.memory == {"ignored": True}


def test_in_process_executor_reports_compile_failures() -> None:
    """Code that does not compile is an invalid_code error in the result, not an exception."""
    result = InProcessExecutor().run(
        Program(code="return ().__class__.__bases__"),
        ExecutionInputs(memory={}),
        SandboxLimits(),
        Host().bridge(),
    )
    assert result.error is not None and result.error.error_type == "invalid_code"
