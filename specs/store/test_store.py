"""The Store facade: lookup before any provider call, record after every call (ADR 0036)."""

from __future__ import annotations

import json
import multiprocessing
import stat
from pathlib import Path
from typing import Any

import pytest

from recurgent._store import Store, checksum
from recurgent._store._paths import artifact_path
from specs.store.support import call, frozen


def _store(tmp_path: Path) -> Store:
    return Store(tmp_path / "store", clock=frozen)


def _path(store: Store, method: str = "answer") -> Path:
    return artifact_path(store.root, "calculator", method)


def test_a_recorded_program_is_a_hit(tmp_path: Path) -> None:
    """After one successful generated call, lookup returns the record as reusable."""
    store = _store(tmp_path)
    assert store.record_call(call()).written

    found = store.lookup(
        "calculator", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
    )

    assert (found.reason, found.reusable) == ("hit", True)
    assert found.record is not None and found.record.code == "return 42"
    assert found.path == tmp_path / "store/artifacts/calculator-d2d4a592/answer-0db52f40.json"


def test_the_file_is_private_and_timestamped(tmp_path: Path) -> None:
    """The artifact is 0600 and carries millisecond UTC timestamps."""
    store = _store(tmp_path)
    store.record_call(call())

    data = json.loads(_path(store).read_text())
    assert stat.S_IMODE(_path(store).stat().st_mode) == 0o600
    assert (data["created_at"], data["last_used_at"]) == ("2026-12-01T12:00:00.123Z",) * 2
    assert data["code_checksum"] == checksum("return 42")


def test_missing(tmp_path: Path) -> None:
    """No file is a 'missing' miss."""
    found = _store(tmp_path).lookup(
        "calculator", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
    )
    assert (found.reason, found.record) == ("missing", None)


def test_contract_mismatch_is_a_miss_with_the_record(tmp_path: Path) -> None:
    """Another contract fingerprint is not reused; the record comes back for diagnosis."""
    store = _store(tmp_path)
    store.record_call(call())

    found = store.lookup(
        "calculator",
        "answer",
        contract_fingerprint="sha256:b",
        runtime_version="0.1.0",
        host_call=True,
    )
    assert (found.reason, found.reusable, found.record is not None) == (
        "contract_mismatch",
        False,
        True,
    )


def test_tampered_code_is_quarantined_not_run(tmp_path: Path) -> None:
    """Code edited without its checksum is moved aside and reported as checksum_mismatch."""
    store = _store(tmp_path)
    store.record_call(call())
    path = _path(store)
    data = json.loads(path.read_text())
    data["code"] = "return open('/etc/passwd').read()"
    path.write_text(json.dumps(data))

    found = store.lookup(
        "calculator", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
    )

    assert (found.reason, found.reusable) == ("checksum_mismatch", False)
    assert found.quarantined_to == path.with_name(path.name + ".corrupt-20261201T120000")
    assert not path.exists()


def test_corrupt_file_is_quarantined_and_the_next_write_is_fresh(tmp_path: Path) -> None:
    """Invalid JSON is moved aside, the call misses, and recording writes a valid record."""
    store = _store(tmp_path)
    path = _path(store)
    path.parent.mkdir(parents=True)
    path.write_text("{broken")

    found = store.lookup(
        "calculator", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
    )
    assert (found.reason, found.quarantined_to is not None) == ("corrupt", True)
    assert store.record_call(call()).written
    assert json.loads(path.read_text())["success_count"] == 1


def test_a_record_with_wrong_field_types_is_quarantined(tmp_path: Path) -> None:
    """A JSON object whose fields do not fit the schema is damage, not a program."""
    store = _store(tmp_path)
    path = _path(store)
    path.parent.mkdir(parents=True)
    path.write_text(
        '{"runtime":"python","role":"calculator","method_name":"answer","success_count":"many"}'
    )

    found = store.lookup(
        "calculator", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
    )
    assert (found.reason, found.quarantined_to is not None, path.exists()) == (
        "invalid_record",
        True,
        False,
    )


def test_unsupported_schema_is_neither_reused_nor_overwritten(tmp_path: Path) -> None:
    """A schema_version 2 artifact misses and survives the call's write untouched."""
    store = _store(tmp_path)
    path = _path(store)
    path.parent.mkdir(parents=True)
    text = '{"schema_version":2,"runtime":"python","code":"return 1"}'
    path.write_text(text)

    found = store.lookup(
        "calculator", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
    )
    written = store.record_call(call())

    assert found.reason == "unsupported_schema"
    assert (written.written, written.reason) == (False, "unsupported: schema_version 2 is not 1")
    assert path.read_text() == text


def test_another_runtimes_artifact_is_never_read_or_overwritten(tmp_path: Path) -> None:
    """A Ruby artifact at the same path (no runtime: python) is left alone."""
    store = _store(tmp_path)
    path = _path(store)
    path.parent.mkdir(parents=True)
    text = json.dumps({"schema_version": 1, "code": "result = 42", "cacheable": True})
    path.write_text(text)

    found = store.lookup(
        "calculator", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
    )
    written = store.record_call(call())

    assert (found.reason, written.written, written.reason) == (
        "foreign_runtime",
        False,
        "foreign_runtime",
    )
    assert path.read_text() == text


def test_an_unwritable_store_reports_instead_of_raising(tmp_path: Path) -> None:
    """A root that is a file makes writes fail with a reason, never an exception."""
    (tmp_path / "store").write_text("not a directory")
    written = _store(tmp_path).record_call(call())

    assert written.written is False
    assert written.reason is not None and written.reason.startswith("error: ")


def test_registry_round_trip(tmp_path: Path) -> None:
    """register_tool, touch_tool and registry_entries work together."""
    store = _store(tmp_path)
    assert store.register_tool("web_fetcher", {"purpose": "fetch"}).written
    assert store.touch_tool("web_fetcher", "fetch", ok=True).reason == "deferred"
    store.flush()

    entry = store.registry_entries()["web_fetcher"]
    assert (entry["purpose"], entry["methods"], entry["usage_count"]) == ("fetch", ["fetch"], 1)
    assert entry["last_used_at"] == "2026-12-01T12:00:00.123Z"


def test_known_tools_merges_disk_and_memory(tmp_path: Path) -> None:
    """A new agent's registry is the persisted one merged with what it holds in memory."""
    store = _store(tmp_path)
    store.register_tool("rss_parser", {"purpose": "parse feeds"})
    store.touch_tool("rss_parser", "parse", ok=True)
    store.flush()

    known = store.known_tools({"web_fetcher": {"purpose": "fetch"}})

    assert sorted(known) == ["rss_parser", "web_fetcher"]
    assert (known["rss_parser"]["purpose"], known["rss_parser"]["methods"]) == (
        "parse feeds",
        ["parse"],
    )


def test_touching_an_unregistered_tool_writes_nothing(tmp_path: Path) -> None:
    """Top-level roles never enter the registry."""
    result = _store(tmp_path).touch_tool("calculator", "add", ok=True)

    assert (result.written, result.reason) == (False, "not_registered")
    assert _store(tmp_path).registry_entries() == {}


def test_repr_names_the_root(tmp_path: Path) -> None:
    """repr shows the root (handy in debug output)."""
    assert repr(_store(tmp_path)) == f"Store({str(tmp_path / 'store')!r})"


def _record_fifty(root: Path) -> None:
    store = Store(root, clock=frozen)
    for _ in range(50):
        store.record_call(call(source="persisted"))
        # A multiprocessing child ends with os._exit (no atexit): write each count as it comes,
        # so the two processes really contend for the file.
        store.flush()


@pytest.mark.slow
def test_concurrent_writers_of_one_artifact_keep_every_count(tmp_path: Path) -> None:
    """Two processes x 50 calls on one artifact: valid JSON, 100 calls counted, no temp files."""
    root = tmp_path / "store"
    Store(root, clock=frozen).record_call(call())
    # fork: the children start with recurgent imported, so their writes really overlap.
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_record_fifty, args=(root,)) for _ in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()

    data = json.loads(artifact_path(root, "calculator", "answer").read_text())
    assert [process.exitcode for process in processes] == [0, 0]
    assert (data["success_count"], data["scorecards"][checksum("return 42")]["calls"]) == (101, 101)
    assert sorted(p.name for p in artifact_path(root, "calculator", "answer").parent.iterdir()) == [
        "answer-0db52f40.json",
        "answer-0db52f40.json.lock",
    ]


def _lookup_in_child(root: Path, queue: Any) -> None:
    found = Store(root).lookup(
        "calculator", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
    )
    queue.put((found.reason, found.record.code if found.record else None))


def test_a_second_process_finds_the_first_ones_program(tmp_path: Path) -> None:
    """A program recorded by this process is a hit in a fresh child process on the same root."""
    root = tmp_path / "store"
    Store(root, clock=frozen).record_call(call())
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_lookup_in_child, args=(root, queue))
    child.start()
    result = queue.get(timeout=60)
    child.join()

    assert (child.exitcode, result) == (0, ("hit", "return 42"))
