"""Recording of one call: fold the program that ran into its stored artifact (ADRs 0047, 0080).

Every call that produced code is recorded, whatever its outcome: a stored program that answered
as it is (the steady state, ADR 0130) is reported as the facts of its run, batched by the store;
anything else as a whole call record, written at once. A stored program that failed earlier in
the call is counted for its own version (ADR 0080). The store decides what the record may
change (ADR 0131); this module only says what happened and copies the store's answer (written,
deferred, refused, the promotion decision) onto the call state for the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recurgent._lifecycle._lanes import failure_class
from recurgent._lifecycle._persistence import ProgramSource, Ready, call_fingerprint
from recurgent._lifecycle._provenance import runtime_version
from recurgent._lifecycle._selection import result_kind
from recurgent._lifecycle._state import CallState
from recurgent._prompting import PROMPT_VERSION
from recurgent._store import (
    HOST,
    POLICY,
    PROGRAM,
    AnsweredRun,
    Cacheability,
    CallRecord,
    FailedAttempt,
    Promotion,
    Store,
    StoredRun,
    WriteResult,
    checksum,
    classify,
    promotion_mode,
)

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime

__all__ = ["record"]


def _cacheability(state: CallState, code: str) -> Cacheability:
    if state.program_source == "persisted" and state.cacheable is not None:
        return Cacheability(
            state.cacheable, state.cacheability_reason or "unknown", bool(state.input_sensitive)
        )
    return classify(
        state.method, code, state.args, state.kwargs, contracted=state.contract is not None
    )


def _failed_attempt(state: CallState) -> FailedAttempt | None:
    if not state.attempt_failures:
        return None
    latest = state.attempt_failures[-1]
    return FailedAttempt(latest.stage, latest.error_class, latest.error_message, latest.attempt_id)


def _promotion(runtime: AgentRuntime) -> Promotion:
    """The promotion switches the agent captured when it was built (ADR 0076)."""
    settings = runtime.options.settings
    return promotion_mode(
        shadow=settings.promotion_shadow_mode_enabled,
        enforced=settings.promotion_enforcement_enabled,
    )


def record(runtime: AgentRuntime, state: CallState) -> None:
    """Classify the program that ran last and fold the call into its stored artifact.

    Runs for every call that produced code, whatever its outcome. A stored program that failed
    earlier in the call is counted for its own version (ADR 0080); when the call then produced
    no code (the provider failed before writing any), that stored run is what it records.
    Otherwise a call without code leaves the store as it was. Never raises.
    """
    ready = state.stored_program
    outcome = state.outcome
    if (
        ready is not None
        and state.error is None
        and outcome is not None
        and outcome.status == "ok"
        and runtime.store is not None
        and state.program_source == "persisted"
    ):
        _record_answered(runtime, state, runtime.store, ready)
        return
    code = state.code
    if not code or code.isspace():
        failed_run = state.failed_stored_run
        if failed_run is not None:
            if _evidence_of(state, failed_run.author):
                _record_stored_failure(runtime, state, failed_run)
            else:
                state.artifact_write = "host_written"
        return
    state.artifact_checksum = checksum(code)
    cache = _cacheability(state, code)
    state.cacheable = cache.cacheable
    state.cacheability_reason = cache.reason
    state.input_sensitive = cache.input_sensitive
    store: Store | None = runtime.store
    if store is None:
        return
    promotion = _promotion(runtime)
    outcome = state.outcome
    failed = outcome if outcome is not None and outcome.status == "error" else None
    kind = result_kind(outcome, raised=state.error is not None)
    klass = None
    if kind == "failure":
        klass = state.failure_class or failure_class(outcome.error_type if outcome else None)
    source: ProgramSource = "generated"
    # A persisted run recorded under the author of the code it ran; new code under the call's.
    author: str | None = HOST if state.host_call else PROGRAM
    # Who wrote the code (ADR 0077): the provider just now, or what the record said.
    provenance = state.program_provenance
    prompt_version: str | None = PROMPT_VERSION
    if state.program_source == "persisted":
        source = "persisted"
        author = state.artifact_author
        prompt_version = provenance.prompt_version if provenance else None
        if kind == "failure" and not _evidence_of(state, author):
            # The stored program's failure is the call's answer (an outage it returned, a
            # terminal guardrail): not the host's evidence either (red team R13).
            state.artifact_write = "host_written"
            return
    elif state.program_source == "repaired":
        source = "repaired"
    call = CallRecord(
        role=state.role,
        method=state.method,
        code=code,
        dependencies=(
            [dict(d) for d in state.program_dependencies] if state.program_dependencies else []
        ),
        contract_fingerprint=call_fingerprint(state),
        prompt_version=prompt_version,
        runtime_version=runtime_version(),
        model=provenance.model if provenance else None,
        cacheability=cache,
        source=source,
        result=kind,
        error_type=failed.error_type if failed is not None else None,
        failure_class=klass,
        failure_message=(
            f"{failed.error_type}: {failed.error_message}" if failed is not None else None
        ),
        repaired_class=state.repaired_failure_class,
        trace_id=state.frame.trace_id,
        duration_ms=state.duration_ms,
        contract_passed=(
            state.contract_validation_passed if state.contract_validation_applied else None
        ),
        failed_attempt=_failed_attempt(state) if source != "persisted" else None,
        author=author,
        violation=state.guardrail_violation_subtype if kind == "failure" else None,
        role_profile_compliant=_profile_verdict(state, author),
        state_key_consistency_ratio=state.state_key_consistency_ratio,
        promotion=promotion,
        stored_failure=state.failed_stored_run,
        provenance=provenance,
    )
    _written(state, store.record_call(call), promotion)


def _record_answered(runtime: AgentRuntime, state: CallState, store: Store, ready: Ready) -> None:
    """:func:`record` of a stored program that answered as it is (the steady state): what
    every such run reports of its program is built once per record (ADR 0130)."""
    record = ready.record
    # The lookup verified this checksum against the code that ran.
    state.artifact_checksum = record.code_checksum
    promotion = _promotion(runtime)
    fingerprint = call_fingerprint(state)
    key = (state.role, fingerprint, promotion)
    built = ready.program
    if built is None or built[0] != key:
        provenance = ready.provenance
        cache = ready.cacheability
        program = CallRecord(
            role=state.role,
            method=state.method,
            code=record.code,
            dependencies=[dict(d) for d in record.dependencies] if record.dependencies else [],
            contract_fingerprint=fingerprint,
            prompt_version=provenance.prompt_version,
            runtime_version=runtime_version(),
            model=provenance.model,
            cacheability=Cacheability(
                cache.cacheable, cache.reason or "unknown", bool(cache.input_sensitive)
            ),
            source="persisted",
            result="ok",
            author=record.author,
            promotion=promotion,
            provenance=provenance,
        )
        built = ready.program = (key, program)
    run = AnsweredRun(
        state.frame.trace_id,
        state.duration_ms,
        state.contract_validation_passed if state.contract_validation_applied else None,
        _profile_verdict(state, record.author),
        state.state_key_consistency_ratio,
    )
    _written(state, store.record_answered(built[1], run, state.finished_at), promotion)


def _written(state: CallState, written: WriteResult, promotion: Promotion) -> None:
    """What the write did, on the call state (and so in the log)."""
    state.artifact_write = "written" if written.written else (written.reason or "skipped")
    state.promotion_policy_version = POLICY.version
    state.promotion_shadow_mode = promotion.shadow
    state.promotion_enforced = promotion.enforced
    decision = written.decision
    if decision is not None:
        state.lifecycle_state = decision.state
        state.lifecycle_decision = decision.decision
        state.promotion_decision_rationale = decision.rationale
    elif written.reason == "deferred" and promotion.shadow:
        # Its counts wait in the batch, evaluated when written: the state it ran in is current.
        state.lifecycle_state = state.artifact_selected_lifecycle_state


def _evidence_of(state: CallState, author: str | None) -> bool:
    """Whether a failure of a stored program by ``author`` in this call counts for it: always
    in the host's own call, never the host's code's in a call the host did not make (ADRs
    0132, 0133).

    A working provider's repair of the host's failing code in a program's call is refused
    ``host_written`` and takes the failure with it, so neither a provider that fails the repair
    (red team R11: 24 calls wrote 16 failures) nor a failure returned as the call's answer (an
    outage, a terminal guardrail; red team R13: ``network_error`` 16 times degraded a durable
    incumbent) may make the same run count.
    """
    return state.host_call or author != HOST


def _profile_verdict(state: CallState, author: str | None) -> bool | None:
    """The role-profile verdict on the call's program that its scorecard may count: a failed
    one on the host's code in a call the host did not make is not the host's evidence (red
    team R13). The guard judged it against the siblings the calling agent saw, which a program
    sets with one setter on its agent of the host's role (``h.memory = 0``): one such call held
    the host's ten compliant calls over two sessions in probation (pass rate 10 in 11)."""
    compliant = state.role_profile_compliant
    if compliant is False and not _evidence_of(state, author):
        return None
    return compliant


def _record_stored_failure(runtime: AgentRuntime, state: CallState, run: StoredRun) -> None:
    """The call ended without code of its own: the stored program that failed is its program."""
    store: Store | None = runtime.store
    if store is None:
        return
    promotion = _promotion(runtime)
    message = state.attempt_failures[-1].error_message if state.attempt_failures else None
    call = CallRecord(
        role=state.role,
        method=state.method,
        code=run.code,
        dependencies=[dict(d) for d in run.dependencies],
        contract_fingerprint=call_fingerprint(state),
        prompt_version=PROMPT_VERSION,
        runtime_version=runtime_version(),
        model=state.model,
        cacheability=run.cacheability or Cacheability(True, "unknown", False),
        source="persisted",
        result="failure",
        error_type=run.error_type,
        failure_class=run.failure_class,
        failure_message=message,
        trace_id=state.frame.trace_id,
        duration_ms=state.duration_ms,
        author=run.author,
        violation=run.violation,
        role_profile_compliant=state.role_profile_compliant,
        promotion=promotion,
    )
    _written(state, store.record_call(call), promotion)
