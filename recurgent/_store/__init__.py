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
    reuse_verdict,
)
from recurgent._store._batch import (
    AnsweredRun,
    RunsDelta,
    UsesDelta,
    apply_runs,
    apply_uses,
    batchable,
)
from recurgent._store._cache import IdentityCache
from recurgent._store._cacheability import Cacheability, classify
from recurgent._store._files import Loaded, quarantine, read_json, update_json
from recurgent._store._folding import apply_call
from recurgent._store._ownership import refusal, same_key
from recurgent._store._paths import artifact_path, default_root, registry_path
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
from recurgent._store._registry import (
    load_tools,
    merge_known_tools,
    merge_registration,
    update_tools,
)
from recurgent._store._versions import enforced_choices
from recurgent._tool_telemetry import ToolObservation, reflects
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

_PATHS_KEPT = 1024


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


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


_DEFERRED = WriteResult(False, "deferred")


def _parse(loaded: Loaded) -> ArtifactRecord | None:
    try:
        return ArtifactRecord.model_validate(loaded.data)
    except ValidationError:
        return None


def _clone(value: Any) -> Any:
    # Registry entries are JSON: a copy per reader, so memory never shares the cached lists.
    if type(value) is dict:
        return {key: _clone(item) for key, item in value.items()}
    if type(value) is list:
        return [_clone(item) for item in value]
    return value


#: How long a persisted call trusts the last ``stat`` of its artifact (ADR 0138): this process's
#: writes are seen at once; another process's write, a CLI change or a hand edit within 50 ms.
#: Every stat lets other threads take the GIL, and under a busy one that costs ~25 us a call.
ARTIFACT_RECHECK_SECONDS = 0.05

#: Parsed artifacts and registry tools of this process, valid while their file is unchanged.
_ARTIFACTS: IdentityCache[ArtifactRecord] = IdentityCache(recheck_seconds=ARTIFACT_RECHECK_SECONDS)
_REGISTRIES: IdentityCache[dict[str, dict[str, Any]]] = IdentityCache()


def _newest_evaluation(record: ArtifactRecord | None) -> object:
    lifecycle = record.lifecycle if record is not None else None
    if lifecycle is None or not lifecycle.shadow_ledger.evaluations:
        return None
    return lifecycle.shadow_ledger.evaluations[-1]


def flush() -> int:
    """Write every counter change of this process still waiting (all roots); how many files
    were written. Never raises (a failed write is warned about once and kept for later)."""
    return _pending.flush()


class Store:
    """One tool store root.

    Reads are cached per process while the file is unchanged (ADR 0054). Counters of persisted
    runs that answered and of tool uses are written in batches (ADR 0055): a reader in this
    process sees them on disk after :meth:`flush`, after any other write to the same file, or
    about a second later at the next call; a reader in another process sees them then too.

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

    def _artifact_path(self, role: str, method: str) -> Path:
        path = self._paths.get((role, method))
        if path is None:
            if len(self._paths) >= _PATHS_KEPT:
                self._paths.clear()
            path = self._paths[(role, method)] = artifact_path(self.root, role, method)
        return path

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    def _now(self) -> str:
        # The default clock is the wall clock: the shared formatter is cheaper than a datetime.
        return utc_timestamp(None if self._clock is _utc_now else self._clock())

    def flush(self) -> int:
        """Write every waiting counter change of this process (see :func:`flush`)."""
        return flush()

    # ----------------------------------------------------------------- artifacts

    def lookup(
        self,
        role: str,
        method: str,
        *,
        contract_fingerprint: str,
        runtime_version: str,
        host_call: bool,
        enforce: bool = False,
        reader: Reader | None = None,
    ) -> Lookup:
        """The artifact for ``role.method`` and whether it may run now.

        ``host_call``: the host's own code calls an agent it built; only a program generated
        for such a call may then run without a request (ADR 0074). ``reader``: whether the
        agent's provider is a test double, and its script's fingerprint (ADR 0077); ``None``
        for one that is not. A damaged file (not JSON, not an object, fields of the wrong type) and a record whose
        checksum does not match its code are moved aside and never run. The record returned may
        be shared with later lookups in this process: read it, never change it.

        ``enforce`` (promotion enforcement, ADR 0081): the record returned is the kept version
        the lifecycle prefers that passes every reuse check (its code in place of the current
        code); ``degraded`` when every version the record holds is degraded.
        """
        path = self._artifact_path(role, method)
        cached = _ARTIFACTS.get(path)
        if cached is not None:
            inputs = (
                role,
                method,
                contract_fingerprint,
                runtime_version,
                host_call,
                enforce,
                reader,
            )
            memo = self._verdicts.get(path)
            if (
                memo is not None
                and memo[0] is cached
                and memo[1] is cached.code  # the code verified then is still the code
                and memo[2] == inputs
                # Under enforcement the record returned may be a kept version, not ``cached``:
                # its code too must be the code verified then (red team R8).
                and memo[4].code is memo[5]
            ):
                return memo[3]
            if not same_key(cached, role, method):
                # Another (role, method) whose path collides with this one's cached the file
                # (red team R8): refused as when the file is read.
                return Lookup(None, "key_mismatch", path)
            # The checksum is verified whenever the code to run is not the code verified
            # last, not only when the file was read: code changed in memory can never run.
            verdict = reuse_verdict(
                cached,
                contract_fingerprint=contract_fingerprint,
                runtime_version=runtime_version,
                host_call=host_call,
                reader=reader,
            )
            if verdict != "checksum_mismatch":
                if enforce:
                    found = self._enforced(
                        cached,
                        verdict,
                        path,
                        contract_fingerprint,
                        runtime_version,
                        host_call,
                        reader,
                    )
                else:
                    found = Lookup(cached, verdict or "hit", path)
                self._remember_verdict(path, cached, inputs, found)
                return found
            _ARTIFACTS.drop(path)
        loaded = read_json(path, now=self._clock(), root=self.root)
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
        if not same_key(record, role, method):
            # Another (role, method) whose path segments collide with these (8 hex digits of
            # hash: a name can be searched for offline), or a file copied here: never run it
            # for this call, never overwrite it (ADR 0070).
            return Lookup(None, "key_mismatch", path)
        verdict = reuse_verdict(
            record,
            contract_fingerprint=contract_fingerprint,
            runtime_version=runtime_version,
            host_call=host_call,
            reader=reader,
        )
        if verdict == "checksum_mismatch":
            moved = quarantine(path, expected=loaded.raw, now=self._clock())
            return Lookup(record, verdict, path, moved)
        _ARTIFACTS.put(path, loaded.identity, record)
        if enforce:
            return self._enforced(
                record, verdict, path, contract_fingerprint, runtime_version, host_call, reader
            )
        return Lookup(record, verdict or "hit", path)

    def _remember_verdict(
        self, path: Path, record: ArtifactRecord, inputs: tuple[Any, ...], found: Lookup
    ) -> None:
        if len(self._verdicts) >= _PATHS_KEPT:
            self._verdicts.clear()
        # One assignment: a thread reading the table sees the old entry or the new one.
        chosen = found.record
        if chosen is not None:  # always, for a record found in the cache
            self._verdicts[path] = (record, record.code, inputs, found, chosen, chosen.code)

    @staticmethod
    def _enforced(
        record: ArtifactRecord,
        verdict: str | None,
        path: Path,
        contract_fingerprint: str,
        runtime_version: str,
        host_call: bool,
        reader: Reader | None,
    ) -> Lookup:
        """The first of the lifecycle's choices that passes every reuse check (ADR 0081), the
        provenance rules for ``reader`` included (ADR 0077)."""
        choices = enforced_choices(record)
        if choices is None:
            return Lookup(record, verdict or "hit", path)
        if not choices:
            return Lookup(record, "degraded", path)
        first: str | None = None
        for choice in choices:
            reason = (
                verdict
                if choice is record
                else reuse_verdict(
                    choice,
                    contract_fingerprint=contract_fingerprint,
                    runtime_version=runtime_version,
                    host_call=host_call,
                    reader=reader,
                )
            )
            if reason is None:
                return Lookup(choice, "hit", path)
            first = first or reason
        return Lookup(choices[0], first or "degraded", path)

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
                record = _parse(loaded)
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
        _ARTIFACTS.drop(path)
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
        return _DEFERRED

    # ----------------------------------------------------------------- registry

    def _tools(self) -> dict[str, dict[str, Any]]:
        """The registered tools as read (cached; shared: never hand these out)."""
        path = registry_path(self.root)
        tools = _REGISTRIES.get(path)
        if tools is None:
            tools, loaded = load_tools(self.root)
            _REGISTRIES.put(path, loaded.identity if loaded.state == "ok" else None, tools)
        return tools

    def registry_entries(self) -> dict[str, dict[str, Any]]:
        """Every registered tool's entry (empty when the registry is missing or unusable); a
        fresh copy the caller may change."""
        return {name: _clone(entry) for name, entry in self._tools().items()}

    def known_tools(self, in_memory: Mapping[str, Any] | None) -> dict[str, Any]:
        """The registry an agent should see: persisted tools merged with ``in_memory`` (its
        ``context["tools"]``), memory winning for scalars, lists unioned."""
        return merge_known_tools(self.registry_entries(), in_memory)

    def register_tool(self, name: str, contract: Mapping[str, Any] | None) -> WriteResult:
        """Record (or refresh) a delegated tool with its contract, at once (carrying the tool
        uses waiting for the registry)."""
        path = registry_path(self.root)
        waiting = _pending.USES.take(path)
        now = self._now()

        def edit(tools: dict[str, Any]) -> bool:
            if waiting is not None:
                for tool, delta in waiting.items():
                    current = tools.get(tool)
                    if isinstance(current, dict):
                        tools[tool] = apply_uses(current, delta)
            current = tools.get(name)
            tools[name] = merge_registration(
                current if isinstance(current, dict) else None, contract, now=now
            )
            return True

        result = self._write(lambda: update_tools(self.root, edit))
        if result.reason is not None and result.reason.startswith("error:") and waiting:
            _pending.USES.put_back(path, self.root, waiting)
        return result

    def touch_tool(
        self, name: str, method: str, *, ok: bool, observation: ToolObservation | None = None
    ) -> WriteResult:
        """Count one call a registered tool served (``deferred``: written in a batch, ADR
        0055), with what its program showed (ADR 0109); ``not_registered`` for other names,
        which are never counted.

        An observation the registry on disk does not reflect yet (a new program, a lifecycle
        change) is written at once, with every use waiting for the registry: a stored program
        answering again adds nothing new and waits for the batch.
        """
        tools = self._tools()
        if name not in tools:
            return WriteResult(False, "not_registered")
        now = self._now()

        def add(deltas: dict[str, UsesDelta]) -> dict[str, UsesDelta]:
            deltas.setdefault(name, UsesDelta()).add(method, ok, now, observation)
            return deltas

        path = registry_path(self.root)
        due = _pending.USES.fold(path, self.root, dict, add)
        if observation is not None and not reflects(tools[name], observation):
            waiting = _pending.USES.take(path)
            if waiting is not None:
                try:
                    _pending.write_uses(path, self.root, waiting)
                except (OSError, ValueError) as error:
                    _pending.USES.put_back(path, self.root, waiting)
                    return WriteResult(False, f"error: {type(error).__name__}: {error}")
                return WriteResult(True)
        if due:
            _pending.flush_due()
        return _DEFERRED

    def _write(self, action: Callable[[], Any]) -> WriteResult:
        try:
            updated = action()
        except (OSError, ValueError) as error:
            return WriteResult(False, f"error: {type(error).__name__}: {error}")
        return WriteResult(updated.written, updated.skipped, updated.quarantined_to)
