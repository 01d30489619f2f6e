"""Delegation: deliverable contracts on delegated calls, the tool registry, tolerant delegation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent.testing import ScriptedProvider, read_log

BODY = {"type": "object", "required": ["body"]}


def _delegating(
    child_code: Any, deliverable: Any, *, call: str = "work()", **options: Any
) -> tuple[Agent, ScriptedProvider]:
    """A builder whose program delegates to 'child_tool' with ``deliverable`` and returns its outcome."""
    provider = ScriptedProvider(
        {
            (
                "builder",
                "run",
            ): f"return delegate('child_tool', deliverable={deliverable!r}).{call}",
            ("child_tool", "work"): child_code,
        }
    )
    options.setdefault("log", False)
    return Agent("builder", provider=provider, **options), provider


class TestDeliverableValidation:
    """A delegated child's ok outcome is checked against its deliverable."""

    def test_matching_object_passes_unchanged(self) -> None:
        """{'body': 'ok'} satisfies a required 'body' key."""
        builder, _ = _delegating("return {'body': 'ok'}", BODY)

        outcome = builder.run()

        assert (outcome.status, outcome.value, outcome.tool_role) == (
            "ok",
            {"body": "ok"},
            "child_tool",
        )

    def test_missing_key_is_a_non_retriable_contract_violation(self) -> None:
        """An HTTP-like {'status': 200} misses 'body': the child repairs once (its outcome-repair
        budget), then answers contract_violation naming the missing and the present keys."""
        builder, provider = _delegating("return {'status': 200}", BODY)

        outcome = builder.run()

        assert (outcome.status, outcome.error_type, outcome.retriable) == (
            "error",
            "contract_violation",
            False,
        )
        assert outcome.error_message == (
            "Delegated outcome does not satisfy deliverable contract (missing_required_key: "
            "missing required key(s) 'body'; got keys 'status')"
        )
        assert outcome.metadata == {
            "mismatch": "missing_required_key",
            "expected_keys": ["body"],
            "actual_keys": ["status"],
            "expected_shape": "object",
            "actual_shape": "object",
            "missing_keys": ["body"],
        }
        assert (outcome.tool_role, outcome.method_name) == ("child_tool", "work")
        assert len(provider.requests_for("work", role="child_tool")) == 2

    def test_contract_validation_fields_in_the_child_log(self, log_path: Path) -> None:
        """The child's log line records the applied, failed validation and its keys."""
        builder, _ = _delegating("return {'status': 200}", BODY, log=log_path)

        builder.run()

        child = next(e for e in read_log(log_path) if e["role"] == "child_tool")
        assert {
            key: child[key]
            for key in (
                "contract_validation_applied",
                "contract_validation_passed",
                "contract_validation_mismatch",
                "contract_validation_expected_keys",
                "contract_validation_actual_keys",
                "failure_class",
                "contract_source",
                "contract_deliverable",
            )
        } == {
            "contract_validation_applied": True,
            "contract_validation_passed": False,
            "contract_validation_mismatch": "missing_required_key",
            "contract_validation_expected_keys": ["body"],
            "contract_validation_actual_keys": ["status"],
            "failure_class": "adaptive",
            "contract_source": "fields",
            "contract_deliverable": BODY,
        }

    @pytest.mark.parametrize(
        ("returned", "required"),
        [
            ({"pubDate": "2026-01-01"}, "pub_date"),
            ({"PubDate": "2026-01-01"}, "pub_date"),
            ({":body": "ok"}, "body"),
            ({"source-url": "u"}, "sourceURL"),
        ],
        ids=["camel", "pascal", "symbol-like", "kebab-vs-acronym"],
    )
    def test_key_tolerant_matching_adds_the_required_spelling(
        self, returned: dict[str, str], required: str
    ) -> None:
        """A required key spelled differently passes, and the value gains the required spelling."""
        deliverable = {"type": "object", "required": [required]}
        builder, _ = _delegating(f"return {returned!r}", deliverable)

        outcome = builder.run()

        [(key, text)] = returned.items()
        assert (outcome.status, outcome.value) == ("ok", {key: text, required: text})

    def test_error_outcomes_are_never_validated(self, log_path: Path) -> None:
        """A contracted child's error outcome keeps its own type; validation is not applied."""
        builder, _ = _delegating(
            "return Outcome.error('low_utility', 'nothing found')", BODY, log=log_path
        )

        outcome = builder.run()

        child = next(e for e in read_log(log_path) if e["role"] == "child_tool")
        assert outcome.error_type == "low_utility"
        assert (child["contract_validation_applied"], child["contract_validation_passed"]) == (
            False,
            None,
        )

    def test_tool_authored_status_with_empty_list_stays_ok(self) -> None:
        """status 'success_no_parse' with movies [] is ok when only required keys are declared."""
        deliverable = {"type": "object", "required": ["status", "movies"]}
        builder, _ = _delegating("return {'status': 'success_no_parse', 'movies': []}", deliverable)

        outcome = builder.run()

        assert (outcome.status, outcome.value) == (
            "ok",
            {"status": "success_no_parse", "movies": []},
        )

    def test_min_items_constraint_turns_the_empty_list_into_a_violation(self) -> None:
        """constraints.properties.movies.min_items=1 rejects movies []."""
        deliverable = {
            "type": "object",
            "required": ["status", "movies"],
            "constraints": {"properties": {"movies": {"type": "array", "min_items": 1}}},
        }
        builder, _ = _delegating("return {'status': 'success_no_parse', 'movies': []}", deliverable)

        outcome = builder.run()

        assert outcome.error_type == "contract_violation"
        assert outcome.metadata == {
            "mismatch": "min_items_violation",
            "expected_keys": ["movies"],
            "actual_keys": ["status", "movies"],
            "constraint_path": "deliverable.constraints.properties.movies.min_items",
            "expected_shape": "array",
            "actual_shape": "array",
            "expected_min_items": 1,
            "actual_items": 0,
        }

    def test_property_type_is_checked_for_every_json_type(self) -> None:
        """A declared integer property rejects a string (not only arrays are checked)."""
        deliverable = {
            "type": "object",
            "constraints": {"properties": {"count": {"type": "integer"}}},
        }
        builder, _ = _delegating("return {'count': 'three'}", deliverable)

        outcome = builder.run()

        assert (outcome.error_type, outcome.metadata["mismatch"]) == (
            "contract_violation",
            "property_type_mismatch",
        )
        assert (outcome.metadata["expected_shape"], outcome.metadata["actual_shape"]) == (
            "integer",
            "string",
        )

    def test_nil_required_input_is_a_violation(self) -> None:
        """A None first argument answered with an empty list violates the contract."""
        builder, _ = _delegating("return []", {"type": "array"}, call="work(None)")

        outcome = builder.run()

        assert outcome.metadata == {
            "mismatch": "nil_required_input",
            "expected_keys": [],
            "actual_keys": [],
            "expected_shape": "non_null_input",
            "actual_shape": "null",
        }

    def test_array_min_items(self) -> None:
        """A top-level array shorter than min_items is a violation."""
        builder, _ = _delegating("return []", {"type": "array", "min_items": 1})

        outcome = builder.run()

        assert (
            outcome.metadata["mismatch"],
            outcome.metadata["constraint_path"],
            outcome.metadata["expected_min_items"],
            outcome.metadata["actual_items"],
        ) == ("min_items_violation", "deliverable.min_items", 1, 0)


class TestToolRegistry:
    """Delegated tools are recorded in context['tools'] and can be materialized again."""

    CONTRACT = (
        "purpose='parse feeds', deliverable={'type': 'object', 'required': ['items']}, "
        "acceptance=['items is a list'], failure_policy={'on_error': 'return_error'}"
    )

    def _builder(
        self, *programs: str, parse: Any = "return {'items': [args[0]]}"
    ) -> tuple[Agent, ScriptedProvider]:
        provider = ScriptedProvider(
            {
                ("builder", "run"): list(programs),
                ("feed_parser", "parse"): parse,
                ("feed_parser", "head"): "return Outcome.error('parse_error', 'bad feed')",
            }
        )
        # Each run() is a new program here: persistence would answer the second from the first.
        return Agent("builder", provider=provider, log=False, toolstore_root=None), provider

    def test_entry_records_purpose_methods_contract_and_usage(self) -> None:
        """After calls through a handle the entry has methods used and usage counts."""
        code = (
            f"h = delegate('feed_parser', {self.CONTRACT})\n"
            "h.parse('a')\nh.parse('b')\nh.head('c')\n"
            "return sorted(context['tools']['feed_parser'])"
        )
        builder, _ = self._builder(code)

        outcome = builder.run()

        entry = builder.runtime_context["tools"]["feed_parser"]
        assert outcome.value == sorted(entry)
        assert {
            key: entry[key]
            for key in (
                "purpose",
                "methods",
                "deliverable",
                "acceptance",
                "failure_policy",
                "intent_signature",
                "intent_signatures",
                "usage_count",
                "success_count",
                "failure_count",
            )
        } == {
            "purpose": "parse feeds",
            "methods": ["parse", "head"],
            "deliverable": {"type": "object", "required": ["items"]},
            "acceptance": ["items is a list"],
            "failure_policy": {"on_error": "return_error"},
            "intent_signature": "run",
            "intent_signatures": ["run"],
            "usage_count": 3,
            "success_count": 2,
            "failure_count": 1,
        }
        assert entry["last_used_at"] >= entry["created_at"]

    def test_tool_rematerializes_with_the_recorded_contract(self) -> None:
        """tool('feed_parser') in a later call gets the recorded contract in prompt and checks."""
        first = f"delegate('feed_parser', {self.CONTRACT})\nreturn 'registered'"
        second = "return tool('feed_parser').parse('x')"
        builder, provider = self._builder(first, second, parse="return {'entries': []}")

        builder.run()
        outcome = builder.run()

        child_prompt = provider.requests_for("parse", role="feed_parser")[0].system_prompt
        assert "- purpose: 'parse feeds'" in child_prompt
        assert "- failure_policy: {'on_error': 'return_error'}" in child_prompt
        assert (outcome.error_type, outcome.metadata["expected_keys"]) == (
            "contract_violation",
            ["items"],
        )

    def test_tool_from_user_code_rebuilds_the_contract(self) -> None:
        """agent.tool(name) outside generated code also carries the recorded contract."""
        builder, provider = self._builder(
            f"delegate('feed_parser', {self.CONTRACT})\nreturn 'registered'"
        )
        builder.run()

        outcome = builder.tool("feed_parser").parse("x")

        assert outcome.value == {"items": ["x"]}
        prompt = provider.requests_for("parse", role="feed_parser")[0].system_prompt
        assert "- deliverable: {'type': 'object', 'required': ['items']}" in prompt


class TestTolerantDelegation:
    """A Tool Builder whose delegate fails gets a typed error Outcome and carries on."""

    @pytest.mark.parametrize(
        ("reply", "error_type", "retriable"),
        [
            (RuntimeError("upstream returned 503"), "provider", True),
            (None, "invalid_code", True),
            ("raise KeyError('missing')", "execution", False),
        ],
        ids=["provider", "invalid-code", "execution"],
    )
    def test_failed_delegate_then_next_delegate(
        self, reply: Any, error_type: str, retriable: bool
    ) -> None:
        """The first child's typed error is visible to the code, and the second child works."""
        code = (
            "first = delegate('flaky_tool').analyze()\n"
            "second = delegate('stable_tool').analyze()\n"
            "return [first.error_type, first.retriable, second.value]"
        )
        provider = ScriptedProvider(
            {
                ("builder", "run"): code,
                ("flaky_tool", "analyze"): reply,
                ("stable_tool", "analyze"): "return 'fine'",
            }
        )
        builder = Agent("builder", provider=provider, log=False)

        outcome = builder.run()

        assert outcome.value == [error_type, retriable, "fine"]
        assert sorted(builder.runtime_context["tools"]) == ["flaky_tool", "stable_tool"]
        assert builder.runtime_context["tools"]["flaky_tool"]["failure_count"] == 1


class TestEnclosingDeadline:
    """A delegated call never outlives the attempt of the parent code that made it."""

    def test_child_timeout_is_capped_by_the_parent_attempt(self) -> None:
        """A child with its own 30 s limit, called from a 1 s parent attempt, gets < 1 s."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('looper').spin()",
                ("looper", "spin"): "while True:\n    pass",
            }
        )
        parent = Agent("builder", provider=provider, log=False, execution_timeout_seconds=1)
        outcome = parent.run()
        assert outcome.error_type == "timeout"
        assert [r.method_name for r in provider.requests] == ["run", "spin"]
        limit = re.search(r"execution_timeout_seconds=([0-9.]+)", outcome.error_message or "")
        assert limit is not None
        assert float(limit.group(1)) < 1.0
