"""One call's continuity bookkeeping: its answer kept, its programs' reads, its history reads.

The lifecycle calls these when a call finishes and when it builds an attempt's bridge; the
content store and the history-access reader return values, and the decisions (what retention
applies, what the log line says) are taken here, from the agent's settings as they are at that
moment (ADRs 0101-0103).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from recurgent._content_store import ContentReads, ContentRetention, ContentWrite
from recurgent._history_access import detect_history_access
from recurgent._lifecycle._state import CallState
from recurgent._runtime_config import RuntimeSettings

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime

__all__ = ["content_reader", "keep_answer", "note_history_access", "retention_of"]


# The retention of the settings object last asked about: settings are frozen, so the same
# object always gives the same retention, and agents share their process's settings object.
_last_retention: tuple[RuntimeSettings | None, ContentRetention] = (None, ContentRetention())


def retention_of(runtime: AgentRuntime) -> ContentRetention:
    """The agent's retention now: its settings are read at each use, never copied once (an
    agent given other settings gets their retention from its next use)."""
    global _last_retention  # a memo; one assignment, so threads see the old pair or the new
    settings = runtime.options.settings
    cached = _last_retention
    if cached[0] is settings:
        return cached[1]
    retention = ContentRetention.from_settings(settings)
    _last_retention = (settings, retention)
    return retention


def keep_answer(runtime: AgentRuntime, state: CallState) -> ContentWrite:
    """Offer the call's final outcome to the agent's content store."""
    return runtime.content.write(
        state.outcome, retention=retention_of(runtime), depth=state.frame.depth
    )


def content_reader(runtime: AgentRuntime, state: CallState) -> Callable[[Any], Any]:
    """``content(ref)`` for one attempt's program; the call's state counts the reads of its
    latest attempt, the program whose outcome the log line describes (as the original)."""
    state.content_reads = reads = ContentReads()
    return runtime.content.reader(lambda: retention_of(runtime), reads)


def note_history_access(state: CallState) -> None:
    """Record what the call's last program read from ``context["conversation_history"]``."""
    accessed, patterns = detect_history_access(state.code)
    state.history_access_detected = accessed
    state.history_query_patterns = patterns
