"""CallState: everything one dynamic call records, and its rendering as a log entry (ADR 0007)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from recurgent._call import CallFrame
from recurgent._content_store import ContentReads, ContentWrite, content_log_fields
from recurgent._display import describe
from recurgent._lifecycle._log_view import LogView
from recurgent._lifecycle._patterns import PatternReport, pattern_log_fields
from recurgent._lifecycle._role_continuity import NO_AGENCY_FIELDS
from recurgent._parsing import format_traceback
from recurgent._secret_index import SecretIndex
from recurgent._store import StoredRun
from recurgent._values import utc_timestamp
from recurgent.errors import RecurgentError
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._store import Provenance

__all__ = ["AttemptFailure", "CallState"]

MAX_ATTEMPT_FAILURES = 8
#: Keys every log line carries about the worker (null when the call ran in process).
WORKER_LOG_FIELDS = (
    "isolation_backend",
    "env_id",
    "environment_cache_hit",
    "env_prepare_ms",
    "worker_pid",
    "worker_restarts",
    "worker_start_ms",
    "worker_retired",
)
MAX_FAILURE_MESSAGE = 400
_SMALL_INT = 2**53
# Fields log_entry fills through the view itself (bulky or free text); every other field goes
# through LogView.field, so the whole entry is JSON-safe, bounded and redacted once.
_VIEWED_FIELDS = frozenset(
    {
        "args",
        "kwargs",
        "code",
        "attempt_failures",
        "latest_failure_message",
        "stdout",
        "outcome_error_message",
        "outcome_error_metadata",
        "error_message",
        "contract_purpose",
        "contract_deliverable",
        "contract_acceptance",
        "contract_failure_policy",
        "system_prompt",
        "user_prompt",
        "context",
        "outcome_value",
        "error_backtrace",
    }
)


def _clip(message: str) -> str:
    if len(message) <= MAX_FAILURE_MESSAGE:
        return message
    return message[: MAX_FAILURE_MESSAGE - 3] + "..."


@dataclass(frozen=True, slots=True)
class AttemptFailure:
    """One failed attempt, as logged in ``attempt_failures``."""

    attempt_id: int
    stage: str  # validation | execution | outcome_policy
    error_class: str
    error_message: str
    timestamp: str
    call_id: str
    subtype: str | None = None  # the guardrail subtype of a refused program
    #: Whether the next attempt (or generation retry) was told about this failure.
    retry_feedback_injected: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempt_id": self.attempt_id,
            "stage": self.stage,
            "error_class": self.error_class,
            "error_message": self.error_message,
            "subtype": self.subtype,
            "retry_feedback_injected": self.retry_feedback_injected,
            "timestamp": self.timestamp,
            "call_id": self.call_id,
        }


@dataclass(slots=True)
class CallState:
    """Mutable record of one dynamic call, owned by the lifecycle.

    Attempt fields (``attempt_stage``, ``rollback_applied``, ``validation_failure_type``,
    ``guardrail_violation_subtype``, ``contract_validation_*``) describe the latest attempt;
    the lane counters and ``attempt_failures`` (the last eight) cover the whole call.
    ``failure_class`` is the class of the final error outcome, or of the retriable error outcome
    the outcome-repair lane last handled when a later attempt succeeded.
    """

    role: str
    model: str
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    frame: CallFrame
    contract: dict[str, Any] | None
    contract_source: str
    # The host's own code called an agent it built: only host-written programs may answer
    # without a request (ADR 0074).
    host_call: bool = False
    # The call obtains or repairs the program of Agent.map (ADR 0110): its writes are refused.
    map_id: str | None = None
    duration_ms: float = 0.0
    # When the call finished (``utc_timestamp`` text), shared by its history record and
    # store write (not logged).
    finished_at: str | None = None
    generation_attempt: int = 0
    code: str | None = None
    program_dependencies: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None
    program_source: str = "generated"
    # Persistence (ADR 0047): what the store held and did for this call.
    artifact_hit: bool = False
    artifact_lookup: str | None = None
    artifact_checksum: str | None = None
    artifact_contract_fingerprint: str | None = None
    artifact_prompt_version: str | None = None
    artifact_write: str | None = None
    # Who the stored program that ran was generated for (``host``/``program``; ADR 0074).
    artifact_author: str | None = None
    # The promotion lifecycle (ADRs 0080, 0081): the stored version selected to run and its
    # state, the evaluation the call's write made, and the switches it ran under.
    artifact_selected_checksum: str | None = None
    artifact_selected_lifecycle_state: str | None = None
    lifecycle_state: str | None = None
    lifecycle_decision: str | None = None
    promotion_decision_rationale: dict[str, Any] | None = None
    promotion_policy_version: str | None = None
    promotion_shadow_mode: bool | None = None
    promotion_enforced: bool | None = None
    # A stored program that failed before the call repaired or regenerated it (counted for
    # its version; not logged).
    failed_stored_run: StoredRun | None = None
    # The role-profile guard's verdict on this call (``None``: no profile observed it) and the
    # state-key consistency the role's telemetry measured (``None``: not measured); the
    # promotion gate reads both per version.
    role_profile_compliant: bool | None = None
    state_key_consistency_ratio: float | None = None
    # Who wrote the program in ``code`` (ADR 0077): the provider that just did, or the record's.
    program_provenance: Provenance | None = None
    # The stored program running as the call's answer, as the persistence step read it once
    # per record (not logged; ADR 0130).
    stored_program: Any = None
    cacheable: bool | None = None
    cacheability_reason: str | None = None
    input_sensitive: bool | None = None
    repair_attempted: bool = False
    repair_succeeded: bool | None = None
    repaired_failure_class: str | None = None
    failure_class: str | None = None
    attempt_id: int = 1
    attempt_stage: str | None = None
    validation_failure_type: str | None = None
    rollback_applied: bool = False
    retry_feedback_injected: bool = False
    attempt_failures: list[AttemptFailure] = field(default_factory=list)
    execution_receiver: str | None = None
    result_inferred: bool = False
    # The worker's log fields (ADR 0042) when the attempt ran in a worker process.
    worker: dict[str, Any] | None = None
    guardrail_violation_subtype: str | None = None
    guardrail_recovery_attempts: int = 0
    execution_repair_attempts: int = 0
    outcome_repair_attempts: int = 0
    outcome_repair_triggered: bool = False
    guardrail_retry_exhausted: bool = False
    outcome_repair_retry_exhausted: bool = False
    contract_validation_applied: bool = False
    contract_validation_passed: bool | None = None
    contract_validation_mismatch: str | None = None
    contract_validation_expected_keys: list[str] = field(default_factory=list)
    contract_validation_actual_keys: list[str] = field(default_factory=list)
    # Role profile, namespace, self model, solver shape (ADRs 0083-0085, written by
    # _lifecycle/_role_continuity.py): whether the call kept the active role profile
    # (``role_profile_compliant`` above), the guard's report, what the guard saw, and these log
    # fields once finished.
    role_profile_report: dict[str, Any] | None = None
    continuity: Any = None
    agency: dict[str, Any] | None = None
    history_record_appended: bool = False
    conversation_history_size: int | None = None
    # The content store (ADRs 0101-0103): this call's write, the content(ref) reads of its latest
    # attempt, and what its program read from the conversation history.
    content_write: ContentWrite | None = None
    content_reads: ContentReads = field(default_factory=ContentReads)
    history_access_detected: bool = False
    history_query_patterns: list[str] = field(default_factory=list)
    # Pattern memory (ADRs 0107, 0108): the program's capability tags and the re-ask it was.
    patterns: PatternReport | None = None
    stdout: str = ""
    forwarded_calls: int = 0
    system_prompt: str | None = None
    user_prompt: str | None = None
    outcome: Outcome | None = None
    error: BaseException | None = None
    interrupted: bool = False
    # Top-level keys the committed program wrote that name a method of the agent (ADR 0100).
    memory_key_shadows_method: list[str] | None = None

    def add_usage(self, usage: Mapping[str, int] | None) -> None:
        """Add one provider reply's token counts to the call's total (every attempt counts)."""
        if not usage:
            return
        total = self.usage if self.usage is not None else {}
        for key, count in usage.items():
            if isinstance(count, int) and not isinstance(count, bool):
                total[key] = total.get(key, 0) + count
        self.usage = total

    def begin_attempt(self, attempt_id: int, *, feedback_injected: bool) -> None:
        """Reset the fields that describe one attempt; counters and failures carry over."""
        self.attempt_id = attempt_id
        self.retry_feedback_injected = feedback_injected
        self.attempt_stage = None
        self.rollback_applied = False
        self.validation_failure_type = None
        self.guardrail_violation_subtype = None
        self.outcome_repair_triggered = False
        self.contract_validation_applied = False
        self.contract_validation_passed = None
        self.contract_validation_mismatch = None
        self.contract_validation_expected_keys = []
        self.contract_validation_actual_keys = []

    def record_failure(
        self,
        stage: str,
        error_class: str,
        message: str,
        subtype: str | None = None,
        *,
        feedback_injected: bool = False,
    ) -> None:
        """Remember a failed attempt (only the last eight are kept)."""
        self.attempt_failures.append(
            AttemptFailure(
                attempt_id=self.attempt_id,
                stage=stage,
                error_class=error_class,
                error_message=_clip(message),
                timestamp=utc_timestamp(),
                call_id=self.frame.call_id,
                subtype=subtype,
                retry_feedback_injected=feedback_injected,
            )
        )
        del self.attempt_failures[:-MAX_ATTEMPT_FAILURES]

    def mark_feedback_injected(self) -> None:
        """Note that the latest failure is fed back to the next attempt."""
        if self.attempt_failures:
            self.attempt_failures[-1] = replace(
                self.attempt_failures[-1], retry_feedback_injected=True
            )

    def log_entry(
        self, *, debug: bool, memory: dict[str, Any], secrets: SecretIndex | None = None
    ) -> dict[str, Any]:
        """The JSONL entry of this call: every key present (null when unknown), stable order.

        ``secrets``: the agent's index of secret values in memory (walks only what changed).
        """
        latest = self.attempt_failures[-1] if self.attempt_failures else None
        outcome = self.outcome
        program_text = bool(self.stdout) or bool(self.attempt_failures) or self.error is not None
        program_text = program_text or (outcome is not None and not outcome.is_ok)
        view = LogView(
            self.args, self.kwargs, memory, with_history=debug or program_text, index=secrets
        )
        entry: dict[str, Any] = {
            "timestamp": utc_timestamp(),
            "runtime": "python",
            "role": self.role,
            "model": self.model,
            "method": self.method,
            "args": view.value(list(self.args)),
            "kwargs": view.value(self.kwargs),
            "contract_source": self.contract_source,
            "duration_ms": round(self.duration_ms, 1),
            "generation_attempt": self.generation_attempt,
            "code": view.text(self.code),
            "program_dependencies": self.program_dependencies,
            "usage": self.usage,
            "program_source": self.program_source,
            "program_provider_kind": (
                self.program_provenance.provider_kind if self.program_provenance else None
            ),
            "program_model": self.program_provenance.model if self.program_provenance else None,
            "artifact_hit": self.artifact_hit,
            "artifact_lookup": self.artifact_lookup,
            "artifact_checksum": self.artifact_checksum,
            "artifact_contract_fingerprint": self.artifact_contract_fingerprint,
            "artifact_prompt_version": self.artifact_prompt_version,
            "artifact_write": self.artifact_write,
            "artifact_selected_checksum": self.artifact_selected_checksum,
            "artifact_selected_lifecycle_state": self.artifact_selected_lifecycle_state,
            "lifecycle_state": self.lifecycle_state,
            "lifecycle_decision": self.lifecycle_decision,
            "promotion_decision_rationale": self.promotion_decision_rationale,
            "promotion_policy_version": self.promotion_policy_version,
            "promotion_shadow_mode": self.promotion_shadow_mode,
            "promotion_enforced": self.promotion_enforced,
            "cacheable": self.cacheable,
            "cacheability_reason": self.cacheability_reason,
            "input_sensitive": self.input_sensitive,
            "repair_attempted": self.repair_attempted,
            "repair_succeeded": self.repair_succeeded,
            "failure_class": self.failure_class,
            **pattern_log_fields(self.patterns),
            "history_record_appended": self.history_record_appended,
            "conversation_history_size": self.conversation_history_size,
            **content_log_fields(self.content_write, self.content_reads),
            "history_access_detected": self.history_access_detected,
            "history_query_patterns": list(self.history_query_patterns),
            "attempt_id": self.attempt_id,
            "attempt_stage": self.attempt_stage,
            "validation_failure_type": self.validation_failure_type,
            "rollback_applied": self.rollback_applied,
            "retry_feedback_injected": self.retry_feedback_injected,
            "attempt_failures": view.value(
                [failure.as_dict() for failure in self.attempt_failures]
            ),
            "latest_failure_stage": latest.stage if latest else None,
            "latest_failure_class": latest.error_class if latest else None,
            "latest_failure_message": view.text(latest.error_message) if latest else None,
            "execution_receiver": self.execution_receiver,
            "result_inferred": self.result_inferred,
            **{name: (self.worker or {}).get(name) for name in WORKER_LOG_FIELDS},
            "guardrail_violation_subtype": self.guardrail_violation_subtype,
            "guardrail_recovery_attempts": self.guardrail_recovery_attempts,
            "execution_repair_attempts": self.execution_repair_attempts,
            "outcome_repair_attempts": self.outcome_repair_attempts,
            "outcome_repair_triggered": self.outcome_repair_triggered,
            "guardrail_retry_exhausted": self.guardrail_retry_exhausted,
            "outcome_repair_retry_exhausted": self.outcome_repair_retry_exhausted,
            "contract_validation_applied": self.contract_validation_applied,
            "contract_validation_passed": self.contract_validation_passed,
            "contract_validation_mismatch": self.contract_validation_mismatch,
            "contract_validation_expected_keys": self.contract_validation_expected_keys,
            "contract_validation_actual_keys": self.contract_validation_actual_keys,
            **(self.agency or NO_AGENCY_FIELDS),
            "stdout": view.text(self.stdout),
            "forwarded_calls": self.forwarded_calls,
            "memory_key_shadows_method": self.memory_key_shadows_method,
            "trace_id": self.frame.trace_id,
            "call_id": self.frame.call_id,
            "parent_call_id": self.frame.parent_call_id,
            "depth": self.frame.depth,
            "map_id": self.map_id,
            "outcome_status": (
                "interrupted" if self.interrupted else (outcome.status if outcome else None)
            ),
            "outcome_retriable": outcome.retriable if outcome else None,
            "outcome_tool_role": outcome.tool_role if outcome else None,
            "outcome_method_name": outcome.method_name if outcome else None,
            "outcome_value_class": (
                type(outcome.value).__name__
                if outcome and outcome.is_ok and outcome.value is not None
                else None
            ),
            "outcome_error_type": outcome.error_type if outcome else None,
            "outcome_error_message": view.text(outcome.error_message) if outcome else None,
            "outcome_error_metadata": (
                view.value(outcome.metadata) if outcome and outcome.metadata else None
            ),
            "error_class": type(self.error).__name__ if self.error else None,
            "error_message": view.text(
                self.error.message
                if isinstance(self.error, RecurgentError)
                else (describe(self.error, use_repr=False) if self.error else None)
            ),
        }
        if self.contract is not None:
            for key in ("purpose", "deliverable", "acceptance", "failure_policy"):
                entry[f"contract_{key}"] = view.value(self.contract.get(key))
        if debug:
            entry["system_prompt"] = view.text(self.system_prompt)
            entry["user_prompt"] = view.text(self.user_prompt)
            entry["context"] = view.memory(memory)
            entry["outcome_value"] = (
                view.value(outcome.value) if outcome and outcome.is_ok else None
            )
            if self.error is not None:
                entry["error_backtrace"] = view.value(
                    format_traceback(self.error.__traceback__)[-10:]
                )
        short = view.short
        for name, value in entry.items():
            # Most fields are null, a flag, a small number or a string this view (or an earlier
            # one under the same secrets) copied already: each is settled here without a call.
            kind = type(value)
            if value is None or kind is bool or name in _VIEWED_FIELDS:
                continue
            if kind is str:
                entry[name] = short[value][0] if value in short else view.field(value)
            elif not (
                (kind is int and -_SMALL_INT < value < _SMALL_INT)
                or (kind is float and value - value == 0.0)  # finite: inf - inf is nan
            ):
                entry[name] = view.field(value)
        return entry
