"""Conversation history: one record per top-level logical call, kept in ``context["conversation_history"]``.

Records are appended after a call's outcome is known, never per attempt (ADR 0015). Generated
code may read the list; prompts show only its length. Memory keeps the last
:data:`HISTORY_LIMIT` records, and a :class:`HistoryCursor` lets each call check only the records
added since the previous one, so no per-call step walks the whole history (ADR 0028).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from recurgent._values import json_safe, utc_timestamp
from recurgent.outcome import Outcome

__all__ = [
    "HISTORY_KEY",
    "HISTORY_LIMIT",
    "HistoryCursor",
    "append_record",
    "history_records",
    "outcome_summary",
]

HISTORY_KEY = "conversation_history"
#: Records kept in memory; older ones are dropped (the call log keeps every call).
HISTORY_LIMIT = 1000
_PREVIEW = 500
# Characters of text a preview's copy spends at most: the cut leaves the first _PREVIEW intact.
_PREVIEW_BUDGET = 4 * _PREVIEW
# Characters of text a record's copy of the arguments spends at most: a program's delegate call
# can pass shared parts worth billions (red team R12).
_ARGUMENTS_BUDGET = 1_000_000
_RECORD_MARKERS = ("method_name", "outcome_summary", "call_id")
_RECORD_KEYS = (
    "call_id",
    "timestamp",
    "speaker",
    "method_name",
    "args",
    "kwargs",
    "outcome_summary",
    "trace_id",
    "parent_call_id",
    "depth",
    "duration_ms",
)


class HistoryCursor:
    """How far one agent's history list has been checked: the list, its length, its last record.

    While the list in memory is the same object, at least that long, and still holds the same
    last checked record, only the records after it need checking.
    """

    __slots__ = ("checked", "last", "records")

    def __init__(self) -> None:
        self.records: list[Any] | None = None
        self.checked = 0
        self.last: Any = None

    def start(self, raw: list[Any]) -> int:
        """Index of the first record of ``raw`` still to check."""
        checked = self.checked
        if (
            self.records is raw
            and checked <= len(raw)
            and (checked == 0 or raw[checked - 1] is self.last)
        ):
            return checked
        return 0

    def mark(self, raw: list[Any]) -> None:
        """Remember ``raw`` as checked to its end."""
        self.records = raw
        self.checked = len(raw)
        self.last = raw[-1] if raw else None


def _clean(entries: list[Any]) -> list[dict[str, Any]]:
    return [
        {key: entry.get(key) for key in _RECORD_KEYS}
        for entry in entries
        if isinstance(entry, Mapping) and any(marker in entry for marker in _RECORD_MARKERS)
    ]


def history_records(
    memory: dict[str, Any], cursor: HistoryCursor | None = None
) -> list[dict[str, Any]]:
    """The history list, created or repaired in place when missing or malformed.

    Entries that are not mappings carrying a record marker are dropped; the rest keep only the
    record keys. With a ``cursor`` only the entries added since its last check are looked at.
    """
    raw = memory.get(HISTORY_KEY)
    if cursor is not None:
        known = cursor.records
        if (
            known is not None
            and len(known) == cursor.checked
            and raw is known
            and (not known or known[-1] is cursor.last)
        ):
            # Nothing added since the last check (every call checks twice): nothing to read.
            return raw
    if not isinstance(raw, list):
        raw = []
        memory[HISTORY_KEY] = raw
    start = cursor.start(raw) if cursor is not None else 0
    if start < len(raw):
        tail = raw[start:] if start else raw
        cleaned = _clean(tail)
        if cleaned != tail:
            raw[start:] = cleaned
    if cursor is not None:
        cursor.mark(raw)
    return raw


def outcome_summary(
    outcome: Outcome | None, *, secrets: Sequence[str] | None = None
) -> dict[str, Any]:
    """Compact description of an outcome for a history record (``secrets``: as for
    :func:`~recurgent._values.json_safe`)."""
    if outcome is None:
        return {"status": "unknown", "ok": False, "error_type": "unknown", "retriable": False}
    status = outcome.status
    ok = status == "ok"
    summary: dict[str, Any] = {
        "status": status,
        "ok": ok,
        "error_type": outcome.error_type,
        "retriable": outcome.retriable,
    }
    value = outcome.value
    if ok and value is not None:
        kind = type(value)
        summary["value_class"] = kind.__name__
        if kind is int and -_SHORT_INT < value < _SHORT_INT:
            # json_safe gives a short int back as it is, and its JSON text is its decimal
            # text: one C call, where json.dumps costs several times more.
            preview = int.__repr__(value)
        else:
            # Bounded: the preview keeps 500 characters, and a value of shared parts can be
            # billions of characters of JSON (red team R12).
            safe = json_safe(value, budget=_PREVIEW_BUDGET, secrets=secrets)
            preview = str(safe) if type(safe) is int else json.dumps(safe, ensure_ascii=False)
        summary["value_preview"] = (
            preview if len(preview) <= _PREVIEW else preview[:_PREVIEW] + "..."
        )
        sources = None if kind in _ATOMS else _provenance_sources(value)
        if sources:
            summary["source_count"] = len(sources)
            summary["source_uris"] = [
                s["uri"] for s in sources if isinstance(s.get("uri"), str) and s["uri"].strip()
            ]
            uri = sources[0].get("uri")
            if isinstance(uri, str) and uri.strip():
                summary["primary_uri"] = uri
            mode = sources[0].get("retrieval_mode")
            if isinstance(mode, str) and mode.strip():
                summary["retrieval_mode"] = mode
    elif outcome.status == "error":
        summary["error_message"] = (outcome.error_message or "")[:400]
    return summary


_ATOMS = frozenset({int, float, str, bool, type(None), list, tuple})
# Ints this short are always JSON numbers in json_safe (far below its size limit).
_SHORT_INT = 10**18


def _provenance_sources(value: Any) -> list[Mapping[str, Any]]:
    if type(value) in _ATOMS or not isinstance(value, Mapping):
        return []
    provenance = value.get("provenance")
    sources = provenance.get("sources") if isinstance(provenance, Mapping) else None
    if not isinstance(sources, list):
        return []
    return [source for source in sources if isinstance(source, Mapping)]


def append_record(
    memory: dict[str, Any],
    *,
    call_id: str,
    method_name: str,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    outcome: Outcome | None,
    trace_id: str,
    parent_call_id: str | None,
    depth: int,
    duration_ms: float,
    cursor: HistoryCursor | None = None,
    content: Mapping[str, Any] | None = None,
    timestamp: str | None = None,
) -> int:
    """Append one record for a finished call; return the history length afterwards.

    ``content``: the ``content_ref``/``content_kind``/``content_bytes``/``content_digest`` of
    the answer the content store kept (ADR 0102), added to the outcome summary. Only the last
    :data:`HISTORY_LIMIT` records are kept. ``timestamp``: the call's finishing time as
    :func:`~recurgent._values.utc_timestamp` text (now when not given).
    """
    summary = outcome_summary(outcome)
    if content:
        summary.update(content)
    records = history_records(memory, cursor)
    # Each copy below reads the environment's secrets only if it has to walk its value:
    # numbers, flags and empty containers (most arguments and answers) need no read.
    records.append(
        {
            "call_id": call_id,
            "timestamp": timestamp or utc_timestamp(),
            "speaker": "user" if depth == 0 else "tool",
            "method_name": method_name,
            "args": json_safe(list(args), budget=_ARGUMENTS_BUDGET),
            "kwargs": json_safe(dict(kwargs), budget=_ARGUMENTS_BUDGET) if kwargs else {},
            "outcome_summary": summary,
            "trace_id": trace_id,
            "parent_call_id": parent_call_id,
            "depth": depth,
            "duration_ms": round(duration_ms, 1),
        }
    )
    if len(records) > HISTORY_LIMIT:
        del records[: len(records) - HISTORY_LIMIT]
    size = len(records)
    if cursor is not None:
        # cursor.mark(records), written out (every call appends one record).
        cursor.records, cursor.checked, cursor.last = records, size, records[-1]
    return size
