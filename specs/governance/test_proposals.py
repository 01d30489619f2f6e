"""The proposals book: proposals.json read and written under its lock, every record checked,
damage quarantined, the book bounded without dropping a pending proposal (ADR 0086)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from recurgent._governance import _proposals
from recurgent._governance._proposals import (
    ENTRIES_READ,
    RECORD_BYTES,
    BookFullError,
    FileBook,
    MemoryBook,
    ProposalStoreError,
    checked,
    find,
    make_room,
)

ID = "prop-0123456789abcdef"


def _record(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": ID,
        "proposal_type": "tool_patch",
        "target": {"role": "calculator"},
        "evidence_refs": ["log:1"],
        "proposed_diff_summary": "use context['value']",
        "metadata": {},
        "status": "proposed",
        "created_at": "2026-12-02T10:00:00.000Z",
        "updated_at": "2026-12-02T10:00:00.000Z",
        "author_context": {"role": "calculator", "model": "m", "trace_id": "t"},
        "last_action": None,
        "actions": [],
        "applied_mutation": None,
    }
    record.update(changes)
    return record


def _numbered(index: int, status: str = "proposed") -> dict[str, Any]:
    return _record(id=f"prop-{index:016x}", status=status)


def _append(entry: Any) -> Any:
    def edit(entries: list[Any]) -> bool:
        entries.append(entry)
        return True

    return edit


class TestChecked:
    """A record from the file is shown only when every field has its type and bound."""

    def test_a_valid_record_comes_back_equal_and_fresh(self) -> None:
        """checked() returns an equal dict that is not the entry itself."""
        entry = _record()

        record = checked(entry)

        assert record == entry
        assert record is not entry

    def test_unknown_keys_of_another_version_are_kept(self) -> None:
        """A key this port does not know survives the check."""
        assert checked(_record(reviewers=["x"])) == _record(reviewers=["x"])

    def test_the_originals_record_without_newer_keys_reads(self) -> None:
        """A Ruby record (no actions, last_action or applied_mutation keys) reads with defaults."""
        entry = _record()
        for key in ("actions", "last_action", "applied_mutation"):
            del entry[key]

        assert checked(entry) == _record()

    @pytest.mark.parametrize(
        ("name", "entry"),
        [
            ("not a mapping", ["prop-0123456789abcdef"]),
            ("id with a newline", _record(id=ID + "\n")),
            ("id in capitals", _record(id="prop-0123456789ABCDEF")),
            ("short id", _record(id="prop-0123")),
            ("unknown status", _record(status="merged")),
            ("type not a str", _record(proposal_type=7)),
            ("blank type", _record(proposal_type="")),
            ("type too long", _record(proposal_type="x" * 101)),
            ("summary too long", _record(proposed_diff_summary="x" * 16_001)),
            ("evidence not strs", _record(evidence_refs=[1])),
            ("evidence ref too long", _record(evidence_refs=["x" * 1_001])),
            ("too many evidence refs", _record(evidence_refs=["x"] * 101)),
            ("metadata not a mapping", _record(metadata=[1])),
            ("stamp too long", _record(created_at="2" * 41)),
            (
                "too many actions",
                _record(actions=[{"status": "approved", "actor": "a", "at": "t"}] * 5),
            ),
            (
                "action with a bad status",
                _record(last_action={"status": "x", "actor": "a", "at": "t"}),
            ),
            ("author name too long", _record(author_context={"role": "r" * 201})),
            ("record too large", _record(target="x" * RECORD_BYTES)),
            ("bool where a str goes", _record(created_at=True)),
        ],
    )
    def test_a_bad_field_makes_the_record_unreadable(self, name: str, entry: Any) -> None:
        """Each field out of type or bound makes checked() return None."""
        assert checked(entry) is None, name

    def test_find_never_matches_an_unreadable_entry(self) -> None:
        """An entry with the id but a bad field is not found; the readable one after it is."""
        entries = [_record(status="merged"), _record(status="approved")]

        assert find(entries, ID) == (1, _record(status="approved"))
        assert find(entries[:1], ID) is None


class TestMakeRoom:
    """A full book drops its oldest closed (or unreadable) entry, never a pending one."""

    def test_below_the_bound_nothing_is_dropped(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With room left, make_room changes nothing."""
        monkeypatch.setattr(_proposals, "MAX_PROPOSALS", 3)
        entries = [_numbered(1, "applied"), _numbered(2)]

        assert make_room(entries) == []
        assert [e["id"] for e in entries] == [_numbered(1)["id"], _numbered(2)["id"]]

    def test_the_oldest_closed_entry_goes_first(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Pending entries are skipped; the first rejected/applied one in file order goes."""
        monkeypatch.setattr(_proposals, "MAX_PROPOSALS", 3)
        entries = [_numbered(1), _numbered(2, "approved"), _numbered(3, "rejected")]

        dropped = make_room(entries)

        assert dropped == [_numbered(3)["id"]]
        assert [e["status"] for e in entries] == ["proposed", "approved"]

    def test_an_unreadable_entry_counts_as_closed(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Damage is dropped like a closed entry and reported as '?'."""
        monkeypatch.setattr(_proposals, "MAX_PROPOSALS", 2)
        entries: list[Any] = [_numbered(1), "junk"]

        assert make_room(entries) == ["?"]
        assert entries == [_numbered(1)]

    def test_a_book_of_pending_proposals_refuses(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """All pending: BookFullError, and the entries are as they were."""
        monkeypatch.setattr(_proposals, "MAX_PROPOSALS", 2)
        entries = [_numbered(1), _numbered(2, "approved")]

        with pytest.raises(BookFullError, match="2 proposals are pending"):
            make_room(entries)
        assert entries == [_numbered(1), _numbered(2, "approved")]


class TestFileBook:
    """proposals.json: the original's format, private, changed only under its lock."""

    def test_a_missing_file_is_an_empty_book(self, tmp_path: Path) -> None:
        """No file: read() is [] and nothing is created."""
        book = FileBook(tmp_path / "store")

        assert book.read() == []
        assert not (tmp_path / "store").exists()

    def test_an_update_writes_the_originals_format_privately(self, tmp_path: Path) -> None:
        """The file is {schema_version: 1, proposals: [...]}, mode 0600."""
        book = FileBook(tmp_path / "store")

        book.update(_append(_record()))

        path = tmp_path / "store" / "proposals.json"
        assert json.loads(path.read_text()) == {"schema_version": 1, "proposals": [_record()]}
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert book.read() == [_record()]
        assert book.where == str(path)

    def test_an_edit_that_changes_nothing_writes_nothing(self, tmp_path: Path) -> None:
        """edit() returning False leaves no file."""
        FileBook(tmp_path / "store").update(lambda entries: False)

        assert not (tmp_path / "store" / "proposals.json").exists()

    def test_unknown_top_level_keys_and_unreadable_entries_are_written_back(
        self, tmp_path: Path
    ) -> None:
        """Another version's keys and entries this port cannot read survive an update."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        path = root / "proposals.json"
        path.write_text(json.dumps({"schema_version": 1, "proposals": ["junk"], "owner": "x"}))
        path.chmod(0o600)

        FileBook(root).update(_append(_record()))

        assert json.loads(path.read_text()) == {
            "schema_version": 1,
            "proposals": ["junk", _record()],
            "owner": "x",
        }

    @pytest.mark.parametrize(
        "content",
        [
            "{not json",
            "[1, 2]",
            json.dumps({"schema_version": 1, "proposals": {"a": 1}}),
            json.dumps({"schema_version": 1, "proposals": [{}] * (ENTRIES_READ + 1)}),
        ],
        ids=["not json", "not an object", "proposals not a list", "too many entries"],
    )
    def test_a_damaged_file_is_quarantined_and_reads_empty(
        self, tmp_path: Path, content: str
    ) -> None:
        """The damaged file moves to proposals.json.corrupt-<stamp> with its bytes; read() is []."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        path = root / "proposals.json"
        path.write_text(content)
        path.chmod(0o600)

        assert FileBook(root).read() == []

        moved = sorted(root.glob("proposals.json.corrupt-*"))
        assert len(moved) == 1
        assert moved[0].read_text() == content
        assert not path.exists()

    def test_an_update_over_damage_keeps_the_copy_and_starts_anew(self, tmp_path: Path) -> None:
        """Writing over a damaged book quarantines it first; the new book holds the new entry."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        path = root / "proposals.json"
        path.write_text(json.dumps({"proposals": "x"}))
        path.chmod(0o600)

        FileBook(root).update(_append(_record()))

        assert json.loads(path.read_text())["proposals"] == [_record()]
        assert [p.read_text() for p in root.glob("proposals.json.corrupt-*")] == [
            json.dumps({"proposals": "x"})
        ]

    def test_another_schema_version_is_neither_read_nor_overwritten(self, tmp_path: Path) -> None:
        """schema_version 2: read() and update() raise ProposalStoreError; the file is untouched."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        path = root / "proposals.json"
        content = json.dumps({"schema_version": 2, "proposals": []})
        path.write_text(content)
        path.chmod(0o600)
        book = FileBook(root)

        with pytest.raises(ProposalStoreError, match="unsupported") as reading:
            book.read()
        with pytest.raises(ProposalStoreError, match="unsupported") as writing:
            book.update(_append(_record()))

        assert (reading.value.retriable, writing.value.retriable) == (False, False)
        assert path.read_text() == content

    def test_a_lock_that_cannot_be_taken_is_a_retriable_store_error(self, tmp_path: Path) -> None:
        """A directory where the lock file goes: update() raises a retriable ProposalStoreError."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        (root / "proposals.json.lock").mkdir()

        with pytest.raises(ProposalStoreError) as failed:
            FileBook(root).update(_append(_record()))

        assert failed.value.retriable is True
        assert "proposals.json" in str(failed.value)


class TestMemoryBook:
    """The book of an agent with no store: a list kept only when an edit says it changed."""

    def test_edits_are_kept_only_when_they_report_a_change(self) -> None:
        """A True edit is kept; a False edit's changes are discarded."""
        book = MemoryBook()
        book.update(_append(_record()))

        def discarded(entries: list[Any]) -> bool:
            entries.clear()
            return False

        book.update(discarded)

        assert book.read() == [_record()]
        assert book.where == "memory"


_PROPOSER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    sys.path.insert(0, {repo!r})
    from recurgent import Agent
    from recurgent.testing import ScriptedProvider

    agent = Agent.for_("worker", provider=ScriptedProvider(), toolstore_root=Path({root!r}),
                       log=False)
    print("ready", flush=True)
    go = Path({go!r})
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    ids = []
    for n in range({count}):
        outcome = agent.propose("tool_patch", target={{"worker": {worker}, "n": n}})
        assert outcome.status == "ok", outcome
        ids.append(outcome.value["id"])
    print(json.dumps(ids), flush=True)
    """
)


@pytest.mark.slow
def test_eight_processes_proposing_at_once_lose_nothing(tmp_path: Path) -> None:
    """8 OS processes each propose 5 at the same moment on one root: all 40 ids are in the
    file, each once, with the target its process gave."""
    root = tmp_path / "store"
    go = tmp_path / "go"
    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _PROPOSER.format(repo=repo, root=str(root), go=str(go), count=5, worker=worker),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for worker in range(8)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n"
        go.touch()
        reported: dict[str, int] = {}
        for worker, process in enumerate(processes):
            out, err = process.communicate(timeout=90)
            assert (process.returncode, err) == (0, "")
            for proposal_id in json.loads(out):
                reported[proposal_id] = worker
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()

    stored = json.loads((root / "proposals.json").read_text())["proposals"]
    assert len(reported) == 40
    assert sorted(record["id"] for record in stored) == sorted(reported)
    assert all(record["target"]["worker"] == reported[record["id"]] for record in stored)
    assert {record["status"] for record in stored} == {"proposed"}


def test_the_book_read_twice_in_a_row_is_stable(tmp_path: Path) -> None:
    """Reading does not change the file (same bytes and modification time)."""
    book = FileBook(tmp_path / "store")
    book.update(_append(_record()))
    path = tmp_path / "store" / "proposals.json"
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    time.sleep(0.01)

    book.read()
    book.read()

    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
