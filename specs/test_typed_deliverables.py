"""Typed deliverables: pydantic types and JSON Schema, validated by real validators (ADR 0045)."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel

from recurgent import Agent, UsageError
from recurgent._contracts import validate_deliverable
from recurgent.testing import ScriptedProvider


class Headline(BaseModel):
    """A model a caller wants back."""

    title: str
    score: int


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer", "minimum": 0}},
    "required": ["n"],
}


def _agent(code: str, **options: Any) -> Agent:
    # Each agent here gets another program for news.top: no stored program may answer.
    return Agent(
        "news",
        provider=ScriptedProvider({("news", "top"): code}),
        log=False,
        toolstore_root=None,
        **options,
    )


class TestPydanticDeliverables:
    """A type pydantic accepts validates strictly and, at the top level, comes back typed."""

    def test_top_level_value_is_the_model_instance(self) -> None:
        """``deliverable=list[Headline]`` turns a matching plain list into model instances."""
        outcome = _agent("result = [{'title': 'a', 'score': 3}]", deliverable=list[Headline]).top()
        assert outcome.value == [Headline(title="a", score=3)]

    def test_string_for_an_integer_is_a_contract_violation(self) -> None:
        """``'3'`` where ``int`` is declared fails; the message names the path and the problem."""
        outcome = _agent(
            "result = [{'title': 'a', 'score': '3'}]", deliverable=list[Headline]
        ).top()
        assert (outcome.error_type, outcome.error_message, outcome.metadata["validator_path"]) == (
            "contract_violation",
            "Delegated outcome does not satisfy deliverable contract (schema_violation: "
            "expected list[Headline]; 0.score: Input should be a valid integer (got string))",
            "0.score",
        )

    def test_literal_and_mapping_types(self) -> None:
        """``Literal`` and ``dict[str, float]`` deliverables check values the same way."""
        assert _agent("result = 'b'", deliverable=Literal["a", "b"]).top().value == "b"
        assert _agent("result = 'c'", deliverable=Literal["a", "b"]).top().error_type == (
            "contract_violation"
        )
        assert _agent("result = {'x': 1.5}", deliverable=dict[str, float]).top().value == {"x": 1.5}

    def test_generated_code_sees_plain_data_from_a_typed_tool(self) -> None:
        """A child delegated by the host with a model is used by code through ``tool()``: plain dicts."""
        provider = ScriptedProvider(
            {
                ("desk", "run"): "out = tool('scorer').go()\nresult = type(out.value).__name__",
                ("scorer", "go"): "result = {'title': 't', 'score': 1}",
            }
        )
        desk = Agent("desk", provider=provider, log=False)
        desk.delegate("scorer", deliverable=Headline)
        assert desk.run().value == "dict"
        assert type(desk.runtime_context["tools"]["scorer"]["deliverable"]) is dict

    def test_prompt_shows_the_json_schema(self) -> None:
        """The model sees the type's JSON Schema (its property names and types) in the prompt."""
        provider = ScriptedProvider({("news", "top"): "result = {'title': 't', 'score': 1}"})
        Agent("news", provider=provider, log=False, deliverable=Headline).top()
        prompt = provider.requests[-1].system_prompt
        assert "'score': {'title': 'Score', 'type': 'integer'}" in prompt


class TestJsonSchemaDeliverables:
    """A JSON Schema mapping is checked by jsonschema at any depth."""

    def _delegating(self, child_code: str) -> Agent:
        provider = ScriptedProvider(
            {
                ("builder", "run"): f"return delegate('child', deliverable={SCHEMA!r}).go()",
                ("child", "go"): child_code,
            }
        )
        return Agent("builder", provider=provider, log=False)

    def test_matching_value_passes(self) -> None:
        """``{'n': 4}`` satisfies the schema and comes back unchanged."""
        assert self._delegating("result = {'n': 4}").run().value == {"n": 4}

    def test_string_for_an_integer_fails(self) -> None:
        """``{'n': 'x'}`` fails with the validator's path and message."""
        outcome = self._delegating("result = {'n': 'x'}").run()
        assert (outcome.error_type, outcome.metadata["validator_path"]) == (
            "contract_violation",
            "n",
        )
        assert outcome.metadata["validator_message"] == "'x' is not of type 'integer'"

    def test_nested_minimum_is_enforced(self) -> None:
        """A keyword below the top level (``minimum``) is checked too."""
        check = validate_deliverable(SCHEMA, {"n": -1}, (), {})
        assert (check.passed, check.details["validator_path"]) == (False, "n")

    def test_ruby_style_mapping_is_not_a_json_schema(self) -> None:
        """The type/required form keeps its tolerant checks (``pubDate`` satisfies ``pub_date``)."""
        check = validate_deliverable(
            {"type": "object", "required": ["pub_date"]}, {"pubDate": "x"}, (), {}
        )
        assert (check.passed, check.canonical_value) == (True, {"pubDate": "x", "pub_date": "x"})


class TestDeliverableOption:
    """Bad deliverables are developer mistakes caught at construction."""

    def test_invalid_json_schema_is_a_usage_error(self) -> None:
        """``{"type": "object", "properties": 5}`` is refused with the schema problem."""
        with pytest.raises(UsageError, match="not a valid JSON Schema"):
            Agent("x", log=False, deliverable={"type": "object", "properties": 5})

    def test_unsupported_object_is_a_usage_error(self) -> None:
        """An arbitrary object is neither a schema nor a type."""
        with pytest.raises(UsageError, match="deliverable must be a mapping"):
            Agent("x", log=False, deliverable=object())
