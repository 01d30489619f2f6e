"""One failed attempt's step through its retry lane: what it records on the call state, the
budget it spends, and the feedback for the next attempt or the error that ends the call.

Split from :mod:`recurgent._lifecycle`, whose attempt loop calls these steps (it remains the
only place that decides retries: a step either returns feedback, meaning "generate again", or
raises the error that ends the call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recurgent._guardrails import is_terminal
from recurgent._lifecycle._lanes import (
    EXECUTION_REPAIR_BUDGET,
    Feedback,
    execution_feedback,
    guardrail_feedback,
    last_cause,
    outcome_feedback,
    violation_cause,
)
from recurgent._lifecycle._state import CallState
from recurgent.errors import (
    ExecutionError,
    GuardrailRetryExhaustedError,
    GuardrailViolationError,
    OutcomeRepairRetryExhaustedError,
)
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime

__all__ = ["Counters", "contract_step", "execution_step", "guardrail_step", "outcome_step"]


class Counters:
    """Regenerations spent so far in each lane of one call."""

    __slots__ = ("execution", "guardrail", "outcome")

    def __init__(self) -> None:
        self.guardrail = 0
        self.execution = 0
        self.outcome = 0

    @property
    def attempt_id(self) -> int:
        return self.guardrail + self.execution + self.outcome + 1


def guardrail_step(
    runtime: AgentRuntime,
    state: CallState,
    counters: Counters,
    violation: GuardrailViolationError,
) -> Feedback:
    state.rollback_applied = True
    state.attempt_stage = "rolled_back"
    state.validation_failure_type = violation.error_type
    state.guardrail_violation_subtype = violation.subtype
    state.record_failure(
        "validation", type(violation).__name__, violation.message, violation.subtype
    )
    terminal = is_terminal(violation.message) or (
        violation.metadata.get("guardrail_class") == "terminal_guardrail"
    )
    if terminal:
        violation.metadata.update(
            guardrail_class="terminal_guardrail",
            guardrail_subtype=violation.subtype,
            guardrail_correction=violation.correction,
        )
        raise violation
    counters.guardrail += 1
    state.guardrail_recovery_attempts = counters.guardrail
    remaining = runtime.options.guardrail_recovery_budget - counters.guardrail
    if remaining < 0:
        state.guardrail_retry_exhausted = True
        cause = violation_cause(violation.subtype, violation.message)
        raise GuardrailRetryExhaustedError(
            f"Recoverable guardrail retries exhausted for {runtime.role}.{state.method}. {cause}",
            metadata={
                "guardrail_recovery_attempts": counters.guardrail,
                "guardrail_class": "recoverable_guardrail",
                "last_violation_type": violation.error_type,
                "last_violation_subtype": violation.subtype,
                "last_violation_message": violation.message,
            },
        )
    state.mark_feedback_injected()
    return guardrail_feedback(
        violation, attempt_number=counters.attempt_id, remaining=remaining, code=state.code
    )


def execution_step(state: CallState, counters: Counters, error: ExecutionError) -> Feedback:
    state.rollback_applied = True
    state.attempt_stage = "execution_retry"
    state.validation_failure_type = error.error_type
    state.record_failure("execution", type(error).__name__, error.message)
    if counters.execution >= EXECUTION_REPAIR_BUDGET:
        raise error
    counters.execution += 1
    state.execution_repair_attempts = counters.execution
    state.mark_feedback_injected()
    return execution_feedback(
        error,
        attempt_number=counters.attempt_id,
        remaining=EXECUTION_REPAIR_BUDGET - counters.execution,
        code=state.code,
    )


def outcome_step(
    runtime: AgentRuntime, state: CallState, counters: Counters, outcome: Outcome
) -> Feedback:
    state.rollback_applied = True
    state.attempt_stage = "outcome_retry"
    state.validation_failure_type = outcome.error_type
    state.outcome_repair_triggered = True
    message = f"{outcome.error_type}: {outcome.error_message}"
    state.record_failure("outcome_policy", "OutcomeError", message)
    budget = runtime.options.fresh_outcome_repair_budget
    if counters.outcome >= budget:
        state.outcome_repair_retry_exhausted = True
        cause = last_cause(message)
        raise OutcomeRepairRetryExhaustedError(
            f"Retriable outcome-error repairs exhausted for {runtime.role}.{state.method}. {cause}",
            metadata={
                "outcome_repair_attempts": counters.outcome,
                "last_error_type": outcome.error_type,
                "last_error_message": outcome.error_message,
            },
        )
    counters.outcome += 1
    state.outcome_repair_attempts = counters.outcome
    state.mark_feedback_injected()
    return outcome_feedback(
        outcome.error_type or "execution",
        outcome.error_message or "",
        attempt_number=counters.attempt_id,
        remaining=budget - counters.outcome,
    )


def contract_step(
    runtime: AgentRuntime, state: CallState, counters: Counters, outcome: Outcome
) -> Feedback | None:
    """A value that failed the agent's deliverable goes through the outcome-repair lane.

    It spends the outcome-repair budget like a retriable error outcome (ADR 0097); the feedback
    names the expected and the actual type. ``None`` once the budget is spent: the call then
    ends with the ``contract_violation`` outcome itself, which says more than an exhausted
    lane would.
    """
    state.attempt_stage = "outcome_retry"
    state.validation_failure_type = outcome.error_type
    message = f"{outcome.error_type}: {outcome.error_message}"
    state.record_failure("outcome_policy", "ContractViolation", message)
    budget = runtime.options.fresh_outcome_repair_budget
    if counters.outcome >= budget:
        return None
    state.outcome_repair_triggered = True
    counters.outcome += 1
    state.outcome_repair_attempts = counters.outcome
    state.mark_feedback_injected()
    return outcome_feedback(
        outcome.error_type or "contract_violation",
        outcome.error_message or "",
        attempt_number=counters.attempt_id,
        remaining=budget - counters.outcome,
    )
