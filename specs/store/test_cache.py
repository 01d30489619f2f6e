"""Reads cached by file identity: a lookup reads its file only when the file changed (ADR 0054)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import recurgent._store._cache as cache_module
import recurgent._store._lookup as lookup_module
import recurgent._store._tools as tools_module
from recurgent._store import Store, checksum
from recurgent._store._cache import IdentityCache
from recurgent._store._cli import main as tools_main
from recurgent._store._files import (
    Loaded,
    identity_of,
    note_change,
    quarantine,
    read_json,
    write_json,
)
from recurgent._store._paths import artifact_path, registry_path
from recurgent._store._registry import load_tools
from specs.store.support import call, frozen


def _store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store", clock=frozen)


def _path(store: Store) -> Path:
    return artifact_path(store.root, "calculator", "answer")


def _lookup(store: Store) -> Any:
    return store.lookup(
        "calculator", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
    )


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every store file the facade reads, in order."""
    seen: list[Path] = []

    def counting(path: Path, **kwargs: Any) -> Loaded:
        seen.append(path)
        return read_json(path, **kwargs)

    monkeypatch.setattr(lookup_module, "read_json", counting)
    return seen


def _rewrite(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """Replace the file the way another process's store would (a new file renamed in place)."""
    data = json.loads(path.read_text())
    change(data)
    temp = path.with_name(path.name + ".other")
    temp.write_text(json.dumps(data))
    os.replace(temp, path)


class TestArtifactLookups:
    """The parsed artifact is reused while the file is the same file."""

    def test_repeated_lookups_read_the_file_once(self, tmp_path: Path, reads: list[Path]) -> None:
        """Three lookups of an unchanged artifact: one read, three hits, the same record."""
        store = _store(tmp_path)
        store.record_call(call())

        found = [_lookup(store) for _ in range(3)]

        assert [f.reason for f in found] == ["hit", "hit", "hit"]
        assert reads == [artifact_path(store.root, "calculator", "answer")]
        assert found[0].record is found[1].record is found[2].record

    def test_another_writer_is_seen_at_the_next_lookup(
        self, tmp_path: Path, reads: list[Path]
    ) -> None:
        """A new file renamed over the artifact (another process's write) is read again."""
        store = _store(tmp_path)
        store.record_call(call())
        _lookup(store)

        def newer_code(data: dict[str, Any]) -> None:
            data["code"], data["code_checksum"] = "return 7", checksum("return 7")

        _rewrite(_path(store), newer_code)
        found = _lookup(store)

        assert (found.reason, found.record.code if found.record else None, len(reads)) == (
            "hit",
            "return 7",
            2,
        )

    def test_a_change_in_place_is_seen(self, tmp_path: Path) -> None:
        """A file edited in place (same inode, other size) is read again."""
        store = _store(tmp_path)
        store.record_call(call())
        _lookup(store)
        path = _path(store)
        data = json.loads(path.read_text())
        data["contract_fingerprint"] = "sha256:other"
        path.write_text(json.dumps(data))

        assert _lookup(store).reason == "contract_mismatch"

    def test_tampering_after_a_cached_read_is_quarantined_not_run(self, tmp_path: Path) -> None:
        """Code changed on disk without its checksum, after a cached hit: quarantined, no record
        runs."""
        store = _store(tmp_path)
        store.record_call(call())
        _lookup(store)

        def tamper(data: dict[str, Any]) -> None:
            data["code"] = "return 666"

        _rewrite(_path(store), tamper)
        found = _lookup(store)

        assert (found.reason, found.reusable, found.quarantined_to is not None) == (
            "checksum_mismatch",
            False,
            True,
        )
        assert _lookup(store).reason == "missing"

    def test_deletion_is_seen(self, tmp_path: Path) -> None:
        """An artifact deleted after a cached read (recurgent tools forget) is missing."""
        store = _store(tmp_path)
        store.record_call(call())
        _lookup(store)

        (_path(store)).unlink()

        assert (_lookup(store).reason, _lookup(store).record) == ("missing", None)

    def test_a_record_changed_in_memory_never_runs(self, tmp_path: Path, reads: list[Path]) -> None:
        """A cached record whose code no longer matches its checksum is dropped and the file,
        which is intact, is read again."""
        store = _store(tmp_path)
        store.record_call(call())
        cached = _lookup(store).record
        assert cached is not None
        cached.code = "return 666"

        found = _lookup(store)

        assert (found.reason, found.record.code if found.record else None, len(reads)) == (
            "hit",
            "return 42",
            2,
        )

    def test_a_steady_lookup_reuses_its_verdict_until_code_or_inputs_change(
        self, tmp_path: Path, reads: list[Path]
    ) -> None:
        """The same cached record asked with the same inputs gets the same verdict without the
        checks (ADR 0130); other inputs are checked, and code changed in memory after the
        verdict is verified again and never runs."""
        store = _store(tmp_path)
        store.record_call(call())
        _lookup(store)
        steady = _lookup(store)
        again = _lookup(store)
        other_contract = store.lookup(
            "calculator",
            "answer",
            contract_fingerprint="sha256:other",
            runtime_version="0.1.0",
            host_call=True,
        )
        assert steady.record is not None
        steady.record.code = "return 666"

        found = _lookup(store)

        assert (again is steady, steady.reason, other_contract.reason) == (
            True,
            "hit",
            "contract_mismatch",
        )
        assert (found.reason, found.record.code if found.record else None, len(reads)) == (
            "hit",
            "return 42",
            2,
        )

    def test_this_process_s_own_write_is_seen(self, tmp_path: Path) -> None:
        """A generation recorded after a cached read is what the next lookup returns."""
        store = _store(tmp_path)
        store.record_call(call())
        _lookup(store)

        store.record_call(call(code="return 43"))

        found = _lookup(store)
        assert found.record is not None
        assert (found.record.code, found.record.code_checksum) == (
            "return 43",
            checksum("return 43"),
        )


class TestRegistryReads:
    """registry.json is read once while unchanged, and every reader gets its own copy."""

    def test_unchanged_registry_is_read_once(self, tmp_path: Path, monkeypatch: Any) -> None:
        """Three readers, one read of registry.json."""
        store = _store(tmp_path)
        store.register_tool("converter", {"purpose": "convert"})
        seen: list[Path] = []
        original = load_tools  # what the store imported, patched below

        def counting(root: Path) -> Any:
            seen.append(root)
            return original(root)

        monkeypatch.setattr(tools_module, "load_tools", counting)

        entries = [store.registry_entries() for _ in range(3)]

        assert [sorted(e) for e in entries] == [["converter"]] * 3
        assert seen == [store.root]

    def test_readers_get_copies(self, tmp_path: Path) -> None:
        """Changing what one reader got (an agent's memory) changes nothing for the next."""
        store = _store(tmp_path)
        store.register_tool("converter", {"purpose": "convert"})
        first = store.registry_entries()
        first["converter"]["methods"].append("stolen")
        first["converter"]["purpose"] = "changed"

        again = store.registry_entries()["converter"]

        assert (again["methods"], again["purpose"]) == ([], "convert")

    def test_a_registration_by_another_store_is_seen(self, tmp_path: Path) -> None:
        """Another writer's registration changes the file, so the next read sees it."""
        store = _store(tmp_path)
        store.register_tool("converter", {"purpose": "convert"})
        store.registry_entries()

        _store(tmp_path).register_tool("fetcher", {"purpose": "fetch"})

        assert sorted(store.registry_entries()) == ["converter", "fetcher"]
        assert identity_of(registry_path(store.root)) is not None


class TestIdentityCache:
    """The cache itself: identity match, bound, drop."""

    def test_entries_beyond_the_limit_drop_the_oldest(self, tmp_path: Path) -> None:
        """With a limit of two, the first of three files is read again."""
        cache: IdentityCache[str] = IdentityCache(limit=2)
        paths = [tmp_path / f"{name}.json" for name in "abc"]
        for path in paths:
            path.write_text("{}")
            cache.put(path, identity_of(path), path.name)

        assert [cache.get(path) for path in paths] == [None, "b.json", "c.json"]

    def test_no_identity_caches_nothing_and_drop_forgets(self, tmp_path: Path) -> None:
        """put(None) and drop() both leave the path uncached."""
        cache: IdentityCache[str] = IdentityCache()
        path = tmp_path / "a.json"
        path.write_text("{}")
        cache.put(path, None, "a")
        missing = cache.get(path)
        cache.put(path, identity_of(path), "a")
        cached = cache.get(path)
        cache.drop(path)

        assert (missing, cached, cache.get(path)) == (None, "a", None)


class _Clock:
    """Monotonic seconds that move only when a spec steps them."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the cache stats, in order."""
    seen: list[str] = []

    def counting(path: Path | str) -> Any:
        seen.append(os.fspath(path))
        return identity_of(path)

    monkeypatch.setattr(cache_module, "identity_of", counting)
    return seen


def _replace(path: Path, text: str) -> None:
    """Another process's write: a new file renamed over ``path`` (no count of this process's)."""
    temp = path.with_name(path.name + ".other")
    temp.write_text(text)
    os.replace(temp, path)


class TestRecheckWindow:
    """ADR 0138: a stat that found the file unchanged vouches for it for ``recheck_seconds``;
    any store change this process makes ends that at once."""

    def _cached(self, tmp_path: Path, clock: _Clock) -> tuple[IdentityCache[str], Path]:
        cache: IdentityCache[str] = IdentityCache(recheck_seconds=0.05, clock=clock)
        path = tmp_path / "a.json"
        path.write_text("{}")
        cache.put(path, identity_of(path), "old")
        return cache, path

    def test_gets_within_the_window_take_no_stat(self, tmp_path: Path, stats: list[str]) -> None:
        """The first get after the read stats; the next two, 10 and 40 ms later, do not; 60 ms
        after that stat the next one does."""
        clock = _Clock()
        cache, path = self._cached(tmp_path, clock)
        values = []
        for step in (0.0, 0.01, 0.03, 0.02):
            clock.now += step
            values.append(cache.get(path))

        assert (values, stats) == (["old"] * 4, [str(path)] * 2)

    def test_another_processs_change_is_seen_once_the_window_has_passed(
        self, tmp_path: Path
    ) -> None:
        """A file renamed in by someone else: the cached value answers within the window, and
        the first get after it finds the new identity and drops the entry."""
        clock = _Clock()
        cache, path = self._cached(tmp_path, clock)
        first = cache.get(path)

        _replace(path, '{"changed": true}')
        clock.now += 0.04
        within = cache.get(path)
        clock.now += 0.02
        after = cache.get(path)

        assert (first, within, after) == ("old", "old", None)

    def test_this_processs_own_change_ends_the_window(
        self, tmp_path: Path, stats: list[str]
    ) -> None:
        """A store write of this process to any file (here another one) makes the next get
        stat again, with no time passed; so does a removal counted with note_change."""
        clock = _Clock()
        cache, path = self._cached(tmp_path, clock)
        cache.get(path)

        write_json(tmp_path / "other.json", {"schema_version": 1}, root=tmp_path, durable=False)
        after_write = cache.get(path)
        note_change()
        after_removal = cache.get(path)
        unchanged = cache.get(path)

        assert (after_write, after_removal, unchanged, len(stats)) == ("old", "old", "old", 3)

    def test_a_quarantine_by_this_process_ends_the_window(self, tmp_path: Path) -> None:
        """The cached file moved aside as damaged: the next get finds no file, with no time
        passed."""
        clock = _Clock()
        cache, path = self._cached(tmp_path, clock)
        cache.get(path)

        moved = quarantine(path)

        assert (moved is not None, cache.get(path)) == (True, None)

    def test_without_a_window_every_get_stats(self, tmp_path: Path, stats: list[str]) -> None:
        """The default (registries, profiles, patterns): three gets, three stats."""
        cache: IdentityCache[str] = IdentityCache()
        path = tmp_path / "a.json"
        path.write_text("{}")
        cache.put(path, identity_of(path), "a")

        assert ([cache.get(path) for _ in range(3)], len(stats)) == (["a"] * 3, 3)

    def test_the_artifact_cache_rechecks_every_50_ms(self) -> None:
        """The window persisted calls use."""
        assert (lookup_module.ARTIFACT_RECHECK_SECONDS, lookup_module.ARTIFACTS._recheck) == (
            0.05,
            0.05,
        )

    def test_forget_in_this_process_is_seen_at_once(self, tmp_path: Path) -> None:
        """`recurgent tools forget` run in this process between two lookups of a warm entry
        removes only the artifact (no namespace file exists): the next lookup misses."""
        store = _store(tmp_path)
        store.record_call(call())
        warm = [_lookup(store).reason for _ in range(3)]

        code = tools_main(
            ["forget", "calculator", "answer", "--root", str(store.root)],
            out=io.StringIO(),
            err=io.StringIO(),
        )

        assert (warm, code, _lookup(store).reason) == (["hit"] * 3, 0, "missing")
