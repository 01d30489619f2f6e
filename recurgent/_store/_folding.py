"""Folding a finished call into an artifact record: counters, scorecards, lineage, the
promotion evaluation, and whose evidence a version's record holds (ADRs 0036, 0080, 0131).

Pure: :func:`apply_call` changes a record (a copy, or the caller's own) and returns it; reading
and writing files is the store facade's job.
"""

from __future__ import annotations

import secrets

from recurgent._store._artifacts import (
    HISTORY_LIMIT,
    HOST,
    PROGRAM,
    RUNTIME_TAG,
    SCORECARD_LIMIT,
    SESSIONS_KEPT,
    WINDOW_KEPT,
    ArtifactRecord,
    CallRecord,
    HistoryEntry,
    Scorecard,
    StoredRun,
    WindowEntry,
    checksum,
)
from recurgent._store._promotion import RunKind, ensure_lifecycle, evaluate as evaluate_version
from recurgent._store._provenance import Provenance, is_double_written
from recurgent._store._versions import protected, remember_version, runs_kept_version, trim_lru

__all__ = ["adopt_call", "apply_call", "describes", "earned_by_another", "run_kind"]

_MESSAGE_CHARS = 400


def _count_failure(card: Scorecard, error_type: str | None, violation: str | None) -> None:
    """The failures the promotion gate counts (the original's rules, ADR 0080)."""
    if error_type == "guardrail_retry_exhausted":
        card.guardrail_retry_exhausted_count += 1
    elif error_type == "outcome_repair_retry_exhausted":
        card.outcome_retry_exhausted_count += 1
    elif error_type == "wrong_tool_boundary":
        card.wrong_boundary_count += 1
    if violation is not None and "provenance" in violation:
        card.provenance_violation_count += 1


def _card(record: ArtifactRecord, digest: str, now: str) -> Scorecard:
    card = record.scorecards.pop(digest, None) or Scorecard(
        artifact_checksum=digest, created_at=now
    )
    # Re-inserted last, so dict order is least recently used first.
    record.scorecards[digest] = card
    return card


def _window(card: Scorecard, status: str, error_type: str | None, now: str) -> None:
    entry = WindowEntry(status=status, error_type=error_type, at=now)
    card.short_window = [*card.short_window, entry][-WINDOW_KEPT:]
    card.last_outcome_status = status
    card.updated_at = now


def _update_scorecard(record: ArtifactRecord, call: CallRecord, digest: str, now: str) -> None:
    card = _card(record, digest, now)
    card.calls += 1
    if call.result == "failure":
        card.failures += 1
        _count_failure(card, call.error_type, call.violation)
    else:
        card.successes += 1
        if call.result == "domain_error":
            card.domain_errors += 1
    if call.contract_passed is True:
        card.contract_pass_count += 1
    elif call.contract_passed is False:
        card.contract_fail_count += 1
    ratio = call.state_key_consistency_ratio
    if ratio is not None and 0.0 <= ratio <= 1.0:
        card.state_key_consistency_ratio = ratio
    if call.role_profile_compliant is not None:
        card.role_profile_observation_count += 1
        if call.role_profile_compliant:
            card.role_profile_pass_count += 1
        else:
            card.role_profile_fail_count += 1
    if call.trace_id and call.trace_id not in card.sessions:
        card.sessions = [*card.sessions, call.trace_id][-SESSIONS_KEPT:]
    _window(card, "ok" if call.result == "ok" else "error", call.error_type, now)
    trim_lru(record.scorecards, SCORECARD_LIMIT, protected(record))


def _fold_stored_failure(
    record: ArtifactRecord, run: StoredRun, call: CallRecord, now: str
) -> None:
    """Count a stored program's failed run for its version (its scorecard and lifecycle only:
    the call itself is counted once, by its final answer)."""
    digest = checksum(run.code)
    if digest not in record.scorecards and digest not in record.versions:
        return  # a version nobody keeps any more
    card = _card(record, digest, now)
    card.calls += 1
    card.failures += 1
    _count_failure(card, run.error_type, run.violation)
    if call.trace_id and call.trace_id not in card.sessions:
        card.sessions = [*card.sessions, call.trace_id][-SESSIONS_KEPT:]
    _window(card, "error", run.error_type, now)
    trim_lru(record.scorecards, SCORECARD_LIMIT, protected(record))
    remember_version(record, digest, now)
    if call.promotion.shadow:
        kind: RunKind = "outage" if run.failure_class == "extrinsic" else "failed"
        evaluate_version(record, digest, kind, enforced=call.promotion.enforced, now=now)


def run_kind(call: CallRecord) -> RunKind:
    """How the call's program ended, as the promotion policy sees it."""
    if call.result != "failure":
        return "answered"
    return "outage" if call.failure_class == "extrinsic" else "failed"


def _update_counters(record: ArtifactRecord, call: CallRecord) -> None:
    if call.result == "failure":
        record.failure_count += 1
        klass = call.failure_class if call.failure_class in _CLASSES else "intrinsic"
        name = f"{klass}_failure_count"
        setattr(record, name, getattr(record, name) + 1)
        record.last_failure_class = klass
        record.last_failure_reason = (call.failure_message or "unknown failure")[:_MESSAGE_CHARS]
    else:
        record.success_count += 1
        if call.result == "domain_error":
            record.domain_error_count += 1
    runs = record.success_count + record.failure_count
    record.recent_failure_rate = round(record.failure_count / runs, 4) if runs else 0.0


_CLASSES = ("intrinsic", "adaptive", "extrinsic")


def earned_by_another(
    record: ArtifactRecord, digest: str, author: str | None, provenance: Provenance | None
) -> bool:
    """Whether the evidence ``record`` holds for version ``digest`` (its scorecard, lifecycle
    state) was earned by runs of another writer's program than one by ``author`` and
    ``provenance`` (ADR 0131): a test double's and anyone else's, or the host's and a
    program's. Evidence whose writer is not known (neither the current code nor a kept
    version) is kept, and so is an unknown author's.
    """
    if digest == record.code_checksum and record.code.strip():
        theirs, stored = record.author, record.provenance
    elif (version := record.versions.get(digest)) is not None:
        theirs, stored = version.author, version.provenance
    else:
        return False
    if is_double_written(stored) != is_double_written(provenance):
        return True
    return {theirs, author} == {HOST, PROGRAM}


def describes(record: ArtifactRecord, run: CallRecord) -> bool:
    """Whether ``record`` still describes its program as a persisted ``run`` of its code ran it
    (a program is reused only under the record's contract and runtime version, by the
    provenance read): otherwise another process wrote the same code since, and the run's older
    description must not be written over the newer one (ADR 0131)."""
    return (
        record.contract_fingerprint == run.contract_fingerprint
        and record.runtime_version in (None, run.runtime_version)
        and record.provenance == run.provenance
    )


def _forget_evidence(record: ArtifactRecord, digest: str) -> None:
    # The code's evidence starts afresh under its new writer; the history keeps the old one.
    record.scorecards.pop(digest, None)
    record.versions.pop(digest, None)
    lifecycle = record.lifecycle
    if lifecycle is not None:
        lifecycle.versions.pop(digest, None)
        if lifecycle.incumbent_durable_checksum == digest:
            lifecycle.incumbent_durable_checksum = None


def _trigger(call: CallRecord, previous: str | None) -> str:
    if call.source == "repaired":
        klass = call.repaired_class if call.repaired_class in _CLASSES else "unknown"
        return f"repair:{klass}_failure"
    return "initial_forge" if previous is None else "regenerate:new_code"


def adopt_call(record: ArtifactRecord, call: CallRecord) -> None:
    """Give ``record`` what the latest call says about its program: the role's spelling,
    dependencies, contract fingerprint, versions, model, cacheability and source."""
    record.role = call.role
    record.dependencies = [dict(d) for d in call.dependencies]
    record.contract_fingerprint = call.contract_fingerprint
    record.prompt_version = call.prompt_version
    record.runtime_version = call.runtime_version
    record.model = call.model
    record.cacheable = call.cacheability.cacheable
    record.cacheability_reason = call.cacheability.reason
    record.input_sensitive = call.cacheability.input_sensitive
    record.last_program_source = call.source


def apply_call(
    record: ArtifactRecord | None, call: CallRecord, *, now: str, in_place: bool = False
) -> ArtifactRecord:
    """Fold one finished call into the (possibly absent) record and return the new record.

    ``in_place=True`` updates ``record`` itself, for a caller that owns it (parsed from the file
    just now): the deep copy otherwise made is most of the cost of recording a call.

    The call's code becomes the record's current code, except for a persisted run of a kept
    earlier version (enforcement chose it, ADR 0081): that run is counted for its version and
    the current code stays. With shadow mode on, the version is evaluated by the promotion
    policy afterwards (ADR 0080).
    """
    if record is None:
        new = ArtifactRecord(role=call.role, method_name=call.method)
    else:
        new = record if in_place else record.model_copy(deep=True)
    promotion = call.promotion
    if promotion.shadow:
        # Before anything changes: a record that held code without lifecycle data is legacy.
        ensure_lifecycle(new, now)
    if call.stored_failure is not None:
        _fold_stored_failure(new, call.stored_failure, call, now)
    previous = new.code_checksum if new.code.strip() else None
    digest = checksum(call.code)
    kept = runs_kept_version(new, digest, call.source)
    if call.source == "persisted" and (
        (digest != previous and not kept)
        or earned_by_another(new, digest, call.author, call.provenance)
    ):
        # A run of code the record no longer holds (another process replaced it since, or
        # dropped its version), or holds as another writer's program: it counts in the
        # totals, and in that code's scorecard if one is left and is its writer's, but a
        # stale run never brings old code back (as a batch of runs, ADR 0131).
        if digest in new.scorecards and digest != previous:
            _update_scorecard(new, call, digest, now)
        _update_counters(new, call)
        new.last_used_at = max(new.last_used_at or "", now)
        return new
    if not kept:
        if digest != previous or call.source != "persisted":
            # A persisted run carries the author and provenance of the code it ran; anything
            # else the caller's.
            if earned_by_another(new, digest, call.author, call.provenance):
                _forget_evidence(new, digest)
            new.author = call.author
            new.provenance = call.provenance
        new.runtime = RUNTIME_TAG
        new.code = call.code
        new.code_checksum = digest
        if call.source != "persisted" or describes(new, call):
            adopt_call(new, call)
        else:
            new.last_program_source = call.source
        new.created_at = new.created_at or now
    _update_scorecard(new, call, digest, now)
    _update_counters(new, call)
    if not kept and call.source == "repaired":
        new.repair_count_since_regen += 1
        new.last_repaired_at = now
    elif not kept and call.source == "generated":
        # Only a fresh generation resets the budget; a plain persisted run does not (Ruby
        # reset it on every run, so "3 repairs" meant "3 in a row without a success").
        new.repair_count_since_regen = 0
    if digest != previous and not kept:
        entry = HistoryEntry(
            id="gen-" + secrets.token_hex(6),
            parent_id=new.history[0].id if new.history else None,
            trigger=_trigger(call, previous),
            created_at=now,
            code_checksum=digest,
            prompt_version=call.prompt_version,
            runtime_version=call.runtime_version,
            model=call.model,
            author=call.author,
            provenance=call.provenance,
        )
        if call.failed_attempt is not None:
            entry.trigger_stage = call.failed_attempt.stage
            entry.trigger_error_class = call.failed_attempt.error_class
            entry.trigger_error_message = call.failed_attempt.message[:_MESSAGE_CHARS]
            entry.trigger_attempt_id = call.failed_attempt.attempt_id
        new.history = [entry, *new.history][:HISTORY_LIMIT]
    remember_version(new, digest, now)
    new.last_used_at = now
    if call.duration_ms is not None:
        new.last_duration_ms = round(call.duration_ms, 1)
    if promotion.shadow:
        evaluate_version(new, digest, run_kind(call), enforced=promotion.enforced, now=now)
    return new
