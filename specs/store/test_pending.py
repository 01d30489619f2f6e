"""Batched counters: when waiting changes are written; none lost or counted twice (ADR 0055)."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recurgent._store import Store, _pending, checksum, flush
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path, registry_path
from recurgent._store._pending import FLUSH_AFTER_SECONDS, PendingTable
from recurgent._store._provenance import Provenance
from specs.store.support import call, frozen

NOW = "2026-12-01T12:00:00.123Z"
DOUBLE = Provenance(provider_kind="test_double:ScriptedProvider", double_fingerprint="sha256:a")
MODEL = Provenance(provider_kind="openai", model="gpt-4.1-mini-2025-04-14", prompt_version="p1")


def _store(root: Path) -> Store:
    return Store(root, clock=frozen)


def _artifact(root: Path) -> dict[str, Any]:
    return dict(json.loads(artifact_path(root, "calculator", "answer").read_text()))


def _counts(root: Path) -> tuple[int, int]:
    data = _artifact(root)
    return data["success_count"], data["scorecards"][checksum("return 42")]["calls"]


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class TestPersistedRunsWait:
    """A persisted run that answered is deferred; everything else is written through."""

    def test_runs_wait_until_flush(self, tmp_path: Path) -> None:
        """Three persisted answers leave the file as it was until Store.flush writes all three."""
        store = _store(tmp_path / "store")
        store.record_call(call())

        results = [store.record_call(call(source="persisted")).reason for _ in range(3)]
        before = _counts(store.root)
        written = store.flush()

        assert (results, before, written) == (["deferred"] * 3, (1, 1), 1)
        assert _counts(store.root) == (4, 4)
        assert _artifact(store.root)["last_program_source"] == "persisted"

    def test_a_failure_is_written_at_once_with_the_waiting_runs(self, tmp_path: Path) -> None:
        """A persisted failure is written through, carrying the two answers before it."""
        store = _store(tmp_path / "store")
        store.record_call(call())
        store.record_call(call(source="persisted"))
        store.record_call(call(source="persisted"))

        failed = store.record_call(
            call(source="persisted", result="failure", failure_class="intrinsic")
        )

        data = _artifact(store.root)
        assert failed.written is True
        assert (data["success_count"], data["failure_count"]) == (3, 1)
        assert [
            entry["status"] for entry in data["scorecards"][checksum("return 42")]["short_window"]
        ] == ["ok", "ok", "ok", "error"]
        assert _pending.RUNS.pending() == []

    def test_a_new_program_is_written_at_once_after_the_waiting_runs(self, tmp_path: Path) -> None:
        """A regeneration counts the waiting runs for the old code, then stores the new code."""
        store = _store(tmp_path / "store")
        store.record_call(call())
        store.record_call(call(source="persisted"))

        store.record_call(call(code="return 43"))

        data = _artifact(store.root)
        assert (data["code"], data["success_count"]) == ("return 43", 3)
        assert data["scorecards"][checksum("return 42")]["calls"] == 2

    def test_old_changes_are_written_at_the_next_call(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Once the oldest waiting change is older than the flush age, the next run writes."""
        clock = _Clock()
        monkeypatch.setattr(_pending.RUNS, "_clock", clock)
        store = _store(tmp_path / "store")
        store.record_call(call())
        store.record_call(call(source="persisted"))
        clock.now += FLUSH_AFTER_SECONDS / 2
        store.record_call(call(source="persisted"))
        still_waiting = _counts(store.root)
        clock.now += FLUSH_AFTER_SECONDS / 2

        store.record_call(call(source="persisted"))

        assert (still_waiting, _counts(store.root), FLUSH_AFTER_SECONDS) == ((1, 1), (4, 4), 1.0)

    def test_a_forgotten_artifact_is_not_recreated(self, tmp_path: Path) -> None:
        """Runs of an artifact deleted meanwhile are dropped: no file, no directory comes back."""
        store = _store(tmp_path / "store")
        store.record_call(call())
        store.record_call(call(source="persisted"))
        path = artifact_path(store.root, "calculator", "answer")
        path.unlink()
        path.with_name(path.name + ".lock").unlink()
        path.parent.rmdir()

        store.flush()

        assert (path.parent.exists(), _pending.RUNS.pending()) == (False, [])

    def test_threads_folding_at_once_lose_no_run(self, tmp_path: Path) -> None:
        """4 threads x 100 persisted answers on one artifact, then a flush: 401 counted."""
        store = _store(tmp_path / "store")
        store.record_call(call())

        def hundred() -> None:
            for _ in range(100):
                store.record_call(call(source="persisted"))

        threads = [threading.Thread(target=hundred) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        store.flush()

        assert _counts(store.root) == (401, 401)


class TestFlushChecksTheFileItWrites:
    """Runs waiting for a file are written a second later: if another process put a program
    there meanwhile that the runs could not have been written into at once (another key's, the
    host's, a model's when a double ran), the flush leaves it as it is (ADR 0131)."""

    @pytest.mark.parametrize(
        ("ours", "theirs"),
        [
            # A colliding path: another role's record of the same code.
            ({}, {"role": "abacus"}),
            # The host's program replaced one a program had written.
            ({"author": "program"}, {"code": "return 7", "author": "host"}),
            # A model wrote the same code the double's runs ran.
            ({"provenance": DOUBLE}, {"provenance": MODEL}),
        ],
        ids=["key_mismatch", "host_written", "model_written"],
    )
    def test_runs_never_fold_into_a_program_they_could_not_write(
        self, tmp_path: Path, ours: dict[str, Any], theirs: dict[str, Any]
    ) -> None:
        """The waiting runs are dropped and the other program's file is left byte for byte."""
        store = _store(tmp_path / "store")
        store.record_call(call(**ours))
        store.record_call(call(source="persisted", **ours))
        path = artifact_path(store.root, "calculator", "answer")
        path.write_text(json.dumps(apply_call(None, call(**theirs), now=NOW).to_json()))
        written = path.read_bytes()

        store.flush()

        assert (path.read_bytes() == written, _pending.RUNS.pending()) == (True, [])

    def test_runs_still_count_in_a_program_they_could_have_written(self, tmp_path: Path) -> None:
        """The control: the same role's new code from another process keeps the waiting runs
        in its totals (the runs counted an older version)."""
        store = _store(tmp_path / "store")
        store.record_call(call())
        store.record_call(call(source="persisted"))
        path = artifact_path(store.root, "calculator", "answer")
        path.write_text(json.dumps(apply_call(None, call(code="return 7"), now=NOW).to_json()))

        store.flush()

        data = _artifact(store.root)
        assert (data["code"], data["success_count"]) == ("return 7", 2)


class TestToolUsesWait:
    """Calls through registered tools are counted in a batch; registrations are written at once."""

    def test_uses_wait_and_a_registration_carries_them(self, tmp_path: Path) -> None:
        """Two uses wait; registering another tool writes them in the same write."""
        store = _store(tmp_path / "store")
        store.register_tool("converter", {"purpose": "convert"})
        store.touch_tool("converter", "convert", ok=True)
        store.touch_tool("converter", "round", ok=False)
        before = store.registry_entries()["converter"]["usage_count"]

        store.register_tool("fetcher", {"purpose": "fetch"})

        entry = store.registry_entries()["converter"]
        assert before == 0
        assert (entry["usage_count"], entry["success_count"], entry["failure_count"]) == (2, 1, 1)
        assert entry["methods"] == ["convert"]
        assert _pending.USES.pending() == []

    def test_uses_of_a_tool_removed_meanwhile_are_dropped(self, tmp_path: Path) -> None:
        """The registry lost the tool (forget): the flush writes nothing for it."""
        store = _store(tmp_path / "store")
        store.register_tool("converter", {"purpose": "convert"})
        store.touch_tool("converter", "convert", ok=True)
        path = registry_path(store.root)
        path.write_text('{"schema_version":1,"tools":{}}')

        store.flush()

        assert json.loads(path.read_text()) == {"schema_version": 1, "tools": {}}


class TestFailedFlush:
    """A deferred write that fails never raises, warns once, and keeps the counts."""

    def test_failure_warns_once_and_keeps_the_delta(self, tmp_path: Path) -> None:
        """Two failed flushes: one warning, the delta still waiting, then written."""
        attempts: list[int] = []

        def write(path: Path, root: Path, delta: list[int]) -> None:
            attempts.append(len(delta))
            if len(attempts) < 3:
                raise OSError("disk full")

        table: PendingTable[Any] = PendingTable(write, lambda a, b: a + b)
        path = tmp_path / "file.json"
        table.fold(path, tmp_path, list, lambda d: [*d, 1])
        with pytest.warns(RuntimeWarning, match="disk full"):
            first = table.flush()
        table.fold(path, tmp_path, list, lambda d: [*d, 2])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            second = table.flush()
        third = table.flush()

        assert (first, second, third, attempts) == (0, 0, 1, [1, 2, 2])
        assert table.pending() == []

    def test_due_only_writes_only_old_enough_deltas(self, tmp_path: Path) -> None:
        """flush(due_only=True) leaves a change younger than the flush age waiting."""
        written: list[Path] = []
        clock = _Clock()
        table: PendingTable[Any] = PendingTable(
            lambda path, root, delta: written.append(path), lambda a, b: b, clock=clock
        )
        table.fold(tmp_path / "old", tmp_path, list, lambda d: d)
        clock.now += FLUSH_AFTER_SECONDS
        due = table.fold(tmp_path / "young", tmp_path, list, lambda d: d)

        table.flush(due_only=True)

        assert (due, written, table.pending()) == (True, [tmp_path / "old"], [tmp_path / "young"])


def _record_in_child(root: str) -> None:
    store = _store(Path(root))
    flush()  # anything inherited from the parent would be written here
    store.record_call(call(source="persisted"))
    store.record_call(call(source="persisted"))
    store.flush()


@pytest.mark.slow
def test_a_forked_child_never_writes_the_parent_s_counts(tmp_path: Path) -> None:
    """Parent: 1 generated + 3 waiting runs; forked child: 2 runs; total 6, never 9."""
    store = _store(tmp_path / "store")
    store.record_call(call())
    for _ in range(3):
        store.record_call(call(source="persisted"))
    child = multiprocessing.get_context("fork").Process(
        target=_record_in_child, args=(str(store.root),)
    )
    child.start()
    child.join()
    after_child = _counts(store.root)

    store.flush()

    assert (child.exitcode, after_child, _counts(store.root)) == (0, (3, 3), (6, 6))


def _record_without_flush(root: str) -> None:
    store = _store(Path(root))
    for _ in range(3):
        store.record_call(call(source="persisted"))


@pytest.mark.slow
def test_a_multiprocessing_child_writes_its_counts_when_it_ends(tmp_path: Path) -> None:
    """A fork child that never flushes (it ends with os._exit, no atexit) still counts."""
    store = _store(tmp_path / "store")
    store.record_call(call())
    child = multiprocessing.get_context("fork").Process(
        target=_record_without_flush, args=(str(store.root),)
    )
    child.start()
    child.join()

    assert (child.exitcode, _counts(store.root)) == (0, (4, 4))


def _touch_fifty(root: str) -> None:
    store = _store(Path(root))
    for _ in range(50):
        store.touch_tool("shared", "run", ok=True)


@pytest.mark.slow
def test_eight_processes_times_fifty_batched_uses_lose_no_count(tmp_path: Path) -> None:
    """8 processes x 50 batched tool uses, each written when its process ends: 400 counted."""
    store = _store(tmp_path / "store")
    store.register_tool("shared", {"purpose": "count"})
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_touch_fifty, args=(str(store.root),)) for _ in range(8)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()

    entry = store.registry_entries()["shared"]
    assert [process.exitcode for process in processes] == [0] * 8
    assert (entry["usage_count"], entry["success_count"]) == (400, 400)


_EXIT_SCRIPT = """
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from recurgent._store import Store
from specs.store.support import call
store = Store(Path({root!r}))
store.record_call(call())
for _ in range(4):
    store.record_call(call(source="persisted"))
"""


@pytest.mark.slow
def test_a_normal_exit_writes_the_waiting_counts(tmp_path: Path) -> None:
    """A process that never flushes still leaves all five calls counted when it exits."""
    root = tmp_path / "store"
    repo = str(Path(__file__).resolve().parents[2])
    script = textwrap.dedent(_EXIT_SCRIPT).format(repo=repo, root=str(root))

    finished = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )

    assert (finished.returncode, finished.stderr) == (0, "")
    assert _counts(root) == (5, 5)


@pytest.mark.slow
def test_a_failing_write_at_exit_never_fails_the_exit(tmp_path: Path) -> None:
    """The artifact's lock cannot be taken at exit: exit status 0, one warning on stderr."""
    root = tmp_path / "store"
    repo = str(Path(__file__).resolve().parents[2])
    # A directory where the lock file goes makes every lock attempt fail at once (even as root).
    breaker = """
    path = next((Path({root!r}) / "artifacts").rglob("*.json.lock"))
    path.unlink()
    path.mkdir()
    """
    script = textwrap.dedent(_EXIT_SCRIPT).format(repo=repo, root=str(root)) + textwrap.dedent(
        breaker
    ).format(root=str(root))

    finished = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )

    assert finished.returncode == 0
    assert finished.stderr.count("could not write usage counts") == 1
    assert _counts(root) == (1, 1)


class TestTheBackgroundWriter:
    """A process that stopped calling writes its waiting counts about a second later, from a
    thread that ends once nothing waits (ADR 0166; off elsewhere in this suite)."""

    @staticmethod
    def _waited(condition: Callable[[], bool], seconds: float = 15.0) -> bool:
        # Polls, never asserts a speed: the writer's second is a minimum, not a promise.
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if condition():
                return True
            time.sleep(0.05)
        return condition()

    def test_counts_are_written_with_no_further_call(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Three persisted runs wait; with no call and no flush after them, the file counts
        all four calls, nothing waits, and the writer thread has ended."""
        monkeypatch.setattr(_pending.WRITER, "enabled", True)
        store = Store(tmp_path / "store")
        store.record_call(call())
        for _ in range(3):
            store.record_call(call(source="persisted"))
        waiting_at_once = _counts(store.root)

        written = self._waited(lambda: _counts(store.root) == (4, 4))
        ended = self._waited(lambda: not _pending.WRITER.running)

        assert (waiting_at_once, written, _pending.RUNS.pending(), ended) == (
            (1, 1),
            True,
            [],
            True,
        )

    def test_a_change_after_the_writer_ended_starts_it_again(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Written, the writer ends; the next waiting run starts a new one, which writes it."""
        monkeypatch.setattr(_pending.WRITER, "enabled", True)
        store = Store(tmp_path / "store")
        store.record_call(call())
        store.record_call(call(source="persisted"))
        first = self._waited(lambda: _counts(store.root) == (2, 2))
        self._waited(lambda: not _pending.WRITER.running)

        store.record_call(call(source="persisted"))
        second = self._waited(lambda: _counts(store.root) == (3, 3))
        # Ended before the next spec, which must find its changes waiting.
        ended = self._waited(lambda: not _pending.WRITER.running)

        assert (first, second, ended) == (True, True, True)

    def test_off_it_starts_no_thread(self, tmp_path: Path) -> None:
        """Turned off (as in this suite), a waiting run starts nothing and stays waiting."""
        store = Store(tmp_path / "store")
        store.record_call(call())
        store.record_call(call(source="persisted"))
        names = [thread.name for thread in threading.enumerate()]

        assert (
            "recurgent-store-writer" in names,
            _pending.WRITER.running,
            _counts(store.root),
        ) == (
            False,
            False,
            (1, 1),
        )
