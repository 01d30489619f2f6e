"""Who a stored program was generated for, and what that lets it do (ADR 0074)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recurgent._store import Store
from recurgent._store._artifacts import ArtifactRecord, reuse_verdict
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path
from specs.store.support import call, frozen

NOW = "2026-12-01T12:00:00.000Z"
HOST_CODE = "return args[0] + 1"
PROGRAM_CODE = "return 42 if args[0] != 'never' else args[0]"


def _record(author: str | None, code: str = HOST_CODE, **fields: Any) -> ArtifactRecord:
    record = apply_call(None, call(code, author=author), now=NOW)
    for name, value in fields.items():
        setattr(record, name, value)
    return record


def _verdict(record: ArtifactRecord, *, host_call: bool) -> str | None:
    return reuse_verdict(
        record, contract_fingerprint="none", runtime_version="0.1.0", host_call=host_call
    )


def _lookup(store: Store, *, host_call: bool) -> tuple[str, bool, str | None]:
    found = store.lookup(
        "calculator",
        "answer",
        contract_fingerprint="none",
        runtime_version="0.1.0",
        host_call=host_call,
    )
    author = found.record.author if found.record is not None else None
    return found.reason, found.reusable, author


def _on_disk(root: Path) -> dict[str, Any]:
    Store(root).flush()
    path = artifact_path(root, "calculator", "answer")
    return dict(json.loads(path.read_text("utf-8")))


class TestReuseVerdict:
    """A host call runs only code generated for the host; any other call runs any code."""

    @pytest.mark.parametrize(
        ("author", "expected"),
        [("host", None), ("program", "program_written"), (None, "author_unknown")],
    )
    def test_a_host_call_needs_host_written_code(
        self, author: str | None, expected: str | None
    ) -> None:
        """host -> hit; program -> program_written; missing -> author_unknown (never trusted)."""
        assert _verdict(_record(author), host_call=True) == expected

    @pytest.mark.parametrize("author", ["host", "program", None, "someone"])
    def test_any_other_call_runs_code_of_any_author(self, author: str | None) -> None:
        """A program's call may reuse the host's code, its own, and code of unknown origin."""
        assert _verdict(_record(author), host_call=False) is None

    def test_an_unrecognized_author_is_unknown(self) -> None:
        """Only the exact string ``host`` is trusted; ``Host`` is an unknown author."""
        assert _verdict(_record("Host"), host_call=True) == "author_unknown"

    def test_the_author_is_checked_after_every_other_rule(self) -> None:
        """A program-written record that is not cacheable says ``not_cacheable``: the author
        reason means the author alone stood between the call and a hit."""
        record = _record("program", cacheable=False)

        assert _verdict(record, host_call=True) == "not_cacheable"


class TestApplyCall:
    """The record's author is the author of its current code."""

    def test_a_new_program_takes_the_calls_author(self) -> None:
        """A generation by a program over host code makes the record the program's, and its
        history entry says so."""
        record = apply_call(_record("host"), call(PROGRAM_CODE, author="program"), now=NOW)

        assert (record.author, record.history[0].author, record.history[1].author) == (
            "program",
            "program",
            "host",
        )

    def test_the_host_generating_the_same_code_takes_it_over(self) -> None:
        """The host's own generation of identical code makes it the host's (no new history)."""
        record = apply_call(_record("program"), call(HOST_CODE, author="host"), now=NOW)

        assert (record.author, len(record.history)) == ("host", 1)

    def test_a_persisted_run_keeps_the_author(self) -> None:
        """A run of the stored code carries that code's author: the record keeps it."""
        persisted = call(HOST_CODE, source="persisted", author="host")

        record = apply_call(_record("host"), persisted, now=NOW)

        assert (record.author, record.success_count) == ("host", 2)

    def test_a_persisted_run_of_replaced_code_never_brings_it_back(self) -> None:
        """Code another process replaced meanwhile (its version not kept): the run counts in
        the totals, and the newer code stays with its own author (ADR 0131; a stale run once
        wrote the older code back under the author it ran as)."""
        persisted = call(HOST_CODE, source="persisted", author="program")

        record = apply_call(_record("host", code="return 0"), persisted, now=NOW)

        assert (record.code, record.author, record.success_count, len(record.history)) == (
            "return 0",
            "host",
            2,
            1,
        )

    def test_the_author_is_written_to_the_file(self, tmp_path: Path) -> None:
        """``author`` is a top-level field of the artifact file and of each history entry."""
        Store(tmp_path, clock=frozen).record_call(call(author="program"))

        data = _on_disk(tmp_path)

        assert (data["author"], data["history"][0]["author"]) == ("program", "program")

    def test_a_file_without_the_field_reads_as_unknown(self, tmp_path: Path) -> None:
        """An artifact written before ADR 0074 has no author: a host call does not run it."""
        store = Store(tmp_path, clock=frozen)
        store.record_call(call(author="host"))
        path = artifact_path(tmp_path, "calculator", "answer")
        data = json.loads(path.read_text("utf-8"))
        del data["author"]
        path.write_text(json.dumps(data), "utf-8")

        assert _lookup(Store(tmp_path), host_call=True) == ("author_unknown", False, None)


class TestRecordCall:
    """A program may run the host's code, never replace it."""

    def test_a_program_cannot_replace_host_code(self, tmp_path: Path) -> None:
        """host_written: the file keeps the host's code, author and counts."""
        store = Store(tmp_path, clock=frozen)
        store.record_call(call(HOST_CODE, author="host"))
        before = artifact_path(tmp_path, "calculator", "answer").read_bytes()

        written = store.record_call(call(PROGRAM_CODE, author="program"))

        assert (written.written, written.reason) == (False, "host_written")
        assert artifact_path(tmp_path, "calculator", "answer").read_bytes() == before

    @pytest.mark.parametrize("source", ["generated", "repaired"])
    def test_even_the_same_code_written_for_a_program_is_refused(
        self, tmp_path: Path, source: str
    ) -> None:
        """A program's own generation (or repair) of identical code does not take the host's
        record over, reset its repair budget or change its contract fingerprint."""
        store = Store(tmp_path, clock=frozen)
        store.record_call(call(HOST_CODE, author="host"))

        written = store.record_call(
            call(HOST_CODE, author="program", source=source, contract_fingerprint="sha256:x")
        )

        assert (written.written, written.reason) == (False, "host_written")
        assert (_on_disk(tmp_path)["author"], _on_disk(tmp_path)["contract_fingerprint"]) == (
            "host",
            "none",
        )

    def test_a_program_running_host_code_counts_its_runs(self, tmp_path: Path) -> None:
        """A persisted run of the host's code by a program carries the author ``host``: its
        runs count and the code stays the host's."""
        store = Store(tmp_path, clock=frozen)
        store.record_call(call(HOST_CODE, author="host"))

        store.record_call(call(HOST_CODE, source="persisted", author="host"))
        failed = store.record_call(
            call(
                HOST_CODE,
                source="persisted",
                author="host",
                result="failure",
                failure_class="extrinsic",
                failure_message="timeout: upstream",
            )
        )

        data = _on_disk(tmp_path)
        assert failed.written is True
        assert (data["author"], data["success_count"], data["failure_count"]) == ("host", 2, 1)

    @pytest.mark.parametrize("stored", ["program", None])
    def test_a_program_may_replace_code_not_written_for_the_host(
        self, tmp_path: Path, stored: str | None
    ) -> None:
        """Program-written and unknown-author records are the program's to replace."""
        store = Store(tmp_path, clock=frozen)
        store.record_call(call(HOST_CODE, author=stored))

        written = store.record_call(call(PROGRAM_CODE, author="program"))

        assert written.written is True
        assert (_on_disk(tmp_path)["code"], _on_disk(tmp_path)["author"]) == (
            PROGRAM_CODE,
            "program",
        )

    @pytest.mark.parametrize("stored", ["program", None])
    def test_the_host_replaces_any_code(self, tmp_path: Path, stored: str | None) -> None:
        """The host's generation replaces a program's code and owns the record from then on."""
        store = Store(tmp_path, clock=frozen)
        store.record_call(call(PROGRAM_CODE, author=stored))

        store.record_call(call(HOST_CODE, author="host"))

        assert _lookup(Store(tmp_path), host_call=True) == ("hit", True, "host")

    def test_an_unknown_author_cannot_replace_host_code(self, tmp_path: Path) -> None:
        """A call that does not say whose its code is (``author=None``) is not the host's."""
        store = Store(tmp_path, clock=frozen)
        store.record_call(call(HOST_CODE, author="host"))

        written = store.record_call(call(PROGRAM_CODE, author=None))

        assert (written.written, written.reason) == (False, "host_written")


class TestLookup:
    """The store's lookup passes the call's standing to the verdict, cached or not."""

    @pytest.mark.parametrize("cached", [False, True])
    def test_program_written_code_is_a_hit_only_for_a_program(
        self, tmp_path: Path, cached: bool
    ) -> None:
        """The record is handed back either way (the log and a repair may read it)."""
        Store(tmp_path, clock=frozen).record_call(call(PROGRAM_CODE, author="program"))
        store = Store(tmp_path)
        if cached:
            _lookup(store, host_call=False)

        assert _lookup(store, host_call=True) == ("program_written", False, "program")
        assert _lookup(store, host_call=False) == ("hit", True, "program")

    def test_a_record_still_answers_only_its_own_key(self, tmp_path: Path) -> None:
        """The author never widens a lookup: a program-written record copied to another
        method's path is ``key_mismatch`` for every caller."""
        Store(tmp_path, clock=frozen).record_call(call(PROGRAM_CODE, author="program"))
        source = artifact_path(tmp_path, "calculator", "answer")
        target = artifact_path(tmp_path, "calculator", "other")
        target.write_bytes(source.read_bytes())
        target.chmod(0o600)

        found = Store(tmp_path).lookup(
            "calculator",
            "other",
            contract_fingerprint="none",
            runtime_version="0.1.0",
            host_call=False,
        )

        assert (found.reason, found.record) == ("key_mismatch", None)
