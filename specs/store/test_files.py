"""Atomic private writes, locks, quarantine and the schema-version guard (ADR 0036)."""

from __future__ import annotations

import datetime
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from recurgent._store import _files
from recurgent._store._files import (
    encode_json,
    locked,
    quarantine,
    read_json,
    update_json,
    write_json,
)

NOW = datetime.datetime(2026, 12, 1, 9, 8, 7, tzinfo=datetime.UTC)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


class TestWrite:
    """write_json: temp file in the same directory, fsync, rename."""

    def test_writes_compact_utf8_json_and_leaves_no_temp_file(self, tmp_path: Path) -> None:
        """The file holds compact JSON with raw UTF-8 and no *.tmp-* file remains."""
        root = tmp_path / "store"
        path = root / "artifacts" / "r" / "m.json"

        write_json(path, {"a": 1, "b": "é"}, root=root)

        assert path.read_bytes() == '{"a":1,"b":"é"}'.encode()
        assert [p.name for p in path.parent.iterdir()] == ["m.json"]

    def test_directories_are_0700_and_files_0600(self, tmp_path: Path) -> None:
        """Every directory the store creates is private, and so is the file."""
        root = tmp_path / "store"
        path = root / "artifacts" / "r" / "m.json"

        write_json(path, {}, root=root)

        assert [_mode(p) for p in (root, root / "artifacts", path.parent)] == [0o700] * 3
        assert _mode(path) == 0o600

    def test_an_existing_root_keeps_its_mode(self, tmp_path: Path) -> None:
        """A root directory the user made is not re-permissioned."""
        os.chmod(tmp_path, 0o755)
        write_json(tmp_path / "registry.json", {}, root=tmp_path)

        assert _mode(tmp_path) == 0o755

    def test_failed_rename_keeps_the_old_file_and_removes_the_temp(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A crash at the rename leaves the previous content and no temp file."""
        path = tmp_path / "registry.json"
        write_json(path, {"v": "old"}, root=tmp_path)

        def boom(src: Any, dst: Any) -> None:
            raise OSError("disk gone")

        monkeypatch.setattr(os, "replace", boom)  # the os module _files renames with
        with pytest.raises(OSError, match="disk gone"):
            write_json(path, {"v": "new"}, root=tmp_path)

        assert json.loads(path.read_text()) == {"v": "old"}
        assert sorted(p.name for p in tmp_path.iterdir()) == ["registry.json"]

    def test_lone_surrogates_become_replacement_characters(self) -> None:
        """Undecodable text is written as U+FFFD instead of failing."""
        assert encode_json({"k": "a\udcffb"}) == '{"k":"a\ufffdb"}'.encode()


class TestRead:
    """read_json states: missing, ok, corrupt, unsupported, unreadable."""

    def test_missing(self, tmp_path: Path) -> None:
        """An absent file is 'missing'."""
        assert read_json(tmp_path / "none.json").state == "missing"

    def test_ok_accepts_version_one_or_none(self, tmp_path: Path) -> None:
        """schema_version 1 and no schema_version both read."""
        path = tmp_path / "f.json"
        for payload in ({"schema_version": 1, "x": 1}, {"x": 1}):
            path.write_text(json.dumps(payload))
            assert (read_json(path).state, read_json(path).data) == ("ok", payload)

    @pytest.mark.parametrize("version", [2, "1", True, 0])
    def test_other_versions_are_unsupported_and_untouched(
        self, tmp_path: Path, version: object
    ) -> None:
        """Another schema_version is not read and the file stays as it was."""
        path = tmp_path / "f.json"
        text = json.dumps({"schema_version": version, "keep": "me"})
        path.write_text(text)

        assert read_json(path).state == "unsupported"
        assert path.read_text() == text

    @pytest.mark.parametrize("content", ["{not json", "[1, 2]", "\xff\xfe"])
    def test_corrupt_is_quarantined(self, tmp_path: Path, content: str) -> None:
        """Invalid JSON or a non-object is moved to <file>.corrupt-<UTC stamp>."""
        path = tmp_path / "f.json"
        path.write_bytes(content.encode("latin-1"))

        loaded = read_json(path, now=NOW)

        assert loaded.state == "corrupt"
        assert loaded.quarantined_to == tmp_path / "f.json.corrupt-20261201T090807"
        assert not path.exists()
        assert loaded.quarantined_to.read_bytes() == content.encode("latin-1")

    def test_corrupt_without_quarantine_stays(self, tmp_path: Path) -> None:
        """quarantine_corrupt=False reports corruption but moves nothing (read-only views)."""
        path = tmp_path / "f.json"
        path.write_text("{")

        assert read_json(path, quarantine_corrupt=False).state == "corrupt"
        assert path.exists()

    def test_unreadable(self, tmp_path: Path) -> None:
        """An OS error other than absence is 'unreadable' (here: a directory)."""
        (tmp_path / "f.json").mkdir()
        assert read_json(tmp_path / "f.json").state == "unreadable"


class TestQuarantine:
    """Quarantine never overwrites an earlier quarantined copy."""

    def test_two_quarantines_in_one_second_keep_both(self, tmp_path: Path) -> None:
        """The second copy in the same second gets a -2 suffix."""
        path = tmp_path / "f.json"
        path.write_text("first")
        first = quarantine(path, now=NOW)
        path.write_text("second")
        second = quarantine(path, now=NOW)

        assert first is not None and second is not None
        assert (first.name, second.name) == (
            "f.json.corrupt-20261201T090807",
            "f.json.corrupt-20261201T090807-2",
        )
        assert (first.read_text(), second.read_text()) == ("first", "second")

    def test_a_file_replaced_meanwhile_is_not_moved(self, tmp_path: Path) -> None:
        """With expected bytes, a file that no longer holds them stays in place."""
        path = tmp_path / "f.json"
        path.write_text("{}")

        assert quarantine(path, expected=b"{broken", now=NOW) is None
        assert path.read_text() == "{}"


class TestUpdate:
    """update_json: read-modify-write under the lock."""

    def test_change_sees_current_data_and_its_result_is_written(self, tmp_path: Path) -> None:
        """The change gets the stored object and its return value replaces it."""
        path = tmp_path / "f.json"
        write_json(path, {"n": 1}, root=tmp_path)

        updated = update_json(
            path, lambda loaded: {"n": (loaded.data or {})["n"] + 1}, root=tmp_path
        )

        assert (updated.written, json.loads(path.read_text())) == (True, {"n": 2})

    def test_unsupported_schema_is_never_overwritten(self, tmp_path: Path) -> None:
        """A schema_version 2 file survives an update untouched."""
        path = tmp_path / "f.json"
        path.write_text('{"schema_version":2,"data":"future"}')

        updated = update_json(path, lambda loaded: {"schema_version": 1}, root=tmp_path)

        assert (updated.written, updated.skipped) == (
            False,
            "unsupported: schema_version 2 is not 1",
        )
        assert path.read_text() == '{"schema_version":2,"data":"future"}'

    def test_corrupt_file_is_quarantined_then_replaced(self, tmp_path: Path) -> None:
        """The change sees no data, the damaged copy is kept aside, the new file is written."""
        path = tmp_path / "f.json"
        path.write_text("{oops")
        seen: list[object] = []

        def change(loaded: _files.Loaded) -> dict[str, Any]:
            seen.append(loaded.data)
            return {"fresh": True}

        updated = update_json(path, change, root=tmp_path, now=NOW)

        assert seen == [None]
        assert updated.quarantined_to == tmp_path / "f.json.corrupt-20261201T090807"
        assert json.loads(path.read_text()) == {"fresh": True}

    def test_returning_none_writes_nothing(self, tmp_path: Path) -> None:
        """A change that returns None leaves the file absent."""
        updated = update_json(tmp_path / "f.json", lambda loaded: None, root=tmp_path)

        assert (updated.written, updated.skipped) == (False, "no_change")
        assert not (tmp_path / "f.json").exists()

    def test_a_held_lock_times_out_as_builtin_timeout(self, tmp_path: Path) -> None:
        """A second holder waits, then gets TimeoutError (filelock's error stays inside)."""
        path = tmp_path / "f.json"
        with (
            locked(path, root=tmp_path),
            pytest.raises(TimeoutError, match="stayed locked"),
            locked(path, root=tmp_path, timeout=0.05),
        ):
            pass
