"""Counter deltas: folding waiting runs and uses equals one write per call (ADR 0055)."""

from __future__ import annotations

from typing import Any

from recurgent._store._artifacts import ArtifactRecord, checksum
from recurgent._store._batch import RunsDelta, UsesDelta, apply_runs, apply_uses, batchable
from recurgent._store._folding import apply_call
from recurgent._store._registry import merge_usage
from specs.store.support import call

STAMPS = [f"2026-12-01T12:00:{second:02d}.000Z" for second in range(60)]


def _runs(count: int) -> list[tuple[Any, str]]:
    """``count`` persisted runs with varied results, sessions, contract checks and durations."""
    runs = []
    for index in range(count):
        result = "domain_error" if index % 5 == 4 else "ok"
        runs.append(
            (
                call(
                    source="persisted",
                    result=result,
                    error_type="division_by_zero" if result == "domain_error" else None,
                    trace_id=f"trace-{index % 3}",
                    contract_passed=(True, False, None)[index % 3],
                    duration_ms=1.0 + index,
                    model=f"m{index}",
                ),
                STAMPS[index + 1],
            )
        )
    return runs


def _seeded() -> ArtifactRecord:
    return apply_call(None, call(), now=STAMPS[0])


class TestBatchable:
    """Which calls may wait."""

    def test_only_persisted_answers_wait(self) -> None:
        """A persisted ok or domain error waits; failures, generations and repairs do not."""
        assert [
            batchable(call(source="persisted")),
            batchable(call(source="persisted", result="domain_error")),
            batchable(call(source="persisted", result="failure")),
            batchable(call(source="generated")),
            batchable(call(source="repaired")),
        ] == [True, True, False, False, False]


class TestApplyRuns:
    """apply_runs equals folding each run with apply_call."""

    def test_twenty_five_runs_fold_like_twenty_five_writes(self) -> None:
        """Counts, scorecard, sessions, the 20-entry window and metadata all match exactly;
        the lifecycle ends in the same state, evaluated once for the batch instead of per run
        (ADR 0080)."""
        runs = _runs(25)
        seed = _seeded()
        one_by_one = seed.model_copy(deep=True)
        for run, now in runs:
            apply_call(one_by_one, run, now=now, in_place=True)
        delta = RunsDelta.start(runs[0][0], runs[0][1])
        for run, now in runs:
            delta.add(run, now)

        batched = apply_runs(seed.model_copy(deep=True), delta)

        batched_json, one_json = batched.to_json(), one_by_one.to_json()
        batched_ledger = batched_json.pop("lifecycle")
        one_ledger = one_json.pop("lifecycle")
        assert batched_json == one_json
        assert batched_ledger["versions"] == one_ledger["versions"]
        evaluations = batched_ledger["shadow_ledger"]["evaluations"]
        assert [(e["decision"], e["calls_covered"]) for e in evaluations] == [
            ("continue_probation", 1),
            ("continue_probation", 25),
        ]
        assert len(one_ledger["shadow_ledger"]["evaluations"]) == 26
        card = batched.scorecards[checksum("return 42")]
        assert (card.calls, card.successes, card.domain_errors, len(card.short_window)) == (
            26,
            26,
            5,
            20,
        )
        assert (card.contract_pass_count, card.contract_fail_count) == (9, 8)
        assert (batched.success_count, batched.model, batched.last_duration_ms) == (26, "m24", 25.0)

    def test_an_empty_delta_changes_nothing(self) -> None:
        """A delta with no runs leaves the record as it was."""
        record = _seeded()
        before = record.to_json()

        apply_runs(record, RunsDelta.start(call(source="persisted"), STAMPS[1]))

        assert record.to_json() == before

    def test_runs_of_replaced_code_count_but_never_bring_it_back(self) -> None:
        """Another process regenerated meanwhile: totals and the old scorecard count the runs,
        the new code, its metadata and its scorecard stay."""
        record = _seeded()
        apply_call(record, call(code="return 43", model="new"), now=STAMPS[5], in_place=True)
        delta = RunsDelta.start(call(source="persisted"), STAMPS[6])
        delta.add(call(source="persisted", model="old"), STAMPS[6])
        delta.add(call(source="persisted", model="old"), STAMPS[7])

        apply_runs(record, delta)

        assert (record.code, record.model, record.last_program_source) == (
            "return 43",
            "new",
            "generated",
        )
        assert record.success_count == 4
        assert record.scorecards[checksum("return 42")].successes == 3
        assert record.scorecards[checksum("return 43")].successes == 1
        assert record.last_used_at == STAMPS[7]

    def test_runs_of_a_version_no_longer_kept_count_in_totals_only(self) -> None:
        """Without the old version's scorecard, no new scorecard is made for it."""
        record = apply_call(None, call(code="return 43"), now=STAMPS[0])
        delta = RunsDelta.start(call(source="persisted"), STAMPS[1])
        delta.add(call(source="persisted"), STAMPS[1])

        apply_runs(record, delta)

        assert (record.success_count, sorted(record.scorecards)) == (2, [checksum("return 43")])

    def test_merge_of_a_put_back_delta_keeps_every_run(self) -> None:
        """A delta put back after a failed write, merged with newer runs, counts both."""
        older = RunsDelta.start(call(source="persisted"), STAMPS[1])
        older.add(call(source="persisted", trace_id="a"), STAMPS[1])
        newer = RunsDelta.start(call(source="persisted"), STAMPS[2])
        newer.add(call(source="persisted", trace_id="b", result="domain_error"), STAMPS[2])

        merged = older.merge(newer)

        assert (merged.runs, merged.domain_errors, merged.sessions, merged.last_at) == (
            2,
            1,
            ["a", "b"],
            STAMPS[2],
        )
        assert [entry[0] for entry in merged.window] == ["ok", "error"]


class TestApplyUses:
    """apply_uses equals one merge_usage per call."""

    def test_three_calls_fold_like_three_merges(self) -> None:
        """Two answers and a failure: counts, methods (answers only) and the last stamp match."""
        entry = {"purpose": "convert", "usage_count": 4, "success_count": 3, "failure_count": 1}
        one_by_one: dict[str, Any] = dict(entry)
        delta = UsesDelta()
        for method, ok, now in (
            ("convert", True, STAMPS[1]),
            ("fail", False, STAMPS[2]),
            ("round", True, STAMPS[3]),
        ):
            one_by_one = merge_usage(one_by_one, method, ok, now=now)
            delta.add(method, ok, now)

        assert apply_uses(entry, delta) == one_by_one
        assert one_by_one["methods"] == ["convert", "round"]

    def test_a_later_stamp_on_disk_is_kept(self) -> None:
        """Another process recorded a later use: last_used_at does not go back in time."""
        delta = UsesDelta()
        delta.add("convert", True, STAMPS[1])

        merged = apply_uses({"last_used_at": STAMPS[9]}, delta)

        assert (merged["last_used_at"], merged["usage_count"]) == (STAMPS[9], 1)
