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

from recurgent._guardrails import MUTATION_CORRECTION
from recurgent._prompting import render
from recurgent.errors import ExecutionError, GuardrailViolationError

__all__ = [
    "EXECUTION_REPAIR_BUDGET",
    "TAXONOMY",
    "ErrorKind",
    "FailureClass",
    "Feedback",
    "execution_feedback",
    "failure_class",
    "generation_feedback",
    "guardrail_feedback",
    "last_cause",
    "offending_line",
    "outcome_feedback",
    "violation_cause",
]

FailureClass = Literal["extrinsic", "intrinsic", "adaptive"]

#: Execution repairs per call. Fixed, as in the Ruby runtime: one repair fixes most exceptions
#: and a second rarely does.
EXECUTION_REPAIR_BUDGET = 1


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """What one ``error_type`` means to the lanes.

    Attributes:
        failure_class: ``extrinsic`` (caused outside the program: never regenerated),
            ``adaptive`` (the program's approach did not fit the request) or ``intrinsic``
            (the program is wrong).
        retriable: Whether the runtime marks its own errors of this type retriable; ``None``
            for the tool-authored vocabulary, where the program decides.
    """

    failure_class: FailureClass
    retriable: bool | None


#: The error taxonomy: every ``error_type`` the runtime produces or recognises. An
#: ``error_type`` not listed here is intrinsic. Runtime errors take ``retriable`` from their
#: class in :mod:`recurgent.errors`; specs pin that the two agree.
TAXONOMY: dict[str, ErrorKind] = {
    # Produced by the runtime.
    "provider": ErrorKind("extrinsic", True),
    "timeout": ErrorKind("extrinsic", True),
    "invalid_code": ErrorKind("intrinsic", True),
    "invalid_dependency_manifest": ErrorKind("intrinsic", False),
    "dependency_manifest_incompatible": ErrorKind("intrinsic", False),
    "dependency_policy_violation": ErrorKind("intrinsic", False),
    "execution": ErrorKind("intrinsic", False),
    "resource_limit": ErrorKind("intrinsic", False),
    "non_serializable_result": ErrorKind("intrinsic", False),
    "budget_exceeded": ErrorKind("intrinsic", False),
    "tool_registry_violation": ErrorKind("intrinsic", False),
    "guardrail_retry_exhausted": ErrorKind("adaptive", False),
    "outcome_repair_retry_exhausted": ErrorKind("adaptive", False),
    "contract_violation": ErrorKind("adaptive", False),
    # Written by tools (the prompts teach this vocabulary).
    "low_utility": ErrorKind("adaptive", None),
    "wrong_tool_boundary": ErrorKind("adaptive", None),
    "parse_error": ErrorKind("adaptive", None),
    "parse_failed": ErrorKind("adaptive", None),
    "missing_input": ErrorKind("adaptive", None),
    "invalid_format": ErrorKind("adaptive", None),
    "schema_mismatch": ErrorKind("adaptive", None),
    "network_error": ErrorKind("extrinsic", None),
    "http_error": ErrorKind("extrinsic", None),
    "rate_limit": ErrorKind("extrinsic", None),
    "rate_limited": ErrorKind("extrinsic", None),
    "capability_unavailable": ErrorKind("extrinsic", None),
    "unsupported_capability": ErrorKind("intrinsic", None),
    "missing_capability": ErrorKind("intrinsic", None),
    # The worker lane (ADR 0039-0042): preparing environments and running worker processes.
    "environment_preparing": ErrorKind("extrinsic", True),
    "worker_crash": ErrorKind("extrinsic", True),
    "dependency_resolution_failed": ErrorKind("extrinsic", False),
    "dependency_install_failed": ErrorKind("extrinsic", True),
    "dependency_activation_failed": ErrorKind("extrinsic", True),
}


def failure_class(error_type: str | None) -> FailureClass:
    """Classify an ``error_type`` string (unknown and empty types are intrinsic)."""
    kind = TAXONOMY.get(error_type or "")
    return kind.failure_class if kind else "intrinsic"


@dataclass(frozen=True, slots=True)
class Feedback:
    """Retry feedback appended to the next attempt's user prompt."""

    lane: Literal["guardrail", "execution", "outcome"]
    text: str


# (pattern over the failure message, correction) — the runtime's and Python's own error texts,
# first match wins. Each correction names the construct and a concrete replacement.
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
            r'"__\w+__" is an invalid (attribute|variable) name',
            "do not use dunder names: call len(x), str(x), iter(x) instead of x.__len__() and the "
            "like; only x.__class__, __name__, __doc__ and __dict__ may be read, and your own "
            "classes may define __init__, __repr__ and similar methods in the class body",
        ),
        (
            r"produces no result",
            "end the program with `result = main(...)` (or assign `result` directly) so the call "
            "returns a value",
        ),
        (
            r"does not satisfy deliverable contract",
            "return a value of the shape the deliverable declares (the message names the "
            "expected and the actual type and where they differ): build it from the data you "
            "have, with every required key; if the data cannot fill it, return a typed "
            "Outcome.error instead",
        ),
        (
            r"(Exec|Eval) calls are not allowed",
            "do not call exec(), eval() or compile(): write the logic as ordinary code in the "
            "program; to read a value from text use json.loads(), int() or float()",
        ),
        (
            r"(Async\w*|Await) statements are not allowed",
            "write synchronous code: no async def, await, async for or async with; handle calls "
            "and urllib.request.urlopen block until they are done",
        ),
        (
            r'"\*" imports are not allowed',
            "import the module (import math) or name what you use (from math import sqrt, pi) "
            "instead of `from module import *`",
        ),
        (
            r'keyword argument "metaclass" is not allowed',
            "define plain classes without metaclass=; for an abstract base subclass abc.ABC and "
            "mark methods with @abstractmethod",
        ),
        (
            r"is a reserved name",
            "rename the variable or function the message names: the sandbox reserves that name",
        ),
        (
            r"invalid Python syntax",
            "return complete, valid Python: close every bracket and string, indent each block "
            "consistently, and send code only (no prose outside comments)",
        ),
        (
            r"is not accessible|not available in the sandbox",
            "use only attributes of plain values, of objects your code defines, of allowed modules, "
            "of Outcomes and of agent handles; the message names what was refused",
        ),
        (
            r"import of .* is not allowed",
            "import only the modules the system prompt lists as allowed; for a capability no "
            'allowed module gives, return Outcome.error(error_type="unsupported_capability", '
            "...)",
        ),
        (
            r"ZeroDivisionError",
            "check the divisor before dividing; when the caller asked to divide by zero, return "
            'Outcome.error(error_type="division_by_zero", error_message=..., retriable=False)',
        ),
        (
            r"^KeyError|KeyError:",
            "check that keys exist ('key' in d) or use d.get(key, default) before reading them",
        ),
        (
            r"IndexError",
            "check the length before indexing (`if i < len(items)`) and handle the empty case "
            "explicitly",
        ),
        (
            r"NameError",
            "define every name before reading it: assign variables first and import the modules "
            "you use; a helper that rebinds a top-level name declares it `global`",
        ),
        (
            r"memory may hold only plain data|can leave the sandbox",
            "keep context and the returned value plain data: dicts, lists, strings, numbers, "
            "booleans and None; convert objects to dicts and do not store functions",
        ),
        (
            r"SizeLimitExceeded|sandbox limit|resource limit",
            "work on smaller sizes: the sandbox caps ranges, repetitions, powers and output; "
            "iterate in chunks or return a typed error",
        ),
        (
            r"ValueError",
            "validate inputs before converting them (e.g. str.isdigit() before int()) and return "
            'Outcome.error(error_type="invalid_input", ...) for input that cannot be used',
        ),
    )
)
_DEFAULT_CORRECTION = (
    "fix the failing code path and regenerate with explicit None, type and shape checks"
)


# A retriable error the program chose to return, with no Python error behind it (ADR 0037).
_RETRIABLE_OUTCOME_CORRECTION = (
    "if this error is the right answer for these inputs, return it with retriable=False (a "
    "domain error such as invalid_input is an answer); otherwise fix the code path that "
    "produced it so the call succeeds"
)


# A read that walks from an object into the host (``x.__class__.__bases__``) is reported as a
# mutation subtype; its fix is about reading, not about attaching functions.
_DUNDER_WALK = re.compile(r"reaches host internals through '(?!__class__'|__dict__')")
_DUNDER_WALK_CORRECTION = (
    "read only x.__class__, __name__, __qualname__, __doc__ and __dict__ of your own objects; "
    "walking further (__bases__, __subclasses__, __globals__, __mro__) is refused: use "
    "type(x), isinstance(x, T) and the allowed modules instead"
)


# Corrections for violations raised without one (the sandbox's runtime mutation guard).
_GUARDRAIL_CORRECTIONS = {"singleton_method_mutation": MUTATION_CORRECTION}
_DEFAULT_GUARDRAIL_CORRECTION = (
    "use policy-compliant tool/delegate paths and keep registry metadata plain"
)


_EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b")


def required_correction(message: str) -> str:
    """The correction a repair prompt asks for, chosen from the failure's message."""
    for pattern, correction in _CORRECTIONS:
        if pattern.search(message):
            return correction
    return _DEFAULT_CORRECTION


#: How much of one source line the feedback quotes.
_QUOTED_LINE_CHARS = 200
#: How much of the last failure the exhaustion sentence quotes.
_CAUSE_CHARS = 300
_MESSAGE_LINE = re.compile(r"\bline (\d+)\b", re.IGNORECASE)


def offending_line(code: str | None, line: int | None) -> str:
    """``line N: <source line>`` of the failed program, or ``unknown`` when it cannot be told."""
    if not code or not line or line < 1:
        return "unknown"
    lines = code.splitlines()
    if line > len(lines):
        return f"line {line}"
    text = " ".join(lines[line - 1].split())
    if len(text) > _QUOTED_LINE_CHARS:
        text = text[: _QUOTED_LINE_CHARS - 3] + "..."
    return f"line {line}: {text}"


def _line_in(message: str) -> int | None:
    found = _MESSAGE_LINE.search(message)
    return int(found.group(1)) if found else None


def last_cause(detail: str) -> str:
    """One sentence naming the last failure, appended to an exhausted lane's message."""
    text = " ".join(detail.split()).rstrip(". ")
    if len(text) > _CAUSE_CHARS:
        return f"Last cause: {text[: _CAUSE_CHARS - 3]}..."
    return f"Last cause: {text}."


def violation_cause(subtype: object, message: object) -> str:
    """:func:`last_cause` of a guardrail violation, named by its subtype once: a message that
    already starts with it (the role-profile guard's) is not prefixed again."""
    text = str(message)
    return last_cause(text if text.startswith(f"{subtype}:") else f"{subtype}: {text}")


def generation_feedback(message: str, code: str | None, *, attempt: int, max_attempts: int) -> str:
    """The block appended to a generation retry: the refusal, its line and a concrete fix.

    The compiler reports ``Line N`` (RestrictedPython) or ``line N`` (syntax errors); that line
    of the refused program is quoted so the model need not guess which construct was meant.
    """
    return render(
        "retry_generation",
        previous_error=message,
        offending_line=offending_line(code, _line_in(message)),
        required_correction=required_correction(message),
        attempt=attempt,
        max_attempts=max_attempts,
    )


def guardrail_feedback(
    violation: GuardrailViolationError,
    *,
    attempt_number: int,
    remaining: int,
    code: str | None = None,
) -> Feedback:
    """Feedback after a recoverable guardrail violation (terminal ones end the call instead)."""
    text = render(
        "feedback_guardrail",
        guardrail_class="recoverable_guardrail",
        violation_type=violation.error_type,
        violation_subtype=violation.subtype,
        violation_message=violation.message,
        violation_location=offending_line(code, violation.line)
        if code
        else (f"line {violation.line}" if violation.line else "unknown"),
        required_correction=_DUNDER_WALK_CORRECTION
        if _DUNDER_WALK.search(violation.message)
        else violation.correction
        or _GUARDRAIL_CORRECTIONS.get(violation.subtype, _DEFAULT_GUARDRAIL_CORRECTION),
        attempt_number=attempt_number,
        remaining_budget=remaining,
    )
    return Feedback("guardrail", text)


def execution_feedback(
    error: ExecutionError, *, attempt_number: int, remaining: int, code: str | None = None
) -> Feedback:
    """Feedback after generated code raised; the line the sandbox reports is quoted."""
    root_class = error.root_class or type(error).__name__
    root_message = error.root_message or error.message
    line = error.line
    text = render(
        "feedback_execution",
        failure_type=error.error_type,
        failure_message=error.message,
        root_error_class=root_class,
        root_error_message=root_message,
        failure_location=offending_line(code, line)
        if code
        else (f"line {line}" if line else "unknown"),
        required_correction=required_correction(f"{root_class}: {root_message}"),
        attempt_number=attempt_number,
        remaining_budget=remaining,
    )
    return Feedback("execution", text)


def outcome_feedback(
    error_type: str, message: str, *, attempt_number: int, remaining: int
) -> Feedback:
    """Feedback after a retriable error outcome.

    The root class is the first Python exception name the message mentions (a child's
    ``execution`` error quotes it), else ``OutcomeError``.
    """
    named = _EXCEPTION_NAME.search(message)
    root_class = named.group(0) if named else "OutcomeError"
    correction = required_correction(message)
    if named is None and correction == _DEFAULT_CORRECTION:
        correction = _RETRIABLE_OUTCOME_CORRECTION
    text = render(
        "feedback_outcome",
        failure_type=error_type or "execution",
        failure_message=message,
        root_error_class=root_class,
        root_error_message=message,
        required_correction=correction,
        attempt_number=attempt_number,
        remaining_budget=remaining,
    )
    return Feedback("outcome", text)
