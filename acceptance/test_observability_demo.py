"""Scenario 7: a tool builder keeps going when one of its three tools never gets a program.

Like the Ruby demo this is deterministic by construction (its point is a model that keeps
failing), so it runs in the two offline modes only.
"""

from __future__ import annotations

from acceptance.harness import Backend, children_of, log_shape, single_trace
from acceptance.programs.tools import BUILDER_ROLE, FINANCE_TOOL, PLACES_TOOL, REASONING_TOOL


class TestObservabilityDemo:
    def test_builder_reports_two_ok_three_errors_in_six_log_lines(
        self, offline_provider: Backend
    ) -> None:
        """The flaky tool's three calls are invalid_code after two generations; run() is ok."""
        builder = offline_provider.agent(BUILDER_ROLE, max_generation_attempts=2)
        outcome = builder.run()
        entries = offline_provider.log()

        flaky = (1, PLACES_TOOL, "analyze", "error", "invalid_code")
        assert [
            (1, FINANCE_TOOL, "analyze", "ok", None),
            flaky,
            (1, REASONING_TOOL, "analyze", "ok", None),
            flaky,
            flaky,
            (0, BUILDER_ROLE, "run", "ok", None),
        ] == log_shape(entries)
        single_trace(entries)
        assert entries[:5] == children_of(entries, entries[5])
        assert [entry["generation_attempt"] for entry in entries] == [1, 2, 1, 2, 2, 1]
        assert [e["outcome_retriable"] for e in entries if e["role"] == PLACES_TOOL] == [True] * 3
        # Never generated, never run: the flaky tool's lines name no execution receiver.
        assert [e["execution_receiver"] for e in entries] == [
            "sandbox",
            None,
            "sandbox",
            None,
            None,
            "sandbox",
        ]
        assert len(offline_provider.requests_for(PLACES_TOOL, "analyze")) == 6
        assert outcome.is_ok
        assert {key: outcome.value[key] for key in ("ok_count", "error_count", "synthesis")} == {
            "ok_count": 2,
            "error_count": 3,
            "synthesis": "continued_despite_partial_failure",
        }
        assert [(f["role"], f["type"], f["retriable"]) for f in outcome.value["failures"]] == [
            (PLACES_TOOL, "invalid_code", True)
        ] * 3
        assert len(builder.runtime_context["all_outcomes"]) == 5
