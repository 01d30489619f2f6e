"""Re-ask signals: a top-level call that repeats the one just before it is a user correction
(ADR 0108).

A person who asks again, soon, for the same thing was not served by the first answer. The rule
is the original's: the call and the previous recorded event of the same role and method are both
at depth 0, in the same trace, at most :data:`REASK_WINDOW_SECONDS` apart (both ends included),
and

* their capability tags overlap by at least :data:`MIN_OVERLAP_RATIO` of the larger set
  (``temporal_reask``), or
* neither has any tag and neither made a child agent (``temporal_reask_no_tooling``: a plain
  conversational answer asked for again).

Pure: the caller gives the previous event and the moment; nothing is read or written here.
"""

from __future__ import annotations

from collections.abc import Iterable

from recurgent._patterns._memory import Correction, PatternEvent

__all__ = ["MIN_OVERLAP_RATIO", "REASK_WINDOW_SECONDS", "detect_reask", "overlap_ratio"]

REASK_WINDOW_SECONDS = 180
MIN_OVERLAP_RATIO = 0.67


def _tags(patterns: Iterable[str]) -> list[str]:
    return sorted({tag for tag in patterns if tag})


def overlap_ratio(left: Iterable[str], right: Iterable[str]) -> float:
    """Shared tags over the size of the larger set (0.0 when either is empty)."""
    first, second = set(_tags(left)), set(_tags(right))
    larger = max(len(first), len(second))
    return len(first & second) / larger if larger and first & second else 0.0


def detect_reask(
    previous: PatternEvent | None,
    *,
    method: str,
    depth: int,
    trace_id: str | None,
    now_ms: int,
    patterns: Iterable[str],
    had_child_calls: bool,
) -> Correction | None:
    """The correction the call (``method`` at ``depth`` in ``trace_id``, finishing at
    ``now_ms`` with capability tags ``patterns``) is of ``previous``, or ``None``.

    ``previous``: the latest recorded event of the call's role and method.
    """
    if depth != 0 or not trace_id or not method.strip() or previous is None:
        return None
    # A missing depth reads as 0, as the original reads it.
    if (previous.depth or 0) != 0 or previous.trace_id != trace_id:
        return None
    if previous.recorded_at_ms <= 0:
        return None
    elapsed_ms = now_ms - previous.recorded_at_ms
    if not 0 <= elapsed_ms <= REASK_WINDOW_SECONDS * 1000:
        return None
    current, before = _tags(patterns), _tags(previous.capability_patterns)
    # An event without a call id (hand-written) still names the correction, as "" (the
    # original's nil.to_s).
    corrected = previous.call_id or ""
    if overlap_ratio(current, before) >= MIN_OVERLAP_RATIO:
        matched = tuple(tag for tag in current if tag in before)
        return Correction("temporal_reask", corrected, matched, previous.code_checksum)
    if not current and not before and not previous.had_delegated_calls and not had_child_calls:
        return Correction("temporal_reask_no_tooling", corrected, (), previous.code_checksum)
    return None
