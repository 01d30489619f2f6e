"""Guardrail lane: trigger, feedback, rollback, exhaustion and terminal violations."""

from __future__ import annotations

from pathlib import Path

import pytest

from recurgent import Agent
from recurgent._guardrails import MUTATION_CORRECTION
from recurgent._lifecycle import USER_FACING_EXHAUSTION
from recurgent.testing import ScriptedProvider

from .support import FIXED, last_entry, scripted, tag

MUTATING = "h = delegate('helper')\nh.helper = lambda: 1\nresult = 1"
MUTATION_MESSAGE = (
    "Generated code defines methods on an existing object or class; defining singleton methods "
    "on Agent instances or mutating host classes is not supported; use tool/delegate "
    "invocation paths"
)
MUTATION_CAUSE = f"Last cause: singleton_method_mutation: {MUTATION_MESSAGE}."
"""The one sentence an exhausted guardrail lane appends to its message."""


class TestGuardrailFeedback:
    """A violation regenerates the program with a <guardrail_feedback> block."""

    def test_violation_then_valid_program_succeeds_in_two_calls(self) -> None:
        """A static violation followed by a valid program gives ok after two provider calls."""
        agent, provider = scripted([MUTATING, FIXED])

        outcome = agent.run()

        assert (outcome.status, outcome.value, provider.calls) == ("ok", "fixed", 2)

    def test_feedback_names_class_type_subtype_location_correction_and_budget(self) -> None:
        """The retry prompt carries every guardrail field with the violation's values."""
        agent, provider = scripted([MUTATING, FIXED])

        agent.run()

        prompt = provider.requests[1].user_prompt
        fields = {
            name: tag(prompt, name)
            for name in (
                "guardrail_class",
                "violation_type",
                "violation_subtype",
                "violation_message",
                "violation_location",
                "required_correction",
                "attempt_number",
                "remaining_guardrail_budget",
            )
        }
        assert fields == {
            "guardrail_class": "recoverable_guardrail",
            "violation_type": "tool_registry_violation",
            "violation_subtype": "singleton_method_mutation",
            "violation_message": MUTATION_MESSAGE,
            "violation_location": "line 2: h.helper = lambda: 1",
            "required_correction": MUTATION_CORRECTION,
            "attempt_number": "2",
            "remaining_guardrail_budget": "0",
        }

    def test_first_prompt_has_no_feedback_and_retry_prompt_extends_it(self) -> None:
        """Attempt 2's prompt is attempt 1's prompt plus the feedback block and instruction."""
        agent, provider = scripted([MUTATING, FIXED])

        agent.run()

        first, second = (request.user_prompt for request in provider.requests)
        assert "<guardrail_feedback>" not in first
        assert second.startswith(first)
        assert second.rstrip().endswith("does not repeat the refused mechanism.")

    def test_log_of_a_recovered_call_keeps_counters_and_failure(self, log_path: Path) -> None:
        """The log shows one guardrail recovery and the failed attempt; the last attempt is clean."""
        agent, _ = scripted([MUTATING, FIXED], log=log_path)

        agent.run()

        entry = last_entry(log_path)
        failures = entry["attempt_failures"]
        assert [
            (f["attempt_id"], f["stage"], f["error_class"], f["subtype"]) for f in failures
        ] == [(1, "validation", "GuardrailViolationError", "singleton_method_mutation")]
        assert failures[0]["call_id"] == entry["call_id"]
        assert {
            key: entry[key]
            for key in (
                "attempt_id",
                "attempt_stage",
                "rollback_applied",
                "retry_feedback_injected",
                "validation_failure_type",
                "guardrail_violation_subtype",
                "guardrail_recovery_attempts",
                "execution_repair_attempts",
                "outcome_repair_attempts",
                "guardrail_retry_exhausted",
                "latest_failure_stage",
                "latest_failure_message",
            )
        } == {
            "attempt_id": 2,
            "attempt_stage": "executed",
            "rollback_applied": False,
            "retry_feedback_injected": True,
            "validation_failure_type": None,
            "guardrail_violation_subtype": None,
            "guardrail_recovery_attempts": 1,
            "execution_repair_attempts": 0,
            "outcome_repair_attempts": 0,
            "guardrail_retry_exhausted": False,
            "latest_failure_stage": "validation",
            "latest_failure_message": MUTATION_MESSAGE,
        }


class TestGuardrailRollback:
    """A violating attempt leaves nothing behind, and memory is restored in place."""

    PROGRAM = (
        "context['note'] = 'polluted'\n"
        "context['items'].append(2)\n"
        "context['settings']['mode'] = 'changed'\n"
        "context['items'] = ['replaced']\n"
        "delegate('web_fetcher', purpose='fetch pages')\n"
        "result = {'items': [1]}"
    )

    def test_memory_and_registry_return_to_their_state_before_the_attempt(self) -> None:
        """Writes, a registered tool and a replaced list made before a violation are undone."""
        agent, provider = scripted([self.PROGRAM, "result = sorted(context)"])
        agent.remember(items=[1], settings={"mode": "plain"})

        outcome = agent.run()

        assert outcome.value == ["conversation_history", "items", "settings"]
        assert provider.calls == 2
        assert tag(provider.requests[1].user_prompt, "violation_subtype") == (
            "missing_external_provenance"
        )

    def test_references_held_by_the_caller_stay_valid_and_show_old_contents(self) -> None:
        """The memory dict and a nested list the caller holds are the same objects, restored."""
        agent, _ = scripted([self.PROGRAM] * 2)
        agent.remember(items=[1], settings={"mode": "plain"})
        memory = agent.runtime_context
        items = memory["items"]
        settings = memory["settings"]

        outcome = agent.run()

        assert outcome.error_type == "guardrail_retry_exhausted"
        assert agent.runtime_context is memory
        assert memory["items"] is items
        assert memory["settings"] is settings
        assert (items, settings) == ([1], {"mode": "plain"})
        assert sorted(memory) == ["conversation_history", "items", "settings"]

    def test_log_of_a_rolled_back_final_attempt(self, log_path: Path) -> None:
        """An exhausted call logs the rollback of its last attempt."""
        agent, _ = scripted([self.PROGRAM] * 2, log=log_path)
        agent.remember(items=[1], settings={"mode": "plain"})

        agent.run()

        entry = last_entry(log_path)
        assert (
            entry["attempt_stage"],
            entry["rollback_applied"],
            entry["validation_failure_type"],
            entry["guardrail_violation_subtype"],
        ) == ("rolled_back", True, "tool_registry_violation", "missing_external_provenance")


class TestGuardrailExhaustion:
    """Violations beyond guardrail_recovery_budget end the call with guardrail_retry_exhausted."""

    def test_top_level_exhaustion_is_normalized_for_the_user(self) -> None:
        """At depth 0 the user sees a plain message; the technical detail stays in metadata."""
        agent, provider = scripted(MUTATING)

        outcome = agent.run()

        assert provider.calls == 2
        assert (outcome.status, outcome.error_type, outcome.retriable) == (
            "error",
            "guardrail_retry_exhausted",
            False,
        )
        assert outcome.error_message == f"{USER_FACING_EXHAUSTION} {MUTATION_CAUSE}"
        assert outcome.error_message.startswith(
            "This request couldn't be completed after multiple attempts. Last cause: "
        )
        assert outcome.metadata == {
            "guardrail_recovery_attempts": 2,
            "guardrail_class": "recoverable_guardrail",
            "last_violation_type": "tool_registry_violation",
            "last_violation_subtype": "singleton_method_mutation",
            "last_violation_message": MUTATION_MESSAGE,
            "normalized": True,
            "normalization_policy": "guardrail_exhaustion_boundary_v1",
            "guardrail_subtype": "singleton_method_mutation",
            "raw_error_message": "Recoverable guardrail retries exhausted for tester.run. "
            + MUTATION_CAUSE,
        }

    def test_exhaustion_log_fields(self, log_path: Path) -> None:
        """The log keeps the raw error, the exhaustion flag and the adaptive failure class."""
        agent, _ = scripted(MUTATING, log=log_path)

        agent.run()

        entry = last_entry(log_path)
        assert {
            key: entry[key]
            for key in (
                "guardrail_retry_exhausted",
                "guardrail_recovery_attempts",
                "failure_class",
                "error_class",
                "error_message",
                "outcome_error_type",
                "outcome_error_message",
            )
        } == {
            "guardrail_retry_exhausted": True,
            "guardrail_recovery_attempts": 2,
            "failure_class": "adaptive",
            "error_class": "GuardrailRetryExhaustedError",
            "error_message": "Recoverable guardrail retries exhausted for tester.run. "
            + MUTATION_CAUSE,
            "outcome_error_type": "guardrail_retry_exhausted",
            "outcome_error_message": f"{USER_FACING_EXHAUSTION} {MUTATION_CAUSE}",
        }
        assert [f["stage"] for f in entry["attempt_failures"]] == ["validation", "validation"]

    def test_zero_budget_exhausts_on_the_first_violation(self) -> None:
        """guardrail_recovery_budget=0 gives exhaustion after one call, attempts 1."""
        agent, provider = scripted([MUTATING, FIXED], guardrail_recovery_budget=0)

        outcome = agent.run()

        assert (outcome.error_type, provider.calls) == ("guardrail_retry_exhausted", 1)
        assert outcome.metadata["guardrail_recovery_attempts"] == 1

    def test_budget_two_allows_two_regenerations_with_decreasing_remaining_budget(self) -> None:
        """guardrail_recovery_budget=2 makes three calls; the feedback counts the budget down."""
        agent, provider = scripted(MUTATING, guardrail_recovery_budget=2)

        outcome = agent.run()

        assert (outcome.error_type, provider.calls) == ("guardrail_retry_exhausted", 3)
        assert outcome.metadata["guardrail_recovery_attempts"] == 3
        remaining = [
            tag(r.user_prompt, "remaining_guardrail_budget") for r in provider.requests[1:]
        ]
        attempts = [tag(r.user_prompt, "attempt_number") for r in provider.requests[1:]]
        assert (remaining, attempts) == (["1", "0"], ["2", "3"])

    def test_depth_one_exhaustion_keeps_the_raw_message(self) -> None:
        """A delegate's exhaustion, returned by its parent, is not normalized."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('child_tool').work()",
                ("child_tool", "work"): MUTATING,
            }
        )
        builder = Agent("builder", provider=provider, log=False)

        outcome = builder.run()

        assert (outcome.error_type, outcome.tool_role) == (
            "guardrail_retry_exhausted",
            "child_tool",
        )
        assert outcome.error_message == (
            f"Recoverable guardrail retries exhausted for child_tool.work. {MUTATION_CAUSE}"
        )
        assert "normalized" not in outcome.metadata
        assert outcome.metadata["last_violation_subtype"] == "singleton_method_mutation"
        assert len(provider.requests_for("work", role="child_tool")) == 2


class TestTerminalGuardrails:
    """Violations about credentials or missing capabilities end the call without a retry."""

    @pytest.mark.parametrize("role", ["API key vault", "missing credential probe"])
    def test_terminal_message_is_not_retried_and_is_rolled_back(self, role: str) -> None:
        """A violation whose message mentions an API key or a missing credential ends the call."""
        program = f"context['note'] = 'written'\nresult = delegate({role.upper()!r})"
        agent, provider = scripted([program, FIXED], role=role)

        outcome = agent.run()

        assert provider.calls == 1
        assert (outcome.status, outcome.error_type, outcome.retriable) == (
            "error",
            "tool_registry_violation",
            False,
        )
        assert outcome.metadata["guardrail_class"] == "terminal_guardrail"
        assert outcome.metadata["guardrail_subtype"] == "self_materialization"
        assert "note" not in agent.runtime_context

    def test_terminal_violation_log(self, log_path: Path) -> None:
        """A terminal violation logs one validation failure and no recovery attempt."""
        agent, _ = scripted(
            "result = delegate('API KEY VAULT')", role="api key vault", log=log_path
        )

        agent.run()

        entry = last_entry(log_path)
        assert (
            entry["guardrail_recovery_attempts"],
            len(entry["attempt_failures"]),
            entry["rollback_applied"],
            entry["error_class"],
            entry["guardrail_retry_exhausted"],
        ) == (0, 1, True, "GuardrailViolationError", False)

    def test_registry_broken_by_the_caller_is_terminal(self) -> None:
        """An executable the caller put in the registry fails before any program runs, once."""
        agent, provider = scripted([FIXED, FIXED])
        agent.runtime_context["tools"] = {"fetcher": {"purpose": "fetch", "run": len}}

        outcome = agent.run()

        assert (outcome.error_type, provider.calls) == ("tool_registry_violation", 1)
        assert outcome.error_message == (
            "Tool registry metadata cannot store executable objects (pre_execution tester.run): "
            "context['tools']['fetcher']['run']"
        )
        assert outcome.metadata["guardrail_class"] == "terminal_guardrail"
        assert "after" not in agent.runtime_context
