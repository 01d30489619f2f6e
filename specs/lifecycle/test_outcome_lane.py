"""Outcome-repair lane: retriable non-extrinsic error outcomes are rolled back and regenerated."""

from __future__ import annotations

from pathlib import Path

import pytest

from recurgent import Agent
from recurgent.testing import ScriptedProvider

from .support import ALWAYS_RETRIABLE, FIXED, last_entry, scripted, tag

OUTCOME_MISUSE = (
    "return Outcome.error(error_type='fetch_failed', error_message=\"AttributeError: 'Outcome' "
    "object has no attribute 'strip'\", retriable=True)"
)


class TestOutcomeRepairFeedback:
    """The repair prompt names the error outcome and what to change."""

    def test_retriable_error_then_success_in_two_calls(self) -> None:
        """A retriable intrinsic error outcome is regenerated; the retry's ok is returned."""
        agent, provider = scripted([OUTCOME_MISUSE, "result = 'recovered'"])

        outcome = agent.run()

        assert (outcome.value, provider.calls) == ("recovered", 2)

    def test_feedback_fields_and_unwrap_correction(self) -> None:
        """The block carries type, message, root class and the unwrap-Outcome correction."""
        agent, provider = scripted([OUTCOME_MISUSE, "result = 'recovered'"])

        agent.run()

        prompt = provider.requests[1].user_prompt
        message = "AttributeError: 'Outcome' object has no attribute 'strip'"
        assert {
            name: tag(prompt, name)
            for name in (
                "failure_type",
                "failure_message",
                "root_error_class",
                "root_error_message",
                "attempt_number",
                "remaining_outcome_repair_budget",
            )
        } == {
            "failure_type": "fetch_failed",
            "failure_message": message,
            "root_error_class": "AttributeError",
            "root_error_message": message,
            "attempt_number": "2",
            "remaining_outcome_repair_budget": "0",
        }
        assert tag(prompt, "required_correction").startswith("unwrap Outcome values")
        assert "returned a retriable error outcome" in prompt

    def test_mutations_of_the_retried_attempt_are_rolled_back(self) -> None:
        """Memory written by the attempt that returned the retriable error is undone."""
        agent, _ = scripted([ALWAYS_RETRIABLE, "result = context.get('dirty', 'clean')"])

        outcome = agent.run()

        assert outcome.value == "clean"
        assert "dirty" not in agent.runtime_context


class TestOutcomeRepairExhaustion:
    """A second retriable error (with the default budget 1) ends the call."""

    def test_exhaustion_after_two_calls_with_metadata(self) -> None:
        """outcome_repair_retry_exhausted carries the repairs made and the last error type."""
        agent, provider = scripted(ALWAYS_RETRIABLE)

        outcome = agent.run()

        assert provider.calls == 2
        assert (outcome.error_type, outcome.retriable) == ("outcome_repair_retry_exhausted", False)
        assert outcome.error_message == (
            "Retriable outcome-error repairs exhausted for tester.run. "
            "Last cause: fetch_failed: try again."
        )
        assert outcome.metadata == {
            "outcome_repair_attempts": 1,
            "last_error_type": "fetch_failed",
            "last_error_message": "try again",
        }
        assert "dirty" not in agent.runtime_context

    def test_zero_budget_exhausts_on_the_first_retriable_error(self) -> None:
        """fresh_outcome_repair_budget=0 turns the first retriable error into exhaustion."""
        agent, provider = scripted([ALWAYS_RETRIABLE, FIXED], fresh_outcome_repair_budget=0)

        outcome = agent.run()

        assert (outcome.error_type, provider.calls) == ("outcome_repair_retry_exhausted", 1)
        assert outcome.metadata["outcome_repair_attempts"] == 0
        assert outcome.metadata["last_error_type"] == "fetch_failed"

    def test_log_of_an_exhausted_outcome_lane(self, log_path: Path) -> None:
        """The log shows the repair, both outcome-policy failures and the flags."""
        agent, _ = scripted(ALWAYS_RETRIABLE, log=log_path)

        agent.run()

        entry = last_entry(log_path)
        assert [(f["stage"], f["error_class"]) for f in entry["attempt_failures"]] == [
            ("outcome_policy", "OutcomeError"),
            ("outcome_policy", "OutcomeError"),
        ]
        assert entry["latest_failure_message"] == "fetch_failed: try again"
        assert (
            entry["outcome_repair_attempts"],
            entry["outcome_repair_triggered"],
            entry["outcome_repair_retry_exhausted"],
            entry["attempt_stage"],
            entry["rollback_applied"],
            entry["validation_failure_type"],
            entry["failure_class"],
        ) == (1, True, True, "outcome_retry", True, "fetch_failed", "adaptive")

    def test_long_error_message_is_capped_in_the_log(self, log_path: Path) -> None:
        """A 500-character error message is logged as 400 characters ending in '...'."""
        long = "x" * 500
        program = (
            f"result = Outcome.error(error_type='fetch_failed', error_message={long!r}, "
            "retriable=True)"
        )
        agent, _ = scripted([program, "result = 'ok'"], log=log_path)

        agent.run()

        entry = last_entry(log_path)
        message = entry["latest_failure_message"]
        assert (len(message), message[:14], message[-3:]) == (400, "fetch_failed: ", "...")
        assert entry["attempt_failures"][0]["error_message"] == message
        assert (entry["outcome_repair_attempts"], entry["latest_failure_stage"]) == (
            1,
            "outcome_policy",
        )


class TestOutcomesThatPassThrough:
    """Ok outcomes, non-retriable errors and extrinsic errors are returned after one call."""

    @pytest.mark.parametrize(
        "error_type", ["timeout", "provider", "network_error", "rate_limited", "http_error"]
    )
    def test_extrinsic_retriable_error_is_returned_untouched(self, error_type: str) -> None:
        """An extrinsic retriable error is not regenerated; its memory writes are dropped."""
        program = (
            "context['attempted'] = True\n"
            f"result = Outcome.error(error_type={error_type!r}, error_message='upstream', "
            "retriable=True, metadata={'status': 503})"
        )
        agent, provider = scripted([program, FIXED])

        outcome = agent.run()

        assert provider.calls == 1
        assert (
            outcome.error_type,
            outcome.error_message,
            outcome.retriable,
            outcome.metadata,
            outcome.tool_role,
            outcome.method_name,
        ) == (error_type, "upstream", True, {"status": 503}, "tester", "run")
        assert "attempted" not in agent.runtime_context  # all or nothing (ADR 0100)

    def test_extrinsic_pass_through_logs_its_class(self, log_path: Path) -> None:
        """The log of a passed-through timeout says extrinsic and rolled back (ADR 0100)."""
        program = (
            "result = Outcome.error(error_type='timeout', error_message='slow', retriable=True)"
        )
        agent, _ = scripted(program, log=log_path)

        agent.run()

        entry = last_entry(log_path)
        assert (entry["failure_class"], entry["rollback_applied"], entry["attempt_failures"]) == (
            "extrinsic",
            True,
            [],
        )

    @pytest.mark.parametrize(
        "error_type", ["low_utility", "parse_failed", "unsupported_capability"]
    )
    def test_non_retriable_error_is_rolled_back(self, error_type: str) -> None:
        """A non-retriable error is returned after one call; its memory writes are dropped."""
        program = (
            "context['attempted'] = True\n"
            f"result = Outcome.error(error_type={error_type!r}, error_message='no')"
        )
        agent, provider = scripted([program, FIXED])

        outcome = agent.run()

        assert (outcome.error_type, outcome.retriable, provider.calls) == (error_type, False, 1)
        assert "attempted" not in agent.runtime_context  # all or nothing (ADR 0100)

    def test_child_retriable_invalid_code_is_intrinsic_for_the_parent(self) -> None:
        """A child's retriable invalid_code returned by the parent makes the parent regenerate."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('child_tool').work()",
                ("child_tool", "work"): None,
            }
        )
        builder = Agent("builder", provider=provider, log=False)

        outcome = builder.run()

        assert len(provider.requests_for("run", role="builder")) == 2
        assert (outcome.error_type, outcome.retriable) == ("outcome_repair_retry_exhausted", False)
        assert outcome.metadata["last_error_type"] == "invalid_code"
