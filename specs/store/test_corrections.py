"""User corrections against a version's scorecard (ADR 0108): counted, judged as failures by
the promotion policy, evaluated in the ledger; nothing written for a version the artifact does
not know."""

from __future__ import annotations

import json
from pathlib import Path

from recurgent._store import Store, promotion_mode
from recurgent._store._artifacts import Scorecard, checksum
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path
from recurgent._store._promotion import metrics
from specs.store.support import call, frozen

A = "return 42"
DA = checksum(A)
SHADOW = promotion_mode(shadow=True, enforced=False)
ENFORCED = promotion_mode(shadow=True, enforced=True)


def _store_with_calls(root: Path, count: int, **fields: object) -> Store:
    store = Store(root, clock=frozen)
    for index in range(count):
        source = "generated" if index == 0 else "repaired"
        assert store.record_call(call(A, source=source, **fields)).written
    return store


def _record(root: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(artifact_path(root, "calculator", "answer").read_text())
    return data


class TestMetrics:
    """A corrected answer is judged a failure."""

    def test_corrections_move_successes_to_failures(self) -> None:
        """Two corrections of five answers: 3 successes, 2 failures; never below zero."""
        card = Scorecard(artifact_checksum=DA, calls=5, successes=5, user_correction_count=2)
        over = Scorecard(artifact_checksum=DA, calls=1, successes=1, user_correction_count=4)

        assert [
            (m["successes"], m["failures"], m["failure_rate"], m["user_correction_count"])
            for m in (metrics(card), metrics(over))
        ] == [(3, 2, 0.4, 2), (0, 1, 1.0, 4)]


class TestRecordCorrection:
    """Store.record_correction."""

    def test_counted_and_evaluated(self, tmp_path: Path) -> None:
        """The scorecard counts the correction; the ledger's newest entry evaluates the version
        with run ``corrected``, covering no new call."""
        store = _store_with_calls(tmp_path, 1)

        result = store.record_correction("calculator", "answer", DA, promotion=SHADOW)

        assert (result.written, result.decision is not None) == (True, True)
        record = _record(tmp_path)
        card = record["scorecards"][DA]  # type: ignore[index]
        assert (card["calls"], card["user_correction_count"]) == (1, 1)
        last = record["lifecycle"]["shadow_ledger"]["evaluations"][-1]  # type: ignore[index]
        assert (last["rationale"]["run"], last["calls_covered"]) == ("corrected", 0)
        assert (last["rationale"]["successes"], last["rationale"]["failures"]) == (0, 1)

    def test_corrections_degrade_a_version_by_the_regression_rule(self, tmp_path: Path) -> None:
        """Three answers, two corrected: failure rate 0.67 > 0.6 with failures outnumbering
        successes: degraded."""
        store = _store_with_calls(tmp_path, 3)

        store.record_correction("calculator", "answer", DA, promotion=SHADOW)
        result = store.record_correction("calculator", "answer", DA, promotion=SHADOW)

        assert result.decision is not None
        assert (result.decision.state, result.decision.decision) == ("degraded", "degrade")

    def test_under_enforcement_one_correction_degrades_probation(self, tmp_path: Path) -> None:
        """As a failure on probation does under enforcement."""
        store = _store_with_calls(tmp_path, 2)

        result = store.record_correction("calculator", "answer", DA, promotion=ENFORCED)

        assert result.decision is not None
        assert result.decision.state == "degraded"

    def test_shadow_mode_off_counts_without_evaluating(self, tmp_path: Path) -> None:
        """The count is kept; no ledger entry is added."""
        store = _store_with_calls(tmp_path, 1)
        before = len(_record(tmp_path)["lifecycle"]["shadow_ledger"]["evaluations"])  # type: ignore[index]

        result = store.record_correction(
            "calculator", "answer", DA, promotion=promotion_mode(shadow=False, enforced=False)
        )

        record = _record(tmp_path)
        assert (result.written, result.decision) == (True, None)
        assert record["scorecards"][DA]["user_correction_count"] == 1  # type: ignore[index]
        assert len(record["lifecycle"]["shadow_ledger"]["evaluations"]) == before  # type: ignore[index]

    def test_nothing_is_written_for_an_unknown_version_or_record(self, tmp_path: Path) -> None:
        """Another checksum: unknown_version, file unchanged; no artifact: no_record."""
        store = _store_with_calls(tmp_path, 1)
        path = artifact_path(tmp_path, "calculator", "answer")
        before = path.read_bytes()

        unknown = store.record_correction("calculator", "answer", checksum("x"), promotion=SHADOW)
        missing = store.record_correction("calculator", "other", DA, promotion=SHADOW)

        assert (unknown.written, unknown.reason) == (False, "unknown_version")
        assert (missing.written, missing.reason) == (False, "no_record")
        assert path.read_bytes() == before

    def test_another_runtimes_artifact_is_left_alone(self, tmp_path: Path) -> None:
        """A record without this port's runtime tag is not this store's to change."""
        record = apply_call(None, call(A), now="2026-12-01T12:00:00.000Z").to_json()
        record.pop("runtime")
        path = artifact_path(tmp_path, "calculator", "answer")
        Store(tmp_path, clock=frozen).record_call(call(A))
        path.write_text(json.dumps(record))

        result = Store(tmp_path).record_correction("calculator", "answer", DA, promotion=SHADOW)

        assert (result.written, result.reason) == (False, "no_record")
        assert json.loads(path.read_text()) == record
