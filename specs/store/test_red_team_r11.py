"""Red team R11: a second look at R10's write rules for stored programs (ADR 0131).

Two directions: legitimate evidence (counts, sessions, promotions) that the rules must not lose,
and a hostile program (non-host writer, any role name through ``delegate``) abusing them. Each
spec names what it pins; those under a "break" class fail without the fix they name.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from recurgent._store import Store, _pending, checksum
from recurgent._store._artifacts import ArtifactRecord
from recurgent._store._batch import RunsDelta
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path
from specs.store.support import call, frozen

LATER = "2026-12-01T12:00:01.000Z"
OLD, NEW = "return 42", "return 43"


def _store(root: Path) -> Store:
    return Store(root, clock=frozen)


def _path(root: Path) -> Path:
    return artifact_path(root, "calculator", "answer")


def _data(root: Path) -> dict[str, Any]:
    return dict(json.loads(_path(root).read_text()))


def _regenerate_elsewhere(root: Path, code: str = NEW, **fields: Any) -> None:
    """Another host process regenerates the program (the old code stays a kept version)."""
    path = _path(root)
    record = ArtifactRecord.model_validate(json.loads(path.read_text()))
    new = apply_call(record, call(code=code, trace_id="other", **fields), now=LATER)
    path.write_text(json.dumps(new.to_json()))


def _cards(data: dict[str, Any]) -> dict[str, tuple[int, list[str]]]:
    return {
        code: (
            data["scorecards"][checksum(code)]["calls"],
            data["scorecards"][checksum(code)]["sessions"],
        )
        for code in (OLD, NEW)
        if checksum(code) in data["scorecards"]
    }


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The next ``failures["left"]`` batch writes fail as on a full disk, then writes work."""
    failures = {"left": 0}
    real = _pending.update_json

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if failures["left"]:
            failures["left"] -= 1
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(_pending, "update_json", flaky)
    warnings.simplefilter("ignore", RuntimeWarning)
    return failures


class TestWaitingRunsOfAReplacedProgramAreNeverDropped:
    """Break: runs waiting for a program that another process replaced since were dropped
    when their own write failed (``_defer_run`` swallowed the error; a put-back batch that
    could not merge with the newer program's runs was discarded). They count in the totals
    and in the old version's scorecard, as any stale run does (ADR 0131, R10)."""

    def test_a_failed_write_of_the_replaced_batch_keeps_it_waiting(
        self, tmp_path: Path, full_disk: dict[str, int]
    ) -> None:
        """The host's run of the old code waits; another process regenerates; the disk is
        full for two writes (the flush, then the replaced batch's own write when the new
        code's run arrives): both runs are written afterwards (4 answers; each version two
        calls)."""
        store = _store(tmp_path / "store")
        store.record_call(call(code=OLD))
        store.record_call(call(code=OLD, source="persisted", trace_id="s1"))
        _regenerate_elsewhere(store.root)
        full_disk["left"] = 2

        assert store.flush() == 0
        store.record_call(call(code=NEW, source="persisted", trace_id="s2"))
        store.flush()

        data = _data(store.root)
        assert data["success_count"] == 4
        assert _cards(data) == {OLD: (2, ["trace-1", "s1"]), NEW: (2, ["other", "s2"])}
        assert _pending.RUNS.pending() == []

    def test_a_put_back_batch_waits_before_the_newer_programs_runs(self, tmp_path: Path) -> None:
        """A batch of the old code whose flush failed is put back while runs of the new code
        wait: the flush writes both (4 answers), each to its own version."""
        store = _store(tmp_path / "store")
        store.record_call(call(code=OLD))
        _regenerate_elsewhere(store.root)
        store.record_call(call(code=NEW, source="persisted", trace_id="s2"))
        old = call(code=OLD, source="persisted", trace_id="s1")
        failed = RunsDelta.start(old, LATER)
        failed.add(old, LATER)

        _pending.RUNS.put_back(_path(store.root), store.root, failed)
        store.flush()

        data = _data(store.root)
        assert data["success_count"] == 4
        assert _cards(data) == {OLD: (2, ["trace-1", "s1"]), NEW: (2, ["other", "s2"])}

    def test_a_write_made_at_once_carries_both_batches(self, tmp_path: Path) -> None:
        """The same two batches wait; the new code's failure is written at once and carries
        both: 4 answers and 1 failure; the old version two calls, the new one three."""
        store = _store(tmp_path / "store")
        store.record_call(call(code=OLD))
        _regenerate_elsewhere(store.root)
        store.record_call(call(code=NEW, source="persisted", trace_id="s2"))
        old = call(code=OLD, source="persisted", trace_id="s1")
        failed = RunsDelta.start(old, LATER)
        failed.add(old, LATER)
        _pending.RUNS.put_back(_path(store.root), store.root, failed)

        store.record_call(call(code=NEW, source="persisted", result="failure", trace_id="s3"))

        data = _data(store.root)
        assert (data["success_count"], data["failure_count"]) == (4, 1)
        assert _cards(data) == {OLD: (2, ["trace-1", "s1"]), NEW: (3, ["other", "s2", "s3"])}
        assert _pending.RUNS.pending() == []
