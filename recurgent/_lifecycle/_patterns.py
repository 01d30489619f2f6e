"""One call's pattern bookkeeping: its capability tags, the re-ask it may be, its event in the
pattern memory, the recent patterns its prompt shows, and what a caller of the agent as a tool
records about it (ADRs 0107-0109).

The lifecycle calls :func:`recent_patterns` when it builds a prompt and :func:`finish_patterns`
when a call finishes (beside the content store's bookkeeping in :mod:`._continuity`). Only a
call that wrote a program (generated or repaired) is read and recorded: a stored program
answering again costs one comparison here and writes nothing (ADR 0055's budget). The agent
remembers the program of its latest call per method, so a parent calling it through a
registered tool can record the tool's telemetry (:func:`tool_observation`).
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recurgent._call import CallFrame
from recurgent._forksafe import fork_safe_lock
from recurgent._lifecycle._lanes import TAXONOMY
from recurgent._patterns._extract import Capabilities, extract_capabilities
from recurgent._patterns._memory import (
    Correction,
    FilePatterns,
    MemoryPatterns,
    PatternBook,
    PatternEvent,
)
from recurgent._patterns._prompt import (
    PROMPT_WINDOW,
    PatternSummary,
    pattern_prompt_applies,
    summarize_patterns,
)
from recurgent._profiles import observe_program
from recurgent._reask import detect_reask
from recurgent._registry import TOOLS_KEY
from recurgent._store import checksum, promotion_mode
from recurgent._tool_telemetry import ToolObservation
from recurgent._values import utc_timestamp

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime
    from recurgent._lifecycle._state import CallState

__all__ = [
    "AgentPatterns",
    "PatternReport",
    "finish_patterns",
    "pattern_log_fields",
    "recent_patterns",
    "tool_observation",
]

_RECORDED_SOURCES = frozenset({"generated", "repaired"})
_PROGRAMS_KEPT = 256


def wall_clock_ms() -> int:
    """Milliseconds since the epoch: when an event is recorded (specs replace it)."""
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class LastProgram:
    """The program a method's latest finished call ran, and the lifecycle state its version was
    given (``None`` when the call was not evaluated)."""

    code: str
    lifecycle_state: str | None = None
    lifecycle_decision: str | None = None
    policy_version: str | None = None


@dataclass(slots=True)
class AgentPatterns:
    """What one agent keeps for its pattern bookkeeping.

    Attributes:
        memory: Its pattern memory when it has no store.
        programs: The program of its latest finished call per method (for the registry's view
            of it as a tool), the most recent last.
    """

    memory: MemoryPatterns = field(default_factory=MemoryPatterns)
    programs: dict[str, LastProgram] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PatternReport:
    """A finished call's pattern fields.

    Attributes:
        capabilities: What its program showed (nothing for a stored program or no program).
        correction: The user correction it was found to be.
        recorded: Whether its event reached the pattern memory.
    """

    capabilities: Capabilities = field(default_factory=Capabilities)
    correction: Correction | None = None
    recorded: bool = False


def pattern_log_fields(report: PatternReport | None) -> dict[str, Any]:
    """The log line's ``capability_patterns``, ``capability_pattern_evidence`` and
    ``user_correction_*`` fields (the original's names)."""
    found = report.capabilities if report is not None else Capabilities()
    correction = report.correction if report is not None else None
    return {
        "capability_patterns": list(found.tags),
        "capability_pattern_evidence": found.evidence_dict(),
        "user_correction_detected": correction is not None,
        "user_correction_signal": correction.signal if correction else None,
        "user_correction_reference_call_id": (
            correction.correction_of_call_id if correction else None
        ),
    }


def _book(runtime: AgentRuntime) -> PatternBook:
    store = runtime.store
    return FilePatterns(store.root) if store is not None else runtime.patterns.memory


def recent_patterns(runtime: AgentRuntime, method: str, depth: int) -> list[PatternSummary]:
    """The repeated capabilities the prompt of ``method`` at ``depth`` shows (none unless it is a
    depth-0 dynamic-dispatch call)."""
    if not pattern_prompt_applies(method, depth):
        return []
    try:
        events = _book(runtime).recent(runtime.role, method, PROMPT_WINDOW)
        return summarize_patterns(events, runtime.memory.get(TOOLS_KEY))
    except Exception:  # noqa: BLE001 - a pattern problem never breaks a call
        return []


# Child calls finished per parent call id: whether a call made child agents is known when its
# children finish, before it does. Bounded: an entry lives until its parent finishes.
_CHILD_CALLS: dict[str, int] = {}
_CHILD_CALLS_KEPT = 4096
_CHILD_LOCK = fork_safe_lock()


def _child_calls(frame: CallFrame) -> int:
    with _CHILD_LOCK:
        parent = frame.parent_call_id
        if parent is not None:
            if len(_CHILD_CALLS) >= _CHILD_CALLS_KEPT and parent not in _CHILD_CALLS:
                _CHILD_CALLS.clear()
            _CHILD_CALLS[parent] = _CHILD_CALLS.get(parent, 0) + 1
        return _CHILD_CALLS.pop(frame.call_id, 0)


def _keep_program(patterns: AgentPatterns, state: CallState, code: str) -> None:
    programs = patterns.programs
    method = state.method
    kept = programs.get(method)
    if (
        kept is not None
        and kept.code == code
        and kept.lifecycle_state == state.lifecycle_state
        and kept.lifecycle_decision == state.lifecycle_decision
        and kept.policy_version == state.promotion_policy_version
        and next(reversed(programs)) == method
    ):
        return  # a stored program answering again: the table would be the same after
    programs.pop(method, None)
    programs[method] = LastProgram(
        code, state.lifecycle_state, state.lifecycle_decision, state.promotion_policy_version
    )
    if len(programs) > _PROGRAMS_KEPT:
        for name in list(programs)[: len(programs) - _PROGRAMS_KEPT]:
            programs.pop(name, None)


def tool_observation(patterns: AgentPatterns, method: str) -> ToolObservation | None:
    """What the agent's latest call of ``method`` showed, for a caller recording it as a tool
    (``None`` when that call ran no program). The program is read once per process (both
    readers cache by its text)."""
    last = patterns.programs.get(method)
    if last is None:
        return None
    shape = observe_program(last.code)
    return ToolObservation(
        method=method,
        state_keys=shape.state_keys,
        primary_key=shape.primary_key,
        signature=shape.signature,
        capabilities=extract_capabilities(last.code).tags,
        lifecycle_state=last.lifecycle_state,
        lifecycle_decision=last.lifecycle_decision,
        policy_version=last.policy_version,
    )


def finish_patterns(runtime: AgentRuntime, state: CallState) -> None:
    """Read the call's program, decide whether it is a re-ask, and record its event (never
    raises: pattern memory never breaks a call)."""
    frame = state.frame
    # Nothing counted anywhere and no parent to count for (most calls): no lock to take.
    children = 0 if not _CHILD_CALLS and frame.parent_call_id is None else _child_calls(frame)
    code = state.code
    if not code or code.isspace():
        return
    try:
        _keep_program(runtime.patterns, state, code)
        if state.program_source in _RECORDED_SOURCES:
            state.patterns = _record(runtime, state, code, children)
    except Exception:  # noqa: BLE001 - the line is written without them instead
        state.patterns = None


def _record(runtime: AgentRuntime, state: CallState, code: str, children: int) -> PatternReport:
    frame = state.frame
    found = extract_capabilities(code)
    book = _book(runtime)
    now_ms = wall_clock_ms()
    had_children = children > 0
    correction: Correction | None = None
    corrected_an_error = False
    if frame.depth == 0:
        latest = book.recent(runtime.role, state.method, 1)
        previous = latest[-1] if latest else None
        correction = detect_reask(
            previous,
            method=state.method,
            depth=frame.depth,
            trace_id=frame.trace_id,
            now_ms=now_ms,
            patterns=found.tags,
            had_child_calls=had_children,
        )
        failed = state.failed_stored_run
        if (
            correction is not None
            and failed is not None
            and correction.correction_of_checksum == checksum(failed.code)
        ):
            # The runtime replaced a stored program that failed in this very call: that
            # failure is counted for its version already, and nobody asked again (ADR 0108).
            correction = None
        # A failure was counted for its version when it was recorded: asking again after it
        # says nothing new, and judging it a failure twice moved another call's success to
        # the failures (ADR 0108, amended). A domain error is an answer and stays correctable.
        corrected_an_error = previous is not None and _counted_as_failure(previous)
    outcome = state.outcome
    event = PatternEvent(
        timestamp=utc_timestamp(datetime.datetime.fromtimestamp(now_ms / 1000, datetime.UTC)),
        recorded_at_ms=now_ms,
        role=runtime.role,
        method_name=state.method,
        trace_id=frame.trace_id,
        call_id=frame.call_id,
        parent_call_id=frame.parent_call_id,
        depth=frame.depth,
        had_delegated_calls=had_children,
        capability_patterns=found.tags,
        outcome_status=outcome.status if outcome is not None else None,
        error_type=outcome.error_type if outcome is not None else None,
        user_correction=correction,
        code_checksum=state.artifact_checksum or checksum(code),
    )
    recorded = book.append(runtime.role, event)
    if correction is not None and not corrected_an_error:
        _count_against(runtime, state, correction)
    return PatternReport(found, correction, recorded)


def _counted_as_failure(event: PatternEvent) -> bool:
    """Whether the scorecard counted ``event``'s call as a failure: an error outcome whose
    type is the runtime's (a program's own error type is a domain error, an answer)."""
    if event.outcome_status != "error":
        return False
    return not event.error_type or event.error_type in TAXONOMY


def _count_against(runtime: AgentRuntime, state: CallState, correction: Correction) -> None:
    """The corrected call's program version gets the correction on its scorecard, and the
    promotion policy judges it again (ADR 0108)."""
    store = runtime.store
    digest = correction.correction_of_checksum
    if store is None or digest is None:
        return
    settings = runtime.options.settings
    store.record_correction(
        runtime.role,
        state.method,
        digest,
        promotion=promotion_mode(
            shadow=settings.promotion_shadow_mode_enabled,
            enforced=settings.promotion_enforcement_enabled,
        ),
    )
