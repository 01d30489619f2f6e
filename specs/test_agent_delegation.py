"""Agent.delegate, Agent.tool, and delegation from generated code: inheritance, budgets, registry, handles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, BudgetExceededError, GuardrailViolationError, UsageError
from recurgent.testing import ScriptedProvider


def _agent(role: str = "calculator", **options: Any) -> tuple[Agent, ScriptedProvider]:
    provider = options.pop("provider", None) or ScriptedProvider()
    options.setdefault("log", False)
    return Agent.for_(role, provider=provider, **options), provider


def _options(agent: Agent) -> Any:
    """The validated options of an agent (white-box: they are not public)."""
    return agent._agent.options


class TestDelegate:
    """delegate builds a child that inherits the parent's settings."""

    def test_child_inherits_settings(self, log_path: Path) -> None:
        """Provider, model, log, debug, budgets, timeouts, trace id and network are inherited."""
        parent, provider = _agent(
            "planner",
            log=log_path,
            model="m-1",
            debug=True,
            verbose=True,
            max_generation_attempts=4,
            guardrail_recovery_budget=2,
            fresh_outcome_repair_budget=3,
            provider_timeout_seconds=45,
            execution_timeout_seconds=12,
            delegation_budget=5,
            trace_id="trace-1",
            network="deny",
        )

        child = _options(parent.delegate("tax expert"))

        inherited = {
            "provider": child.provider,
            "model": child.model,
            "log": child.log,
            "debug": child.debug,
            "verbose": child.verbose,
            "max_generation_attempts": child.max_generation_attempts,
            "guardrail_recovery_budget": child.guardrail_recovery_budget,
            "fresh_outcome_repair_budget": child.fresh_outcome_repair_budget,
            "provider_timeout_seconds": child.provider_timeout_seconds,
            "execution_timeout_seconds": child.execution_timeout_seconds,
            "delegation_budget": child.delegation_budget,
            "trace_id": child.trace_id,
            "network": child.network,
        }
        assert inherited == {
            "provider": provider,
            "model": "m-1",
            "log": log_path,
            "debug": True,
            "verbose": True,
            "max_generation_attempts": 4,
            "guardrail_recovery_budget": 2,
            "fresh_outcome_repair_budget": 3,
            "provider_timeout_seconds": 45.0,
            "execution_timeout_seconds": 12.0,
            "delegation_budget": 4,
            "trace_id": "trace-1",
            "network": "deny",
        }

    def test_child_with_logging_off_stays_off(self) -> None:
        """A parent with log=False gives a child with no log."""
        parent, _ = _agent(log=False)

        assert _options(parent.delegate("helper")).log is None

    def test_overrides_win_over_inherited_values(self) -> None:
        """Runtime options given to delegate replace the inherited ones."""
        parent, _ = _agent(model="m-1", delegation_budget=5)

        child = _options(parent.delegate("helper", model="m-2", delegation_budget=None))

        assert (child.model, child.delegation_budget) == ("m-2", None)

    def test_unlimited_budget_stays_unlimited(self) -> None:
        """A parent with delegation_budget=None gives a child with None."""
        parent, _ = _agent(delegation_budget=None)

        assert _options(parent.delegate("helper")).delegation_budget is None

    def test_parent_budget_is_not_consumed(self) -> None:
        """Delegating twice leaves the parent's budget unchanged; each child gets parent - 1."""
        parent, _ = _agent(delegation_budget=2)

        first = parent.delegate("one")
        second = parent.delegate("two")

        assert _options(parent).delegation_budget == 2
        assert [_options(first).delegation_budget, _options(second).delegation_budget] == [1, 1]

    def test_zero_budget_raises_budget_exceeded(self) -> None:
        """Delegating with budget 0 raises BudgetExceededError (error_type budget_exceeded)."""
        parent, _ = _agent(delegation_budget=0)

        with pytest.raises(BudgetExceededError) as raised:
            parent.delegate("helper")

        assert (
            str(raised.value) == "Delegation budget exceeded in calculator.delegate (remaining: 0)"
        )
        assert raised.value.error_type == "budget_exceeded"
        assert "tools" not in parent.runtime_context

    @pytest.mark.parametrize("role", ["calculator", "CALCULATOR", "  Calculator "])
    def test_delegating_to_own_role_is_refused(self, role: str) -> None:
        """delegate(own role, any case) raises a self-materialization violation."""
        parent, _ = _agent()

        with pytest.raises(GuardrailViolationError, match="Self-materialization is not allowed"):
            parent.delegate(role)

    def test_blank_role_is_a_usage_error(self) -> None:
        """delegate("  ") raises UsageError."""
        parent, _ = _agent()

        with pytest.raises(UsageError, match="non-empty role"):
            parent.delegate("  ")

    def test_delegated_roles_are_recorded_in_tools(self) -> None:
        """Each delegated role gets a plain metadata entry in runtime_context["tools"]."""
        parent, _ = _agent()

        parent.delegate("web_fetcher", purpose="fetch pages", deliverable={"type": "object"})
        parent.delegate("summarizer")

        tools = parent.runtime_context["tools"]
        assert sorted(tools) == ["summarizer", "web_fetcher"]
        assert tools["web_fetcher"]["purpose"] == "fetch pages"
        assert tools["web_fetcher"]["deliverable"] == {"type": "object"}
        assert tools["summarizer"]["purpose"] == "purpose unavailable"

    def test_child_carries_the_contract_fields(self) -> None:
        """Contract fields given to delegate become the child's contract (source fields)."""
        parent, _ = _agent()

        child = parent.delegate("web_fetcher", purpose="fetch", failure_policy="partial")

        assert _options(child).contract == {"purpose": "fetch", "failure_policy": "partial"}
        assert _options(child).contract_source == "fields"

    def test_bad_contract_mapping_is_refused(self) -> None:
        """delegate(..., delegation_contract="x") raises UsageError and records nothing."""
        parent, _ = _agent()

        with pytest.raises(UsageError, match="delegation_contract must be a mapping"):
            parent.delegate("helper", delegation_contract="x")  # type: ignore[arg-type]  # on purpose

        assert "tools" not in parent.runtime_context

    def test_unknown_options_are_ignored_with_a_debug_warning(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Non-runtime options are ignored; in debug mode stderr lists them sorted."""
        parent, _ = _agent("planner", debug=True)

        # Options of the original's delegate that this runtime ignores: unknown to the types.
        child = parent.delegate("helper", methods=["x"], capabilities=["y"])  # type: ignore[call-arg]

        assert repr(child) == "<Agent(helper) context=[]>"
        assert capsys.readouterr().err == (
            "[AGENT DELEGATE OPTION IGNORE planner->helper] ignored non-runtime options: "
            "capabilities, methods\n"
        )

    def test_unknown_options_are_silent_without_debug(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without debug, ignored options print nothing."""
        parent, _ = _agent()

        parent.delegate("helper", methods=["x"])  # type: ignore[call-arg]  # ignored option

        assert capsys.readouterr().err == ""

    def test_delegate_makes_no_provider_call(self) -> None:
        """Creating a child calls no provider."""
        parent, provider = _agent()

        parent.delegate("helper")

        assert provider.calls == 0


class TestTool:
    """tool(name) materializes a recorded tool again."""

    def test_tool_rebuilds_a_recorded_tool_with_its_contract(self) -> None:
        """tool(name) gives an agent whose contract comes from the registry entry."""
        parent, _ = _agent()
        parent.delegate(
            "web_fetcher",
            purpose="fetch pages",
            deliverable={"type": "object"},
            acceptance="has body",
            failure_policy="return error",
        )

        tool = parent.tool("web_fetcher")

        assert repr(tool) == "<Agent(web_fetcher) context=[]>"
        assert _options(tool).contract == {
            "purpose": "fetch pages",
            "deliverable": {"type": "object"},
            "acceptance": "has body",
            "failure_policy": "return error",
        }

    def test_explicit_contract_fields_override_the_registry(self) -> None:
        """A field passed to tool() wins over the recorded one."""
        parent, _ = _agent()
        parent.delegate("web_fetcher", purpose="fetch pages")

        tool = parent.tool("web_fetcher", purpose="fetch feeds")

        assert _options(tool).contract == {"purpose": "fetch feeds"}

    def test_missing_tool_names_known_tools(self) -> None:
        """tool("missing") raises UsageError listing the recorded tools."""
        parent, _ = _agent()
        parent.delegate("web_fetcher")
        parent.delegate("summarizer")

        with pytest.raises(UsageError) as raised:
            parent.tool("missing")

        assert str(raised.value) == (
            "Unknown tool 'missing' in calculator.tool; known tools: summarizer, web_fetcher"
        )

    def test_missing_tool_with_empty_registry(self) -> None:
        """With no tools recorded the message says none."""
        parent, _ = _agent()

        with pytest.raises(UsageError, match="known tools: none"):
            parent.tool("missing")

    def test_tool_of_own_role_is_refused(self) -> None:
        """tool(own role) raises a self-materialization violation."""
        parent, _ = _agent()

        with pytest.raises(GuardrailViolationError, match=r"calculator\.tool"):
            parent.tool("Calculator")


class TestDelegateFromGeneratedCode:
    """Generated code calling delegate(...) works on a handle backed by a real child Agent."""

    def test_returned_handle_is_a_real_agent_for_the_host(self) -> None:
        """A handle returned by generated code reaches the host as the child Agent."""
        provider = ScriptedProvider(
            {
                ("planner", "make"): "return delegate('helper', purpose='help')",
                ("helper", "work"): "result = 'done'",
            }
        )
        parent, _ = _agent("planner", provider=provider, delegation_budget=3)

        outcome = parent.make()

        child = outcome.value
        assert isinstance(child, Agent)
        assert repr(child) == "<Agent(helper) context=[]>"
        assert _options(child).delegation_budget == 2
        assert _options(child).contract == {"purpose": "help", "intent_signature": "make"}
        assert child.work().value == "done"

    def test_generated_delegate_records_the_inferred_intent(self) -> None:
        """A delegate call from code with no intent_signature records the calling method."""
        provider = ScriptedProvider({("planner", "make"): "child = delegate('helper')\nresult = 1"})
        parent, _ = _agent("planner", provider=provider)

        parent.make("soon")

        assert parent.runtime_context["tools"]["helper"]["intent_signature"] == "make: args=soon"

    def test_handle_setter_writes_child_memory(self) -> None:
        """handle.x = v in generated code writes the child's memory."""
        provider = ScriptedProvider(
            {("planner", "make"): "child = delegate('helper')\nchild.unit = 'cm'\nreturn child"}
        )
        parent, _ = _agent("planner", provider=provider)

        child = parent.make().value

        assert child.runtime_context == {"unit": "cm"}


class TestAgentsReachedOutsideHandles:
    """Generated code reaches agents only through handles, never through library code."""

    def test_library_code_calling_a_stored_agent_is_a_guardrail_violation(self) -> None:
        """json.dump(data, agent) makes json call agent.write; the call is refused, not dispatched."""
        helper = Agent("scribe", provider=ScriptedProvider({"write": "return 1"}), log=False)
        provider = ScriptedProvider(
            {"save": "import json\njson.dump({'a': 1}, context['scribe'])\nreturn 'saved'"}
        )
        agent = Agent("archivist", provider=provider, log=False, guardrail_recovery_budget=0)
        agent.scribe = helper

        outcome = agent.save()

        assert (outcome.status, outcome.error_type) == ("error", "guardrail_retry_exhausted")
        assert outcome.metadata["guardrail_subtype"] == "unforwarded_agent_call"
        assert helper.runtime_context == {}
