"""Agent Contract v1: the runtime-agnostic scenarios every recurgent runtime must pass."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from recurgent import Agent, Outcome
from recurgent.providers import ProviderRequest
from recurgent.testing import ScriptedProvider, read_log

SET_FROM_AMOUNT = "context['value'] = kwargs['amount']\nresult = context['value']"
INCREMENT_BY_ARG = "context['value'] = context.get('value', 0) + args[0]\nresult = context['value']"

# Generated code of a tool builder that reports what one delegate's call gave it.
REPORT_DELEGATE = """
out = delegate({role!r}).analyze()
return {{"child_status": out.status, "value": out.value, "error_type": out.error_type,
         "retriable": out.retriable, "tool_role": out.tool_role}}
"""


def _report(role: str) -> str:
    return REPORT_DELEGATE.format(role=role)


class TestAgentForConstructsLiveInstance:
    """Scenario 1: coordination.agent_for_constructs_live_instance."""

    def test_agent_for_returns_an_agent_with_its_role(self) -> None:
        """Agent.for_ returns a live Agent whose repr names its role and empty memory."""
        agent = Agent.for_("calculator", provider=ScriptedProvider(), log=False)

        assert isinstance(agent, Agent)
        assert repr(agent) == "<Agent(calculator) context=[]>"
        assert agent.runtime_context == {}


class TestRememberAndMemoryRoundtrip:
    """Scenario 2: coordination.remember_and_memory_roundtrip."""

    def test_remember_writes_both_entries_and_returns_the_same_agent(self) -> None:
        """remember(current_value=10, mode="scientific") stores both and returns the agent."""
        agent = Agent.for_("calculator", provider=ScriptedProvider(), log=False)

        returned = agent.remember(current_value=10, mode="scientific")

        assert returned is agent
        assert agent.runtime_context == {"current_value": 10, "mode": "scientific"}


class TestSetterBypassesProvider:
    """Scenario 3: dynamic.setter_bypasses_provider."""

    def test_setter_writes_memory_without_provider_call_or_log_line(self, log_path: Path) -> None:
        """agent.value = 5 writes memory; no provider call, no log line, no history."""
        provider = ScriptedProvider()
        agent = Agent.for_("calculator", provider=provider, log=log_path)

        agent.value = 5

        assert agent.runtime_context == {"value": 5}
        assert provider.calls == 0
        assert read_log(log_path) == []


class TestMethodCallWithArgsAndKwargs:
    """Scenario 4: dynamic.method_call_with_args_and_kwargs."""

    def test_set_then_increment_updates_memory(self) -> None:
        """set(amount=10) is ok 10, increment(3) is ok 13, and memory holds 13."""
        provider = ScriptedProvider({"set": SET_FROM_AMOUNT, "increment": INCREMENT_BY_ARG})
        agent = Agent.for_("calculator", provider=provider, log=False)

        first = agent.set(amount=10)
        second = agent.increment(3)

        assert (first.status, first.value) == ("ok", 10)
        assert (second.status, second.value) == ("ok", 13)
        assert agent.runtime_context["value"] == 13
        assert provider.calls == 2


class TestInvalidPayloadRetriedThenSuccess:
    """Scenario 5: provider.invalid_payload_retried_then_success."""

    def test_second_generation_attempt_succeeds(self, log_path: Path) -> None:
        """Replies [None, "result = 42"] give ok 42 after two calls; the log says attempt 2."""
        provider = ScriptedProvider({"answer": [None, "result = 42"]})
        agent = Agent.for_("oracle", provider=provider, log=log_path, max_generation_attempts=2)

        outcome = agent.answer()

        assert (outcome.status, outcome.value) == ("ok", 42)
        assert provider.calls == 2
        [entry] = read_log(log_path)
        assert entry["generation_attempt"] == 2
        assert entry["outcome_status"] == "ok"


class TestInvalidPayloadExhausted:
    """Scenario 6: provider.invalid_payload_exhausted_returns_invalid_code_outcome."""

    def test_none_then_blank_code_is_invalid_code(self, log_path: Path) -> None:
        """Replies [None, blank] give an invalid_code error after two attempts."""
        provider = ScriptedProvider({"answer": [None, "   "]})
        agent = Agent.for_("oracle", provider=provider, log=log_path, max_generation_attempts=2)

        outcome = agent.answer()

        assert outcome.status == "error"
        assert outcome.error_type == "invalid_code"
        assert outcome.retriable is True
        assert provider.calls == 2
        [entry] = read_log(log_path)
        assert (entry["generation_attempt"], entry["outcome_error_type"]) == (2, "invalid_code")


class TestGeneratedProgramFailure:
    """Scenario 7: execution.generated_program_failure_returns_execution_outcome."""

    def test_raising_program_is_execution_error(self, log_path: Path) -> None:
        """A program raising "boom" gives a non-retriable execution error naming "boom"."""
        code = "raise ValueError('boom')"
        provider = ScriptedProvider({"explode": code})
        agent = Agent.for_("bomb", provider=provider, log=log_path)

        outcome = agent.explode()

        assert outcome.status == "error"
        assert outcome.error_type == "execution"
        assert outcome.retriable is False
        assert "boom" in (outcome.error_message or "")
        # The execution lane regenerates once before giving up.
        assert provider.calls == 2
        [entry] = read_log(log_path)
        assert entry["code"] == code
        assert entry["outcome_error_type"] == "execution"


class TestChildAgentCallRoundtrip:
    """Scenario 8: delegation.child_agent_call_roundtrip."""

    def test_parent_returns_child_outcome_with_linked_log_lines(self, log_path: Path) -> None:
        """A delegated calculator's add(2, 3) is ok 5; its log line is the parent's child."""
        provider = ScriptedProvider(
            {
                ("coordinator", "compute"): "child = delegate('calculator')\n"
                "return child.add(2, 3)",
                ("calculator", "add"): "result = args[0] + args[1]",
            }
        )
        agent = Agent.for_("coordinator", provider=provider, log=log_path)

        outcome = agent.compute()

        assert (outcome.status, outcome.value) == ("ok", 5)
        assert provider.calls == 2
        child, parent = read_log(log_path)
        assert (parent["role"], parent["method"], parent["depth"]) == ("coordinator", "compute", 0)
        assert (child["role"], child["method"], child["depth"]) == ("calculator", "add", 1)
        assert parent["parent_call_id"] is None
        assert child["parent_call_id"] == parent["call_id"]
        assert child["trace_id"] == parent["trace_id"]


class TestRespondToContract:
    """Scenario 9: introspection.respond_to_contract."""

    def test_responds_to_setters_memory_keys_and_not_dynamic_names(self) -> None:
        """True for "value=", True for "value" once set (False before), False for "increment"."""
        agent = Agent.for_("calculator", provider=ScriptedProvider(), log=False)

        before = agent.responds_to("value")
        agent.value = 1

        assert agent.responds_to("value=") is True
        assert before is False
        assert agent.responds_to("value") is True
        assert agent.responds_to("increment") is False


DEFAULT_LOG_FIELDS = {
    "timestamp",
    "runtime",
    "role",
    "model",
    "method",
    "args",
    "kwargs",
    "code",
    "duration_ms",
    "generation_attempt",
    "outcome_status",
    "outcome_error_type",
    "contract_source",
    "program_source",
    "trace_id",
    "call_id",
    "parent_call_id",
    "depth",
    "execution_receiver",
}
DEBUG_LOG_FIELDS = {"system_prompt", "user_prompt", "context"}
STORE_AND_RETURN = "context['value'] = args[0] * 2\nresult = context['value']"


class TestDefaultAndDebugLogFields:
    """Scenario 10: logging.default_and_debug_fields."""

    def test_default_line_has_every_core_field(self, log_path: Path) -> None:
        """A default log line carries the core fields with their values, and no prompts."""
        provider = ScriptedProvider({"double": STORE_AND_RETURN})
        agent = Agent.for_(
            "calculator", provider=provider, log=log_path, model="test-model", trace_id="t" * 24
        )

        agent.double(4, unit="cm")

        [entry] = read_log(log_path)
        assert set(entry) >= DEFAULT_LOG_FIELDS
        assert not DEBUG_LOG_FIELDS & set(entry)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["timestamp"])
        assert re.fullmatch(r"[0-9a-f]{16}", entry["call_id"])
        assert isinstance(entry["duration_ms"], float)
        assert entry["duration_ms"] >= 0
        expected = {
            "runtime": "python",
            "role": "calculator",
            "model": "test-model",
            "method": "double",
            "args": [4],
            "kwargs": {"unit": "cm"},
            "code": STORE_AND_RETURN,
            "generation_attempt": 1,
            "outcome_status": "ok",
            "outcome_error_type": None,
            "contract_source": "none",
            "program_source": "generated",
            "trace_id": "t" * 24,
            "parent_call_id": None,
            "depth": 0,
            "execution_receiver": "sandbox",
        }
        assert {key: entry[key] for key in expected} == expected

    def test_debug_line_adds_prompts_and_memory_after_the_attempt(self, log_path: Path) -> None:
        """debug=True adds the prompts the provider saw and the memory after the call."""
        provider = ScriptedProvider({"double": STORE_AND_RETURN})
        agent = Agent.for_("calculator", provider=provider, log=log_path, debug=True)

        agent.double(4)

        [entry] = read_log(log_path)
        [request] = provider.requests
        assert set(entry) >= DEFAULT_LOG_FIELDS | DEBUG_LOG_FIELDS
        assert entry["system_prompt"] == request.system_prompt
        assert entry["user_prompt"] == request.user_prompt
        assert entry["context"]["value"] == 8
        assert len(entry["context"]["conversation_history"]) == 1


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event that unblocks slow providers when the test ends."""
    event = threading.Event()
    yield event
    event.set()


class TestTolerantDelegation:
    """Scenario 11: a tool_builder agent keeps working whatever its delegates do."""

    def test_delegate_success_is_ok_with_its_value(self) -> None:
        """A delegate's success reaches the builder as ok with the delegate's value."""
        provider = ScriptedProvider(
            {
                ("tool_builder", "run"): "return delegate('stable_tool').analyze()",
                ("stable_tool", "analyze"): "result = {'signal': 'up'}",
            }
        )
        builder = Agent.for_("tool_builder", provider=provider, log=False)

        outcome = builder.run()

        assert (outcome.status, outcome.value) == ("ok", {"signal": "up"})
        assert (outcome.tool_role, outcome.method_name) == ("stable_tool", "analyze")

    def test_provider_failure_is_provider_error_and_next_delegate_works(self) -> None:
        """A delegate whose provider fails gives a provider error; the next delegate is ok."""
        code = (
            "first = delegate('flaky_tool').analyze()\n"
            "second = delegate('stable_tool').analyze()\n"
            "return {'first': [first.status, first.error_type, first.retriable],\n"
            "        'second': [second.status, second.value]}"
        )
        provider = ScriptedProvider(
            {
                ("tool_builder", "run"): code,
                ("flaky_tool", "analyze"): RuntimeError("upstream returned 503"),
                ("stable_tool", "analyze"): "result = 'fine'",
            }
        )
        builder = Agent.for_("tool_builder", provider=provider, log=False)

        outcome = builder.run()

        assert outcome.value == {
            "first": ["error", "provider", True],
            "second": ["ok", "fine"],
        }
        assert len(provider.requests_for("analyze", role="flaky_tool")) == 2

    def test_invalid_payload_is_invalid_code(self) -> None:
        """A delegate whose provider returns no program gives invalid_code (retriable)."""
        provider = ScriptedProvider(
            {("tool_builder", "run"): _report("empty_tool"), ("empty_tool", "analyze"): None}
        )
        builder = Agent.for_("tool_builder", provider=provider, log=False)

        outcome = builder.run()

        assert outcome.value == {
            "child_status": "error",
            "value": None,
            "error_type": "invalid_code",
            "retriable": True,
            "tool_role": "empty_tool",
        }

    def test_exception_is_execution(self) -> None:
        """A delegate whose code raises gives a non-retriable execution error."""
        provider = ScriptedProvider(
            {
                ("tool_builder", "run"): _report("crashing_tool"),
                ("crashing_tool", "analyze"): "raise KeyError('missing')",
            }
        )
        builder = Agent.for_("tool_builder", provider=provider, log=False)

        outcome = builder.run()

        assert outcome.value == {
            "child_status": "error",
            "value": None,
            "error_type": "execution",
            "retriable": False,
            "tool_role": "crashing_tool",
        }

    @pytest.mark.slow
    def test_slow_provider_is_timeout_within_deadline(self, release: threading.Event) -> None:
        """A delegate's provider slower than provider_timeout_seconds=1 gives timeout in < 1.5 s."""

        def slow(request: ProviderRequest) -> str:
            release.wait(10)
            return "result = 'late'"

        provider = ScriptedProvider(
            {("tool_builder", "run"): _report("slow_tool"), ("slow_tool", "analyze"): slow}
        )
        builder = Agent.for_(
            "tool_builder",
            provider=provider,
            log=False,
            provider_timeout_seconds=1,
            max_generation_attempts=1,
        )

        started = time.monotonic()
        outcome = builder.run()
        elapsed = time.monotonic() - started

        assert outcome.value == {
            "child_status": "error",
            "value": None,
            "error_type": "timeout",
            "retriable": True,
            "tool_role": "slow_tool",
        }
        assert elapsed < 1.5

    def test_exhausted_budget_is_budget_exceeded_and_builder_carries_on(self) -> None:
        """With delegation_budget=1 a delegate that delegates again gets budget_exceeded."""
        code = (
            "nested = delegate('nesting_tool').analyze()\n"
            "after = delegate('stable_tool').analyze()\n"
            "return {'nested': [nested.status, nested.error_type, nested.retriable],\n"
            "        'after': after.value}"
        )
        provider = ScriptedProvider(
            {
                ("tool_builder", "run"): code,
                ("tool_builder", "again"): "result = 'still working'",
                ("nesting_tool", "analyze"): "return delegate('grandchild').analyze()",
                ("stable_tool", "analyze"): "result = 'fine'",
            }
        )
        builder = Agent.for_("tool_builder", provider=provider, log=False, delegation_budget=1)

        outcome = builder.run()
        later = builder.again()

        assert outcome.value == {
            "nested": ["error", "budget_exceeded", False],
            "after": "fine",
        }
        assert provider.requests_for("analyze", role="grandchild") == []
        assert (later.status, later.value) == ("ok", "still working")

    def test_builder_outcomes_are_outcomes(self) -> None:
        """Every delegate result the builder sees is an Outcome it can inspect."""
        provider = ScriptedProvider(
            {
                ("tool_builder", "run"): "out = delegate('stable_tool').analyze()\n"
                "return isinstance(out, Outcome)",
                ("stable_tool", "analyze"): "result = 1",
            }
        )
        builder = Agent.for_("tool_builder", provider=provider, log=False)

        assert builder.run() == Outcome.ok(True, tool_role="tool_builder", method_name="run")
