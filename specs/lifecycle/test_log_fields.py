"""The lifecycle's log fields, and the failures that end a call outside the lanes."""

from __future__ import annotations

import time
from pathlib import Path

from .support import last_entry, scripted

LIFECYCLE_FIELDS = {
    "attempt_id": 1,
    "attempt_stage": "executed",
    "validation_failure_type": None,
    "rollback_applied": False,
    "retry_feedback_injected": False,
    "guardrail_recovery_attempts": 0,
    "execution_repair_attempts": 0,
    "outcome_repair_attempts": 0,
    "outcome_repair_triggered": False,
    "guardrail_retry_exhausted": False,
    "outcome_repair_retry_exhausted": False,
    "guardrail_violation_subtype": None,
    "attempt_failures": [],
    "latest_failure_stage": None,
    "latest_failure_class": None,
    "latest_failure_message": None,
    "contract_validation_applied": False,
    "contract_validation_passed": None,
    "contract_validation_mismatch": None,
    "contract_validation_expected_keys": [],
    "contract_validation_actual_keys": [],
    "failure_class": None,
    "history_record_appended": True,
    "conversation_history_size": 1,
    "execution_receiver": "sandbox",
    "result_inferred": False,
}


class TestLogFields:
    """Every lifecycle field is present on every line, null or empty when unused."""

    def test_clean_call_logs_every_field_with_its_resting_value(self, log_path: Path) -> None:
        """A first-try success logs attempt 1, no failures, no rollback, history appended."""
        agent, _ = scripted("return 1", log=log_path)

        agent.run()

        entry = last_entry(log_path)
        assert {key: entry[key] for key in LIFECYCLE_FIELDS} == LIFECYCLE_FIELDS

    def test_an_inferred_result_is_logged(self, log_path: Path) -> None:
        """A program whose trailing expression is its result logs ``result_inferred: true``."""
        agent, _ = scripted("def main():\n    return 42\nmain()", log=log_path)

        assert agent.run().value == 42
        assert last_entry(log_path)["result_inferred"] is True

    def test_contracted_call_logs_a_passed_validation(self, log_path: Path) -> None:
        """A contracted ok outcome logs the applied, passed validation and its keys."""
        agent, _ = scripted(
            "return {'body': 'x', 'extra': 1}",
            log=log_path,
            deliverable={"type": "object", "required": ["body"]},
        )

        agent.run()

        entry = last_entry(log_path)
        assert (
            entry["contract_validation_applied"],
            entry["contract_validation_passed"],
            entry["contract_validation_mismatch"],
            entry["contract_validation_expected_keys"],
            entry["contract_validation_actual_keys"],
        ) == (True, True, None, ["body"], ["body", "extra"])

    def test_attempt_failure_entries_have_their_fields(self, log_path: Path) -> None:
        """Each attempt failure records attempt, stage, class, message, subtype, time and call id."""
        agent, _ = scripted(["items = None\nitems.append(1)", "return 1"], log=log_path)

        agent.run()

        [failure] = last_entry(log_path)["attempt_failures"]
        assert sorted(failure) == [
            "attempt_id",
            "call_id",
            "error_class",
            "error_message",
            "retry_feedback_injected",
            "stage",
            "subtype",
            "timestamp",
        ]
        assert failure["subtype"] is None


class TestFailuresOutsideTheLanes:
    """Errors that no lane repairs end the call, and still never leave half an attempt."""

    def test_budget_exceeded_in_code_is_returned_after_rollback(self) -> None:
        """delegate() with no budget left gives budget_exceeded after one call; writes undone."""
        agent, provider = scripted(
            "context['note'] = 1\nreturn delegate('helper').run()", delegation_budget=0
        )

        outcome = agent.run()

        assert (outcome.error_type, outcome.retriable, provider.calls) == (
            "budget_exceeded",
            False,
            1,
        )
        assert "note" not in agent.runtime_context

    def test_execution_timeout_is_not_repaired(self, log_path: Path) -> None:
        """A program that runs past its deadline gives a retriable timeout after one call."""
        agent, provider = scripted(
            "context['note'] = 1\nwhile True:\n    pass",
            execution_timeout_seconds=1,
            log=log_path,
        )

        started = time.monotonic()
        outcome = agent.run()
        elapsed = time.monotonic() - started

        assert (outcome.error_type, outcome.retriable, provider.calls) == ("timeout", True, 1)
        assert elapsed < 1.5
        assert "note" not in agent.runtime_context
        entry = last_entry(log_path)
        assert (entry["failure_class"], entry["rollback_applied"]) == ("extrinsic", True)
