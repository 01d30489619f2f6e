"""registry.json: merge rules, unknown keys, damage and concurrent writers (ADR 0036)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from recurgent._store._registry import (
    load_tools,
    merge_known_tools,
    merge_registration,
    merge_usage,
    register,
    remove_tools,
    touch,
)

NOW = "2026-12-01T12:00:00.000Z"
LATER = "2026-12-02T12:00:00.000Z"


class TestMergeRegistration:
    """merge_registration follows persistence.md 3.2, with the purpose quirk fixed."""

    def test_first_registration(self) -> None:
        """A new entry has the contract summary, empty lists, zero usage and timestamps."""
        entry = merge_registration(
            None,
            {"purpose": "fetch", "deliverable": {"type": "object"}, "intent_signature": "ask: x"},
            now=NOW,
        )
        assert entry == {
            "purpose": "fetch",
            "deliverable": {"type": "object"},
            "methods": [],
            "aliases": [],
            "intent_signatures": ["ask: x"],
            "intent_signature": "ask: x",
            "created_at": NOW,
            "last_used_at": NOW,
            "registration_count": 1,
            "usage_count": 0,
            "success_count": 0,
            "failure_count": 0,
        }

    def test_without_a_contract_the_purpose_is_unavailable(self) -> None:
        """No purpose ever recorded gives the placeholder."""
        assert merge_registration(None, None, now=NOW)["purpose"] == "purpose unavailable"

    def test_a_bare_reregistration_keeps_the_recorded_purpose(self) -> None:
        """delegate('x') without a purpose does not clobber a good one (Ruby did)."""
        first = merge_registration(None, {"purpose": "fetch pages"}, now=NOW)
        assert merge_registration(first, None, now=LATER)["purpose"] == "fetch pages"
        assert merge_registration(first, {"purpose": "new"}, now=LATER)["purpose"] == "new"

    def test_refresh_keeps_counts_methods_created_at_and_unknown_keys(self) -> None:
        """Counts, methods, created_at and foreign keys survive; last_used_at moves."""
        first = merge_registration(None, {"purpose": "p"}, now=NOW)
        used = merge_usage(first, "fetch", True, now=NOW) | {"custom": 1}
        again = merge_registration(used, {"acceptance": ["a"]}, now=LATER)

        assert (again["methods"], again["usage_count"], again["success_count"]) == (["fetch"], 1, 1)
        assert (again["created_at"], again["last_used_at"], again["custom"]) == (NOW, LATER, 1)
        assert (again["registration_count"], again["acceptance"]) == (2, ["a"])

    def test_intent_signatures_are_a_union_of_the_last_six(self) -> None:
        """Signatures are kept unique, the repeated one moves last, at most six remain."""
        entry = None
        for number in range(8):
            entry = merge_registration(entry, {"intent_signature": f"s{number}"}, now=NOW)
        entry = merge_registration(entry, {"intent_signature": "s3"}, now=NOW)

        assert entry["intent_signatures"] == ["s2", "s4", "s5", "s6", "s7", "s3"]
        assert entry["intent_signature"] == "s3"


class TestMergeUsage:
    """merge_usage counts one served call."""

    def test_success_adds_the_method_failure_does_not(self) -> None:
        """OK counts a success and records the method; a failure only counts."""
        entry = merge_usage({"methods": ["a"]}, "b", True, now=NOW)
        entry = merge_usage(entry, "c", False, now=LATER)

        assert (entry["methods"], entry["usage_count"]) == (["a", "b"], 2)
        assert (entry["success_count"], entry["failure_count"], entry["last_used_at"]) == (
            1,
            1,
            LATER,
        )

    def test_malformed_counts_restart_from_zero(self) -> None:
        """A count that is not a non-negative int is treated as 0."""
        entry = merge_usage({"usage_count": "x", "success_count": True}, "m", True, now=NOW)
        assert (entry["usage_count"], entry["success_count"]) == (1, 1)


class TestFile:
    """The registry file operations."""

    def test_register_then_load(self, tmp_path: Path) -> None:
        """register writes schema_version 1 and the entry; load_tools reads it back."""
        register(tmp_path, "web_fetcher", {"purpose": "fetch"}, now=NOW)

        data = json.loads((tmp_path / "registry.json").read_text())
        assert (data["schema_version"], list(data["tools"])) == (1, ["web_fetcher"])
        tools, loaded = load_tools(tmp_path)
        assert (loaded.state, tools["web_fetcher"]["purpose"]) == ("ok", "fetch")

    def test_unknown_top_level_keys_are_kept(self, tmp_path: Path) -> None:
        """archived_tools written by maintenance survives a runtime write."""
        path = tmp_path / "registry.json"
        path.write_text(json.dumps({"schema_version": 1, "tools": {}, "archived_tools": {"x": {}}}))

        register(tmp_path, "t", None, now=NOW)

        data = json.loads(path.read_text())
        assert list(data) == ["schema_version", "tools", "archived_tools"]
        assert data["archived_tools"] == {"x": {}}

    def test_touch_ignores_unregistered_tools(self, tmp_path: Path) -> None:
        """A top-level agent's calls never create a registry entry."""
        updated = touch(tmp_path, "calculator", "add", True, now=NOW)

        assert (updated.written, updated.skipped) == (False, "no_change")
        assert not (tmp_path / "registry.json").exists()

    def test_corrupt_registry_is_quarantined_and_reads_empty(self, tmp_path: Path) -> None:
        """Invalid JSON is moved aside and reads as no tools; the next write starts fresh."""
        (tmp_path / "registry.json").write_text("{nope")

        tools, loaded = load_tools(tmp_path)
        assert (tools, loaded.state) == ({}, "corrupt")
        assert loaded.quarantined_to is not None and loaded.quarantined_to.read_text() == "{nope"
        register(tmp_path, "t", None, now=NOW)
        assert list(load_tools(tmp_path)[0]) == ["t"]

    def test_tools_that_are_not_a_mapping_are_quarantined_on_write(self, tmp_path: Path) -> None:
        """A registry whose tools is a list is kept aside, then rewritten."""
        path = tmp_path / "registry.json"
        path.write_text('{"schema_version":1,"tools":[1]}')

        register(tmp_path, "t", None, now=NOW)

        assert list(json.loads(path.read_text())["tools"]) == ["t"]
        assert [p.read_text() for p in tmp_path.glob("registry.json.corrupt-*")] == [
            '{"schema_version":1,"tools":[1]}'
        ]

    def test_unsupported_schema_is_left_alone(self, tmp_path: Path) -> None:
        """A schema_version 2 registry reads as empty and is never overwritten."""
        path = tmp_path / "registry.json"
        path.write_text('{"schema_version":2,"tools":{"x":{}}}')

        assert load_tools(tmp_path)[0] == {}
        assert register(tmp_path, "t", None, now=NOW).written is False
        assert path.read_text() == '{"schema_version":2,"tools":{"x":{}}}'

    def test_remove_tools(self, tmp_path: Path) -> None:
        """remove_tools drops named entries and keeps the rest."""
        for name in ("a", "b"):
            register(tmp_path, name, None, now=NOW)

        assert remove_tools(tmp_path, ["a", "zzz"]).written is True
        assert list(load_tools(tmp_path)[0]) == ["b"]
        assert remove_tools(tmp_path, ["zzz"]).written is False


def _count_uses(root: Path) -> None:
    for _ in range(50):
        touch(root, "shared", "run", True, now=NOW)


@pytest.mark.slow
def test_eight_processes_times_fifty_writes_lose_no_count(tmp_path: Path) -> None:
    """8 concurrent processes each counting 50 uses leave usage_count == 400."""
    register(tmp_path, "shared", {"purpose": "count"}, now=NOW)
    # fork: the children start with recurgent already imported, so they really overlap.
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_count_uses, args=(tmp_path,)) for _ in range(8)]
    for process in processes:
        process.start()
    for process in processes:
        process.join()

    entry = load_tools(tmp_path)[0]["shared"]
    assert [process.exitcode for process in processes] == [0] * 8
    assert (entry["usage_count"], entry["success_count"]) == (400, 400)
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


class TestMergeKnownTools:
    """Hydration: persisted tools merged with the agent's in-memory registry."""

    def test_memory_scalars_win_and_lists_are_unions_persisted_first(self) -> None:
        """Purpose from memory, methods and signatures merged, the last signature current."""
        persisted = {
            "web_fetcher": {
                "purpose": "old",
                "methods": ["fetch_url"],
                "intent_signatures": ["a"],
                "usage_count": 9,
            }
        }
        memory = {
            "web_fetcher": {"purpose": "new", "methods": ["fetch"], "intent_signatures": ["b"]}
        }

        merged = merge_known_tools(persisted, memory)

        assert merged == {
            "web_fetcher": {
                "purpose": "new",
                "methods": ["fetch_url", "fetch"],
                "intent_signatures": ["a", "b"],
                "intent_signature": "b",
                "usage_count": 9,
            }
        }

    def test_a_stale_memory_entry_keeps_persisted_methods(self) -> None:
        """Memory with no methods does not hide methods learnt by other processes."""
        merged = merge_known_tools({"t": {"methods": ["fetch_url"]}}, {"t": {"methods": []}})
        assert merged["t"]["methods"] == ["fetch_url"]

    def test_tools_on_one_side_only_are_kept(self) -> None:
        """Disk-only and memory-only tools both appear; the inputs are not changed."""
        persisted = {"disk": {"purpose": "d"}}
        memory: dict[str, object] = {"mem": {"purpose": "m"}, "odd": "not a mapping"}

        merged = merge_known_tools(persisted, memory)

        assert merged == {"disk": {"purpose": "d"}, "mem": {"purpose": "m"}, "odd": "not a mapping"}
        assert persisted == {"disk": {"purpose": "d"}}

    def test_no_memory(self) -> None:
        """A new agent (no registry in memory) sees the persisted registry as is."""
        assert merge_known_tools({"t": {"purpose": "p"}}, None) == {"t": {"purpose": "p"}}
