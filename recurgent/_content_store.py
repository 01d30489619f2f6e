"""The content store: one agent's earlier answers, kept in memory for ``content(ref)`` (ADR 0101).

History records keep a 500-character preview of an answer; a follow-up such as "format that
answer as markdown" needs all of it. Every ok answer of a depth-0 call is therefore kept here as
JSON text under a random ref ``content:<24 hex>`` that the call's history record names
(``outcome_summary.content_ref``); generated code reads it back with ``content(ref)``, a fresh
copy each time. Answers of nested calls and error payloads are kept only when the agent's
settings say so.

The store is bounded by entries, bytes and an optional age (``content_store_*`` settings, ADR
0076), least recently used first out. The limits are not kept here: every write and read is
handed the :class:`ContentRetention` of the agent's settings as they are then, so a changed
retention policy applies from the next operation (:meth:`ContentStore.enforce` applies it at
once). Nothing is persisted, and a parent's store is not its children's.

Thread-safe: calls of one agent may finish, and programs of one agent may read, concurrently.
Serialization and parsing run outside the store's lock.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from recurgent._content_serialization import KINDS, scalar_json, serialize, sha256_of
from recurgent._forksafe import fork_safe_lock
from recurgent._ids import random_hex
from recurgent._runtime_config import RuntimeSettings
from recurgent._values import outgrows
from recurgent.outcome import Outcome

__all__ = [
    "CONTENT_REF_PREFIX",
    "ContentReads",
    "ContentRetention",
    "ContentStore",
    "ContentWrite",
    "content_log_fields",
]

CONTENT_REF_PREFIX = "content:"
# Refs a call's log line lists, and the characters kept of each (a program may pass anything).
_READ_REFS = 100
_REF_CHARS = 80


@dataclass(frozen=True, slots=True)
class ContentRetention:
    """What the store keeps, from an agent's settings at the moment of use.

    Attributes:
        max_entries: Entries kept at most (``content_store_max_entries``).
        max_bytes: Bytes of JSON kept at most, and the largest single entry
            (``content_store_max_bytes``).
        ttl_seconds: Age after which an entry expires, from its write (``None``: never).
        nested_capture: Keep ok answers of calls at depth > 0 too.
        error_payloads: Keep the payload of error outcomes too (at any depth).
    """

    max_entries: int = 128
    max_bytes: int = 2_097_152
    ttl_seconds: float | None = None
    nested_capture: bool = False
    error_payloads: bool = False

    @classmethod
    def from_settings(cls, settings: RuntimeSettings) -> ContentRetention:
        """The retention of an agent's captured runtime settings."""
        return cls(
            max_entries=settings.content_store_max_entries,
            max_bytes=settings.content_store_max_bytes,
            ttl_seconds=settings.content_store_ttl_seconds,
            nested_capture=settings.content_store_nested_capture_enabled,
            error_payloads=settings.content_store_store_error_payloads,
        )


@dataclass(slots=True)
class ContentWrite:
    """What one call's write did, for its history record and log line.

    Read-only by convention, not frozen: every call makes one, and a frozen dataclass sets
    each field through ``object.__setattr__`` (as :class:`~recurgent._store.CallRecord`, ADR
    0072)."""

    stored: bool
    ref: str | None = None
    kind: str | None = None
    size: int | None = None
    digest: str | None = None
    mode: str | None = None
    skipped_reason: str | None = None
    evicted: int = 0
    entry_count: int = 0
    total_bytes: int = 0

    def summary(self) -> dict[str, Any]:
        """The ``outcome_summary`` keys of a stored write (none when it was skipped)."""
        if not self.stored:
            return {}
        return {
            "content_ref": self.ref,
            "content_kind": self.kind,
            "content_bytes": self.size,
            "content_digest": self.digest,
        }


# One lock for every attempt's read counts: reads are rare, and an attempt (every call makes
# one) then allocates no lock of its own.
_READS_LOCK = fork_safe_lock()


@dataclass(slots=True)
class ContentReads:
    """The ``content(ref)`` reads of one attempt, for its call's log line."""

    hits: int = 0
    misses: int = 0
    refs: list[str] = field(default_factory=list)

    def record(self, ref: str, *, hit: bool) -> None:
        """Count one read of ``ref`` (each ref is listed once, the first 100 of them)."""
        shown = ref[:_REF_CHARS]
        with _READS_LOCK:
            if hit:
                self.hits += 1
            else:
                self.misses += 1
            if shown not in self.refs and len(self.refs) < _READ_REFS:
                self.refs.append(shown)


# One kept answer, as the store reads it back: (its JSON text, the bytes it counts for, when it
# was written on the store's clock, for the age limit). The ref is its key; what the call was
# (ids, role, method, kind, digest) is in the call's history record and log line. A plain
# tuple of atomic values: the collector stops tracking it, so a full store of answers adds
# nothing to the collections every call's garbage triggers.
_Entry = tuple[str, int, float]
_TEXT: Final = 0
_SIZE: Final = 1
_WRITTEN: Final = 2


def _payload(outcome: Outcome) -> Any:
    if outcome.status == "ok":
        return outcome.value
    # The envelope itself is never kept: its fields are what a follow-up can use.
    return {
        "error_type": outcome.error_type,
        "error_message": outcome.error_message,
        "retriable": outcome.retriable,
        "metadata": outcome.metadata,
    }


def _skip_reason(outcome: Outcome | None, depth: int, retention: ContentRetention) -> str | None:
    if not isinstance(outcome, Outcome):
        return "invalid_outcome"
    if outcome.status == "ok":
        if depth <= 0 or retention.nested_capture:
            return None
        return "nested_capture_disabled"
    return None if retention.error_payloads else "error_payload_capture_disabled"


class ContentStore:
    """One agent's kept answers (see the module docstring).

    Args:
        clock: Seconds on a monotonic scale for entry ages (``time.monotonic``, read at each
            use, when omitted); specs pass their own to step past a TTL without sleeping.
    """

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock
        # A child forked while another thread kept an answer finds it unheld (ADR 0139).
        self._lock = fork_safe_lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._total = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[str]:
        """The refs held, least recently used first."""
        with self._lock:
            return iter(list(self._entries))

    @property
    def total_bytes(self) -> int:
        """Bytes of JSON held."""
        return self._total

    def _now(self) -> float:
        return self._clock() if self._clock is not None else time.monotonic()

    # ----------------------------------------------------------------------------- writes

    def write(
        self, outcome: Outcome | None, *, retention: ContentRetention, depth: int
    ) -> ContentWrite:
        """Keep one finished call's answer (of a call ``depth`` calls deep) when ``retention``
        says so; never raises."""
        try:
            if type(outcome) is Outcome and outcome.status == "ok" and depth <= 0:
                payload = outcome.value  # the usual case: a top-level call's ok answer
            else:
                reason = _skip_reason(outcome, depth, retention)
                if reason is not None:
                    return self._skipped(reason)
                assert outcome is not None
                payload = _payload(outcome)
            text = scalar_json(payload)
            if text is not None:
                # serialize() of a scalar, without its Serialized: the same text, kind, digest.
                raw = text.encode("utf-8", "surrogatepass")
                kind, size, mode = KINDS[type(payload)], len(raw), "json_safe"
                digest = f"sha256:{sha256_of(raw).hexdigest()}"
            elif outgrows(payload, retention.max_bytes):
                return self._skipped("entry_exceeds_max_bytes")
            else:
                stored = serialize(payload)
                text, kind, size, mode = stored.text, stored.kind, stored.size, stored.mode
                digest = stored.digest
            if size > retention.max_bytes:
                return self._skipped("entry_exceeds_max_bytes")
            ref = f"{CONTENT_REF_PREFIX}{random_hex(12)}"
            entry = (text, size, time.monotonic() if self._clock is None else self._clock())
            with self._lock:
                evicted = self._expire(retention) if retention.ttl_seconds else 0
                self._entries[ref] = entry
                self._total += size
                evicted += self._bound(retention)
                count, total = len(self._entries), self._total
            return ContentWrite(True, ref, kind, size, digest, mode, None, evicted, count, total)
        except Exception:  # noqa: BLE001 - keeping an answer never breaks the call
            return self._skipped("store_write_failed")

    def skipped(self, reason: str) -> ContentWrite:
        """A write that did not happen, with the store's current counts."""
        return self._skipped(reason)

    def _skipped(self, reason: str) -> ContentWrite:
        with self._lock:
            count, total = len(self._entries), self._total
        return ContentWrite(
            stored=False, skipped_reason=reason, entry_count=count, total_bytes=total
        )

    def discard(self, ref: str) -> bool:
        """Drop ``ref`` (a write whose history record could not be appended)."""
        with self._lock:
            return self._drop(ref)

    def enforce(self, retention: ContentRetention) -> int:
        """Apply ``retention`` now (expiry, then the bounds); return how many entries left.

        Writes and reads apply the retention they are given anyway; this is for a policy
        change that should take effect before the next of them.
        """
        with self._lock:
            return self._expire(retention) + self._bound(retention)

    def _drop(self, ref: str) -> bool:
        entry = self._entries.pop(ref, None)
        if entry is None:
            return False
        self._total = max(0, self._total - entry[_SIZE])
        return True

    def _expire(self, retention: ContentRetention) -> int:
        ttl = retention.ttl_seconds
        if ttl is None or ttl <= 0:
            return 0
        now = self._now()
        expired = [ref for ref, entry in self._entries.items() if now - entry[_WRITTEN] > ttl]
        for ref in expired:
            self._drop(ref)
        return len(expired)

    def _bound(self, retention: ContentRetention) -> int:
        entries = self._entries
        evicted = 0
        while entries and (
            len(entries) > retention.max_entries or self._total > retention.max_bytes
        ):
            # _drop of the least recently used entry, in one call
            _, entry = entries.popitem(last=False)
            total = self._total - entry[_SIZE]
            self._total = total if total > 0 else 0
            evicted += 1
        return evicted

    # ------------------------------------------------------------------------------ reads

    def read(self, ref: str, retention: ContentRetention) -> tuple[bool, Any]:
        """``(True, a fresh copy of the payload)`` for a held ref, else ``(False, None)``.

        A hit makes the entry the most recently used. Expired entries go first.
        """
        with self._lock:
            self._expire(retention)
            entry = self._entries.get(ref)
            if entry is None:
                return False, None
            self._entries.move_to_end(ref)  # the order is the recency
            text = entry[_TEXT]
        try:
            return True, json.loads(text)
        except (ValueError, RecursionError):
            return False, None

    def reader(
        self, retention: Callable[[], ContentRetention], reads: ContentReads
    ) -> Callable[[Any], Any]:
        """``content(ref)`` for one call's programs: the payload or ``None``, reads recorded.

        ``retention`` is asked at each read, so the agent's settings as they are then apply.
        A ref that is not a non-blank string is ``None`` and not counted.
        """

        def content(ref: Any) -> Any:
            if not isinstance(ref, str):
                return None
            key = str.__str__(ref).strip()
            if not key:
                return None
            found, value = self.read(key, retention())
            reads.record(key, hit=found)
            return value

        return content

    def describe(self, ref: str) -> dict[str, Any] | None:
        """What is kept under ``ref`` (its JSON text and the bytes it counts for), or ``None``:
        for specs and debugging."""
        with self._lock:
            entry = self._entries.get(ref)
        return None if entry is None else {"text": entry[_TEXT], "size": entry[_SIZE]}


# Every store of the process, for the fork hook below (weakly: a store lives with its agent).


def content_log_fields(write: ContentWrite | None, reads: ContentReads) -> dict[str, Any]:
    """The twelve ``content_store_*`` fields of a call's log line (the original's names)."""
    return {
        "content_store_write_applied": bool(write and write.stored),
        "content_store_write_ref": write.ref if write else None,
        "content_store_write_kind": write.kind if write else None,
        "content_store_write_bytes": write.size if write else None,
        "content_store_write_digest": write.digest if write else None,
        "content_store_write_skipped_reason": write.skipped_reason if write else None,
        "content_store_eviction_count": write.evicted if write else 0,
        "content_store_read_hit_count": reads.hits,
        "content_store_read_miss_count": reads.misses,
        "content_store_read_refs": list(reads.refs),
        "content_store_entry_count": write.entry_count if write else None,
        "content_store_total_bytes": write.total_bytes if write else None,
    }
