"""Kept code versions and which one runs under promotion enforcement (ADR 0081).

An artifact keeps the code of its last :data:`VERSIONS_KEPT` versions in ``versions`` (with what
each was written for), so the lifecycle can run an earlier version and a degraded one can be
rolled back. With enforcement off the newest code runs, as before; with it on,
:func:`enforced_choices` orders the kept versions: the incumbent durable version, then other
durable, probation and candidate versions (newest first), never a degraded one. Pure functions
on records; the store facade applies the usual reuse checks to each choice in turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, TypeVar

from recurgent._store._promotion_format import VERSIONS_KEPT, VersionCode

if TYPE_CHECKING:
    from recurgent._store._artifacts import ArtifactRecord

__all__ = [
    "VERSIONS_KEPT",
    "enforced_choices",
    "protected",
    "remember_version",
    "runs_kept_version",
    "trim_lru",
    "version_view",
]

V = TypeVar("V")

#: What a kept version says about its program; ``None`` in a version means "as the record".
#: A field added to the record later that describes a program (who wrote it, for whom) must be
#: added here too, or an earlier version would be read as written like the current one.
_DESCRIBED = (
    "author",
    "contract_fingerprint",
    "runtime_version",
    "prompt_version",
    "model",
    "cacheable",
    "cacheability_reason",
    "input_sensitive",
    "provenance",
)
#: Fields a version always states for itself: an unknown author of an earlier version must not
#: borrow the current code's (a test double's program read as a model's, ADR 0077; a legacy
#: program of unknown author read as the host's, red team R10).
_OWN = frozenset({"provenance", "author"})
_PREFERENCE = ("durable", "probation", "candidate")


def trim_lru(mapping: MutableMapping[str, V], limit: int, keep: set[str | None]) -> None:
    """Drop the least recently used entries (the map's first) beyond ``limit``, never those in
    ``keep`` (the current version and the incumbent durable one)."""
    if len(mapping) <= limit:
        return
    for key in list(mapping):
        if len(mapping) <= limit:
            return
        if key not in keep:
            del mapping[key]


def protected(record: ArtifactRecord) -> set[str | None]:
    """The versions no bound may drop: the current code and the incumbent durable version."""
    lifecycle = record.lifecycle
    incumbent = lifecycle.incumbent_durable_checksum if lifecycle is not None else None
    return {record.code_checksum, incumbent}


def runs_kept_version(record: ArtifactRecord, digest: str, source: str) -> bool:
    """Whether a persisted run of ``digest`` ran a kept earlier version, not the current code
    (enforcement chose it): its counts go to that version, and the current code stays."""
    return source == "persisted" and digest != record.code_checksum and digest in record.versions


def remember_version(record: ArtifactRecord, digest: str, now: str) -> None:
    """Keep the code of ``digest`` (the record's current code, or a kept version that ran) as the
    most recently used version, and bound the map.

    A version is described once, when its code first becomes the record's: later runs only move
    its ``last_used_at``.
    """
    versions = record.versions
    version = versions.pop(digest, None)
    if version is None:
        if record.code_checksum != digest or not record.code.strip():
            return
        version = VersionCode(
            code=record.code,
            dependencies=[dict(d) for d in record.dependencies],
            created_at=now,
            **{name: getattr(record, name) for name in _DESCRIBED},
        )
    if version.last_used_at is None or version.last_used_at < now:
        version.last_used_at = now
    versions[digest] = version
    trim_lru(versions, VERSIONS_KEPT, protected(record))


def version_view(record: ArtifactRecord, digest: str) -> ArtifactRecord:
    """The record as it would be with kept version ``digest`` as its code: what the reuse checks
    read and the persisted run executes (a shallow copy; read it, never change it)."""
    if digest == record.code_checksum:
        return record
    version = record.versions[digest]
    update: dict[str, Any] = {
        "code": version.code,
        "code_checksum": digest,
        "dependencies": version.dependencies,
    }
    for name in _DESCRIBED:
        value = getattr(version, name)
        if value is not None or name in _OWN:
            update[name] = value
    for name, value in (version.model_extra or {}).items():
        # Fields a later format adds to versions (e.g. provenance) describe the version too.
        if name in type(record).model_fields and value is not None:
            update[name] = value
    return record.model_copy(update=update)


def _newest_first(record: ArtifactRecord, digests: list[str]) -> list[str]:
    lifecycle = record.lifecycle
    assert lifecycle is not None

    def born(digest: str) -> str:
        version = record.versions.get(digest)
        stamp = version.created_at if version is not None else None
        return stamp or lifecycle.versions[digest].first_seen_at or ""

    return sorted(digests, key=born, reverse=True)


def _choices(record: ArtifactRecord) -> tuple[ArtifactRecord, ...] | None:
    lifecycle = record.lifecycle
    if lifecycle is None:
        return None
    current = record.code_checksum if record.code.strip() else None
    available: dict[str, str] = {
        digest: entry.lifecycle_state
        for digest, entry in lifecycle.versions.items()
        if entry.lifecycle_state != "degraded" and (digest == current or digest in record.versions)
    }
    order: list[str] = []
    incumbent = lifecycle.incumbent_durable_checksum
    if incumbent is not None and available.get(incumbent) == "durable":
        order.append(incumbent)
    for state in _PREFERENCE:
        same = [d for d, s in available.items() if s == state and d not in order]
        order.extend(_newest_first(record, same))
    if current is not None and current not in lifecycle.versions:
        # A version the lifecycle has not seen yet (shadow mode was off) runs last, as today.
        order.append(current)
    return tuple(version_view(record, digest) for digest in order)


#: Choices per (role, method), for the record they were made from: a record the store reads
#: again (after any write to its file) replaces its predecessor, so a busy method keeps one
#: record alive here, not one per write (ADR 0130).
_CHOICES: dict[tuple[str, str], tuple[ArtifactRecord, tuple[ArtifactRecord, ...] | None]] = {}
_CHOICES_KEPT = 256


def enforced_choices(record: ArtifactRecord) -> tuple[ArtifactRecord, ...] | None:
    """The versions enforcement may run, best first, each as :func:`version_view`: the incumbent
    durable version, then durable, probation and candidate versions newest first (the original
    took the oldest first), then the current code when the lifecycle has no entry for it.
    Degraded versions and versions whose code is no longer kept never appear.

    ``None`` when the record has no lifecycle data (it runs as with enforcement off); an empty
    tuple when every version it holds is degraded.
    """
    key = (record.role, record.method_name)
    cached = _CHOICES.get(key)
    if cached is not None and cached[0] is record:
        return cached[1]
    choices = _choices(record)
    if key not in _CHOICES and len(_CHOICES) >= _CHOICES_KEPT:
        # Another thread may change the table between iter() and next(): then skip the drop.
        with contextlib.suppress(RuntimeError):
            _CHOICES.pop(next(iter(_CHOICES), ("", "")), None)
    _CHOICES[key] = (record, choices)
    return choices
