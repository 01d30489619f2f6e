"""Counter changes waiting to be written: persisted runs and tool uses as deltas (ADR 0055).

A persisted program that answers again changes only counters of its artifact (counts, its
scorecard, sessions, the recent window, ``last_used_at``); a call through a registered tool
changes only that tool's usage counts. Both fold into small deltas here, and a delta folds into
the record read from disk under its lock, giving the same record as writing each call at once.
Every function is pure; the process-wide table that holds deltas is :mod:`._pending`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from recurgent._store._artifacts import (
    SCORECARD_LIMIT,
    SESSIONS_KEPT,
    WINDOW_KEPT,
    ArtifactRecord,
    CallRecord,
    Scorecard,
    WindowEntry,
    checksum,
)
from recurgent._store._folding import adopt_call, describes, earned_by_another
from recurgent._store._promotion import ensure_lifecycle, evaluate as evaluate_version
from recurgent._store._registry import merge_uses
from recurgent._store._versions import protected, remember_version, trim_lru
from recurgent._tool_telemetry import ToolObservation, merge_observations

__all__ = ["AnsweredRun", "RunsDelta", "UsesDelta", "apply_runs", "apply_uses", "batchable"]


def batchable(call: CallRecord) -> bool:
    """Whether the call may wait: a persisted run (the stored code, unchanged) that answered.

    Failures, repairs and generations are written at once, so degradation and repair decisions
    (here and in other processes) always see every failure and every new program.
    """
    return call.source == "persisted" and call.result != "failure"


class AnsweredRun(NamedTuple):
    """What one persisted run that answered adds to its version's counters, beside the call
    record of its program (see :class:`~recurgent._store._artifacts.CallRecord`)."""

    trace_id: str | None
    duration_ms: float | None
    contract_passed: bool | None
    profile_compliant: bool | None
    state_key_ratio: float | None
    result: str = "ok"
    error_type: str | None = None


@dataclass(slots=True)
class RunsDelta:
    """Persisted runs of one artifact that answered, not yet written.

    Attributes:
        digest: The checksum of the code that ran (the same for every run folded in).
        latest: The last run (its metadata is what a write of it would have recorded).
        first_at, last_at: The first and last runs' timestamps.
        runs, domain_errors: How many answered, and how many of those were domain errors.
        contract_passed, contract_failed: Deliverable checks among them.
        profile_passed, profile_failed: Role-profile verdicts among them (ADR 0080).
        state_key_ratio: The latest state-key consistency measured among them.
        sessions: Trace ids in order of first appearance (at most the scorecard's limit).
        window: The newest recent-window entries as ``(status, error_type, at)`` (at most
            the scorecard's window).
        duration_ms: The last known duration.
        earlier: Runs of another program (other code, or another writer) that waited before
            these and whose write failed: written first, each batch under its own rules
            (red team R11: they were dropped).
    """

    digest: str
    latest: CallRecord
    first_at: str
    last_at: str
    runs: int = 0
    domain_errors: int = 0
    contract_passed: int = 0
    contract_failed: int = 0
    profile_passed: int = 0
    profile_failed: int = 0
    state_key_ratio: float | None = None
    sessions: list[str] = field(default_factory=list)
    window: list[tuple[str, str | None, str]] = field(default_factory=list)
    duration_ms: float | None = None
    earlier: RunsDelta | None = None

    @classmethod
    def start(cls, call: CallRecord, now: str) -> RunsDelta:
        """An empty delta for runs of ``call``'s code; :meth:`add` the call next."""
        return cls(digest=checksum(call.code), latest=call, first_at=now, last_at=now)

    def holds(self, call: CallRecord, digest: str) -> bool:
        """Whether a run of ``call`` (its code's checksum ``digest``) may join these runs: the
        same code, run for the same (role, method), written by the same author and provider.

        A batch is checked and written as its latest run (ADR 0131): a run of the same code by
        another writer (a colliding role, the host, a model after a test double) folded in
        would carry the earlier runs into a record they could not be written into.
        """
        latest = self.latest
        return digest == self.digest and (
            latest is call
            or (
                latest.role == call.role
                and latest.method == call.method
                and latest.author == call.author
                and latest.provenance == call.provenance
            )
        )

    def add(self, call: CallRecord, now: str) -> None:
        """Fold one more run of the same code."""
        self.add_run(
            call,
            now,
            AnsweredRun(
                call.trace_id,
                call.duration_ms,
                call.contract_passed,
                call.role_profile_compliant,
                call.state_key_consistency_ratio,
                call.result,
                call.error_type,
            ),
        )

    def add_run(self, latest: CallRecord, now: str, run: AnsweredRun) -> None:
        """Fold one more run of the same code: what ``latest`` says of its program, and what
        ``run`` says of this run (a steady persisted call shares ``latest``, ADR 0130)."""
        self.latest = latest
        self.last_at = now
        self.runs += 1
        if run.result == "domain_error":
            self.domain_errors += 1
        if run.contract_passed is True:
            self.contract_passed += 1
        elif run.contract_passed is False:
            self.contract_failed += 1
        if run.profile_compliant is not None:
            if run.profile_compliant:
                self.profile_passed += 1
            else:
                self.profile_failed += 1
        if run.state_key_ratio is not None:
            self.state_key_ratio = run.state_key_ratio
        if run.trace_id and run.trace_id not in self.sessions:
            self.sessions.append(run.trace_id)
            del self.sessions[:-SESSIONS_KEPT]
        # Plain tuples: made into window entries only when written (once per batch).
        self.window.append(("ok" if run.result == "ok" else "error", run.error_type, now))
        del self.window[:-WINDOW_KEPT]
        if run.duration_ms is not None:
            self.duration_ms = run.duration_ms

    def batches(self) -> list[RunsDelta]:
        """These runs and those waiting before them, oldest first: one batch per program."""
        chain: list[RunsDelta] = []
        delta: RunsDelta | None = self
        while delta is not None:
            chain.append(delta)
            delta = delta.earlier
        return chain[::-1]

    def merge(self, later: RunsDelta) -> RunsDelta:
        """This delta followed by ``later`` (for a flush that failed and is put back)."""
        if later.earlier is not None or not self.holds(later.latest, later.digest):
            # The code or its writer changed meanwhile: the older runs counted another program
            # and wait before the later ones, to be written on their own (never dropped).
            oldest = later.batches()[0]
            oldest.earlier = self
            return later
        self.latest, self.last_at = later.latest, later.last_at
        self.runs += later.runs
        self.domain_errors += later.domain_errors
        self.contract_passed += later.contract_passed
        self.contract_failed += later.contract_failed
        self.profile_passed += later.profile_passed
        self.profile_failed += later.profile_failed
        if later.state_key_ratio is not None:
            self.state_key_ratio = later.state_key_ratio
        for trace in later.sessions:
            if trace not in self.sessions:
                self.sessions.append(trace)
        del self.sessions[:-SESSIONS_KEPT]
        self.window = [*self.window, *later.window][-WINDOW_KEPT:]
        if later.duration_ms is not None:
            self.duration_ms = later.duration_ms
        return self


def _fold_card(record: ArtifactRecord, delta: RunsDelta, *, create: bool) -> None:
    card = record.scorecards.pop(delta.digest, None)
    if card is None:
        if not create:
            return
        card = Scorecard(artifact_checksum=delta.digest, created_at=delta.first_at)
    card.calls += delta.runs
    card.successes += delta.runs
    card.domain_errors += delta.domain_errors
    card.contract_pass_count += delta.contract_passed
    card.contract_fail_count += delta.contract_failed
    if delta.profile_passed or delta.profile_failed:
        card.role_profile_observation_count += delta.profile_passed + delta.profile_failed
        card.role_profile_pass_count += delta.profile_passed
        card.role_profile_fail_count += delta.profile_failed
    ratio = delta.state_key_ratio
    if ratio is not None and 0.0 <= ratio <= 1.0:
        card.state_key_consistency_ratio = ratio
    sessions = list(card.sessions)
    for trace in delta.sessions:
        if trace not in sessions:
            sessions = [*sessions, trace][-SESSIONS_KEPT:]
    card.sessions = sessions
    entries = [WindowEntry(status=s, error_type=e, at=at) for s, e, at in delta.window]
    card.short_window = [*card.short_window, *entries][-WINDOW_KEPT:]
    if entries:
        card.last_outcome_status = entries[-1].status
    card.updated_at = delta.last_at
    # Re-inserted last, so dict order stays least recently used first.
    record.scorecards[delta.digest] = card
    trim_lru(record.scorecards, SCORECARD_LIMIT, protected(record))


def apply_runs(record: ArtifactRecord, delta: RunsDelta) -> ArtifactRecord:
    """Fold ``delta`` into ``record`` (in place; the caller owns it) and return it.

    When the record still holds the code that ran, the result equals folding each run with
    :func:`~recurgent._store._folding.apply_call`, except for the promotion ledger: the
    batch is evaluated once, on its totals, in one ledger entry that says how many calls it
    covers (ADR 0080). When the runs ran a kept earlier version (enforcement chose it, ADR
    0081), or another process replaced the code meanwhile, the runs still count (totals, and
    that version's scorecard if it is kept), but the current code and its metadata stay: a
    stale counter never brings old code back.
    """
    if delta.runs == 0:
        return record
    promotion = delta.latest.promotion
    if promotion.shadow:
        ensure_lifecycle(record, delta.first_at)
    # The file's program of this code may be another writer's (put there since the runs):
    # then the runs count in the totals only, never as that program's evidence (ADR 0131).
    theirs = earned_by_another(record, delta.digest, delta.latest.author, delta.latest.provenance)
    same_code = not theirs and record.code_checksum == delta.digest and record.code.strip() != ""
    kept = same_code or (not theirs and delta.digest in record.versions)
    if same_code:
        if describes(record, delta.latest):
            adopt_call(record, delta.latest)
        else:
            # Another process wrote the same code since, for another contract, runtime or
            # model: the runs count, and its newer description stays (ADR 0131).
            record.last_program_source = delta.latest.source
        record.created_at = record.created_at or delta.first_at
        if delta.duration_ms is not None:
            record.last_duration_ms = round(delta.duration_ms, 1)
    if not theirs:
        _fold_card(record, delta, create=kept)
    if kept:
        remember_version(record, delta.digest, delta.last_at)
        if promotion.shadow:
            evaluate_version(
                record,
                delta.digest,
                "answered",
                enforced=promotion.enforced,
                now=delta.last_at,
                calls_covered=delta.runs,
            )
    record.success_count += delta.runs
    record.domain_error_count += delta.domain_errors
    total = record.success_count + record.failure_count
    record.recent_failure_rate = round(record.failure_count / total, 4) if total else 0.0
    record.last_used_at = max(record.last_used_at or "", delta.last_at)
    return record


@dataclass(slots=True)
class UsesDelta:
    """Calls one registered tool served, not yet written to ``registry.json``; with the latest
    observation of each method called (ADR 0109), the most recent last."""

    successes: int = 0
    failures: int = 0
    methods: list[str] = field(default_factory=list)
    last_at: str = ""
    observations: dict[str, ToolObservation] = field(default_factory=dict)

    def add(
        self, method: str, ok: bool, now: str, observation: ToolObservation | None = None
    ) -> None:
        """Count one call (a failed one does not advertise its method)."""
        if ok:
            self.successes += 1
            if method not in self.methods:
                self.methods.append(method)
        else:
            self.failures += 1
        self.last_at = max(self.last_at, now)
        if observation is not None:
            self._observe(observation)

    def _observe(self, observation: ToolObservation) -> None:
        self.observations.pop(observation.method, None)
        self.observations[observation.method] = observation

    def merge(self, later: UsesDelta) -> UsesDelta:
        """This delta followed by ``later``."""
        self.successes += later.successes
        self.failures += later.failures
        self.methods.extend(m for m in later.methods if m not in self.methods)
        self.last_at = max(self.last_at, later.last_at)
        for observation in later.observations.values():
            self._observe(observation)
        return self


def apply_uses(entry: Mapping[str, Any], delta: UsesDelta) -> dict[str, Any]:
    """The registry entry after the calls in ``delta`` (what one merge per call would give)."""
    # Another process may have recorded a later use meanwhile: the newest stamp stays.
    recorded = entry.get("last_used_at")
    now = max(recorded, delta.last_at) if isinstance(recorded, str) else delta.last_at
    merged = merge_uses(
        entry,
        successes=delta.successes,
        failures=delta.failures,
        methods=list(delta.methods),
        now=now,
    )
    if not delta.observations:
        return merged
    return merge_observations(merged, delta.observations.values())
