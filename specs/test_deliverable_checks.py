"""Deliverables are checked when the agent is built; a value that fails one is repaired (ADR 0097)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent.errors import UsageError
from recurgent.testing import ScriptedProvider, read_log


def _agent(replies: Any, deliverable: Any, **options: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider({"make": replies})
    options.setdefault("log", False)
    agent = Agent("maker", provider=provider, deliverable=deliverable, **options)
    return agent, provider


class TestRefusedAtConstruction:
    """A deliverable that is no valid schema and no type is a UsageError from Agent()."""

    @pytest.mark.parametrize(
        ("deliverable", "message"),
        [
            (
                {"type": "objekt"},
                "deliverable is not a valid JSON Schema: 'objekt' is not valid under any of the "
                "given schemas",
            ),
            (
                {"type": "object", "required": "a"},
                "deliverable is not a valid JSON Schema: 'a' is not of type 'array'",
            ),
            (
                42,
                "deliverable=42 is refused: a deliverable is a JSON Schema mapping (the "
                'type/required form included, e.g. {"type": "object", "required": ["items"]}) or '
                "a type pydantic can validate (a model class, list[Model], Literal[...])",
            ),
        ],
        ids=["unknown-type", "required-not-a-list", "a-number"],
    )
    def test_bad_deliverables(self, deliverable: Any, message: str) -> None:
        """Each is refused with the problem named."""
        with pytest.raises(UsageError) as raised:
            Agent("x", provider=ScriptedProvider(), log=False, deliverable=deliverable)

        assert raised.value.message == message

    @pytest.mark.parametrize("deliverable", ["a list of headlines", ["title"], True])
    def test_plain_data_that_is_no_schema(self, deliverable: Any) -> None:
        """A string, a list or a bool is neither a schema nor a type."""
        with pytest.raises(UsageError, match="is refused: a deliverable is a JSON Schema"):
            Agent("x", provider=ScriptedProvider(), log=False, deliverable=deliverable)

    def test_delegate_checks_it_too(self) -> None:
        """``delegate(..., deliverable={"type": "objekt"})`` from host code raises at once."""
        parent = Agent("x", provider=ScriptedProvider(), log=False)

        with pytest.raises(UsageError, match="not a valid JSON Schema"):
            parent.delegate("child", deliverable={"type": "objekt"})

    def test_the_type_required_form_stays_valid(self) -> None:
        """``min_items`` and ``constraints`` (the original's keys) are accepted as they are."""
        deliverable = {
            "type": "object",
            "required": ["movies"],
            "constraints": {"properties": {"movies": {"type": "array", "min_items": 1}}},
        }

        agent = Agent("x", provider=ScriptedProvider(), log=False, deliverable=deliverable)

        assert agent._agent.options.contract == {"deliverable": deliverable}


class TestRepairLane:
    """A value that fails a valid deliverable is regenerated with the mismatch fed back."""

    def test_a_repair_that_fixes_the_shape(self, log_path: Path) -> None:
        """``{'sum': 3}`` misses ``total``; the second program answers ``{'total': 3}``."""
        agent, provider = _agent(
            ["return {'sum': 3}", "return {'total': 3}"],
            {"type": "object", "required": ["total"]},
            log=log_path,
        )

        outcome = agent.make()

        assert (outcome.value, provider.calls) == ({"total": 3}, 2)
        feedback = provider.requests[1].user_prompt
        assert (
            "Delegated outcome does not satisfy deliverable contract (missing_required_key: "
            "missing required key(s) 'total'; got keys 'sum')"
        ) in feedback
        assert "return a value of the shape the deliverable declares" in feedback
        (entry,) = read_log(log_path)
        assert (entry["outcome_repair_attempts"], entry["latest_failure_class"]) == (
            1,
            "ContractViolation",
        )

    def test_the_violation_is_the_answer_once_the_budget_is_spent(self) -> None:
        """Two objects for an array: contract_violation naming both types; memory untouched."""
        agent, provider = _agent("context['made'] = True\nreturn {'a': 1}", {"type": "array"})

        outcome = agent.make()

        assert (outcome.error_type, outcome.retriable, provider.calls) == (
            "contract_violation",
            False,
            2,
        )
        assert outcome.error_message == (
            "Delegated outcome does not satisfy deliverable contract (type_mismatch: expected "
            "array, got object)"
        )
        assert "made" not in agent.runtime_context

    def test_a_json_schema_type_names_expected_and_actual(self) -> None:
        """``{'n': 'x'}`` for an integer ``n``: the path, the validator and both types."""
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        agent, _ = _agent("return {'n': 'x'}", schema, fresh_outcome_repair_budget=0)

        outcome = agent.make()

        assert outcome.error_message == (
            "Delegated outcome does not satisfy deliverable contract (schema_violation: n: 'x' "
            "is not of type 'integer' (expected integer, got string))"
        )

    def test_a_property_type_names_the_property(self) -> None:
        """The type/required form's property check says which property."""
        deliverable = {
            "type": "object",
            "constraints": {"properties": {"count": {"type": "integer"}}},
        }
        agent, _ = _agent("return {'count': 'three'}", deliverable, fresh_outcome_repair_budget=0)

        assert agent.make().error_message == (
            "Delegated outcome does not satisfy deliverable contract (property_type_mismatch: "
            "count: expected integer, got string)"
        )
