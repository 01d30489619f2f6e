"""Whether a persisted program may run: the artifact lookup of :class:`~recurgent._store.Store`
(ADR 0036).

The parsed artifacts of this process are kept while their file is unchanged (ADR 0054, 0138),
and a store remembers its last verdict per artifact for the cached record (ADR 0130): the steady
state of a stored program reads nothing and checks nothing again. A damaged file or a record
whose checksum does not match its code is moved aside and never runs.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from recurgent._store._artifacts import ArtifactRecord, reuse_verdict
from recurgent._store._cache import IdentityCache
from recurgent._store._files import Loaded, quarantine, read_json
from recurgent._store._ownership import same_key
from recurgent._store._paths import artifact_path
from recurgent._store._provenance import Reader
from recurgent._store._results import Lookup
from recurgent._store._versions import enforced_choices

__all__ = ["ARTIFACTS", "ARTIFACT_RECHECK_SECONDS", "ArtifactLookup", "parse_loaded"]

_PATHS_KEPT = 1024


def parse_loaded(loaded: Loaded) -> ArtifactRecord | None:
    """The artifact in a file read; ``None`` when its fields do not validate."""
    try:
        return ArtifactRecord.model_validate(loaded.data)
    except ValidationError:
        return None


#: How long a persisted call trusts the last ``stat`` of its artifact (ADR 0138): this process's
#: writes are seen at once; another process's write, a CLI change or a hand edit within 50 ms.
#: Every stat lets other threads take the GIL, and under a busy one that costs ~25 us a call.
ARTIFACT_RECHECK_SECONDS = 0.05

#: Parsed artifacts of this process, valid while their file is unchanged.
ARTIFACTS: IdentityCache[ArtifactRecord] = IdentityCache(recheck_seconds=ARTIFACT_RECHECK_SECONDS)


class ArtifactLookup:
    """The artifact reads of :class:`~recurgent._store.Store` (a base class of it): where a
    (role, method) artifact is, and whether its program may run now."""

    # Set by Store.__init__.
    root: Path
    _clock: Callable[[], datetime.datetime]
    _paths: dict[tuple[str, str], Path]
    _verdicts: dict[Path, tuple[ArtifactRecord, str, tuple[Any, ...], Lookup, ArtifactRecord, str]]

    def _artifact_path(self, role: str, method: str) -> Path:
        path = self._paths.get((role, method))
        if path is None:
            if len(self._paths) >= _PATHS_KEPT:
                self._paths.clear()
            path = self._paths[(role, method)] = artifact_path(self.root, role, method)
        return path

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
        cached = ARTIFACTS.get(path)
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
            ARTIFACTS.drop(path)
        loaded = read_json(path, now=self._clock(), root=self.root)
        if loaded.state != "ok":
            reason = {"unsupported": "unsupported_schema"}.get(loaded.state, loaded.state)
            return Lookup(None, reason, path, loaded.quarantined_to)
        if loaded.data is not None and loaded.data.get("runtime") != "python":
            # Another runtime's program (Ruby shares the default root): never read it as ours.
            return Lookup(None, "foreign_runtime", path)
        record = parse_loaded(loaded)
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
        ARTIFACTS.put(path, loaded.identity, record)
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
