"""The call lifecycle: one dynamic call from prompt to Outcome, history record and log line.

This is the only module that decides retries and writes log events (ADR 0006). Data flows one
way: the agent hands over an :class:`AgentRuntime`; prompting, providers, guardrails, the sandbox
and the logger return values; the lifecycle returns an :class:`~recurgent.outcome.Outcome`.

Worst case, one call makes ``M * (1 + G + E + O)`` provider requests, where ``M`` is
``max_generation_attempts``, ``G`` the guardrail budget, ``E`` the execution repair budget (1)
and ``O`` the outcome-repair budget: 8 with the defaults. Each lane regenerates at most its
budget's number of times, so a call runs at most ``1 + G + E + O`` generation rounds, and each
round asks the provider at most ``M`` times. Calls made by delegated tools are their own calls
and are not counted here.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recurgent._call import enter_frame
from recurgent._cancellation import CallCancelled, raise_if_cancelled
from recurgent._content_store import ContentStore
from recurgent._forksafe import fork_safe_rlock
from recurgent._history import HistoryCursor, append_record, history_records
from recurgent._levels import MemoryShape
from recurgent._lifecycle import _persistence, _provenance, _recording
from recurgent._lifecycle._attempt import execute_attempt
from recurgent._lifecycle._commit import commit, note_shadowing
from recurgent._lifecycle._continuity import keep_answer, note_history_access
from recurgent._lifecycle._generation import Generated, generate_program
from recurgent._lifecycle._lane_steps import (
    Counters,
    contract_step,
    execution_step,
    guardrail_step,
    outcome_step,
)
from recurgent._lifecycle._lanes import Feedback, failure_class, violation_cause
from recurgent._lifecycle._patterns import AgentPatterns, finish_patterns, recent_patterns
from recurgent._lifecycle._role_continuity import finish_continuity, prompt_profile
from recurgent._lifecycle._state import CallState
from recurgent._observability import CallLogger
from recurgent._options import AgentOptions
from recurgent._profiles import ProfileBinding
from recurgent._prompting import Prompts, build_prompts
from recurgent._sandbox import HandleOps, SandboxLimits
from recurgent._sandbox._limits import (
    AttemptStopped,
    Clock,
    MemoryLimitExceeded,
    enclosing_remaining,
    monotonic_clock,
)
from recurgent._secret_index import SecretIndex
from recurgent._self_model import SelfModelSlot
from recurgent._store import Store, checksum
from recurgent._values import json_safe, utc_timestamp
from recurgent.errors import (
    ExecutionError,
    ExecutionTimeoutError,
    GuardrailRetryExhaustedError,
    GuardrailViolationError,
    RecurgentError,
    ResourceLimitError,
    UsageError,
)
from recurgent.outcome import Outcome, with_origin
from recurgent.program import Program
from recurgent.providers import Provider, ProviderRequest

if TYPE_CHECKING:
    from recurgent._worker._slot import LaneSlot

__all__ = ["USER_FACING_EXHAUSTION", "AgentRuntime", "call_state", "run_call"]

USER_FACING_EXHAUSTION = "This request couldn't be completed after multiple attempts."
_NORMALIZATION_POLICY = "guardrail_exhaustion_boundary_v1"


@dataclass(frozen=True, slots=True)
class AgentRuntime:
    """What an agent lends the lifecycle for its calls.

    Attributes:
        role: The agent's role.
        options: Its validated options.
        memory: Its live memory dict.
        provider: Returns its provider (built on first use).
        logger: Its call logger, or ``None`` when logging is off.
        delegate: ``delegate(role, options, invocation)`` for generated code.
        tool: ``tool(name, options, invocation)`` for generated code.
        remember: Writes entries into memory and checks the tool registry (kept for callers;
            ``remember()`` from generated code writes into the attempt's journal view instead).
        handle_for_agent: Handle operations for an agent object, else ``None``.
        clock: Monotonic clock for execution deadlines.
        lock: Guards the short critical sections on memory: committing an attempt's writes and
            appending a history record. Never held while a call runs (ADR 0027).
        history: How far the history list has been checked (ADR 0028).
        store: Its tool store, or ``None`` when persistence is off (ADR 0047).
        workers: Its worker lane (made on first use): programs with dependencies, or every
            program under ``isolation="process"``, run in a worker process (ADR 0039-0042).
        secrets: The secret values in its memory, cached per key for the log (ADR 0120).
        content: Its content store: kept answers for ``content(ref)`` (ADR 0101).
        patterns: Its pattern memory without a store, and its latest programs (ADR 0107).
        profiles: Its role profile and observations (ADR 0083).
        self_model: Its last captured call, for ``Agent.self_model`` (ADR 0085).
        memory_shape: Whether its memory may hold a container at two places, learnt from its
            commits: until it may, a patch needs no walk of memory (ADR 0161).
    """

    role: str
    options: AgentOptions
    memory: dict[str, Any]
    provider: Callable[[], Provider]
    logger: CallLogger | None
    delegate: Callable[
        [str, Mapping[str, Any], tuple[str, tuple[Any, ...], Mapping[str, Any]]], HandleOps
    ]
    tool: Callable[
        [str, Mapping[str, Any], tuple[str, tuple[Any, ...], Mapping[str, Any]]], HandleOps
    ]
    remember: Callable[[Mapping[str, Any]], None]
    handle_for_agent: Callable[[object], HandleOps | None]
    clock: Clock = monotonic_clock
    lock: threading.RLock = field(default_factory=fork_safe_rlock)
    history: HistoryCursor = field(default_factory=HistoryCursor)
    store: Store | None = None
    workers: LaneSlot | None = None
    secrets: SecretIndex = field(default_factory=SecretIndex)
    content: ContentStore = field(default_factory=ContentStore)
    patterns: AgentPatterns = field(default_factory=AgentPatterns)
    profiles: ProfileBinding | None = None
    self_model: SelfModelSlot | None = None
    memory_shape: MemoryShape = field(default_factory=MemoryShape)
    #: The dynamic methods called on the agent so far: a key a program writes under one of
    #: these names is reported in the log (``memory_key_shadows_method``, ADR 0100).
    methods: set[str] = field(default_factory=set)


def run_call(
    runtime: AgentRuntime,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    host_call: bool = False,
) -> Outcome:
    """Perform one dynamic call and return its Outcome (never raises for runtime failures).

    ``host_call``: the host's own code calls an agent it built (not generated code, not an
    agent generated code built); the programs it writes are the host's, and only such programs
    answer it from the store (ADR 0074). Unknown callers are not the host.
    """
    outcome = call_state(runtime, method, args, kwargs, host_call=host_call).outcome
    assert outcome is not None
    return outcome


def call_state(
    runtime: AgentRuntime,
    method: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    host_call: bool = False,
    map_id: str | None = None,
) -> CallState:
    """:func:`run_call`, returning the whole call state (the program that ran, its source).

    ``map_id``: the call obtains (or repairs) the program of ``Agent.map``; its program may
    not write memory (ADR 0110).
    """
    options = runtime.options
    runtime.methods.add(method)
    with enter_frame(options.trace_id) as frame:
        state = CallState(
            role=runtime.role,
            model=options.model,
            method=method,
            args=args,
            kwargs=kwargs,
            frame=frame,
            contract=dict(options.contract) if options.contract else None,
            contract_source=options.contract_source,
            host_call=host_call,
            map_id=map_id,
        )
        started = time.monotonic()
        try:
            state.outcome = _run_attempts(runtime, state)
        except UsageError:
            raise
        except RecurgentError as error:
            state.error = error
            state.outcome = _outcome_from_error(error, runtime.role, method, frame.depth)
        except AttemptStopped as stop:
            # An internal stop signal never leaves a dynamic call (issue 9, R6).
            stopped = _stopped(stop, runtime.role, method)
            state.rollback_applied = True
            state.error = stopped
            state.outcome = _outcome_from_error(stopped, runtime.role, method, frame.depth)
        except (KeyboardInterrupt, SystemExit, CallCancelled) as stop:
            # The attempt's writes were never committed; the log says what happened. A
            # cancelled awaited call (ADR 0096) ends here too.
            state.interrupted = True
            state.rollback_applied = True
            if isinstance(stop, CallCancelled):
                state.error = stop
            raise
        finally:
            state.duration_ms = (time.monotonic() - started) * 1000
            if state.outcome is not None:
                if state.outcome.status == "error":
                    state.failure_class = failure_class(state.outcome.error_type)
                # Where the answer came from (ADR 0098): the call, and the program the log shows.
                state.outcome = with_origin(state.outcome, call_id=frame.call_id, code=state.code)
            _finish(runtime, state)
        return state


def _stopped(stop: AttemptStopped, role: str, method: str) -> RecurgentError:
    where = f"{role}.{method}"
    if isinstance(stop, MemoryLimitExceeded):
        return ResourceLimitError(
            f"Resource limit in {where}: an attempt's memory limit stopped the call",
            root_class=type(stop).__name__,
        )
    return ExecutionTimeoutError(f"Execution timeout in {where}: an attempt's deadline passed")


def _finish(runtime: AgentRuntime, state: CallState) -> None:
    if not state.interrupted:
        state.finished_at = utc_timestamp()
        _append_history(runtime, state)
        note_history_access(state)
        finish_continuity(runtime, state)  # role profile, namespace, self model (ADRs 0083-0085)
        # --- persistence (ADR 0047): every program that ran is folded into its stored artifact.
        try:
            _recording.record(runtime, state)
        except Exception as error:  # noqa: BLE001 - a store problem never breaks the call
            state.artifact_write = f"error: {type(error).__name__}"
        # ---
        # After the record: the lifecycle state it gave the version is what a caller of this
        # agent as a tool records (ADRs 0107-0109).
        finish_patterns(runtime, state)
    if runtime.logger is not None:
        try:
            entry = state.log_entry(
                debug=runtime.options.debug, memory=runtime.memory, secrets=runtime.secrets
            )
        except (Exception, AttemptStopped) as error:  # noqa: BLE001 - logging never breaks a call
            if runtime.options.debug:
                sys.stderr.write(
                    f"[AGENT LOG ERROR {state.role}.{state.method}] {type(error).__name__}\n"
                )
            return
        runtime.logger.emit(entry, prepared=True)


def _append_history(runtime: AgentRuntime, state: CallState) -> None:
    # The answer is kept first, so the record can name it (ADR 0102).
    kept = state.content_write = keep_answer(runtime, state)
    try:
        with runtime.lock:
            state.conversation_history_size = append_record(
                runtime.memory,
                call_id=state.frame.call_id,
                method_name=state.method,
                args=state.args,
                kwargs=state.kwargs,
                outcome=state.outcome,
                trace_id=state.frame.trace_id,
                parent_call_id=state.frame.parent_call_id,
                depth=state.frame.depth,
                duration_ms=state.duration_ms,
                cursor=runtime.history,
                content=kept.summary(),
                timestamp=state.finished_at,
            )
        state.history_record_appended = True
    except (Exception, AttemptStopped):  # noqa: BLE001 - a malformed history never breaks a call
        state.history_record_appended = False
        if kept.ref is not None:
            runtime.content.discard(kept.ref)  # no record names it: no program could find it
        state.content_write = runtime.content.skipped("history_append_failed")


def _outcome_from_error(error: RecurgentError, role: str, method: str, depth: int) -> Outcome:
    metadata = json_safe(error.metadata)
    message = error.message
    if isinstance(error, GuardrailRetryExhaustedError) and depth == 0:
        cause = violation_cause(
            metadata.get("last_violation_subtype"), metadata.get("last_violation_message")
        )
        metadata = {
            **metadata,
            "normalized": True,
            "normalization_policy": _NORMALIZATION_POLICY,
            "guardrail_class": metadata.get("guardrail_class", "recoverable_guardrail"),
            "guardrail_subtype": metadata.get("last_violation_subtype")
            or "unknown_guardrail_violation",
            "raw_error_message": message,
        }
        # The standard text, then one sentence naming what kept failing (issue 13).
        message = f"{USER_FACING_EXHAUSTION} {cause}"
    return Outcome(
        status="error",
        error_type=error.error_type,
        error_message=message,
        retriable=error.retriable,
        tool_role=role,
        method_name=method,
        metadata=metadata,
    )


def _capped_by_enclosing(seconds: float | None) -> float | None:
    """A child's time limit never outlasts the attempt of the parent code that called it."""
    remaining = enclosing_remaining()
    if remaining is None:
        return seconds
    return remaining if seconds is None else min(seconds, remaining)


def _sandbox_limits(options: AgentOptions) -> SandboxLimits:
    timeout = options.execution_timeout_seconds
    remaining = enclosing_remaining()  # what _capped_by_enclosing does, in one call less
    if remaining is not None:
        timeout = remaining if timeout is None else min(timeout, remaining)
    assert timeout is not None
    return _limits(timeout, options.forwarded_call_budget)


def _prompt_limits(
    options: AgentOptions, limits: SandboxLimits
) -> tuple[SandboxLimits, float | None]:
    """The agent's own limits for the system prompt, and the time a calling program's deadline
    leaves when that is less (for the user prompt): the system prompt of an agent's calls is
    then the same text every time, and providers can cache it (ADR 0100)."""
    own = _limits(options.execution_timeout_seconds, options.forwarded_call_budget)
    if limits.timeout_seconds < own.timeout_seconds:
        return own, limits.timeout_seconds
    return own, None


@functools.lru_cache(maxsize=64)
def _limits(timeout_seconds: float, forwarded_calls: int) -> SandboxLimits:
    # Immutable, and the same for every top-level call of an agent: built once.
    return SandboxLimits(timeout_seconds=timeout_seconds, max_forwarded_calls=forwarded_calls)


def _run_attempts(runtime: AgentRuntime, state: CallState) -> Outcome:
    options = runtime.options
    limits = _sandbox_limits(options)
    # The prompts promise generated code a history list, so it exists (repaired if malformed)
    # before the first attempt, not only after the first record.
    with runtime.lock:
        history_records(runtime.memory, runtime.history)

    # --- persistence (ADR 0047): a stored program may answer with no provider request.
    stored = _persistence.run_stored(runtime, state, _Hooks(runtime, state, limits))
    if stored is not None:
        return stored
    # ---
    prompts = _build_prompts(runtime, state, limits)
    state.system_prompt = prompts.system
    counters = Counters()
    feedback: Feedback | None = None
    while True:
        raise_if_cancelled()
        state.begin_attempt(counters.attempt_id, feedback_injected=feedback is not None)
        state.user_prompt = prompts.user + (feedback.text if feedback else "")
        generated = _generate(runtime, state, prompts.system, state.user_prompt)
        state.attempt_stage = "generated"
        if options.verbose:
            _show_program(runtime, state, generated.program.code, "Generated code")
        # Every failed attempt is rolled back by dropping its journal: its writes never
        # reached memory. Only an accepted attempt commits (ADR 0027).
        try:
            outcome, writes = execute_attempt(runtime, state, generated, limits)
        except GuardrailViolationError as violation:
            feedback = guardrail_step(runtime, state, counters, violation)
            continue
        except ExecutionError as error:
            feedback = execution_step(state, counters, error)
            continue
        except RecurgentError:
            # Timeouts and exhausted budgets end the call, but never leave half an attempt.
            state.rollback_applied = True
            raise
        state.attempt_stage = "executed"
        if outcome.is_ok:
            note_shadowing(state, commit(runtime, writes), debug=options.debug)
            return outcome
        # All or nothing (ADR 0100): an error Outcome commits none of the attempt's writes,
        # exactly like an exception the program raised.
        state.rollback_applied = True
        if state.contract_validation_passed is False:
            # The value failed this agent's own deliverable: repaired like a retriable error,
            # and the violation itself is the answer once the budget is spent (ADR 0097).
            state.failure_class = failure_class(outcome.error_type)
            feedback = contract_step(runtime, state, counters, outcome)
            if feedback is None:
                return outcome
            continue
        if not outcome.retriable:
            return outcome
        state.failure_class = failure_class(outcome.error_type)
        if state.failure_class == "extrinsic":
            return outcome
        feedback = outcome_step(runtime, state, counters, outcome)


def _build_prompts(runtime: AgentRuntime, state: CallState, limits: SandboxLimits) -> Prompts:
    options = runtime.options
    shown, time_left = _prompt_limits(options, limits)
    return build_prompts(
        role=runtime.role,
        method_name=state.method,
        args=state.args,
        kwargs=state.kwargs,
        depth=state.frame.depth,
        memory=runtime.memory,
        contract=options.contract,
        network=options.network,
        limits=shown,
        time_left=time_left,
        patterns=recent_patterns(runtime, state.method, state.frame.depth),
        role_profile=prompt_profile(runtime, state.method, hosts_only=state.host_call),
    )


class _Hooks:
    """The persisted path's hooks for one call (one object, no closures: made on every call)."""

    __slots__ = ("_limits", "_runtime", "_state")

    def __init__(self, runtime: AgentRuntime, state: CallState, limits: SandboxLimits) -> None:
        self._runtime, self._state, self._limits = runtime, state, limits

    def prompts(self) -> Prompts:
        return _build_prompts(self._runtime, self._state, self._limits)

    def generate(self, system: str, user: str, purpose: _persistence.Purpose) -> Generated:
        return _generate(self._runtime, self._state, system, user, purpose=purpose)

    def execute(self, generated: Generated) -> _persistence.AttemptResult:
        state = self._state
        if self._runtime.options.verbose:
            code = generated.program.code
            if state.program_source == "persisted":
                label = f"Reused code (persisted, #{checksum(code)[7:15]})"
            else:
                label = "Repaired code (a stored program that failed, fixed)"
            _show_program(self._runtime, state, code, label)
        return _attempt(self._runtime, state, generated, self._limits)


def _show_program(runtime: AgentRuntime, state: CallState, code: str, label: str) -> None:
    """``verbose=True``: print the program about to run, fresh or reused (ADR 0098)."""
    sys.stdout.write(
        f"[AGENT {runtime.role}.{state.method}] {label}:\n{'=' * 50}\n{code}\n{'=' * 50}\n"
    )


def _attempt(
    runtime: AgentRuntime, state: CallState, generated: Generated, limits: SandboxLimits
) -> _persistence.AttemptResult:
    """Run one program as an attempt of the persisted path: its writes commit only if the
    persisted path accepts its outcome, and are dropped otherwise (ADR 0027, 0047)."""
    try:
        outcome, writes = execute_attempt(runtime, state, generated, limits)
    except UsageError:
        raise
    except RecurgentError as error:
        return _persistence.AttemptResult(None, error)
    return _persistence.AttemptResult(
        outcome,
        None,
        commit=lambda: note_shadowing(state, commit(runtime, writes), debug=runtime.options.debug),
    )


def _generate(
    runtime: AgentRuntime,
    state: CallState,
    system: str,
    user: str,
    *,
    purpose: _persistence.Purpose = "generate",
) -> Generated:
    options = runtime.options

    def on_attempt(attempt: int, program: Program | None) -> None:
        state.generation_attempt = attempt
        if program is not None:
            state.code = program.code
            state.program_dependencies = [d.model_dump() for d in program.dependencies]
            state.add_usage(program.usage)
            state.program_provenance = _provenance.fresh(
                runtime.provider(), program, runtime.role, state.method
            )

    request = ProviderRequest(
        role=runtime.role,
        method_name=state.method,
        args=state.args,
        kwargs=state.kwargs,
        depth=state.frame.depth,
        model=options.model,
        system_prompt=system,
        user_prompt=user,
        attempt=1,
        timeout_seconds=_capped_by_enclosing(options.provider_timeout_seconds),
        purpose=purpose,
    )

    def on_refusal(error: RecurgentError, retried: bool) -> None:
        # A refused reply is a failed attempt too: the log shows it beside the lane failures.
        state.record_failure(
            "generation", type(error).__name__, error.message, feedback_injected=retried
        )
        if retried:
            state.retry_feedback_injected = True

    return generate_program(
        provider=runtime.provider,
        base_request=request,
        max_attempts=options.max_generation_attempts,
        on_attempt=on_attempt,
        on_refusal=on_refusal,
    )
