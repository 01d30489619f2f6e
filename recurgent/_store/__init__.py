"""The tool store: persisted programs and the tool registry, behind one small facade (ADR 0036).

The lifecycle asks :class:`Store` whether a persisted program may run (``lookup``), reports
every call that ran code (``record_call``) and every tool registration and use. The store never
calls a provider and never logs: each method returns what it found or did, and never raises
for a damaged or unwritable store (a store problem must not break a call).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recurgent._store import _pending
from recurgent._store._artifacts import (
    HOST,
    PROGRAM,
    ArtifactRecord,
    CallRecord,
    FailedAttempt,
    StoredRun,
    checksum,
    contract_fingerprint,
    parse_record,
    record_cacheability,
)
from recurgent._store._batch import AnsweredRun, RunsDelta, apply_runs, batchable
from recurgent._store._cacheability import Cacheability, classify
from recurgent._store._files import Loaded, quarantine, update_json
from recurgent._store._folding import apply_call
from recurgent._store._lookup import ARTIFACTS, ArtifactLookup, parse_loaded
from recurgent._store._ownership import refusal, same_key
from recurgent._store._paths import default_root
from recurgent._store._promotion import (
    POLICY,
    Decision,
    Promotion,
    evaluate as evaluate_version,
    latest_decision,
    promotion_mode,
    state_of,
)
from recurgent._store._provenance import Provenance, Reader
from recurgent._store._results import DEFERRED, Lookup, WriteResult
from recurgent._store._tools import ToolRegistry
from recurgent._values import utc_timestamp

__all__ = [
    "HOST",
    "POLICY",
    "PROGRAM",
    "AnsweredRun",
    "ArtifactRecord",
    "Cacheability",
    "CallRecord",
    "Decision",
    "FailedAttempt",
    "Lookup",
    "Promotion",
    "Provenance",
    "Reader",
    "Store",
    "StoredRun",
    "WriteResult",
    "checksum",
    "classify",
    "contract_fingerprint",
    "default_root",
    "flush",
    "promotion_mode",
    "record_cacheability",
    "state_of",
]

Clock = Callable[[], datetime.datetime]


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _newest_evaluation(record: ArtifactRecord | None) -> object:
    lifecycle = record.lifecycle if record is not None else None
    if lifecycle is None or not lifecycle.shadow_ledger.evaluations:
        return None
    return lifecycle.shadow_ledger.evaluations[-1]


def flush() -> int:
    """Write every counter change of this process still waiting (all roots); how many files
    were written. Never raises (a failed write is warned about once and kept for later)."""
    return _pending.flush()


class Store(ArtifactLookup, ToolRegistry):
    """One tool store root.

    Reads are cached per process while the file is unchanged (ADR 0054). Counters of persisted
    runs that answered and of tool uses are written in batches (ADR 0055): a reader in this
    process sees them on disk after :meth:`flush`, after any other write to the same file, or
    about a second later at the next call; a reader in another process sees them then too.

    Its lookup is :class:`~recurgent._store._lookup.ArtifactLookup`'s, its tool registry
    :class:`~recurgent._store._tools.ToolRegistry`'s.

    Args:
        root: The store directory (created on first write, mode 0700).
        clock: Current UTC time, for timestamps (tests freeze it).
    """

    def __init__(self, root: Path, *, clock: Clock = _utc_now) -> None:
        self.root = Path(root)
        self._clock = clock
        # Each call asks for its artifact's path twice; keyed by two strings, a lookup here
        # skips the (Python-level) comparison of equal roots the shared path cache makes.
        self._paths: dict[tuple[str, str], Path] = {}
        # The last verdict per artifact: a verdict is a function of the cached record (never
        # changed once cached) and the lookup's inputs, so while both are the same, the steady
        # state of a stored program skips the checks (ADR 0130).
        self._verdicts: dict[
            Path, tuple[ArtifactRecord, str, tuple[Any, ...], Lookup, ArtifactRecord, str]
        ] = {}

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def _now(self) -> str:
        # The default clock is the wall clock: the shared formatter is cheaper than a datetime.
        return utc_timestamp(None if self._clock is _utc_now else self._clock())

    def flush(self) -> int:
        """Write every waiting counter change of this process (see :func:`flush`)."""
        return flush()

    # ------------------------------------------------------------------- writes

    def record_call(self, call: CallRecord) -> WriteResult:
        """Fold one finished call that ran code into its artifact.

        A persisted run that answered only changes counters: it waits in this process's table
        (``deferred``, ADR 0055). Every other call (a failure, a repair, a new program) is
        written at once, atomically under the file's lock, carrying the runs waiting for the
        same file. An artifact with another schema version or of another runtime is left
        untouched, and so is one whose code was generated for the host when the call's code
        was not (``host_written``, ADR 0074): a program may run the host's code, never
        replace it; nor is a program a real model wrote replaced by a test double's
        (``model_written``, ADR 0077). A counters-only write skips fsync: losing it to a power cut loses counts,
        never a program.
        """
        path = self._artifact_path(call.role, call.method)
        now = self._now()
        if batchable(call):
            return self._defer_run(path, call, now)
        waiting = _pending.RUNS.take(path)
        refused: list[str] = []
        decided: list[Decision] = []
        digest = checksum(call.code)

        def change(loaded: Loaded) -> dict[str, Any] | None:
            record: ArtifactRecord | None = None
            if loaded.data is not None:
                if loaded.data.get("runtime") != "python":
                    refused.append("foreign_runtime")
                    return None
                record = parse_loaded(loaded)
                if record is None:
                    quarantine(path, expected=loaded.raw, now=self._clock())
                elif reason := refusal(record, call, digest):
                    refused.append(reason)
                    return None
            if record is None and call.source == "persisted":
                # The program that ran was forgotten (or set aside) since: its run never
                # brings it back, as a batch of its answers would not (ADR 0131).
                refused.append("missing")
                return None
            if record is not None and waiting is not None:
                for batch in waiting.batches():
                    if refusal(record, batch.latest, batch.digest) is None:
                        # The waiting runs pass the rules a flush of them would (ADR 0131).
                        apply_runs(record, batch)
            before = _newest_evaluation(record)
            # The record was parsed from the file a moment ago and nothing else holds it.
            new = apply_call(record, call, now=now, in_place=True)
            # Only an evaluation this call made is its decision (a stale run makes none).
            evaluated = call.promotion.shadow and _newest_evaluation(new) is not before
            decision = latest_decision(new, digest) if evaluated else None
            if decision is not None:
                decided.append(decision)
            return new.to_json()

        try:
            updated = update_json(
                path,
                change,
                root=self.root,
                now=self._clock(),
                durable=call.source != "persisted",
            )
        except (OSError, ValueError) as error:
            if waiting is not None:
                _pending.RUNS.put_back(path, self.root, waiting)
            return WriteResult(False, f"error: {type(error).__name__}: {error}")
        if refused:
            if waiting is not None:
                # The call was refused, not the runs: they are written on their own, under
                # the rules of a flush (ADR 0131), and wait again if that write fails.
                try:
                    _pending.write_runs(path, self.root, waiting)
                except (OSError, ValueError):
                    _pending.RUNS.put_back(path, self.root, waiting)
            return WriteResult(False, refused[0])
        return WriteResult(
            updated.written,
            updated.skipped,
            updated.quarantined_to,
            decided[0] if decided and updated.written else None,
        )

    def record_correction(
        self, role: str, method: str, digest: str, *, promotion: Promotion
    ) -> WriteResult:
        """Count a user correction (a re-ask, ADR 0108) against the version ``digest`` of
        ``role.method``, and evaluate that version again under the promotion policy.

        Written at once (corrections are rare: only a call that wrote a program can be one).
        Nothing is written for a version the artifact has no scorecard for
        (``unknown_version``), nor to another runtime's or a damaged record.
        """
        path = self._artifact_path(role, method)
        now = self._now()
        refused: list[str] = []
        decided: list[Decision] = []

        def change(loaded: Loaded) -> dict[str, Any] | None:
            record = parse_record(loaded.data)
            if record is None or not same_key(record, role, method):
                refused.append("no_record")
                return None
            card = record.scorecards.get(digest)
            if card is None:
                refused.append("unknown_version")
                return None
            card.user_correction_count += 1
            card.updated_at = now
            if promotion.shadow:
                decided.append(
                    evaluate_version(
                        record,
                        digest,
                        "corrected",
                        enforced=promotion.enforced,
                        now=now,
                        calls_covered=0,
                    )
                )
            return record.to_json()

        try:
            updated = update_json(path, change, root=self.root, now=self._clock())
        except (OSError, ValueError) as error:
            return WriteResult(False, f"error: {type(error).__name__}: {error}")
        if refused:
            return WriteResult(False, refused[0])
        ARTIFACTS.drop(path)
        return WriteResult(
            updated.written,
            updated.skipped,
            updated.quarantined_to,
            decided[0] if decided and updated.written else None,
        )

    def record_answered(
        self, program: CallRecord, run: AnsweredRun, at: str | None = None
    ) -> WriteResult:
        """:meth:`record_call` for a persisted run that answered, told as the call record of
        its program (shared by the runs of a steady stored program: its run facts are not
        read) and this run's facts; deferred like every such run (ADR 0130). ``at``: the
        call's finishing time as :func:`~recurgent._values.utc_timestamp` text, used when this
        store reads the wall clock (a store given its own clock keeps to it)."""
        path = self._artifact_path(program.role, program.method)
        now = at if at is not None and self._clock is _utc_now else self._now()
        return self._defer_run(path, program, now, run)

    def _defer_run(
        self, path: Path, call: CallRecord, now: str, run: AnsweredRun | None = None
    ) -> WriteResult:
        digest = checksum(call.code)
        replaced: list[RunsDelta] = []

        def add(delta: RunsDelta) -> RunsDelta:
            if not delta.holds(call, digest):
                # Runs of other code, or of this code by another writer, wait here (another
                # process replaced the program between two of ours): they are written on
                # their own, then this program's runs start (ADR 0131).
                replaced.append(delta)
                delta = RunsDelta.start(call, now)
            if run is None:
                delta.add(call, now)
            else:
                delta.add_run(call, now, run)
            return delta

        due = _pending.RUNS.fold(path, self.root, lambda: RunsDelta.start(call, now), add)
        for delta in replaced:
            try:
                _pending.write_runs(path, self.root, delta)
            except (OSError, ValueError):
                # They wait again, before this program's runs (red team R11: dropped).
                _pending.RUNS.put_back(path, self.root, delta)
        if due:
            _pending.flush_due()
        return DEFERRED
