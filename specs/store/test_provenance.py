"""Provenance of stored programs (ADR 0077): the block records, and the rules of who may run and
who may replace a program, as pure functions and through the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recurgent._store import Store
from recurgent._store._artifacts import ArtifactRecord, parse_record, reuse_verdict
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path
from recurgent._store._provenance import (
    Provenance,
    Reader,
    is_double_written,
    provenance_verdict,
    write_refusal,
)
from specs.store.support import call, frozen, host_lookup

DOUBLE = Provenance(provider_kind="test_double:ScriptedProvider", double_fingerprint="sha256:a")
OTHER_SCRIPT = Provenance(
    provider_kind="test_double:ScriptedProvider", double_fingerprint="sha256:b"
)
MODEL = Provenance(provider_kind="openai", model="gpt-4.1-mini-2025-04-14", prompt_version="p1")
LEGACY = Provenance(provider_kind="unknown")
REAL = Reader()
SAME_DOUBLE = Reader(test_double=True, fingerprint="sha256:a")
NOW = "2026-12-01T12:00:00.123Z"


class TestVerdict:
    @pytest.mark.parametrize(
        ("provenance", "reader", "verdict"),
        [
            (MODEL, REAL, None),
            (None, REAL, None),
            (LEGACY, REAL, None),
            (DOUBLE, REAL, "test_double_written"),
            (DOUBLE, SAME_DOUBLE, None),
            (OTHER_SCRIPT, SAME_DOUBLE, "script_changed"),
            (DOUBLE, Reader(test_double=True, fingerprint=None), "script_changed"),
            (MODEL, SAME_DOUBLE, "model_written"),
            (None, SAME_DOUBLE, "model_written"),
            (LEGACY, SAME_DOUBLE, "model_written"),
        ],
    )
    def test_who_runs_what(
        self, provenance: Provenance | None, reader: Reader, verdict: str | None
    ) -> None:
        """A real provider's agent runs models' and unknown programs, never a double's; a
        double runs only a double's program of its own script."""
        assert provenance_verdict(provenance, reader) == verdict

    def test_double_written_is_by_kind(self) -> None:
        """Only the ``test_double:`` kind is a double's."""
        assert [is_double_written(p) for p in (DOUBLE, MODEL, LEGACY, None)] == [
            True,
            False,
            False,
            False,
        ]


class TestWriteRefusal:
    @pytest.mark.parametrize(
        ("stored", "has_code", "incoming", "refusal"),
        [
            (MODEL, True, DOUBLE, "model_written"),
            (None, True, DOUBLE, "model_written"),
            (MODEL, False, DOUBLE, None),
            (DOUBLE, True, OTHER_SCRIPT, None),
            (DOUBLE, True, MODEL, None),
            (MODEL, True, MODEL, None),
        ],
    )
    def test_a_double_never_replaces_a_models_program(
        self, stored: Provenance | None, has_code: bool, incoming: Provenance, refusal: str | None
    ) -> None:
        """A double's program may replace a double's or fill an empty record; a model's may
        replace anything."""
        assert write_refusal(stored, has_code, incoming) == refusal


class TestRecords:
    def test_apply_call_records_the_provenance_in_the_record_and_history(self) -> None:
        """A generation's block lands at the top and in the new history entry, and the top-level
        model is the one that wrote the code."""
        record = apply_call(None, call(provenance=MODEL, model=MODEL.model), now=NOW)

        assert record.provenance == MODEL
        assert record.history[0].provenance == MODEL
        assert record.model == "gpt-4.1-mini-2025-04-14"
        assert record.to_json()["provenance"] == {
            "provider_kind": "openai",
            "model": "gpt-4.1-mini-2025-04-14",
            "prompt_version": "p1",
            "runtime_version": None,
            "double_fingerprint": None,
        }

    def test_a_persisted_run_keeps_the_provenance_of_the_code(self) -> None:
        """A later run of the same code (whoever runs it) does not change who wrote it."""
        record = apply_call(None, call(provenance=MODEL, model=MODEL.model), now=NOW)

        after = apply_call(record, call(provenance=LEGACY, source="persisted"), now=NOW)

        assert after.provenance == MODEL

    def test_a_legacy_file_without_the_block_loads(self) -> None:
        """An artifact written before provenance existed parses, with unknown provenance."""
        data = apply_call(None, call(), now=NOW).to_json()
        del data["provenance"]
        for entry in data["history"]:
            del entry["provenance"]

        record = parse_record(data)

        assert record is not None
        assert (record.provenance, record.history[0].provenance) == (None, None)

    def test_unknown_keys_in_the_block_round_trip(self) -> None:
        """A newer runtime's extra provenance fields are kept."""
        data = apply_call(None, call(provenance=MODEL), now=NOW).to_json()
        data["provenance"]["endpoint"] = "https://api.example"

        record = ArtifactRecord.model_validate(data)

        assert record.to_json()["provenance"]["endpoint"] == "https://api.example"

    def test_reuse_verdict_checks_provenance_before_the_author(self) -> None:
        """A double's record read by a real provider's host call: the provenance is the reason."""
        record = apply_call(None, call(provenance=DOUBLE, author="program"), now=NOW)

        assert (
            reuse_verdict(
                record, contract_fingerprint="none", runtime_version="0.1.0", host_call=True
            )
            == "test_double_written"
        )
        assert (
            reuse_verdict(
                record,
                contract_fingerprint="none",
                runtime_version="0.1.0",
                host_call=False,
                reader=SAME_DOUBLE,
            )
            is None
        )


class TestStore:
    def test_lookup_judges_for_the_reader(self, tmp_path: Path) -> None:
        """The same stored double's program: a hit for its double, refused for a real agent."""
        store = Store(tmp_path, clock=frozen)
        assert store.record_call(call(provenance=DOUBLE)).written

        def lookup(reader: Reader | None) -> str:
            return host_lookup(store, reader=reader).reason

        assert [lookup(None), lookup(SAME_DOUBLE), lookup(Reader(True, "sha256:z"))] == [
            "test_double_written",
            "hit",
            "script_changed",
        ]

    def test_a_double_cannot_overwrite_a_models_program(self, tmp_path: Path) -> None:
        """``model_written``: the model's program and its counts stay as they were."""
        store = Store(tmp_path, clock=frozen)
        assert store.record_call(call("return 1", provenance=MODEL)).written
        path = artifact_path(tmp_path, "calculator", "answer")
        before = path.read_bytes()

        result = store.record_call(call("return 2", provenance=DOUBLE))

        assert (result.written, result.reason) == (False, "model_written")
        assert path.read_bytes() == before

    def test_a_model_replaces_a_doubles_program(self, tmp_path: Path) -> None:
        """A real provider's generation takes the key over from a test stub."""
        store = Store(tmp_path, clock=frozen)
        store.record_call(call("return 1", provenance=DOUBLE))

        assert store.record_call(call("return 2", provenance=MODEL)).written
        stored = json.loads(artifact_path(tmp_path, "calculator", "answer").read_text("utf-8"))
        assert (stored["code"], stored["provenance"]["provider_kind"]) == ("return 2", "openai")
