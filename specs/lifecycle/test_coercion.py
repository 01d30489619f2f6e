"""Coercion: whatever generated code returns becomes an Outcome, by the rules of coerce_outcome."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent import Agent
from recurgent.testing import ScriptedProvider

from .support import scripted


class TestCoercionOfReturnedValues:
    """Each kind of returned value, run through a real call."""

    @pytest.mark.parametrize(
        ("program", "value"),
        [
            ("return 42", 42),
            ("result = None", None),
            ("return False", False),
            ("return Outcome.ok(5)", 5),
            ("return {'status': 'ok', 'value': 3}", 3),
            ("return {'status': 'OK', 'value': [3]}", [3]),
            ("return {'status': 'ok', 'items': [1, 2]}", {"status": "ok", "items": [1, 2]}),
            ("return {'status': 200, 'body': 'x'}", {"status": 200, "body": "x"}),
            ("return {'status': 'weird', 'x': 1}", {"status": "weird", "x": 1}),
            (
                "return {'status': 'success_no_parse', 'movies': []}",
                {"status": "success_no_parse", "movies": []},
            ),
        ],
        ids=[
            "raw",
            "none",
            "false",
            "outcome",
            "ok-envelope",
            "ok-envelope-any-case",
            "ok-with-data-keeps-dict",
            "http-like",
            "other-status",
            "tool-authored-status",
        ],
    )
    def test_ok_values(self, program: str, value: Any) -> None:
        """The value is unwrapped or kept whole as the rules say, attributed to this call."""
        agent, _ = scripted(program)

        outcome = agent.run()

        assert (outcome.status, outcome.value, outcome.tool_role, outcome.method_name) == (
            "ok",
            value,
            "tester",
            "run",
        )

    def test_error_shaped_mapping_becomes_an_error_outcome(self) -> None:
        """status 'error' reads type, message and retriable; other keys become metadata."""
        agent, _ = scripted(
            "return {'status': 'error', 'error_type': 'unsupported_capability', "
            "'error_message': 'no timers', 'hint': 'use a scheduler'}"
        )

        outcome = agent.run()

        assert (
            outcome.status,
            outcome.error_type,
            outcome.error_message,
            outcome.retriable,
            outcome.metadata,
            outcome.tool_role,
        ) == (
            "error",
            "unsupported_capability",
            "no timers",
            False,
            {"hint": "use a scheduler"},
            "tester",
        )

    def test_bare_error_mapping_defaults_to_execution(self) -> None:
        """{'status': 'error'} alone is an execution error with the default message."""
        agent, _ = scripted("return {'status': 'error'}")

        outcome = agent.run()

        assert (outcome.error_type, outcome.error_message, outcome.retriable) == (
            "execution",
            "Execution failed",
            False,
        )

    def test_retriable_must_be_exactly_true(self) -> None:
        """A string 'true' does not make an error retriable (so it is not regenerated)."""
        agent, provider = scripted(
            "return {'status': 'error', 'error_type': 'fetch_failed', 'retriable': 'true'}"
        )

        outcome = agent.run()

        assert (outcome.retriable, provider.calls) == (False, 1)

    def test_child_outcome_keeps_its_attribution(self) -> None:
        """A child's Outcome returned by the parent is passed on with the child's role and method."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('child_tool').work(2)",
                ("child_tool", "work"): "return args[0] * 10",
            }
        )
        builder = Agent("builder", provider=provider, log=False)

        outcome = builder.run()

        assert (outcome.value, outcome.tool_role, outcome.method_name) == (20, "child_tool", "work")

    def test_error_built_in_code_is_attributed_to_the_running_call(self) -> None:
        """Outcome.error without role or method gets the executing call's role and method."""
        agent, _ = scripted("return Outcome.error('low_utility', 'nothing useful')", method="ask")

        outcome = agent.ask()

        assert (outcome.tool_role, outcome.method_name, outcome.error_type) == (
            "tester",
            "ask",
            "low_utility",
        )
