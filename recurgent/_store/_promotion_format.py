"""The lifecycle block and the ``versions`` map of an artifact, as they are on disk (ADR 0080).

Store files are untrusted input (ADR 0070): every field here is typed, checksums must look like
checksums, each list and map is bounded, and free text (an override's actor and reason) is cut.
A field of the wrong type makes the whole record invalid, and the store sets the file aside like
any damaged record; a list longer than its bound is read as its newest entries (what a write
would have kept), so a file written with other bounds is never treated as damage.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from recurgent._store._provenance import Provenance

__all__ = [
    "CHECKSUM_PATTERN",
    "LEDGER_KEPT",
    "LIFECYCLE_ENTRIES_KEPT",
    "LIFECYCLE_STATES",
    "OVERRIDES_KEPT",
    "POLICY_VERSION",
    "TEXT_CHARS",
    "VERSIONS_KEPT",
    "Checksum",
    "LedgerEntry",
    "Lifecycle",
    "LifecycleEntry",
    "LifecycleState",
    "ManualOverride",
    "ShadowLedger",
    "VersionCode",
]

POLICY_VERSION = "solver_promotion_v1"
LifecycleState = Literal["candidate", "probation", "durable", "degraded"]
LIFECYCLE_STATES: tuple[LifecycleState, ...] = ("candidate", "probation", "durable", "degraded")
#: Evaluations kept in the shadow ledger, and manual overrides kept (the original's bounds).
LEDGER_KEPT = 200
OVERRIDES_KEPT = 200
#: Code versions whose code is kept for selection and rollback (the original's bound).
VERSIONS_KEPT = 8
#: Lifecycle entries kept: the kept versions and as many whose code is gone (their state stays
#: readable for a while; the original kept them all).
LIFECYCLE_ENTRIES_KEPT = 16
#: Free text in an override (actor, reason) and in a ledger entry's strings is cut here.
TEXT_CHARS = 400
_RATIONALE_KEYS = 64

CHECKSUM_PATTERN = r"^sha256:[0-9a-f]{64}$"
Checksum = Annotated[str, StringConstraints(pattern=CHECKSUM_PATTERN)]


class _Model(BaseModel):
    # Unknown keys are kept and written back, as in the rest of the artifact.
    model_config = ConfigDict(extra="allow", validate_assignment=False)


def _newest(items: list[Any], kept: int) -> list[Any]:
    return items if len(items) <= kept else items[-kept:]


def _cut(text: str | None) -> str | None:
    return text if text is None or len(text) <= TEXT_CHARS else text[:TEXT_CHARS]


class VersionCode(_Model):
    """One kept code version (``versions[<checksum>]``): its code and what it was written for.

    Fields other than the code and the timestamps are ``None`` in a version written by hand or
    by the original; such a version is read with the record's own values (see ``_versions``).
    """

    code: str = Field(min_length=1)
    dependencies: list[dict[str, Any]] = Field(default_factory=list)
    created_at: str | None = None
    last_used_at: str | None = None
    author: str | None = None
    contract_fingerprint: str | None = None
    runtime_version: str | None = None
    prompt_version: str | None = None
    model: str | None = None
    cacheable: bool | None = None
    cacheability_reason: str | None = None
    input_sensitive: bool | None = None
    #: Who wrote this version (ADR 0077); ``None``: unknown (never "as the record").
    provenance: Provenance | None = None


class LifecycleEntry(_Model):
    """The lifecycle state of one code version (``lifecycle.versions[<checksum>]``)."""

    artifact_checksum: Checksum
    lifecycle_state: LifecycleState = "candidate"
    policy_version: str | None = POLICY_VERSION
    incumbent_artifact_checksum: Checksum | None = None
    compatibility_mode: bool = False
    first_seen_at: str | None = None
    last_decision: str | None = None
    last_decision_at: str | None = None


class LedgerEntry(_Model):
    """One evaluation of the policy (or one manual override) with its rationale."""

    decision_type: str = "promotion_evaluation"
    tool_name: str | None = None
    method_name: str | None = None
    candidate_artifact_id: Checksum
    incumbent_artifact_id: Checksum | None = None
    decision: str
    from_state: LifecycleState | None = None
    to_state: LifecycleState | None = None
    policy_version: str | None = POLICY_VERSION
    window: str | None = None
    #: How many calls the evaluation covers: 1 for a call written at once, the batch's size for
    #: answered persisted runs written together (ADR 0055), 0 for a manual override.
    calls_covered: int = Field(default=1, ge=0)
    rationale: dict[str, Any] = Field(default_factory=dict)
    at: str

    @field_validator("rationale", mode="after")
    @classmethod
    def _bounded_rationale(cls, value: dict[str, Any]) -> dict[str, Any]:
        if len(value) <= _RATIONALE_KEYS:
            return value
        return dict(list(value.items())[:_RATIONALE_KEYS])


class ManualOverride(_Model):
    """One ``recurgent tools set-lifecycle`` (``lifecycle.manual_overrides[]``)."""

    at: str
    actor: str
    role: str | None = None
    method: str | None = None
    artifact_checksum: Checksum
    state: LifecycleState
    previous_state: LifecycleState | None = None
    reason: str | None = None

    @field_validator("actor", "reason", mode="after")
    @classmethod
    def _cut_text(cls, value: str | None) -> str | None:
        return _cut(value)


class ShadowLedger(_Model):
    """Every evaluation, newest last (the last :data:`LEDGER_KEPT`)."""

    #: Kept for the original's file shape; like the original, nothing computes them yet.
    false_promotion_count: int = Field(default=0, ge=0)
    false_hold_count: int = Field(default=0, ge=0)
    evaluations: list[LedgerEntry] = Field(default_factory=list)

    @field_validator("evaluations", mode="after")
    @classmethod
    def _bounded(cls, value: list[LedgerEntry]) -> list[LedgerEntry]:
        return _newest(value, LEDGER_KEPT)


class Lifecycle(_Model):
    """The artifact's ``lifecycle`` block: each version's state, the incumbent, the ledger."""

    policy_version: str = POLICY_VERSION
    incumbent_durable_checksum: Checksum | None = None
    #: The record existed before it had lifecycle data: its versions of then started in
    #: probation (the original's legacy rule).
    legacy_compatibility_mode: bool = False
    versions: dict[Checksum, LifecycleEntry] = Field(default_factory=dict)
    shadow_ledger: ShadowLedger = Field(default_factory=ShadowLedger)
    manual_overrides: list[ManualOverride] = Field(default_factory=list)
    created_at: str | None = None

    @field_validator("versions", mode="after")
    @classmethod
    def _keyed_and_bounded(cls, value: dict[str, LifecycleEntry]) -> dict[str, LifecycleEntry]:
        for key, entry in value.items():
            if entry.artifact_checksum != key:
                raise ValueError(f"lifecycle entry {key} names {entry.artifact_checksum}")
        if len(value) <= LIFECYCLE_ENTRIES_KEPT:
            return value
        return dict(list(value.items())[-LIFECYCLE_ENTRIES_KEPT:])

    @field_validator("manual_overrides", mode="after")
    @classmethod
    def _bounded(cls, value: list[ManualOverride]) -> list[ManualOverride]:
        return _newest(value, OVERRIDES_KEPT)
