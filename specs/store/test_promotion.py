"""The promotion policy solver_promotion_v1: metrics, gate, regression, transitions, ledger and
manual overrides, on records built by apply_call (ADR 0080)."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent._store._artifacts import ArtifactRecord, Scorecard, checksum
from recurgent._store._batch import RunsDelta, apply_runs
from recurgent._store._folding import apply_call
from recurgent._store._promotion import (
    POLICY,
    apply_override,
    ensure_lifecycle,
    evaluate,
    failed_checks,
    latest_decision,
    metrics,
    promotion_mode,
    regressed,
    state_of,
)
from recurgent._store._promotion_format import LEDGER_KEPT, OVERRIDES_KEPT
from specs.store.support import call

A = "return 42"
B = "return 43"
DA, DB = checksum(A), checksum(B)
STAMPS = [
    f"2026-12-01T12:{minute:02d}:{second:02d}.000Z" for minute in range(60) for second in range(60)
]
ENFORCED = promotion_mode(shadow=True, enforced=True)
SHADOW_OFF = promotion_mode(shadow=False, enforced=False)


def _calls(
    record: ArtifactRecord | None, count: int, start: int = 0, **fields: Any
) -> ArtifactRecord:
    """``count`` calls folded one by one (the first generated unless ``source`` is given)."""
    for index in range(count):
        fields_now = {"source": "persisted" if record is not None else "generated", **fields}
        record = apply_call(
            record, call(fields_now.pop("code", A), **fields_now), now=STAMPS[start + index]
        )
    assert record is not None
    return record


def _card(**counts: Any) -> Scorecard:
    return Scorecard(artifact_checksum=DA, **counts)


def _entry_state(record: ArtifactRecord, digest: str = DA) -> tuple[str | None, str | None]:
    assert record.lifecycle is not None
    entry = record.lifecycle.versions[digest]
    return entry.lifecycle_state, entry.last_decision


class TestMetrics:
    """What the policy reads from one scorecard."""

    def test_no_card_reads_as_nothing_observed(self) -> None:
        """Without a scorecard every count is 0 and every rate is perfect (1.0)."""
        numbers = metrics(None)
        assert (numbers["calls"], numbers["session_count"], numbers["contract_pass_rate"]) == (
            0,
            0,
            1.0,
        )
        assert (numbers["state_key_consistency_ratio"], numbers["role_profile_pass_rate"]) == (
            1.0,
            1.0,
        )

    def test_rates_are_rounded_to_four_places(self) -> None:
        """Contract and role-profile rates and the failure rate are counts over totals, 4 places;
        sessions are distinct trace ids."""
        card = _card(
            calls=3,
            successes=1,
            failures=2,
            contract_pass_count=2,
            contract_fail_count=1,
            role_profile_pass_count=1,
            role_profile_fail_count=2,
            sessions=["a", "b", "a"],
            state_key_consistency_ratio=0.66666,
        )
        numbers = metrics(card)
        assert (numbers["failure_rate"], numbers["contract_pass_rate"]) == (0.6667, 0.6667)
        assert (numbers["role_profile_pass_rate"], numbers["role_profile_observation_count"]) == (
            0.3333,
            3,
        )
        assert (numbers["session_count"], numbers["state_key_consistency_ratio"]) == (2, 0.6667)


class TestGate:
    """failed_checks lists each criterion of solver_promotion_v1 a version does not meet."""

    def _passing(self) -> dict[str, Any]:
        return metrics(_card(calls=10, successes=10, sessions=["a", "b"]))

    def test_ten_calls_over_two_sessions_pass(self) -> None:
        """The minimum evidence with nothing against it passes, with no incumbent."""
        assert failed_checks(self._passing(), 0.0) == []
        assert (POLICY.version, POLICY.min_calls, POLICY.min_sessions) == (
            "solver_promotion_v1",
            10,
            2,
        )

    @pytest.mark.parametrize(
        ("change", "failed"),
        [
            ({"calls": 9, "successes": 9}, ["min_calls"]),
            ({"sessions": ["a", "a"]}, ["min_sessions"]),
            ({"contract_pass_count": 94, "contract_fail_count": 6}, ["min_contract_pass_rate"]),
            ({"guardrail_retry_exhausted_count": 1}, ["max_guardrail_retry_exhausted"]),
            ({"outcome_retry_exhausted_count": 1}, ["max_outcome_retry_exhausted"]),
            ({"wrong_boundary_count": 1}, ["max_wrong_boundary_count"]),
            ({"provenance_violation_count": 1}, ["max_provenance_violations"]),
            ({"state_key_consistency_ratio": 0.49}, ["min_state_key_consistency_ratio"]),
            (
                {"role_profile_pass_count": 98, "role_profile_fail_count": 2},
                ["min_role_profile_pass_rate"],
            ),
            ({"calls": 11, "successes": 4, "failures": 7}, ["regression_rule"]),
        ],
    )
    def test_each_criterion_holds_a_version_back(
        self, change: dict[str, Any], failed: list[str]
    ) -> None:
        """Each threshold alone fails the gate, under its own name."""
        counts: dict[str, Any] = {"calls": 10, "successes": 10, "sessions": ["a", "b"], **change}
        assert failed_checks(metrics(_card(**counts)), 0.0) == failed

    def test_thresholds_are_inclusive(self) -> None:
        """Exactly 0.95 contract, 0.99 profile and 0.5 state-key consistency pass."""
        card = _card(
            calls=100,
            successes=100,
            sessions=["a", "b"],
            contract_pass_count=95,
            contract_fail_count=5,
            role_profile_pass_count=99,
            role_profile_fail_count=1,
            state_key_consistency_ratio=0.5,
        )
        assert failed_checks(metrics(card), 0.0) == []

    def test_not_worse_than_the_incumbent(self) -> None:
        """A contract rate below the incumbent durable version's fails; equal passes."""
        numbers = metrics(
            _card(
                calls=20,
                successes=20,
                sessions=["a", "b"],
                contract_pass_count=19,
                contract_fail_count=1,
            )
        )
        assert failed_checks(numbers, 0.96) == ["not_worse_than_incumbent"]
        assert failed_checks(numbers, 0.95) == []

    def test_regression_rule(self) -> None:
        """At least 3 calls, failure rate above 0.6, more failures than successes."""
        assert regressed(metrics(_card(calls=3, failures=2, successes=1))) is True
        assert regressed(metrics(_card(calls=2, failures=2))) is False
        assert regressed(metrics(_card(calls=5, failures=3, successes=2))) is False  # rate 0.6


class TestTransitions:
    """Each row of the transition table, driven by calls folded with apply_call."""

    def test_first_answer_moves_candidate_to_probation(self) -> None:
        """A new version starts as a candidate; its first answer moves it to probation, and the
        ledger records the bootstrap."""
        record = _calls(None, 1)
        assert _entry_state(record) == ("probation", "continue_probation")
        assert record.lifecycle is not None
        [evaluation] = record.lifecycle.shadow_ledger.evaluations
        assert (evaluation.decision_type, evaluation.from_state, evaluation.to_state) == (
            "promotion_evaluation",
            "candidate",
            "probation",
        )
        assert evaluation.rationale["candidate_bootstrap"] is True
        assert (evaluation.tool_name, evaluation.method_name, evaluation.calls_covered) == (
            "calculator",
            "answer",
            1,
        )

    def test_a_failing_candidate_holds(self) -> None:
        """A candidate whose run fails stays a candidate."""
        record = _calls(
            None, 1, result="failure", error_type="execution", failure_class="intrinsic"
        )
        assert _entry_state(record) == ("candidate", "hold")

    def test_a_domain_error_is_an_answer(self) -> None:
        """A domain error (ADR 0037) bootstraps a candidate like an ok value."""
        record = _calls(None, 1, result="domain_error", error_type="division_by_zero")
        assert _entry_state(record) == ("probation", "continue_probation")

    def test_ten_calls_in_one_session_stay_in_probation(self) -> None:
        """The session gate holds a version all of whose calls came from one trace."""
        record = _calls(None, 10)
        assert _entry_state(record) == ("probation", "continue_probation")
        assert record.lifecycle is not None
        assert record.lifecycle.shadow_ledger.evaluations[-1].rationale["failed_checks"] == [
            "min_sessions"
        ]

    def test_ten_calls_over_two_sessions_promote(self) -> None:
        """The tenth call, the second session's, promotes; the version becomes the incumbent."""
        record = _calls(None, 9, trace_id="one")
        record = _calls(record, 1, start=9, trace_id="two")
        assert _entry_state(record) == ("durable", "promote")
        assert record.lifecycle is not None
        assert record.lifecycle.incumbent_durable_checksum == DA
        assert record.lifecycle.shadow_ledger.evaluations[-1].rationale["gate_pass"] is True

    def test_durable_holds_and_degrades_on_regression(self) -> None:
        """A durable version holds while it answers and degrades when the regression rule
        holds; the degraded incumbent stops being the incumbent."""
        record = _calls(None, 5, trace_id="one")
        record = _calls(record, 5, start=5, trace_id="two")
        record = _calls(record, 1, start=10)
        assert _entry_state(record) == ("durable", "hold")
        failing = {"result": "failure", "error_type": "execution", "failure_class": "intrinsic"}
        record = _calls(record, 12, start=11, **failing)
        assert _entry_state(record) == ("durable", "hold")  # 12 of 23 failed: rate 0.52
        record = _calls(record, 5, start=23, **failing)
        assert _entry_state(record) == ("degraded", "degrade")  # 17 of 28: rate 0.61
        assert record.lifecycle is not None
        assert record.lifecycle.incumbent_durable_checksum is None

    def test_probation_degrades_on_regression(self) -> None:
        """Probation with two failures in three calls degrades (rate 0.67 > 0.6)."""
        record = _calls(None, 1)
        failing = {"result": "failure", "error_type": "execution", "failure_class": "intrinsic"}
        record = _calls(record, 1, start=1, **failing)
        assert _entry_state(record) == ("probation", "continue_probation")
        record = _calls(record, 1, start=2, **failing)
        assert _entry_state(record) == ("degraded", "degrade")
        assert record.lifecycle is not None
        assert record.lifecycle.shadow_ledger.evaluations[-1].rationale["regressed"] is True

    def test_degraded_is_promoted_when_the_gate_passes_again(self) -> None:
        """A degraded version that earns the gate again becomes durable."""
        record = _calls(None, 1)
        failing = {"result": "failure", "error_type": "execution", "failure_class": "intrinsic"}
        record = _calls(record, 2, start=1, **failing)
        assert _entry_state(record) == ("degraded", "degrade")
        record = _calls(record, 6, start=3)
        assert _entry_state(record) == ("degraded", "hold")
        record = _calls(record, 1, start=9, trace_id="two")
        assert _entry_state(record) == ("durable", "promote")

    def test_enforcement_degrades_a_failing_probation_version_at_once(self) -> None:
        """Under enforcement one failure of the program on probation degrades it; without
        enforcement, or for an outage (extrinsic), it stays on probation."""
        failure = {"result": "failure", "error_type": "execution", "failure_class": "intrinsic"}
        outage = {"result": "failure", "error_type": "timeout", "failure_class": "extrinsic"}
        base = _calls(None, 1)

        enforced = _calls(base.model_copy(deep=True), 1, start=1, promotion=ENFORCED, **failure)
        shadow = _calls(base.model_copy(deep=True), 1, start=1, **failure)
        upstream = _calls(base.model_copy(deep=True), 1, start=1, promotion=ENFORCED, **outage)

        assert _entry_state(enforced) == ("degraded", "degrade")
        assert enforced.lifecycle is not None
        assert (
            enforced.lifecycle.shadow_ledger.evaluations[-1].rationale[
                "enforced_immediate_regression"
            ]
            is True
        )
        assert _entry_state(shadow) == ("probation", "continue_probation")
        assert _entry_state(upstream) == ("probation", "continue_probation")

    def test_a_new_version_is_judged_against_the_incumbent(self) -> None:
        """With a durable incumbent passing every contract check, a newer version whose checks
        pass less often stays on probation, held by the incumbent."""
        record = _calls(None, 5, trace_id="one", contract_passed=True)
        record = _calls(record, 5, start=5, trace_id="two", contract_passed=True)
        assert _entry_state(record) == ("durable", "promote")
        newer = {"code": B, "contract_passed": True}
        record = apply_call(
            record,
            call(B, source="generated", contract_passed=True, trace_id="one"),
            now=STAMPS[10],
        )
        record = _calls(record, 18, start=11, trace_id="one", **{**newer, "source": "persisted"})
        record = _calls(
            record, 1, start=29, trace_id="two", code=B, source="persisted", contract_passed=False
        )
        assert _entry_state(record, DB) == ("probation", "continue_probation")
        assert record.lifecycle is not None
        last = record.lifecycle.shadow_ledger.evaluations[-1]
        assert (last.incumbent_artifact_id, last.rationale["failed_checks"]) == (
            DA,
            ["not_worse_than_incumbent"],
        )
        assert last.rationale["incumbent_contract_pass_rate"] == 1.0

    def test_shadow_mode_off_writes_no_lifecycle(self) -> None:
        """With shadow mode off no lifecycle block is made (the versions map still is)."""
        record = _calls(None, 3, promotion=SHADOW_OFF)
        assert record.lifecycle is None
        assert list(record.versions) == [DA]


class TestCounters:
    """The scorecard counts what the gate reads."""

    def test_exhaustions_boundary_and_provenance_are_counted_per_version(self) -> None:
        """Each failure kind increments its own counter on the version that ran."""
        record = _calls(None, 1)
        for error_type, violation in (
            ("guardrail_retry_exhausted", "missing_external_provenance"),
            ("outcome_repair_retry_exhausted", None),
            ("wrong_tool_boundary", None),
            ("execution", None),
        ):
            record = apply_call(
                record,
                call(
                    source="persisted",
                    result="failure",
                    error_type=error_type,
                    failure_class="adaptive",
                    violation=violation,
                ),
                now=STAMPS[1],
            )
        card = record.scorecards[DA]
        assert (
            card.guardrail_retry_exhausted_count,
            card.outcome_retry_exhausted_count,
            card.wrong_boundary_count,
            card.provenance_violation_count,
        ) == (1, 1, 1, 1)

    def test_role_profile_verdicts_are_observations(self) -> None:
        """A call with a role-profile verdict counts as an observation and a pass or a fail; a
        call without one counts nothing."""
        record = _calls(None, 1, role_profile_compliant=True)
        record = _calls(record, 1, start=1, role_profile_compliant=False)
        record = _calls(record, 1, start=2)
        card = record.scorecards[DA]
        assert (
            card.role_profile_observation_count,
            card.role_profile_pass_count,
            card.role_profile_fail_count,
        ) == (2, 1, 1)

    def test_a_role_profile_failure_holds_a_version_back(self) -> None:
        """One failed role-profile check in 10 calls keeps a version on probation."""
        record = _calls(None, 5, trace_id="one", role_profile_compliant=True)
        record = _calls(record, 5, start=5, trace_id="two", role_profile_compliant=False)
        assert _entry_state(record) == ("probation", "continue_probation")

    def test_the_state_key_ratio_measured_last_is_read_by_the_gate(self) -> None:
        """A call (or a batch) carrying a state-key consistency stores it on the version's
        scorecard; the latest measure counts, and below 0.5 it holds the version back."""
        record = _calls(None, 5, trace_id="one", state_key_consistency_ratio=0.9)
        run = call(source="persisted", trace_id="two", state_key_consistency_ratio=0.4)
        delta = RunsDelta.start(run, STAMPS[5])
        for index in range(5):
            delta.add(run, STAMPS[5 + index])

        record = apply_runs(record, delta)

        assert record.scorecards[DA].state_key_consistency_ratio == 0.4
        assert _entry_state(record) == ("probation", "continue_probation")
        assert record.lifecycle is not None
        last = record.lifecycle.shadow_ledger.evaluations[-1]
        assert (last.calls_covered, last.rationale["failed_checks"]) == (
            5,
            ["min_state_key_consistency_ratio"],
        )


class TestLegacyAndLedger:
    """Records without lifecycle data, and the ledger's bounds."""

    def test_a_legacy_record_starts_in_probation(self) -> None:
        """A record that held code before it had lifecycle data: its versions start in
        probation; code written later starts as a candidate."""
        legacy = _calls(None, 2, promotion=SHADOW_OFF)
        assert legacy.lifecycle is None

        record = apply_call(
            legacy,
            call(
                source="persisted",
                result="failure",
                error_type="execution",
                failure_class="intrinsic",
            ),
            now=STAMPS[5],
        )
        assert record.lifecycle is not None and record.lifecycle.legacy_compatibility_mode is True
        assert _entry_state(record) == ("probation", "continue_probation")
        assert record.lifecycle.versions[DA].compatibility_mode is True

        newer = apply_call(
            record,
            call(B, result="failure", error_type="execution", failure_class="intrinsic"),
            now=STAMPS[6],
        )
        assert _entry_state(newer, DB) == ("candidate", "hold")

    def test_the_ledger_keeps_the_last_two_hundred(self) -> None:
        """Every evaluation is appended; only the newest 200 stay, oldest dropped first."""
        record = _calls(None, 230)
        assert record.lifecycle is not None
        evaluations = record.lifecycle.shadow_ledger.evaluations
        assert len(evaluations) == LEDGER_KEPT == 200
        assert (evaluations[0].at, evaluations[-1].at) == (STAMPS[30], STAMPS[229])

    def test_latest_decision_reads_back_the_last_evaluation(self) -> None:
        """latest_decision gives the state, decision and rationale the last evaluation made of
        the version, and None for a version it did not evaluate last."""
        record = _calls(None, 2)
        decision = latest_decision(record, DA)
        assert decision is not None
        assert (decision.state, decision.decision, decision.rationale["calls"]) == (
            "probation",
            "continue_probation",
            2,
        )
        assert latest_decision(record, DB) is None


class TestOverrides:
    """apply_override: a maintainer sets a state by hand, recorded twice."""

    def test_durable_by_hand_makes_the_incumbent_and_is_recorded(self) -> None:
        """The override sets the state, the incumbent, a manual_overrides record and a ledger
        entry naming the actor and reason."""
        record = _calls(None, 1)
        override = apply_override(
            record, DA, "durable", actor="alice", reason="checked by hand", now=STAMPS[9]
        )
        assert _entry_state(record) == ("durable", "manual_override")
        assert record.lifecycle is not None
        assert record.lifecycle.incumbent_durable_checksum == DA
        assert (override.previous_state, override.state, override.actor) == (
            "probation",
            "durable",
            "alice",
        )
        assert record.lifecycle.manual_overrides == [override]
        last = record.lifecycle.shadow_ledger.evaluations[-1]
        assert (last.decision_type, last.decision, last.calls_covered) == (
            "manual_override",
            "manual_override",
            0,
        )
        assert last.rationale == {"actor": "alice", "reason": "checked by hand"}

    def test_any_other_state_takes_the_incumbency_away(self) -> None:
        """Moving the incumbent to probation or degraded leaves no incumbent."""
        for state in ("probation", "degraded", "candidate"):
            record = _calls(None, 1)
            apply_override(record, DA, "durable", actor="a", reason=None, now=STAMPS[1])
            apply_override(record, DA, state, actor="a", reason=None, now=STAMPS[2])
            assert record.lifecycle is not None
            assert (state_of(record, DA), record.lifecycle.incumbent_durable_checksum) == (
                state,
                None,
            )

    def test_overrides_are_bounded_and_made_on_a_record_without_lifecycle(self) -> None:
        """An override on a record without lifecycle data creates it; only the last 200
        overrides are kept."""
        record = _calls(None, 1, promotion=SHADOW_OFF)
        for index in range(210):
            apply_override(record, DA, "durable", actor=f"m{index}", reason=None, now=STAMPS[index])
        assert record.lifecycle is not None
        overrides = record.lifecycle.manual_overrides
        assert (len(overrides), overrides[0].actor, overrides[-1].actor) == (
            OVERRIDES_KEPT,
            "m10",
            "m209",
        )

    def test_ensure_lifecycle_is_idempotent(self) -> None:
        """The block is made once and then returned as it is."""
        record = _calls(None, 1)
        assert ensure_lifecycle(record, STAMPS[5]) is record.lifecycle

    def test_evaluate_direct_reports_the_decision(self) -> None:
        """evaluate returns what it wrote: state, decision and rationale."""
        record = _calls(None, 1)
        decision = evaluate(record, DA, "answered", enforced=False, now=STAMPS[3], calls_covered=4)
        assert (decision.state, decision.decision) == ("probation", "continue_probation")
        assert record.lifecycle is not None
        assert record.lifecycle.shadow_ledger.evaluations[-1].calls_covered == 4
