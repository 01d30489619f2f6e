"""Reads cached by file identity: a lookup reads its file only when the file changed (ADR 0054)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import recurgent._store as store_module
from recurgent._store import Store, checksum
from recurgent._store._cache import IdentityCache
from recurgent._store._files import Loaded, identity_of, read_json
from recurgent._store._paths import artifact_path, registry_path
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

    monkeypatch.setattr(store_module, "read_json", counting)
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
        original = store_module.load_tools

        def counting(root: Path) -> Any:
            seen.append(root)
            return original(root)

        monkeypatch.setattr(store_module, "load_tools", counting)

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
