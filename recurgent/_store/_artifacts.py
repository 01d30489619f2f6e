"""Artifact records: the persisted program of one (role, method), its health and lineage (ADR 0036).

The file format is the pydantic model :class:`ArtifactRecord`; :class:`CallRecord` is what a
finished call reports of its program. :func:`reuse_verdict` says whether a record may run again
without a provider request (pure). How a call changes a record is :mod:`._folding`'s; reading
and writing files is the store facade's job.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from recurgent._store._cacheability import Cacheability, legacy_cacheable
from recurgent._store._promotion import (
    DEFAULT_PROMOTION,
    Promotion,
)
from recurgent._store._promotion_format import VERSIONS_KEPT, Lifecycle, VersionCode
from recurgent._store._provenance import (
    Provenance,
    Reader,
    provenance_verdict,
)

__all__ = [
    "HISTORY_LIMIT",
    "HOST",
    "PROGRAM",
    "RUNTIME_TAG",
    "SCORECARD_LIMIT",
    "SESSIONS_KEPT",
    "WINDOW_KEPT",
    "ArtifactRecord",
    "CallRecord",
    "FailedAttempt",
    "HistoryEntry",
    "Scorecard",
    "StoredRun",
    "WindowEntry",
    "checksum",
    "contract_fingerprint",
    "is_degraded",
    "parse_record",
    "record_cacheability",
    "reuse_verdict",
]

#: Every artifact this port writes says which runtime's code it holds; the Ruby runtime uses
#: the same default root and file names, and its code must never be run here.
RUNTIME_TAG = "python"
HISTORY_LIMIT = 3
#: Per-version scorecards kept (the most recently updated); Ruby keeps them all.
SCORECARD_LIMIT = 8
#: Calls kept in a scorecard's recent window, and distinct sessions (trace ids) it remembers.
WINDOW_KEPT = 20
SESSIONS_KEPT = 200
_NO_LIFECYCLE = {"lifecycle"}

ProgramSource = Literal["generated", "persisted", "repaired"]
#: Who a program was generated for (ADR 0074): an agent the host's own code built and called
#: (``host``), or an agent generated code built or called (``program``).
HOST = "host"
PROGRAM = "program"
CallResult = Literal["ok", "domain_error", "failure"]
_FINGERPRINT_FIELDS = ("purpose", "deliverable", "acceptance", "failure_policy")


@functools.lru_cache(maxsize=256)
def checksum(code: str) -> str:
    """``sha256:<hex>`` of the code's UTF-8 bytes (remembered for the last 256 programs: a
    persisted call verifies and records the same code several times)."""
    return "sha256:" + hashlib.sha256(code.encode("utf-8", "surrogatepass")).hexdigest()


def contract_fingerprint(contract: Mapping[str, Any] | None) -> str:
    """``none`` without a contract, else ``sha256:`` of its compact JSON.

    Only purpose, deliverable, acceptance and failure_policy count, in that order: the
    intent signature is left out so a tool delegated from two different requests stays the
    same tool (ADR 0037). Encoding as Ruby's ``JSON.generate``: no spaces, raw UTF-8.
    """
    if not contract:
        return "none"
    kept = {key: contract[key] for key in _FINGERPRINT_FIELDS if contract.get(key) is not None}
    if not kept:
        return "none"
    text = json.dumps(kept, separators=(",", ":"), ensure_ascii=False, default=repr)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class _Model(BaseModel):
    # Unknown keys are kept and written back: a newer or hand-edited file loses nothing.
    model_config = ConfigDict(extra="allow", validate_assignment=False)


class WindowEntry(_Model):
    """One call in a scorecard's recent window."""

    status: str
    error_type: str | None = None
    at: str


class Scorecard(_Model):
    """Counters of one code version (keyed by its checksum)."""

    artifact_checksum: str
    calls: int = Field(default=0, ge=0)
    successes: int = Field(default=0, ge=0)
    failures: int = Field(default=0, ge=0)
    domain_errors: int = Field(default=0, ge=0)
    contract_pass_count: int = Field(default=0, ge=0)
    contract_fail_count: int = Field(default=0, ge=0)
    # What the promotion gate reads besides calls and contracts (ADR 0080; the original's names).
    role_profile_observation_count: int = Field(default=0, ge=0)
    role_profile_pass_count: int = Field(default=0, ge=0)
    role_profile_fail_count: int = Field(default=0, ge=0)
    guardrail_retry_exhausted_count: int = Field(default=0, ge=0)
    outcome_retry_exhausted_count: int = Field(default=0, ge=0)
    wrong_boundary_count: int = Field(default=0, ge=0)
    provenance_violation_count: int = Field(default=0, ge=0)
    #: Written by the role-profile telemetry when it observes state keys; ``None``: no
    #: observation (the gate reads it as consistent).
    state_key_consistency_ratio: float | None = Field(default=None, ge=0.0, le=1.0)
    #: Answers of this version a user asked for again at once (a re-ask, ADR 0108): the policy
    #: judges each one a failure.
    user_correction_count: int = Field(default=0, ge=0)
    sessions: list[str] = Field(default_factory=list)
    short_window: list[WindowEntry] = Field(default_factory=list)
    last_outcome_status: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class HistoryEntry(_Model):
    """One code version in the lineage, newest first."""

    id: str
    parent_id: str | None = None
    trigger: str
    created_at: str
    code_checksum: str
    prompt_version: str | None = None
    runtime_version: str | None = None
    model: str | None = None
    trigger_stage: str | None = None
    trigger_error_class: str | None = None
    trigger_error_message: str | None = None
    trigger_attempt_id: int | None = None
    author: str | None = None
    #: Who wrote this version (ADR 0077); absent in entries written before it existed.
    provenance: Provenance | None = None


class ArtifactRecord(_Model):
    """The file ``<root>/artifacts/<seg(role)>/<seg(method)>.json`` (``schema_version`` 1)."""

    schema_version: int = 1
    runtime: str = RUNTIME_TAG
    role: str
    method_name: str
    code: str = ""
    code_checksum: str | None = None
    dependencies: list[dict[str, Any]] = Field(default_factory=list)
    contract_fingerprint: str = "none"
    prompt_version: str | None = None
    runtime_version: str | None = None
    model: str | None = None
    cacheable: bool | None = None
    cacheability_reason: str | None = None
    input_sensitive: bool = False
    last_program_source: str | None = None
    #: Who the current code was generated for (``host`` / ``program``; ADR 0074). ``None`` in a
    #: file written before the field existed: unknown, so never trusted as the host's.
    author: str | None = None
    #: Who wrote the current code (ADR 0077). ``None`` in a file written before the block
    #: existed: unknown provenance.
    provenance: Provenance | None = None
    success_count: int = Field(default=0, ge=0)
    failure_count: int = Field(default=0, ge=0)
    domain_error_count: int = Field(default=0, ge=0)
    intrinsic_failure_count: int = Field(default=0, ge=0)
    adaptive_failure_count: int = Field(default=0, ge=0)
    extrinsic_failure_count: int = Field(default=0, ge=0)
    recent_failure_rate: float = 0.0
    last_failure_reason: str | None = None
    last_failure_class: str | None = None
    repair_count_since_regen: int = Field(default=0, ge=0)
    created_at: str | None = None
    last_used_at: str | None = None
    last_repaired_at: str | None = None
    last_duration_ms: float | None = None
    scorecards: dict[str, Scorecard] = Field(default_factory=dict)
    history: list[HistoryEntry] = Field(default_factory=list)
    #: The code of the last 8 versions, by checksum (ADR 0081).
    versions: dict[str, VersionCode] = Field(default_factory=dict)
    #: Each version's lifecycle state, the incumbent and the decision ledger (ADR 0080);
    #: ``None`` until the first evaluation (or in a file written before lifecycles).
    lifecycle: Lifecycle | None = None

    @field_validator("versions", mode="after")
    @classmethod
    def _versions_hold_their_code(cls, value: dict[str, VersionCode]) -> dict[str, VersionCode]:
        # A kept version is run by its checksum: code that does not match it is damage, and the
        # record is set aside like one whose current code does not match (ADR 0070).
        for digest, version in value.items():
            if checksum(version.code) != digest:
                raise ValueError(f"kept version {digest[:20]} does not match its code")
        if len(value) <= VERSIONS_KEPT:
            return value
        return dict(list(value.items())[-VERSIONS_KEPT:])

    def to_json(self) -> dict[str, Any]:
        """The plain object written to disk (no ``lifecycle`` key until there is one, as in
        the original)."""
        if self.lifecycle is None:
            return self.model_dump(mode="json", exclude=_NO_LIFECYCLE)
        return self.model_dump(mode="json")


def parse_record(data: Mapping[str, Any] | None) -> ArtifactRecord | None:
    """The artifact in a store file's object; ``None`` when there is none, it is another
    runtime's, or its fields do not validate."""
    if data is None or data.get("runtime") != RUNTIME_TAG:
        return None
    try:
        return ArtifactRecord.model_validate(data)
    except ValidationError:
        return None


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """The failed attempt a call recovered from, recorded in the new history entry."""

    stage: str
    error_class: str
    message: str
    attempt_id: int | None = None


@dataclass(frozen=True, slots=True)
class StoredRun:
    """A stored program's run that failed before the call went on to repair or regenerate it:
    its failure is counted for its version (ADR 0080), not lost with the program.

    Attributes:
        code: The stored code that ran.
        author: The stored record's author (ADR 0074).
        error_type: The failure's error type.
        failure_class: ``intrinsic``, ``adaptive`` or ``extrinsic``.
        violation: The guardrail subtype, when a guardrail stopped it.
        dependencies, cacheability: The stored record's, as the run carried them.
    """

    code: str
    author: str | None
    error_type: str | None
    failure_class: str | None
    violation: str | None = None
    dependencies: tuple[dict[str, Any], ...] = ()
    cacheability: Cacheability | None = None


@dataclass(slots=True)
class CallRecord:
    """One finished call that ran code, as the lifecycle reports it to the store.

    Read-only by convention, not frozen: one is built for every call that ran code, and a
    frozen dataclass sets each of these fields through ``object.__setattr__``, which costs
    more than the rest of recording a persisted run (ADR 0072).

    Attributes:
        role, method: The call.
        code, dependencies: The program that ran last in the call.
        contract_fingerprint: The agent's (see :func:`contract_fingerprint`).
        prompt_version, runtime_version, model: What produced the code.
        cacheability: The classification (from the artifact for a persisted run).
        source: Where the code came from this call.
        result: ``ok``; ``domain_error`` (a typed error the program returned on purpose: a
            valid answer); or ``failure``.
        error_type, failure_class, failure_message: Describe a failure.
        repaired_class: For a repair, the class of the persisted failure it repaired.
        trace_id: Counts distinct sessions.
        duration_ms: The call's duration.
        contract_passed: Deliverable check result, ``None`` when none applied.
        failed_attempt: The failed attempt the call recovered from, if any.
        author: Who the code was generated for (ADR 0074): for a persisted run, the stored
            record's author as it was run; otherwise ``host`` when the host's own code called
            an agent it built, else ``program``. ``None`` (unknown) is never trusted.
        violation: The guardrail subtype of the failure, when a guardrail ended it (a
            provenance violation counts against the version, ADR 0080).
        role_profile_compliant: The role-profile guard's verdict on the call; ``None`` when no
            profile observed it.
        state_key_consistency_ratio: The role's state-key consistency as measured at this call
            (0..1), stored on the version's scorecard; ``None`` when not measured.
        promotion: The agent's promotion switches (shadow evaluation, enforcement).
        stored_failure: A stored program that failed earlier in the call (then repaired or
            regenerated): counted for its own version.
        provenance: Who wrote the code (ADR 0077): for a persisted run, the stored record's as
            it was run (``None`` when unknown); otherwise the provider that wrote it now.
    """

    role: str
    method: str
    code: str
    dependencies: list[dict[str, Any]]
    contract_fingerprint: str
    prompt_version: str | None
    runtime_version: str | None
    model: str | None
    cacheability: Cacheability
    source: ProgramSource
    result: CallResult
    error_type: str | None = None
    failure_class: str | None = None
    failure_message: str | None = None
    repaired_class: str | None = None
    trace_id: str | None = None
    duration_ms: float | None = None
    contract_passed: bool | None = None
    failed_attempt: FailedAttempt | None = field(default=None)
    author: str | None = None
    violation: str | None = None
    role_profile_compliant: bool | None = None
    state_key_consistency_ratio: float | None = None
    promotion: Promotion = DEFAULT_PROMOTION
    stored_failure: StoredRun | None = None
    provenance: Provenance | None = None


def is_degraded(record: ArtifactRecord) -> bool:
    """Whether the current code version has failed too often to be trusted.

    Judged on the scorecard of the current checksum (at least 3 failures, a failure rate above
    0.6 and more failures than successes), so a fresh generation starts healthy instead of
    inheriting the failures of the code it replaced (ADR 0037).
    """
    card = record.scorecards.get(record.code_checksum or "")
    if card is None:
        return False
    runs = card.successes + card.failures
    rate = card.failures / runs if runs else 0.0
    return card.failures >= 3 and rate > 0.6 and card.failures > card.successes


def record_cacheability(record: ArtifactRecord) -> Cacheability:
    """The classification a persisted run carries; a legacy record without a boolean gets the
    legacy rule, so it stays reusable instead of flipping after one run (ADR 0037)."""
    if record.cacheable is None:
        return Cacheability(
            legacy_cacheable(record.method_name), record.cacheability_reason or "legacy", False
        )
    return Cacheability(
        record.cacheable, record.cacheability_reason or "unknown", record.input_sensitive
    )


def reuse_verdict(
    record: ArtifactRecord,
    *,
    contract_fingerprint: str,
    runtime_version: str,
    host_call: bool,
    reader: Reader | None = None,
) -> str | None:
    """``None`` when the record may run without a provider request, else the reason it may not.

    Reasons, in the order checked: ``foreign_runtime``, ``no_code``, ``checksum_mismatch``,
    ``not_cacheable``, ``runtime_version_mismatch``, ``contract_mismatch``, ``degraded``,
    ``unproven`` (the current version has a scorecard and never produced an answer: a program
    that only failed is regenerated, not run again and repaired; ADR 0047), then the
    provenance rules for ``reader`` (ADR 0077; ``None`` is an agent whose provider is not a test
    double): ``test_double_written``, ``model_written``, ``script_changed``; then, for a
    ``host_call`` (the host's own code calling an agent it built), ``program_written`` or
    ``author_unknown``: only code generated for the host runs for the host (ADR 0074).
    ``prompt_version`` and ``model`` are metadata only and never block reuse.
    """
    if record.runtime != RUNTIME_TAG:
        return "foreign_runtime"
    if not record.code or record.code.isspace():  # blank, without copying the code
        return "no_code"
    if record.code_checksum != checksum(record.code):
        return "checksum_mismatch"
    cacheable = record.cacheable
    if cacheable is None:
        cacheable = legacy_cacheable(record.method_name)  # as record_cacheability rules
    if not cacheable:
        return "not_cacheable"
    if record.runtime_version is not None and record.runtime_version != runtime_version:
        return "runtime_version_mismatch"
    if record.contract_fingerprint != contract_fingerprint:
        return "contract_mismatch"
    if is_degraded(record):
        return "degraded"
    card = record.scorecards.get(record.code_checksum or "")
    if card is not None and card.successes == 0:
        return "unproven"
    refused = provenance_verdict(record.provenance, reader or _MODEL_READER)
    if refused is not None:
        return refused
    if host_call and record.author != HOST:
        # Checked last, so the reason says the author alone stood between the call and a hit.
        return "program_written" if record.author == PROGRAM else "author_unknown"
    return None


_MODEL_READER = Reader()
