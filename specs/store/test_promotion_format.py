"""The lifecycle block and versions map read from disk are untrusted input (ADRs 0070, 0080):
typed and bounded; damage is set aside like any damaged record, never run or dropped."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recurgent._store import Store, checksum
from recurgent._store._paths import artifact_path
from specs.store.support import call, frozen, host_lookup

DIGEST = checksum("return 42")


def _stored(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> tuple[Store, Path]:
    """A store holding calculator.answer (three ok calls), its file then edited by ``edit``."""
    store = Store(tmp_path / "store", clock=frozen)
    store.record_call(call())
    store.record_call(
        call(source="persisted", result="failure", error_type="x", failure_class="adaptive")
    )
    store.record_call(call())
    path = artifact_path(store.root, "calculator", "answer")
    data = json.loads(path.read_text("utf-8"))
    edit(data)
    path.write_text(json.dumps(data), "utf-8")
    return store, path


def _set(*path: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting the value (the last argument) at the keys before it."""
    *keys, value = path

    def edit(data: dict[str, Any]) -> None:
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


class TestDamageIsSetAside:
    """A lifecycle or versions field of the wrong kind makes the record invalid: quarantined,
    never run, and the next write starts a fresh file."""

    @pytest.mark.parametrize(
        "edit",
        [
            _set("lifecycle", "versions", DIGEST, "lifecycle_state", "trusted"),
            _set("lifecycle", "incumbent_durable_checksum", "../../etc/passwd"),
            _set("lifecycle", "shadow_ledger", "evaluations", "all good"),
            _set("lifecycle", "manual_overrides", [{"at": "now"}]),
            _set("lifecycle", "versions", {checksum("return 1"): {"artifact_checksum": DIGEST}}),
            _set("versions", DIGEST, "code", "return 'planted'"),
            _set("versions", "sha256:" + "0" * 64, {"code": "return 1"}),
            _set("scorecards", DIGEST, "state_key_consistency_ratio", 7.5),
            _set("scorecards", DIGEST, "wrong_boundary_count", -1),
        ],
        ids=[
            "unknown_state",
            "incumbent_not_a_checksum",
            "ledger_not_a_list",
            "override_without_fields",
            "entry_under_another_key",
            "kept_code_not_matching_its_checksum",
            "kept_code_under_a_made_up_checksum",
            "ratio_out_of_range",
            "negative_count",
        ],
    )
    def test_quarantined(self, tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
        """The damaged file is moved aside with its contents, and the call would generate."""
        store, path = _stored(tmp_path, edit)
        before = path.read_bytes()

        found = host_lookup(store, enforce=True)

        assert (found.reason, path.exists()) == ("invalid_record", False)
        assert found.quarantined_to is not None and found.quarantined_to.read_bytes() == before
        assert store.record_call(call()).written
        assert json.loads(path.read_text("utf-8"))["success_count"] == 1


class TestBounds:
    """Lists longer than their bound are read as their newest entries; text is cut."""

    def test_a_long_ledger_and_override_list_read_as_the_newest_two_hundred(
        self, tmp_path: Path
    ) -> None:
        """250 evaluations and 250 overrides on disk: the record is a hit, and 200 of each
        (the newest) are kept through the next write."""

        def grow(data: dict[str, Any]) -> None:
            lifecycle = data["lifecycle"]
            template = lifecycle["shadow_ledger"]["evaluations"][0]
            lifecycle["shadow_ledger"]["evaluations"] = [
                {**template, "at": f"e{n:03d}"} for n in range(250)
            ]
            lifecycle["manual_overrides"] = [
                {"at": f"o{n:03d}", "actor": "a", "artifact_checksum": DIGEST, "state": "durable"}
                for n in range(250)
            ]

        store, path = _stored(tmp_path, grow)
        found = host_lookup(store, enforce=True)
        assert (
            found.reason == "hit"
            and found.record is not None
            and found.record.lifecycle is not None
        )
        ledger = found.record.lifecycle.shadow_ledger.evaluations
        assert (len(ledger), ledger[0].at) == (200, "e050")
        assert found.record.lifecycle.manual_overrides[0].at == "o050"

        store.record_call(call(result="failure", error_type="x", failure_class="adaptive"))
        data = json.loads(path.read_text("utf-8"))
        assert len(data["lifecycle"]["shadow_ledger"]["evaluations"]) == 200
        assert len(data["lifecycle"]["manual_overrides"]) == 200

    def test_free_text_and_rationale_are_cut(self, tmp_path: Path) -> None:
        """An override's actor and reason are cut at 400 characters; a rationale keeps its
        first 64 keys."""

        def plant(data: dict[str, Any]) -> None:
            lifecycle = data["lifecycle"]
            lifecycle["manual_overrides"] = [
                {
                    "at": "t",
                    "actor": "m" * 5000,
                    "reason": "r" * 5000,
                    "artifact_checksum": DIGEST,
                    "state": "durable",
                }
            ]
            lifecycle["shadow_ledger"]["evaluations"][0]["rationale"] = {
                f"k{n}": n for n in range(100)
            }

        store, _ = _stored(tmp_path, plant)
        found = host_lookup(store, enforce=True)
        assert found.record is not None and found.record.lifecycle is not None
        [override] = found.record.lifecycle.manual_overrides
        assert (len(override.actor), len(override.reason or "")) == (400, 400)
        rationale = found.record.lifecycle.shadow_ledger.evaluations[0].rationale
        assert list(rationale) == [f"k{n}" for n in range(64)]

    def test_a_hand_written_version_in_the_original_shape_is_read(self, tmp_path: Path) -> None:
        """A version with only code, dependencies and timestamps (the original's shape) is
        accepted and runs under enforcement for a program's call; its author is unknown, never
        the current code's, so the host's call skips it for the host's own code (ADR 0074; red
        team R10: it once borrowed the record's ``host``)."""
        old = "return 1"

        def hand_written(data: dict[str, Any]) -> None:
            data["versions"][checksum(old)] = {
                "code": old,
                "dependencies": [],
                "created_at": "2026-11-01T00:00:00.000Z",
                "last_used_at": "2026-11-01T00:00:00.000Z",
            }
            data["lifecycle"]["versions"][checksum(old)] = {
                "artifact_checksum": checksum(old),
                "lifecycle_state": "durable",
            }
            data["lifecycle"]["incumbent_durable_checksum"] = checksum(old)

        store, _ = _stored(tmp_path, hand_written)
        found = host_lookup(store, enforce=True)
        programs = store.lookup(
            "calculator",
            "answer",
            contract_fingerprint="none",
            runtime_version="0.1.0",
            host_call=False,
            enforce=True,
        )
        assert (found.reason, found.record.code if found.record else None) == ("hit", "return 42")
        assert (programs.reason, programs.record.code if programs.record else None) == ("hit", old)
        assert programs.record is not None and programs.record.author is None
