"""What a :class:`~recurgent._store.Store` call reports: the :class:`Lookup` of an artifact and
the :class:`WriteResult` of a write (ADR 0036). Neither raises nor logs: the lifecycle reads
the reason and decides."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recurgent._store._artifacts import ArtifactRecord
from recurgent._store._promotion import Decision

__all__ = ["DEFERRED", "Lookup", "WriteResult"]


@dataclass(frozen=True, slots=True)
class Lookup:
    """What the store holds for one (role, method).

    Attributes:
        record: The artifact, when one could be read (reusable or not).
        reason: ``hit`` when ``record`` may run without a provider request; otherwise why not:
            ``missing``, ``corrupt``, ``unsupported_schema``, ``unreadable``, ``untrusted``
            (ADR 0070), ``invalid_record``, ``key_mismatch``,
            or a reason of :func:`~recurgent._store._artifacts.reuse_verdict` (among them
            ``program_written`` and ``author_unknown``, ADR 0074, and ``test_double_written``,
            ``model_written`` and ``script_changed``, ADR 0077).
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
    ``foreign_runtime``, ``key_mismatch``, ``host_written`` (ADR 0074), ``model_written``
    (ADR 0077), ``missing`` (a persisted run of a program forgotten since, ADR 0131),
    ``not_registered``, ``error: ...``); ``decision``: the promotion evaluation the
    write made of the call's version (ADR 0080), when it made one."""

    written: bool
    reason: str | None = None
    quarantined_to: Path | None = None
    decision: Decision | None = None


#: What a counter change that waits for its batch reports (ADR 0055): one shared value.
DEFERRED = WriteResult(False, "deferred")
