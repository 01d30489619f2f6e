"""One attempt's execution: the sandbox or worker run, the checks on its result, the contract.

Split from :mod:`recurgent._lifecycle` (which decides what happens next); this module only
raises the failures the lanes handle and returns the attempt's Outcome and uncommitted writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from recurgent._contracts import validate_deliverable
from recurgent._execution import ExecutionInputs
from recurgent._guardrails import provenance_violation
from recurgent._journal import Writes
from recurgent._lifecycle._continuity import content_reader
from recurgent._lifecycle._generation import Generated
from recurgent._lifecycle._map_items import refuse_map_writes
from recurgent._lifecycle._role_continuity import check_continuity
from recurgent._lifecycle._state import CallState
from recurgent._registry import TOOLS_KEY, integrity_violation
from recurgent._sandbox import (
    ExecutionResult,
    ExecutionSandbox,
    HandleOps,
    HostBridge,
    SandboxLimits,
)
from recurgent.errors import NonSerializableResultError
from recurgent.outcome import Outcome, coerce_outcome

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime
    from recurgent._worker._executor import ProcessExecutor

__all__ = ["Forwarding", "execute_attempt", "vet_remember"]


def execute_attempt(
    runtime: AgentRuntime, state: CallState, generated: Generated, limits: SandboxLimits
) -> tuple[Outcome, Writes | None]:
    """Run one validated program; raise the failures the lanes handle.

    Returns the outcome and the attempt's memory writes, not yet committed.
    """
    if generated.violation is not None:
        raise generated.violation
    state.attempt_stage = "validated"
    role, method = runtime.role, state.method
    broken = integrity_violation(runtime.memory, phase="pre_execution", role=role, method=method)
    if broken is not None:
        # The caller broke the registry before the program ran, and rollback restores exactly
        # that state: no regenerated program can fix it, so retrying would only spend calls.
        broken.metadata["guardrail_class"] = "terminal_guardrail"
        raise broken
    forwarding = Forwarding(runtime, (method, state.args, state.kwargs), role)
    bridge = HostBridge(
        role=role,
        method_name=method,
        memory=runtime.memory,
        args=state.args,
        kwargs=state.kwargs,
        delegate=forwarding.delegate,
        tool=forwarding.tool,
        remember=forwarding.remember,
        handle_for_agent=runtime.handle_for_agent,
        content=content_reader(runtime, state),
        memory_shape=runtime.memory_shape,
    )
    # A program that never set result but ended in an expression returns it (ADR 0043).
    state.result_inferred = generated.compiled is not None and generated.compiled.result_inferred
    executor = _worker_for(runtime, generated)
    if executor is not None:
        result = _run_in_worker(runtime, state, generated, limits, bridge, executor)
    else:
        sandbox = ExecutionSandbox(
            bridge,
            limits=limits,
            network=runtime.options.network,
            clock=runtime.clock,
            commit_memory=False,
        )
        assert generated.compiled is not None
        result = sandbox.run(generated.compiled)
        state.execution_receiver = "sandbox"
        state.worker = None
    outcome = _attempt_outcome(runtime, state, generated, result)
    return outcome, result.writes


class Forwarding:
    """The forwarded operations one attempt (or a map's batch) lends its program, as one
    object whose bound methods the bridge holds: fewer objects per attempt than a closure each
    (they live as long as the sandbox's own cycle, so the collector, not reference counting,
    frees them)."""

    __slots__ = ("_invocation", "_role", "_runtime")

    def __init__(
        self,
        runtime: AgentRuntime,
        invocation: tuple[str, tuple[Any, ...], Mapping[str, Any]],
        role: str,
    ) -> None:
        self._runtime, self._invocation, self._role = runtime, invocation, role

    # Positional-only: an option a program names "self" or "name" reaches the option checks
    # like any other, never this signature.
    def delegate(self, name: str, /, **options: Any) -> HandleOps:
        return self._runtime.delegate(name, options, self._invocation)

    def tool(self, name: str, /, **options: Any) -> HandleOps:
        return self._runtime.tool(name, options, self._invocation)

    def remember(self, entries: Mapping[str, Any], /) -> None:
        vet_remember(entries, self._role)


def _worker_for(runtime: AgentRuntime, generated: Generated) -> ProcessExecutor | None:
    """The worker executor of this program, or ``None`` for the in-process sandbox.

    Raises the manifest, policy and environment errors (typed, before anything ran).
    """
    slot = runtime.workers
    if slot is None:
        return None
    declared = generated.program.dependencies
    if not declared:
        return slot.select(None, role=runtime.role)
    dependencies = [{"name": d.name, "version": d.version} for d in declared]
    return slot.select(dependencies, role=runtime.role)


def _run_in_worker(
    runtime: AgentRuntime,
    state: CallState,
    generated: Generated,
    limits: SandboxLimits,
    bridge: HostBridge,
    executor: ProcessExecutor,
) -> ExecutionResult:
    """Run in the worker; its writes come back uncommitted, like the sandbox's journal."""
    with runtime.lock:
        snapshot = dict(runtime.memory)
    inputs = ExecutionInputs(
        memory=snapshot,
        args=state.args,
        kwargs=state.kwargs,
        network=runtime.options.network,
        commit_memory=False,
    )
    result = executor.run(generated.program, inputs, limits, bridge)
    state.execution_receiver = "worker"
    state.worker = dict(result.log_fields)
    return result


def vet_remember(entries: Mapping[str, Any], role: str) -> None:
    """``remember()`` from generated code may not put executable objects in the registry."""
    if TOOLS_KEY in entries:
        violation = integrity_violation(
            {TOOLS_KEY: entries[TOOLS_KEY]}, phase="remember", role=role, method="remember"
        )
        if violation is not None:
            raise violation


def _attempt_outcome(
    runtime: AgentRuntime, state: CallState, generated: Generated, result: ExecutionResult
) -> Outcome:
    role, method = runtime.role, state.method
    state.stdout = result.stdout
    state.forwarded_calls = result.forwarded_calls
    if result.violations:
        raise result.violations[0]
    if state.map_id is not None and result.error is None:
        refuse_map_writes(result.writes, role, method)  # ADR 0110
    if result.error is None or isinstance(result.error, NonSerializableResultError):
        # An executable object in the registry is a registry violation before it is a
        # non-plain memory value: the guardrail lane's feedback names the registry.
        after = result.memory if result.memory is not None else _after(runtime, result.writes)
        broken = integrity_violation(after, phase="post_execution", role=role, method=method)
        if broken is not None:
            raise broken
    if result.error is not None:
        raise result.error
    outcome = coerce_outcome(
        result.value,
        tool_role=role,
        method_name=method,
        call_id=state.frame.call_id,
        code=generated.program.code,
    )
    if outcome.status == "ok":
        violation = provenance_violation(generated.tree, outcome.value)
        if violation is not None:
            raise violation
        outcome = _check_contract(runtime, state, outcome)
    check_continuity(runtime, state, generated.program.code, generated.tree, outcome)
    return outcome


def _after(runtime: AgentRuntime, writes: Writes | None) -> Mapping[str, Any]:
    """Memory as it would be after committing a worker's writes (for the integrity check)."""
    if writes is None or writes.empty:
        return runtime.memory
    after = dict(runtime.memory)
    for key in writes.delete:
        after.pop(key, None)
    after.update(writes.set)
    return after


def _check_contract(runtime: AgentRuntime, state: CallState, outcome: Outcome) -> Outcome:
    contract = runtime.options.contract
    deliverable = contract.get("deliverable") if contract else None
    if deliverable is None:
        # Nothing to check (most calls): the fields a check that did not apply would leave.
        state.contract_validation_applied = False
        state.contract_validation_passed = None
        state.contract_validation_mismatch = None
        state.contract_validation_expected_keys = []
        state.contract_validation_actual_keys = []
        return outcome
    check = validate_deliverable(deliverable, outcome.value, state.args, state.kwargs)
    state.contract_validation_applied = check.applied
    state.contract_validation_passed = check.passed
    state.contract_validation_mismatch = check.mismatch
    state.contract_validation_expected_keys = check.expected_keys
    state.contract_validation_actual_keys = check.actual_keys
    return check.checked_outcome(
        outcome, role=runtime.role, method=state.method, typed=state.frame.depth == 0
    )
