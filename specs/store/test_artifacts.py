"""Artifact records: folding calls in, lineage, health and the reuse verdict (ADR 0036, 0037)."""

from __future__ import annotations

import hashlib
import json

import pytest

from recurgent._store._artifacts import (
    ArtifactRecord,
    FailedAttempt,
    checksum,
    contract_fingerprint,
    is_degraded,
    record_cacheability,
    reuse_verdict,
)
from recurgent._store._cacheability import Cacheability
from recurgent._store._folding import apply_call
from specs.store.support import call

NOW = "2026-12-01T12:00:00.000Z"


def _verdict(
    record: ArtifactRecord, fingerprint: str = "none", runtime: str = "0.1.0", *, host: bool = True
) -> str | None:
    return reuse_verdict(
        record, contract_fingerprint=fingerprint, runtime_version=runtime, host_call=host
    )


def test_checksum_is_prefixed_sha256_of_the_code() -> None:
    """code_checksum is 'sha256:' + the hex digest of the UTF-8 code."""
    assert checksum("return 42") == "sha256:" + hashlib.sha256(b"return 42").hexdigest()


class TestContractFingerprint:
    """The fingerprint names the tool's job, not the request that created it."""

    def test_no_contract_is_none(self) -> None:
        """No contract, or one with only an intent signature, fingerprints as 'none'."""
        assert contract_fingerprint(None) == "none"
        assert contract_fingerprint({"intent_signature": "ask: args=x"}) == "none"

    def test_compact_json_of_the_four_fields_in_order(self) -> None:
        """sha256 of Ruby-style compact JSON of purpose, deliverable, acceptance, failure_policy."""
        contract = {
            "failure_policy": {"on_error": "return_error"},
            "purpose": "fetch pages",
            "deliverable": {"type": "object"},
        }
        text = '{"purpose":"fetch pages","deliverable":{"type":"object"},"failure_policy":{"on_error":"return_error"}}'
        assert (
            contract_fingerprint(contract) == "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        )

    def test_intent_signature_does_not_change_it(self) -> None:
        """The same tool delegated from two requests keeps one fingerprint."""
        base = {"purpose": "fetch pages"}
        assert contract_fingerprint({**base, "intent_signature": "ask: args=Google"}) == (
            contract_fingerprint({**base, "intent_signature": "ask: args=Yahoo"})
        )
        assert contract_fingerprint(base) != contract_fingerprint({"purpose": "parse feeds"})


class TestApplyCall:
    """apply_call folds one call into a record."""

    def test_first_generated_call(self) -> None:
        """A first success writes code, checksum, versions, counts, a scorecard and an
        initial_forge history entry."""
        record = apply_call(None, call(), now=NOW)

        assert (record.schema_version, record.runtime, record.role, record.method_name) == (
            1,
            "python",
            "calculator",
            "answer",
        )
        assert (record.code, record.code_checksum) == ("return 42", checksum("return 42"))
        assert (record.prompt_version, record.runtime_version, record.model) == (
            "p1",
            "0.1.0",
            "m1",
        )
        assert (record.cacheable, record.cacheability_reason, record.input_sensitive) == (
            True,
            "stable_method_default",
            False,
        )
        assert (record.success_count, record.failure_count, record.recent_failure_rate) == (
            1,
            0,
            0.0,
        )
        assert (record.created_at, record.last_used_at, record.last_duration_ms) == (NOW, NOW, 12.3)
        card = record.scorecards[checksum("return 42")]
        assert (card.calls, card.successes, card.failures, card.sessions) == (1, 1, 0, ["trace-1"])
        assert [(h.trigger, h.parent_id, h.code_checksum) for h in record.history] == [
            ("initial_forge", None, checksum("return 42"))
        ]
        assert record.history[0].id.startswith("gen-") and len(record.history[0].id) == 16

    def test_a_failure_counts_its_class_and_reason(self) -> None:
        """A failed call increments failure and class counts and records the reason."""
        failed = call(
            result="failure",
            error_type="parse_failed",
            failure_class="adaptive",
            failure_message="bad feed",
        )
        record = apply_call(None, failed, now=NOW)

        assert (record.failure_count, record.adaptive_failure_count) == (1, 1)
        assert (record.last_failure_class, record.last_failure_reason) == ("adaptive", "bad feed")
        assert record.recent_failure_rate == 1.0

    def test_a_domain_error_is_a_valid_answer(self) -> None:
        """A typed error returned on purpose counts as a success and as a domain error."""
        record = apply_call(
            None, call(result="domain_error", error_type="division_by_zero"), now=NOW
        )

        assert (record.success_count, record.failure_count, record.domain_error_count) == (1, 0, 1)
        card = record.scorecards[checksum("return 42")]
        assert (card.successes, card.domain_errors, card.short_window[0].status) == (1, 1, "error")

    def test_history_is_three_newest_first_with_lineage(self) -> None:
        """Four code versions leave three entries, each pointing at the one before."""
        record = None
        for number in range(4):
            record = apply_call(record, call(f"return {number}"), now=NOW)
        assert record is not None
        assert [h.code_checksum for h in record.history] == [
            checksum(f"return {n}") for n in (3, 2, 1)
        ]
        assert [h.trigger for h in record.history] == ["regenerate:new_code"] * 3
        assert record.history[0].parent_id == record.history[1].id
        assert record.history[1].parent_id == record.history[2].id

    def test_same_code_adds_no_history_but_updates_use(self) -> None:
        """Running unchanged code keeps one history entry and refreshes last_used_at."""
        first = apply_call(None, call(), now=NOW)
        second = apply_call(first, call(source="persisted"), now="2026-12-02T00:00:00.000Z")

        assert len(second.history) == 1
        assert second.last_used_at == "2026-12-02T00:00:00.000Z"
        assert second.created_at == NOW

    def test_in_place_updates_the_given_record_and_the_default_copies(self) -> None:
        """in_place=True folds into the caller's record; the default leaves it untouched."""
        first = apply_call(None, call(), now=NOW)
        copied = apply_call(first, call(source="persisted"), now="2026-12-02T00:00:00.000Z")
        assert first.last_used_at == NOW
        assert first.success_count == 1
        assert copied.success_count == 2

        same = apply_call(
            first, call(source="persisted"), now="2026-12-03T00:00:00.000Z", in_place=True
        )

        assert same is first
        assert first.success_count == 2
        assert first.last_used_at == "2026-12-03T00:00:00.000Z"
        expected = apply_call(
            apply_call(None, call(), now=NOW),
            call(source="persisted"),
            now="2026-12-03T00:00:00.000Z",
        ).model_dump(exclude={"history"})
        assert first.model_dump(exclude={"history"}) == expected

    def test_failed_attempt_diagnostics_go_into_the_new_entry(self) -> None:
        """A call that recovered from a failed attempt says so in its history entry."""
        attempt = FailedAttempt("execution", "ExecutionError", "x" * 500, attempt_id=1)
        record = apply_call(None, call(failed_attempt=attempt), now=NOW)

        entry = record.history[0]
        assert (entry.trigger_stage, entry.trigger_error_class, entry.trigger_attempt_id) == (
            "execution",
            "ExecutionError",
            1,
        )
        assert entry.trigger_error_message == "x" * 400

    def test_repairs_count_and_only_generation_resets(self) -> None:
        """A repair adds one and stamps last_repaired_at; a persisted run keeps the count; a
        fresh generation resets it."""
        record = apply_call(None, call(), now=NOW)
        record = apply_call(
            record, call("return 43", source="repaired", repaired_class="adaptive"), now=NOW
        )
        assert (record.repair_count_since_regen, record.last_repaired_at) == (1, NOW)
        assert record.history[0].trigger == "repair:adaptive_failure"
        record = apply_call(record, call("return 43", source="persisted"), now=NOW)
        assert record.repair_count_since_regen == 1
        record = apply_call(record, call("return 44"), now=NOW)
        assert record.repair_count_since_regen == 0

    def test_unknown_repair_class(self) -> None:
        """A repair without a known class is recorded as repair:unknown_failure."""
        record = apply_call(None, call(source="repaired"), now=NOW)
        assert record.history[0].trigger == "repair:unknown_failure"

    def test_scorecards_keep_the_eight_most_recently_used_versions(self) -> None:
        """A ninth version evicts the least recently used scorecard."""
        record = None
        for number in range(9):
            record = apply_call(record, call(f"return {number}"), now=NOW)
        assert record is not None
        assert list(record.scorecards) == [checksum(f"return {n}") for n in range(1, 9)]

    def test_unknown_keys_round_trip(self) -> None:
        """Keys this version does not know are written back."""
        stored = apply_call(None, call(), now=NOW).to_json() | {"patterns": {"x": 1}}
        record = apply_call(ArtifactRecord.model_validate(stored), call(), now=NOW)

        assert record.to_json()["patterns"] == {"x": 1}
        assert json.loads(json.dumps(record.to_json()))["schema_version"] == 1


class TestReuseVerdict:
    """reuse_verdict: cacheable, same runtime version and contract, intact, healthy."""

    def test_a_fresh_stable_record_is_reusable(self) -> None:
        """A cacheable, intact, healthy record with matching versions is a hit."""
        assert _verdict(apply_call(None, call(), now=NOW)) is None

    @pytest.mark.parametrize(
        ("change", "reason"),
        [
            ({"runtime": "ruby"}, "foreign_runtime"),
            ({"code": "  "}, "no_code"),
            ({"code": "return 41"}, "checksum_mismatch"),
            ({"cacheable": False}, "not_cacheable"),
            ({"runtime_version": "0.0.9"}, "runtime_version_mismatch"),
            ({"contract_fingerprint": "sha256:abc"}, "contract_mismatch"),
        ],
    )
    def test_each_gate(self, change: dict[str, object], reason: str) -> None:
        """Each broken condition gives its own reason."""
        record = apply_call(None, call(), now=NOW).model_copy(update=change)
        assert _verdict(record) == reason

    def test_metadata_never_blocks_reuse(self) -> None:
        """A null runtime version, another prompt version or another model still reuse."""
        record = apply_call(None, call(), now=NOW).model_copy(
            update={"runtime_version": None, "prompt_version": "old", "model": "other"}
        )
        assert _verdict(record) is None

    def test_legacy_records_use_the_dispatch_rule_and_stay_reusable(self) -> None:
        """Without a boolean cacheable, 'answer' reuses and 'ask' does not; the persisted run
        carries a cacheable classification, so the next call reuses too."""
        legacy = apply_call(None, call(), now=NOW).model_copy(
            update={"cacheable": None, "cacheability_reason": None}
        )
        assert _verdict(legacy) is None
        assert record_cacheability(legacy) == Cacheability(True, "legacy", False)
        asked = legacy.model_copy(update={"method_name": "ask"})
        assert _verdict(asked) == "not_cacheable"


class TestDegraded:
    """Health is judged on the current code version."""

    def _with(self, failures: int, successes: int) -> ArtifactRecord:
        record = None
        for _ in range(successes):
            record = apply_call(record, call(), now=NOW)
        for _ in range(failures):
            record = apply_call(record, call(result="failure", failure_class="intrinsic"), now=NOW)
        assert record is not None
        return record

    @pytest.mark.parametrize(
        ("failures", "successes", "degraded"),
        [(3, 0, True), (3, 2, False), (2, 0, False), (4, 2, True), (3, 3, False)],
    )
    def test_threshold(self, failures: int, successes: int, degraded: bool) -> None:
        """At least 3 failures, failure rate above 0.6 and more failures than successes."""
        record = self._with(failures, successes)
        assert is_degraded(record) is degraded
        assert (_verdict(record) == "degraded") is degraded

    def test_domain_errors_never_degrade(self) -> None:
        """Five division_by_zero answers keep the version healthy."""
        record = None
        for _ in range(5):
            record = apply_call(
                record, call(result="domain_error", error_type="division_by_zero"), now=NOW
            )
        assert record is not None and not is_degraded(record)

    def test_a_version_that_never_answered_is_unproven(self) -> None:
        """Two failures and no answer: not degraded, but not run again either."""
        assert _verdict(self._with(2, 0)) == "unproven"
        assert _verdict(self._with(2, 1)) is None

    def test_a_new_version_starts_healthy(self) -> None:
        """After 3 failures of one version, a regenerated version with one success reuses."""
        record = apply_call(self._with(3, 0), call("return 7"), now=NOW)
        assert (record.failure_count, _verdict(record)) == (3, None)
