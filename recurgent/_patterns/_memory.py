"""The pattern memory: ``<store root>/patterns.json``, or a list in memory (ADR 0107).

The file is the original's format, ``{"schema_version": 1, "roles": {role: {"events": [...]}}}``,
so either runtime reads the other's events. Each event records one finished call that wrote a
program (generated or repaired): when, which method, its trace and call ids, its depth, whether
it made child agents, its capability tags, its outcome status, and the user correction it was
found to be (only when one was). This port adds the program's checksum (``code_checksum``) and
``"runtime": "python"``; the original ignores both.

The file is untrusted input (ADR 0070): every event is checked field by field, with bounds,
before anyone reads it (:func:`checked_event`); an event that fails is kept in the file as found
but never read. A file whose shape is wrong (``roles`` not an object, a role's bucket or events
not what they should be) is quarantined like a corrupt one. Only the last :data:`EVENTS_READ`
entries of a role are looked at, so a planted list of a million events costs nothing.

Bounded: :data:`EVENTS_KEPT` events a role (the original's 50) and :data:`ROLES_KEPT` roles, the
role recorded longest ago dropped first (the original kept every role). Writes are
read-modify-write under the file's lock, not fsynced (a lost event costs a nudge, ADR 0047's
trade), and happen only when a call wrote a program: a stored program answering again records
nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from recurgent._forksafe import fork_safe_lock
from recurgent._patterns._extract import TAG
from recurgent._store._cache import IdentityCache
from recurgent._store._files import SCHEMA_VERSION, Loaded, quarantine, read_json, update_json

__all__ = [
    "EVENTS_KEPT",
    "EVENTS_READ",
    "ROLES_KEPT",
    "TAGS_KEPT",
    "Correction",
    "FilePatterns",
    "MemoryPatterns",
    "PatternBook",
    "PatternEvent",
    "checked_event",
    "patterns_path",
]

EVENTS_KEPT = 50
EVENTS_READ = 200
ROLES_KEPT = 128
TAGS_KEPT = 16
_NAME_CHARS = 200
_ID_CHARS = 128
_STAMP_CHARS = 40
_RUNTIME_TAG = "python"


@dataclass(frozen=True, slots=True)
class Correction:
    """A user correction a call was found to be (ADR 0108).

    Attributes:
        signal: ``temporal_reask`` or ``temporal_reask_no_tooling``.
        correction_of_call_id: The call it corrects.
        matched_capability_patterns: The tags both calls showed, sorted.
        correction_of_checksum: The corrected call's program checksum, when its event had one.
    """

    signal: str
    correction_of_call_id: str
    matched_capability_patterns: tuple[str, ...] = ()
    correction_of_checksum: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The event's ``user_correction`` object (the original's keys)."""
        return {
            "detected": True,
            "signal": self.signal,
            "correction_of_call_id": self.correction_of_call_id,
            "matched_capability_patterns": list(self.matched_capability_patterns),
        }


@dataclass(frozen=True, slots=True)
class PatternEvent:
    """One recorded call (see the module docstring)."""

    timestamp: str
    recorded_at_ms: int
    role: str
    method_name: str
    trace_id: str | None = None
    call_id: str | None = None
    parent_call_id: str | None = None
    depth: int | None = None
    had_delegated_calls: bool = False
    capability_patterns: tuple[str, ...] = ()
    outcome_status: str | None = None
    error_type: str | None = None
    user_correction: Correction | None = None
    code_checksum: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The event as written (the original's keys, then this port's)."""
        event: dict[str, Any] = {
            "timestamp": self.timestamp,
            "recorded_at_ms": self.recorded_at_ms,
            "role": self.role,
            "method_name": self.method_name,
            "trace_id": self.trace_id,
            "call_id": self.call_id,
            "parent_call_id": self.parent_call_id,
            "depth": self.depth,
            "had_delegated_calls": self.had_delegated_calls,
            "capability_patterns": list(self.capability_patterns),
            "outcome_status": self.outcome_status,
            "error_type": self.error_type,
        }
        if self.user_correction is not None:
            event["user_correction"] = self.user_correction.as_json()
        event["code_checksum"] = self.code_checksum
        event["runtime"] = _RUNTIME_TAG
        return event


def _text(value: Any, limit: int) -> str | None:
    """A bounded string, ``None`` for null; anything else fails the event (``ValueError``)."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise ValueError("not a bounded string")
    return value


def _count(value: Any) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        raise ValueError("not a count")
    return value


def tags_of(value: Any) -> tuple[str, ...]:
    """Capability tags as read back: the well-formed ones, unique, at most :data:`TAGS_KEPT`."""
    if not isinstance(value, list):
        return ()
    found: list[str] = []
    for item in value[: TAGS_KEPT * 4]:
        if isinstance(item, str) and TAG.match(item) and item not in found:
            found.append(item)
    return tuple(found[:TAGS_KEPT])


def _correction(value: Any) -> Correction | None:
    if not isinstance(value, Mapping) or value.get("detected") is not True:
        return None
    signal = _text(value.get("signal"), _NAME_CHARS)
    call_id = _text(value.get("correction_of_call_id"), _ID_CHARS)
    if not signal:
        return None
    matched = tuple(sorted(tags_of(value.get("matched_capability_patterns"))))
    return Correction(signal, call_id or "", matched)


def checked_event(entry: Any) -> PatternEvent | None:
    """``entry`` as an event, or ``None`` when it is not a valid one (a bad field fails the whole
    event; missing fields read as the original reads them: no ids, depth unknown, time 0)."""
    if not isinstance(entry, Mapping):
        return None
    try:
        method = _text(entry.get("method_name"), _NAME_CHARS)
        if not method:
            return None
        depth = entry.get("depth")
        if depth is not None:
            depth = _count(depth)
        return PatternEvent(
            timestamp=_text(entry.get("timestamp"), _STAMP_CHARS) or "",
            recorded_at_ms=_count(entry.get("recorded_at_ms")),
            role=_text(entry.get("role"), _NAME_CHARS) or "",
            method_name=method,
            trace_id=_text(entry.get("trace_id"), _ID_CHARS),
            call_id=_text(entry.get("call_id"), _ID_CHARS),
            parent_call_id=_text(entry.get("parent_call_id"), _ID_CHARS),
            depth=depth,
            had_delegated_calls=entry.get("had_delegated_calls") is True,
            capability_patterns=tags_of(entry.get("capability_patterns")),
            outcome_status=_text(entry.get("outcome_status"), _NAME_CHARS),
            error_type=_text(entry.get("error_type"), _NAME_CHARS),
            user_correction=_correction(entry.get("user_correction")),
            code_checksum=_text(entry.get("code_checksum"), _ID_CHARS),
        )
    except ValueError:
        return None


def _of_method(events: list[PatternEvent], method: str, window: int) -> list[PatternEvent]:
    chosen = [event for event in events if event.method_name == method]
    return chosen[-window:] if window > 0 else []


class PatternBook(Protocol):
    """Where a role's pattern events live."""

    def recent(self, role: str, method: str, window: int) -> list[PatternEvent]:
        """The last ``window`` valid events of ``role`` for ``method``, oldest first."""

    def append(self, role: str, event: PatternEvent) -> bool:
        """Record ``event``; whether it was recorded (never raises for a store problem)."""


def patterns_path(root: Path) -> Path:
    """``<root>/patterns.json`` (the original's path)."""
    return Path(root) / "patterns.json"


@dataclass(slots=True)
class _Parsed:
    """A read file: its roles object, and each role's checked events once asked for."""

    roles: Mapping[str, Any]
    events: dict[str, list[PatternEvent]] = field(default_factory=dict)


_FILES: IdentityCache[_Parsed] = IdentityCache(limit=64)


def _bucket_events(bucket: Any) -> list[Any] | None:
    """A role bucket's events list, or ``None`` when the bucket is not one."""
    if not isinstance(bucket, Mapping):
        return None
    events = bucket.get("events", [])
    return events if isinstance(events, list) else None


def _trimmed(roles: Any) -> dict[str, dict[str, Any]] | None:
    """The roles object to write back, each role's events cut to the last :data:`EVENTS_KEPT`
    (other keys of a bucket kept as found); ``None`` when the object is not of this shape."""
    if not isinstance(roles, Mapping):
        return None
    trimmed: dict[str, dict[str, Any]] = {}
    for name, bucket in roles.items():
        events = _bucket_events(bucket)
        if events is None:
            return None
        trimmed[str(name)] = {**bucket, "events": events[-EVENTS_KEPT:]}
    return trimmed


class FilePatterns:
    """``patterns.json`` under a store root, shared by every process (and runtime) using it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.path = patterns_path(self.root)

    def _parsed(self) -> _Parsed | None:
        parsed = _FILES.get(self.path)
        if parsed is not None:
            return parsed
        loaded = read_json(self.path, root=self.root)
        if loaded.state != "ok" or loaded.data is None:
            return None
        roles = loaded.data.get("roles", {})
        if not isinstance(roles, Mapping):
            quarantine(self.path, expected=loaded.raw)
            return None
        parsed = _Parsed(roles)
        _FILES.put(self.path, loaded.identity, parsed)
        return parsed

    def recent(self, role: str, method: str, window: int) -> list[PatternEvent]:
        parsed = self._parsed()
        if parsed is None:
            return []
        events = parsed.events.get(role)
        if events is None:
            raw = _bucket_events(parsed.roles.get(role))
            events = [
                event
                for event in (checked_event(entry) for entry in (raw or [])[-EVENTS_READ:])
                if event is not None
            ]
            parsed.events[role] = events
        return _of_method(events, method, window)

    def append(self, role: str, event: PatternEvent) -> bool:
        def change(loaded: Loaded) -> dict[str, Any] | None:
            data = loaded.data or {}
            roles = _trimmed(data.get("roles", {}))
            if roles is None:
                # Not this store's shape: a copy is kept aside, the memory starts over.
                quarantine(self.path, expected=loaded.raw)
                data, roles = {}, {}
            bucket = roles.pop(role, None) or {"events": []}
            bucket["events"] = [*bucket["events"][-(EVENTS_KEPT - 1) :], event.as_json()]
            roles[role] = bucket  # last: the dict's order is the order roles were recorded in
            while len(roles) > ROLES_KEPT:
                del roles[next(iter(roles))]
            others = {k: v for k, v in data.items() if k not in ("schema_version", "roles")}
            return {"schema_version": SCHEMA_VERSION, "roles": roles, **others}

        try:
            updated = update_json(self.path, change, root=self.root, durable=False)
        except (OSError, ValueError):
            return False
        _FILES.drop(self.path)
        return updated.written


class MemoryPatterns:
    """The pattern memory of an agent with no store (``toolstore_root=None``): it lives as
    long as the agent, with the same bounds as the file."""

    def __init__(self) -> None:
        self._roles: dict[str, list[PatternEvent]] = {}
        self._lock = fork_safe_lock()

    def recent(self, role: str, method: str, window: int) -> list[PatternEvent]:
        with self._lock:
            events = list(self._roles.get(role, ()))
        return _of_method(events, method, window)

    def append(self, role: str, event: PatternEvent) -> bool:
        with self._lock:
            events = self._roles.pop(role, [])
            events.append(event)
            self._roles[role] = events[-EVENTS_KEPT:]
            while len(self._roles) > ROLES_KEPT:
                del self._roles[next(iter(self._roles))]
        return True
