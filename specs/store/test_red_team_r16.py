"""Red team R16: ADR 0138's recheck window on the artifact cache, attacked from this process.

ADR 0138 lets a ``stat`` that found an artifact unchanged vouch for it for 50 ms; this
process's store changes end the window at once through ``_files.CHANGES``. Every spec here
freezes the artifact cache's clock (:func:`frozen_window`): the window never ends by time, so
whatever a lookup returns after a change is due to ``CHANGES`` alone.

Payloads tried, and what happened (BROKEN = failed before the fix of this round):

1. Held: every writer of this process between two lookups of a warm entry is seen by the next
   lookup: a generation and a failure written at once (``record_call``), the batch of answered
   runs (``flush``), a user correction, ``tools set-lifecycle degraded`` under enforcement and
   ``tools forget`` run in this process, a corrupt file set aside by another ``Store`` of this
   process. (Every store write goes through ``write_json``, every move aside through
   ``quarantine``, and the only two removals call ``note_change``: ``grep`` of ``os.replace``,
   ``unlink``, ``rename`` and ``write_text`` under ``recurgent/``.)
2. Held: a thread writing new programs while three threads look up, window frozen: no lookup
   that began after a write returned ever got an older program. Two interleavings forced one
   at a time: a put of a version read before this process replaced it (the next get stats
   and drops it), and a write landing while a get's stat is in the kernel (that get answers
   the old version, the next one drops it: the count is read before the stat; this spec
   fails when the count is read after it).
3. BROKEN, fixed (hardening; a program cannot reach it): an exception landing between a
   store file's rename (or unlink) and the count (a ``KeyboardInterrupt`` is raised at the
   signal check right after the system call returns) left ``CHANGES`` where it was: the file
   was replaced or gone, and the program this process had just replaced or forgotten kept
   answering for the rest of the window. The count is now taken in a ``finally``.
   The watchdog's asynchronous stop (ADR 0089) cannot land there: a store write runs after
   the attempt or in a forwarded call's host section, where no stop is delivered.
"""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path
from typing import Any

import pytest

import recurgent._store._cache as cache_module
import recurgent._store._lookup as lookup_module
from recurgent._profiles._namespace import forget_namespace, namespace_path
from recurgent._runtime_config import configure_runtime
from recurgent._store import ArtifactRecord, Lookup, Promotion, Store, checksum
from recurgent._store._cache import IdentityCache
from recurgent._store._cli import main as tools_main
from recurgent._store._files import CHANGES, identity_of, read_json, write_json
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path
from recurgent._store._promotion import apply_override
from specs.store.support import call, frozen, host_lookup


@pytest.fixture
def frozen_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """The artifact cache's clock stands still: a window once opened ends only by a change of
    this process (``CHANGES``), never by time."""
    monkeypatch.setattr(lookup_module.ARTIFACTS, "_clock", lambda: 1000.0)


def _store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store", clock=frozen)


def _warm(store: Store) -> list[str]:
    """Three lookups: the read, the stat that opens the window, one served inside it."""
    return [host_lookup(store).reason for _ in range(3)]


def _record(found: Lookup) -> ArtifactRecord:
    assert found.record is not None
    return found.record


def _tools(*argv: str) -> int:
    return tools_main(list(argv), out=io.StringIO(), err=io.StringIO())


@pytest.mark.usefixtures("frozen_window")
class TestThisProcesssWritersEndTheWindow:
    """Payload 1 (held): each writer of this process, between a warm window and the next
    lookup."""

    def test_a_new_program_written_at_once(self, tmp_path: Path) -> None:
        """A generation recorded after the window opened: the next lookup returns it."""
        store = _store(tmp_path)
        store.record_call(call("return 1"))
        warm = _warm(store)

        store.record_call(call("return 2"))
        found = host_lookup(store)

        assert (warm, found.reason, _record(found).code) == (["hit"] * 3, "hit", "return 2")

    def test_a_failure_written_at_once(self, tmp_path: Path) -> None:
        """A persisted run that failed is written at once: the next lookup's record counts
        it."""
        store = _store(tmp_path)
        store.record_call(call("return 1"))
        _warm(store)

        store.record_call(call("return 1", source="persisted", result="failure"))
        found = host_lookup(store)

        card = _record(found).scorecards[checksum("return 1")]
        assert (card.calls, card.failures) == (2, 1)

    def test_the_batch_of_answered_runs(self, tmp_path: Path) -> None:
        """Four answered runs wait in the batch; after ``flush`` the next lookup's record holds
        them (five calls), not the record cached before."""
        store = _store(tmp_path)
        store.record_call(call("return 1"))
        _warm(store)
        reasons = [store.record_call(call("return 1", source="persisted")).reason for _ in "abcd"]

        written = store.flush()
        card = _record(host_lookup(store)).scorecards[checksum("return 1")]

        assert (reasons, written, card.calls) == (["deferred"] * 4, 1, 5)

    def test_a_user_correction(self, tmp_path: Path) -> None:
        """A correction of the current version: the next lookup's record counts it."""
        store = _store(tmp_path)
        store.record_call(call("return 1"))
        _warm(store)

        result = store.record_correction(
            "calculator", "answer", checksum("return 1"), promotion=Promotion()
        )
        card = _record(host_lookup(store)).scorecards[checksum("return 1")]

        assert (result.written, card.user_correction_count) == (True, 1)

    def test_set_lifecycle_degraded_in_this_process(self, tmp_path: Path) -> None:
        """Enforcement serves the durable ``return 1``; a maintainer degrades it with the tools
        CLI run in this process: the next enforced lookup serves ``return 2``."""
        root = tmp_path / "store"
        record = apply_call(None, call("return 1"), now="2026-12-01T12:00:00.000Z")
        apply_override(record, checksum("return 1"), "durable", actor="a", reason=None, now="x")
        record = apply_call(record, call("return 2"), now="2026-12-01T12:00:02.000Z")
        write_json(artifact_path(root, "calculator", "answer"), record.to_json(), root=root)
        configure_runtime(promotion_enforcement_enabled=True)
        store = Store(root, clock=frozen)
        before = [_record(host_lookup(store, enforce=True)).code for _ in range(3)]

        code = _tools(
            "set-lifecycle",
            "calculator",
            "answer",
            checksum("return 1"),
            "degraded",
            "--root",
            str(root),
        )
        after = host_lookup(store, enforce=True)

        assert (before, code, after.reason, _record(after).code) == (
            ["return 1"] * 3,
            0,
            "hit",
            "return 2",
        )

    def test_forget_in_this_process(self, tmp_path: Path) -> None:
        """``tools forget`` run in this process: the next lookup misses."""
        store = _store(tmp_path)
        store.record_call(call("return 1"))
        warm = _warm(store)

        code = _tools("forget", "calculator", "answer", "--root", str(store.root))

        assert (warm, code, host_lookup(store).reason) == (["hit"] * 3, 0, "missing")

    def test_a_quarantine_by_this_process(self, tmp_path: Path) -> None:
        """Another process leaves a corrupt file (a spec's plain rename stands in for it; the
        window hides it, and every ``Store`` of this process shares the cache); a correction
        in this process reads it and sets it aside (writing nothing): the next lookup misses
        at once."""
        store = _store(tmp_path)
        store.record_call(call("return 1"))
        _warm(store)
        _corrupt_renamed_in(artifact_path(store.root, "calculator", "answer"))
        hidden = host_lookup(store).reason

        refused = store.record_correction(
            "calculator", "answer", checksum("return 1"), promotion=Promotion()
        )
        found = host_lookup(store)
        path = artifact_path(store.root, "calculator", "answer")
        moved = [item.read_bytes() for item in path.parent.glob(f"{path.name}.corrupt-*")]

        assert (hidden, refused.reason, moved, found.reason) == (
            "hit",
            "no_record",
            [b"{not json"],
            "missing",
        )


def _corrupt_renamed_in(path: Path) -> None:
    """Another process's damaged file, renamed over ``path`` (no count of this process's)."""
    temp = path.with_name("other")
    temp.write_bytes(b"{not json")
    temp.chmod(0o600)
    os.replace(temp, path)


@pytest.mark.usefixtures("frozen_window")
class TestThreadsRacingAWriter:
    """Payload 2 (held): readers racing this process's writer, window frozen."""

    def test_no_lookup_after_a_write_returns_an_older_program(self, tmp_path: Path) -> None:
        """A thread writes ``return 1`` .. ``return 60`` in turn and publishes each number after
        its write returns; three threads look up 200 times each, noting the number published
        before each lookup: no lookup returned a program older than that number."""
        store = _store(tmp_path)
        store.record_call(call("return 0"))
        published = [0]
        stale: list[tuple[int, int]] = []
        done = threading.Event()

        def write() -> None:
            for number in range(1, 61):
                store.record_call(call(f"return {number}"))
                published[0] = number
            done.set()

        def read() -> None:
            for _ in range(200):
                floor = published[0]
                found = int(_record(host_lookup(store)).code.split()[1])
                if found < floor:
                    stale.append((floor, found))

        threads = [threading.Thread(target=write)] + [
            threading.Thread(target=read) for _ in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        last = _record(host_lookup(store)).code

        assert (done.is_set(), stale, last) == (True, [], "return 60")

    def test_a_put_of_a_version_replaced_since_its_read(self, tmp_path: Path) -> None:
        """One thread read ``v0``; this process then wrote ``v1``; the slower thread puts what
        it read: the next get stats (a put never opens the window) and drops it."""
        cache: IdentityCache[str] = IdentityCache(recheck_seconds=0.05, clock=lambda: 1000.0)
        path = tmp_path / "a.json"
        write_json(path, {"v": 0}, root=tmp_path)
        read = read_json(path)

        write_json(path, {"v": 1}, root=tmp_path)
        cache.put(path, read.identity, "v0")

        assert (read.data, cache.get(path)) == ({"v": 0}, None)

    def test_a_write_landing_during_the_check_s_stat(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A write of this process lands while a get's stat is in the kernel, after it saw the
        old file: that get answers ``v0`` (the two overlapped), and the next get stats and
        drops it, because the count was read before the stat and moved after the write."""
        cache: IdentityCache[str] = IdentityCache(recheck_seconds=0.05, clock=lambda: 1000.0)
        path = tmp_path / "a.json"
        write_json(path, {"v": 0}, root=tmp_path)
        cache.put(path, read_json(path).identity, "v0")
        real = identity_of
        stats: list[str] = []

        def stat_then_write(text: Path | str) -> Any:
            stats.append(os.fspath(text))
            seen = real(text)
            if len(stats) == 1:
                write_json(path, {"v": 1}, root=tmp_path)
            return seen

        monkeypatch.setattr(cache_module, "identity_of", stat_then_write)
        during = cache.get(path)
        after = cache.get(path)

        assert (during, after, len(stats)) == ("v0", None, 2)


def _interrupted_after(name: str, target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``os.<name>`` does its work on ``target`` and then raises ``KeyboardInterrupt``, as the
    signal check right after the system call returns would (once)."""
    real = getattr(os, name)

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        if Path(args[-1] if name == "replace" else args[0]) == target:
            monkeypatch.setattr(os, name, real)
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(os, name, interrupted)


@pytest.mark.usefixtures("frozen_window")
class TestAnInterruptAfterTheSystemCall:
    """Payload 3 (broken before this round): the change made, the count not taken."""

    def test_a_write_interrupted_after_its_rename(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A generation's rename is followed by an interrupt: the file holds ``return 2``, the
        count moved, and the next lookup returns ``return 2`` (it returned ``return 1`` for
        the rest of the window)."""
        store = _store(tmp_path)
        store.record_call(call("return 1"))
        _warm(store)
        path = artifact_path(store.root, "calculator", "answer")
        count = CHANGES.value
        _interrupted_after("replace", path, monkeypatch)

        with pytest.raises(KeyboardInterrupt):
            store.record_call(call("return 2"))
        found = host_lookup(store)

        assert (CHANGES.value > count, found.reason, _record(found).code) == (
            True,
            "hit",
            "return 2",
        )

    def test_a_forget_interrupted_after_its_unlink(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``tools forget`` in this process removes the artifact and is interrupted: the next
        lookup misses (the forgotten program answered for the rest of the window)."""
        store = _store(tmp_path)
        store.record_call(call("return 1"))
        _warm(store)
        path = artifact_path(store.root, "calculator", "answer")
        _interrupted_after("unlink", path, monkeypatch)

        with pytest.raises(KeyboardInterrupt):
            _tools("forget", "calculator", "answer", "--root", str(store.root))
        found = host_lookup(store)

        assert (path.exists(), found.reason) == (False, "missing")

    def test_a_quarantine_interrupted_after_its_unlink(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A corrupt file renamed in (by another process, unseen in the window) is set aside
        by a correction in this process, interrupted after the unlink that ends the move: the
        next lookup misses (the old program answered for the rest of the window)."""
        store = _store(tmp_path)
        store.record_call(call("return 1"))
        _warm(store)
        path = artifact_path(store.root, "calculator", "answer")
        _corrupt_renamed_in(path)
        _interrupted_after("unlink", path, monkeypatch)

        with pytest.raises(KeyboardInterrupt):
            store.record_correction(
                "calculator", "answer", checksum("return 1"), promotion=Promotion()
            )
        found = host_lookup(store)

        assert (path.exists(), found.reason) == (False, "missing")

    def test_a_namespace_forget_interrupted_after_its_unlink(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``forget_namespace`` (``tools forget``'s other removal) interrupted after its unlink:
        the file is gone and the count moved, so any cache with a window stats again."""
        root = tmp_path / "store"
        path = namespace_path(root, "calculator")
        write_json(path, {"schema_version": 1, "role": "calculator"}, root=root)
        count = CHANGES.value
        _interrupted_after("unlink", path, monkeypatch)

        with pytest.raises(KeyboardInterrupt):
            forget_namespace(root, "calculator")

        assert (path.exists(), CHANGES.value > count) == (False, True)
