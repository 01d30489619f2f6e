"""Execution lane: an exception in generated code is rolled back and repaired once."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import FIXED, last_entry, scripted, tag

NONE_APPEND = "context['note'] = 'polluted'\nitems = context.get('missing')\nitems.append('x')"
ACCUMULATOR_CORRECTION = (
    "initialize accumulators before appending or adding to them (an empty list, dict or string) "
    "and check for None before indexing or iterating"
)
OUTCOME_CORRECTION = (
    "unwrap Outcome values before using them: check out.ok, then read out.value (or "
    "out.error_type / out.error_message); .ok and .error are flags, not methods to parse"
)


class TestExecutionFeedback:
    """The repair prompt names the exception and a correction written for Python's messages."""

    def test_exception_then_valid_program_succeeds_in_two_calls(self) -> None:
        """A raising program followed by a valid one gives ok after two calls."""
        agent, provider = scripted([NONE_APPEND, FIXED])

        outcome = agent.run()

        assert (outcome.value, provider.calls) == ("fixed", 2)

    def test_feedback_fields_for_appending_to_none(self) -> None:
        """Appending to None is reported with its root error and the accumulator correction."""
        agent, provider = scripted([NONE_APPEND, FIXED])

        agent.run()

        prompt = provider.requests[1].user_prompt
        assert {
            name: tag(prompt, name)
            for name in (
                "failure_type",
                "failure_message",
                "root_error_class",
                "root_error_message",
                "failure_location",
                "required_correction",
                "attempt_number",
                "remaining_execution_repair_budget",
            )
        } == {
            "failure_type": "execution",
            "failure_message": "Execution error in tester.run: AttributeError: 'NoneType' object "
            "has no attribute 'append'",
            "root_error_class": "AttributeError",
            "root_error_message": "'NoneType' object has no attribute 'append'",
            "failure_location": "line 3: items.append('x')",
            "required_correction": ACCUMULATOR_CORRECTION,
            "attempt_number": "2",
            "remaining_execution_repair_budget": "0",
        }
        assert "<execution_failure_feedback>" not in provider.requests[0].user_prompt

    @pytest.mark.parametrize(
        ("program", "root_class", "correction"),
        [
            ("s = None\ns += 'x'", "TypeError", ACCUMULATOR_CORRECTION),
            ("out = Outcome.ok([1])\nresult = out.success()", "AttributeError", OUTCOME_CORRECTION),
            ("out = Outcome.error('x', 'y')\nresult = out[0]", "TypeError", OUTCOME_CORRECTION),
            (
                "result = {}['missing']",
                "KeyError",
                "check that keys exist ('key' in d) or use d.get(key, default) before reading them",
            ),
            (
                "import os",
                "ImportError",
                "import only the modules the system prompt lists as allowed; for a capability "
                'no allowed module gives, return Outcome.error(error_type="unsupported_capability",'
                " ...)",
            ),
        ],
        ids=["iadd-none", "outcome-method", "index-error-outcome", "key-error", "import"],
    )
    def test_correction_matches_the_python_error(
        self, program: str, root_class: str, correction: str
    ) -> None:
        """Each Python failure gets the correction written for its message."""
        agent, provider = scripted([program, FIXED])

        agent.run()

        prompt = provider.requests[1].user_prompt
        assert (tag(prompt, "root_error_class"), tag(prompt, "required_correction")) == (
            root_class,
            correction,
        )

    def test_resource_limit_is_repaired_with_a_size_correction(self) -> None:
        """A size-limit breach is an execution failure of type resource_limit."""
        agent, provider = scripted(["result = 'x' * (10 ** 9)", FIXED])

        outcome = agent.run()

        prompt = provider.requests[1].user_prompt
        assert outcome.value == "fixed"
        assert tag(prompt, "failure_type") == "resource_limit"
        assert tag(prompt, "required_correction").startswith("work on smaller sizes")


class TestExecutionRollbackAndExhaustion:
    """The lane rolls memory back and allows exactly one repair."""

    def test_second_attempt_sees_no_write_of_the_failed_one(self) -> None:
        """Attempt 2 does not see the note attempt 1 wrote before raising."""
        agent, _ = scripted([NONE_APPEND, "result = context.get('note', 'absent')"])

        outcome = agent.run()

        assert outcome.value == "absent"
        assert "note" not in agent.runtime_context

    def test_same_failure_twice_ends_with_execution_after_two_calls(self) -> None:
        """The second exception is returned as a non-retriable execution error."""
        agent, provider = scripted(NONE_APPEND, max_generation_attempts=1)

        outcome = agent.run()

        assert (outcome.error_type, outcome.retriable, provider.calls) == ("execution", False, 2)
        assert outcome.error_message == (
            "Execution error in tester.run: AttributeError: 'NoneType' object has no attribute "
            "'append'"
        )
        assert "note" not in agent.runtime_context

    def test_log_of_an_exhausted_execution_lane(self, log_path: Path) -> None:
        """The log shows one repair, two execution failures and the rollback."""
        agent, _ = scripted(NONE_APPEND, log=log_path)

        agent.run()

        entry = last_entry(log_path)
        assert [(f["attempt_id"], f["stage"]) for f in entry["attempt_failures"]] == [
            (1, "execution"),
            (2, "execution"),
        ]
        assert (
            entry["execution_repair_attempts"],
            entry["attempt_stage"],
            entry["rollback_applied"],
            entry["validation_failure_type"],
            entry["error_class"],
            entry["failure_class"],
            entry["code"],
        ) == (1, "execution_retry", True, "execution", "ExecutionError", "intrinsic", NONE_APPEND)
