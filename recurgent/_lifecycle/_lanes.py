"""Retry lanes: failure classes, required corrections and the feedback the next attempt gets (ADR 0006).

Three lanes regenerate a program after a failed attempt, each with its own budget:

* guardrail lane (``guardrail_recovery_budget``): a policy violation;
* execution lane (one repair, fixed): an exception raised by the generated code;
* outcome-repair lane (``fresh_outcome_repair_budget``): a retriable, non-extrinsic error Outcome.

Only the latest failure is fed back. This module builds that feedback; the loop that decides
lives in :mod:`recurgent._lifecycle`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from recurgent._prompting import render
from recurgent.errors import ExecutionError, GuardrailViolationError, RecurgentError

__all__ = [
    "EXECUTION_REPAIR_BUDGET",
    "FailureClass",
    "Feedback",
    "execution_feedback",
    "failure_class",
    "guardrail_feedback",
    "outcome_feedback",
]

FailureClass = Literal["extrinsic", "intrinsic", "adaptive"]

#: Execution repairs per call. Fixed, as in the Ruby runtime: one repair fixes most exceptions
#: and a second rarely does.
EXECUTION_REPAIR_BUDGET = 1

#: The failure-class table of the error taxonomy (docs/outcomes.md mirrors it). Extrinsic
#: failures come from outside the program and are never regenerated; adaptive ones mean the
#: program's approach did not fit; everything else is intrinsic.
EXTRINSIC = frozenset(
    {
        "timeout",
        "provider",
        "network_error",
        "http_error",
        "rate_limit",
        "rate_limited",
        "environment_preparing",
        "worker_crash",
        "dependency_resolution_failed",
        "dependency_install_failed",
        "dependency_activation_failed",
        "capability_unavailable",
    }
)
ADAPTIVE = frozenset(
    {
        "parse_error",
        "parse_failed",
        "low_utility",
        "wrong_tool_boundary",
        "missing_input",
        "invalid_format",
        "schema_mismatch",
        "contract_violation",
        "guardrail_retry_exhausted",
        "outcome_repair_retry_exhausted",
    }
)


def failure_class(error_type: str | None) -> FailureClass:
    """Classify an ``error_type`` string."""
    if error_type in EXTRINSIC:
        return "extrinsic"
    if error_type in ADAPTIVE:
        return "adaptive"
    return "intrinsic"


@dataclass(frozen=True, slots=True)
class Feedback:
    """Retry feedback appended to the next attempt's user prompt."""

    lane: Literal["guardrail", "execution", "outcome"]
    text: str


# (pattern over the failure message, correction) — Python's own error texts, first match wins.
_CORRECTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), correction)
    for pattern, correction in (
        (
            r"'Outcome' object (has no attribute|is not (subscriptable|iterable))|object of type "
            r"'Outcome'|cannot index an error Outcome",
            "unwrap Outcome values before using them: check out.ok, then read out.value (or "
            "out.error_type / out.error_message); .ok and .error are flags, not methods to parse",
        ),
        (
            r"'NoneType' object has no attribute 'append'|unsupported operand type\(s\) for \+=?: "
            r"'NoneType'|'NoneType' object is not (subscriptable|iterable)",
            "initialize accumulators before appending or adding to them (an empty list, dict or "
            "string) and check for None before indexing or iterating",
        ),
        (
            r"is not accessible|not available in the sandbox",
            "use only attributes of plain values, of objects your code defines, of allowed modules, "
            "of Outcomes and of agent handles; the message names what was refused",
        ),
        (
            r"import of .* is not allowed",
            "import only the modules the system prompt lists as allowed",
        ),
        (
            r"^KeyError|KeyError:",
            "check that keys exist ('key' in d) or use d.get(key, default) before reading them",
        ),
        (
            r"memory may hold only plain data|can leave the sandbox",
            "keep context and the returned value plain data: dicts, lists, strings, numbers, "
            "booleans and None; convert objects to dicts and do not store functions",
        ),
        (
            r"limit",
            "work on smaller sizes: the sandbox caps ranges, repetitions, powers and output; "
            "iterate in chunks or return a typed error",
        ),
    )
)
_DEFAULT_CORRECTION = (
    "fix the failing code path and regenerate with explicit None, type and shape checks"
)


def required_correction(message: str) -> str:
    """The correction a repair prompt asks for, chosen from the failure's message."""
    for pattern, correction in _CORRECTIONS:
        if pattern.search(message):
            return correction
    return _DEFAULT_CORRECTION


def guardrail_feedback(
    violation: GuardrailViolationError, *, terminal: bool, attempt_number: int, remaining: int
) -> Feedback:
    """Feedback after a guardrail violation."""
    text = render(
        "feedback_guardrail",
        guardrail_class="terminal_guardrail" if terminal else "recoverable_guardrail",
        violation_type=violation.error_type,
        violation_subtype=violation.subtype,
        violation_message=violation.message,
        violation_location=f"line {violation.line}" if violation.line else "unknown",
        required_correction=violation.correction
        or ("use policy-compliant tool/delegate paths and keep registry metadata plain"),
        attempt_number=attempt_number,
        remaining_budget=remaining,
    )
    return Feedback("guardrail", text)


def execution_feedback(error: RecurgentError, *, attempt_number: int, remaining: int) -> Feedback:
    """Feedback after generated code raised."""
    root_class = getattr(error, "root_class", None) or type(error).__name__
    root_message = getattr(error, "root_message", None) or error.message
    line = getattr(error, "line", None)
    text = render(
        "feedback_execution",
        failure_type=error.error_type,
        failure_message=error.message,
        root_error_class=root_class,
        root_error_message=root_message,
        failure_location=f"line {line}" if line else "unknown",
        required_correction=required_correction(f"{root_class}: {root_message}"),
        attempt_number=attempt_number,
        remaining_budget=remaining,
    )
    return Feedback("execution", text)


def outcome_feedback(
    error_type: str, message: str, *, attempt_number: int, remaining: int
) -> Feedback:
    """Feedback after a retriable error outcome."""
    if "AttributeError" in message:
        root_class = "AttributeError"
    elif "TypeError" in message:
        root_class = "TypeError"
    else:
        root_class = "OutcomeError"
    text = render(
        "feedback_outcome",
        failure_type=error_type or "execution",
        failure_message=message,
        root_error_class=root_class,
        root_error_message=message,
        required_correction=required_correction(message),
        attempt_number=attempt_number,
        remaining_budget=remaining,
    )
    return Feedback("outcome", text)


def is_execution_failure(error: RecurgentError) -> bool:
    """Errors the execution lane repairs (exceptions, resource limits, non-plain results)."""
    return isinstance(error, ExecutionError)
