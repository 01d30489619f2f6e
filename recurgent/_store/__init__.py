"""The tool store: persisted programs and the tool registry, behind one small facade (ADR 0036).

The lifecycle asks :class:`Store` whether a persisted program may run (``lookup``), reports
every call that ran code (``record_call``) and every tool registration and use. The store never
calls a provider and never logs: each method returns what it found or did, and never raises
for a damaged or unwritable store (a store problem must not break a call).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from recurgent._store._artifacts import (
    ArtifactRecord,
    CallRecord,
    FailedAttempt,
    apply_call,
    checksum,
    contract_fingerprint,
    record_cacheability,
    reuse_verdict,
)
from recurgent._store._cacheability import Cacheability, classify
from recurgent._store._files import Loaded, quarantine, read_json, update_json
from recurgent._store._paths import artifact_path, default_root
from recurgent._store._registry import load_tools, merge_known_tools, register, touch
from recurgent._values import utc_timestamp

__all__ = [
    "ArtifactRecord",
    "Cacheability",
    "CallRecord",
    "FailedAttempt",
    "Lookup",
    "Store",
    "WriteResult",
    "checksum",
    "classify",
    "contract_fingerprint",
    "default_root",
    "record_cacheability",
]

Clock = Callable[[], datetime.datetime]


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@dataclass(frozen=True, slots=True)
class Lookup:
    """What the store holds for one (role, method).

    Attributes:
        record: The artifact, when one could be read (reusable or not).
        reason: ``hit`` when ``record`` may run without a provider request; otherwise why not:
            ``missing``, ``corrupt``, ``unsupported_schema``, ``unreadable``, ``invalid_record``,
            or a reason of :func:`~recurgent._store._artifacts.reuse_verdict`.
        path: The artifact file.
        quarantined_to: Where a damaged file was moved, when it was.
    """

    record: ArtifactRecord | None
    reason: str
    path: Path
    quarantined_to: Path | None = None

    @property
    def reusable(self) -> bool:
        """Whether ``record`` may run without a provider request."""
        return self.reason == "hit" and self.record is not None


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did: ``written``, or ``reason`` why not (``unsupported: ...``,
    ``foreign_runtime``, ``not_registered``, ``error: ...``)."""

    written: bool
    reason: str | None = None
    quarantined_to: Path | None = None


def _parse(loaded: Loaded) -> ArtifactRecord | None:
    try:
        return ArtifactRecord.model_validate(loaded.data)
    except ValidationError:
        return None


class Store:
    """One tool store root.

    Args:
        root: The store directory (created on first write, mode 0700).
        clock: Current UTC time, for timestamps (tests freeze it).
    """

    def __init__(self, root: Path, *, clock: Clock = _utc_now) -> None:
        self.root = Path(root)
        self._clock = clock

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def _now(self) -> str:
        return utc_timestamp(self._clock())

    # ----------------------------------------------------------------- artifacts

    def lookup(
        self, role: str, method: str, *, contract_fingerprint: str, runtime_version: str
    ) -> Lookup:
        """The artifact for ``role.method`` and whether it may run now.

        A damaged file (not JSON, not an object, fields of the wrong type) and a record whose
        checksum does not match its code are moved aside and never run.
        """
        path = artifact_path(self.root, role, method)
        loaded = read_json(path, now=self._clock())
        if loaded.state != "ok":
            reason = {"unsupported": "unsupported_schema"}.get(loaded.state, loaded.state)
            return Lookup(None, reason, path, loaded.quarantined_to)
        if loaded.data is not None and loaded.data.get("runtime") != "python":
            # Another runtime's program (Ruby shares the default root): never read it as ours.
            return Lookup(None, "foreign_runtime", path)
        record = _parse(loaded)
        if record is None:
            moved = quarantine(path, expected=loaded.raw, now=self._clock())
            return Lookup(None, "invalid_record", path, moved)
        verdict = reuse_verdict(
            record, contract_fingerprint=contract_fingerprint, runtime_version=runtime_version
        )
        if verdict == "checksum_mismatch":
            moved = quarantine(path, expected=loaded.raw, now=self._clock())
            return Lookup(record, verdict, path, moved)
        return Lookup(record, verdict or "hit", path)

    def record_call(self, call: CallRecord) -> WriteResult:
        """Fold one finished call that ran code into its artifact (atomic, under its lock).

        An artifact with another schema version or of another runtime is left untouched. A
        persisted run's update (counters only, same code) skips fsync: it is written after
        every call, and losing one to a power cut loses a count, never a program.
        """
        path = artifact_path(self.root, call.role, call.method)
        now = self._now()
        refused: list[str] = []

        def change(loaded: Loaded) -> dict[str, Any] | None:
            record: ArtifactRecord | None = None
            if loaded.data is not None:
                if loaded.data.get("runtime") != "python":
                    refused.append("foreign_runtime")
                    return None
                record = _parse(loaded)
                if record is None:
                    quarantine(path, expected=loaded.raw, now=self._clock())
            # The record was parsed from the file a moment ago and nothing else holds it.
            return apply_call(record, call, now=now, in_place=True).to_json()

        try:
            updated = update_json(
                path,
                change,
                root=self.root,
                now=self._clock(),
                durable=call.source != "persisted",
            )
        except (OSError, ValueError) as error:
            return WriteResult(False, f"error: {type(error).__name__}: {error}")
        if refused:
            return WriteResult(False, refused[0])
        return WriteResult(updated.written, updated.skipped, updated.quarantined_to)

    # ----------------------------------------------------------------- registry

    def registry_entries(self) -> dict[str, dict[str, Any]]:
        """Every registered tool's entry (empty when the registry is missing or unusable)."""
        tools, _ = load_tools(self.root)
        return tools

    def known_tools(self, in_memory: Mapping[str, Any] | None) -> dict[str, Any]:
        """The registry an agent should see: persisted tools merged with ``in_memory`` (its
        ``context["tools"]``), memory winning for scalars, lists unioned."""
        return merge_known_tools(self.registry_entries(), in_memory)

    def register_tool(self, name: str, contract: Mapping[str, Any] | None) -> WriteResult:
        """Record (or refresh) a delegated tool with its contract."""
        return self._write(lambda: register(self.root, name, contract, now=self._now()))

    def touch_tool(self, name: str, method: str, *, ok: bool) -> WriteResult:
        """Count one call a registered tool served; ``not_registered`` for other names."""
        result = self._write(lambda: touch(self.root, name, method, ok, now=self._now()))
        if not result.written and result.reason == "no_change":
            return WriteResult(False, "not_registered")
        return result

    def _write(self, action: Callable[[], Any]) -> WriteResult:
        try:
            updated = action()
        except (OSError, ValueError) as error:
            return WriteResult(False, f"error: {type(error).__name__}: {error}")
        return WriteResult(updated.written, updated.skipped, updated.quarantined_to)
