"""The proposals book: ``<store root>/proposals.json``, or a list in memory (ADR 0086).

The file is ``{"schema_version": 1, "proposals": [record, ...]}`` in creation order, the
original's format. Every change is a read-modify-write under the file's lock
(:func:`~recurgent._store._files.update_json`), so processes proposing and deciding at once never
lose each other's writes.

The file is untrusted input (ADR 0070): each record is checked field by field, with bounds,
before anyone sees it. A record that fails is *kept* as found (it may be another version's) but
never shown, matched or changed. A file whose shape is wrong (``proposals`` not a list, or more
entries than :data:`ENTRIES_READ`) is quarantined like a corrupt one.

The book is bounded: at most :data:`MAX_PROPOSALS` entries. Making room drops the oldest
*closed* entries (``rejected``, ``applied``) and unreadable ones first; a pending proposal
(``proposed``, ``approved``) is never dropped, so a book full of pending proposals refuses new
ones (:class:`BookFullError`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from recurgent._forksafe import fork_safe_lock
from recurgent._store._files import (
    SCHEMA_VERSION,
    Loaded,
    quarantine,
    read_json,
    update_json,
)

__all__ = [
    "ACTIONS_KEPT",
    "ENTRIES_READ",
    "EVIDENCE_REFS",
    "EVIDENCE_REF_CHARS",
    "MAX_PROPOSALS",
    "NOTE_CHARS",
    "OPEN_STATUSES",
    "PROPOSAL_BYTES",
    "RECORD_BYTES",
    "STATUSES",
    "SUMMARY_CHARS",
    "TYPE_CHARS",
    "BookFullError",
    "Edit",
    "FileBook",
    "MemoryBook",
    "ProposalBook",
    "ProposalStoreError",
    "Status",
    "checked",
    "encoded_size",
    "find",
    "make_room",
    "proposals_path",
]

Status: TypeAlias = Literal["proposed", "approved", "rejected", "applied"]
STATUSES: tuple[Status, ...] = get_args(Status)
#: Statuses still waiting for a decision: never dropped to make room.
OPEN_STATUSES: frozenset[str] = frozenset({"proposed", "approved"})

#: Entries the book keeps; the 501st proposal drops the oldest closed one.
MAX_PROPOSALS = 500
#: Entries a file may hold before it counts as damaged (written by someone else).
ENTRIES_READ = 4 * MAX_PROPOSALS
#: Largest record as proposed (compact UTF-8 JSON); decisions add at most a few KiB, so a full
#: book stays well below the store's 32 MiB file cap.
PROPOSAL_BYTES = 32 * 1024
#: Largest record read from the file (anything bigger was not written by this port).
RECORD_BYTES = 64 * 1024
TYPE_CHARS = 100
SUMMARY_CHARS = 16_000
EVIDENCE_REFS = 100
EVIDENCE_REF_CHARS = 1_000
NOTE_CHARS = 1_000
#: Decisions kept per record (approve then apply is two; the rest is headroom).
ACTIONS_KEPT = 4
_STAMP_CHARS = 40
_NAME_CHARS = 200


class _Action(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    status: Status
    actor: str = Field(max_length=_NAME_CHARS)
    at: str = Field(max_length=_STAMP_CHARS)
    note: str | None = Field(default=None, max_length=NOTE_CHARS)


class _Record(BaseModel):
    """One proposal as read from the file: every field typed and bounded."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    id: str = Field(pattern=r"^prop-[0-9a-f]{16}$")
    proposal_type: str = Field(min_length=1, max_length=TYPE_CHARS)
    target: JsonValue = None
    evidence_refs: list[str] = Field(default_factory=list, max_length=EVIDENCE_REFS)
    proposed_diff_summary: str = Field(default="", max_length=SUMMARY_CHARS)
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    status: Status
    created_at: str = Field(max_length=_STAMP_CHARS)
    updated_at: str = Field(max_length=_STAMP_CHARS)
    author_context: dict[str, str | None] = Field(default_factory=dict, max_length=8)
    last_action: _Action | None = None
    actions: list[_Action] = Field(default_factory=list, max_length=ACTIONS_KEPT)
    applied_mutation: dict[str, JsonValue] | None = None


def encoded_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON; a value JSON cannot hold counts as too big."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return RECORD_BYTES + 1
    return len(text.encode("utf-8", "surrogatepass"))


def checked(entry: Any) -> dict[str, Any] | None:
    """``entry`` as a proposal record (a fresh dict), or ``None`` when it is not a valid one."""
    if not isinstance(entry, dict) or encoded_size(entry) > RECORD_BYTES:
        return None
    try:
        record = _Record.model_validate(entry)
    except ValidationError:
        return None
    if any(len(ref) > EVIDENCE_REF_CHARS for ref in record.evidence_refs):
        return None
    if any(
        value is not None and len(value) > _NAME_CHARS for value in record.author_context.values()
    ):
        return None
    return record.model_dump(mode="json")


def find(entries: list[Any], proposal_id: str) -> tuple[int, dict[str, Any]] | None:
    """The index and checked record of ``proposal_id``; unreadable entries never match."""
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and entry.get("id") == proposal_id:
            record = checked(entry)
            if record is not None:
                return index, record
    return None


class BookFullError(Exception):
    """Every entry of a full book is pending: a new proposal would push one out."""


def make_room(entries: list[Any]) -> list[str]:
    """Drop entries until one more fits; return the ids dropped (``?`` for unreadable ones).

    Drops the oldest closed or unreadable entry first, never a pending one.

    Raises:
        BookFullError: only pending proposals are left and the book is full.
    """
    dropped: list[str] = []
    while len(entries) >= MAX_PROPOSALS:
        for index, entry in enumerate(entries):
            record = checked(entry)
            if record is None or record["status"] not in OPEN_STATUSES:
                entries.pop(index)
                dropped.append(record["id"] if record is not None else "?")
                break
        else:
            raise BookFullError(
                f"{len(entries)} proposals are pending (the book keeps {MAX_PROPOSALS}); "
                "approve, reject or apply some before proposing more"
            )
    return dropped


class ProposalStoreError(Exception):
    """The book cannot be read or written (it is the ``proposal_store_unavailable`` outcome).

    Attributes:
        retriable: Whether trying again later may work (a lock held too long, a full disk).
    """

    def __init__(self, message: str, *, retriable: bool) -> None:
        super().__init__(message)
        self.retriable = retriable


#: Changes the book's entries in place and says whether anything changed.
Edit = Callable[[list[Any]], bool]


class ProposalBook(Protocol):
    """Where an agent's proposals live."""

    @property
    def where(self) -> str:
        """Where the book is, for messages (a path, or ``memory``)."""
        ...

    def read(self) -> list[Any]:
        """Every entry (checked or not), oldest first.

        Raises:
            ProposalStoreError: the book cannot be read.
        """
        ...

    def update(self, edit: Edit) -> None:
        """Run ``edit`` on the entries while no one else can change them; keep its changes.

        Raises:
            ProposalStoreError: the book cannot be read or written; nothing changed then.
        """
        ...


def proposals_path(root: Path) -> Path:
    """``<root>/proposals.json``."""
    return root / "proposals.json"


class FileBook:
    """``proposals.json`` under a store root, shared by every process using that root."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = proposals_path(root)

    @property
    def where(self) -> str:
        return str(self.path)

    def read(self) -> list[Any]:
        loaded = read_json(self.path, root=self.root)
        if loaded.state in ("missing", "corrupt"):
            return []
        if loaded.state == "untrusted" and loaded.quarantined_to is not None:
            return []
        if loaded.state != "ok":
            raise ProposalStoreError(
                f"{self.path} cannot be read ({loaded.state}: {loaded.detail})", retriable=False
            )
        return self._entries(loaded)

    def update(self, edit: Edit) -> None:
        def change(loaded: Loaded) -> dict[str, Any] | None:
            entries = self._entries(loaded)
            if not edit(entries):
                return None
            others = {
                key: value
                for key, value in (loaded.data or {}).items()
                if key not in ("schema_version", "proposals")
            }
            return {"schema_version": SCHEMA_VERSION, "proposals": entries, **others}

        try:
            updated = update_json(self.path, change, root=self.root)
        except TimeoutError as error:
            raise ProposalStoreError(str(error), retriable=True) from None
        except OSError as error:
            raise ProposalStoreError(
                f"{self.path} cannot be written ({type(error).__name__}: {error})", retriable=True
            ) from None
        if not updated.written and updated.skipped not in (None, "no_change"):
            raise ProposalStoreError(
                f"{self.path} is left as it is ({updated.skipped})", retriable=False
            )

    def _entries(self, loaded: Loaded) -> list[Any]:
        if loaded.data is None:
            return []
        entries = loaded.data.get("proposals", [])
        if isinstance(entries, list) and len(entries) <= ENTRIES_READ:
            return list(entries)
        # Not this store's shape: keep a copy aside and start an empty book.
        quarantine(self.path, expected=loaded.raw)
        return []


class MemoryBook:
    """Proposals of an agent with no store (``toolstore_root=None``): they live as long as it."""

    def __init__(self) -> None:
        self._entries: list[Any] = []
        self._lock = fork_safe_lock()

    @property
    def where(self) -> str:
        return "memory"

    def read(self) -> list[Any]:
        with self._lock:
            return list(self._entries)

    def update(self, edit: Edit) -> None:
        with self._lock:
            entries = list(self._entries)
            if edit(entries):
                self._entries = entries
