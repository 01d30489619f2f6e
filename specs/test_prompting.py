"""Prompts: depth-aware system prompt, the user prompt's sections, retry blocks, strict templates."""

from __future__ import annotations

import re
from typing import Any

import pytest

from recurgent import Agent
from recurgent._prompting import PromptTemplateError, render
from recurgent._sandbox import ALLOWED_MODULES, VISIBLE_NAMES
from recurgent.testing import ScriptedProvider

CHAIN = {
    ("builder", "run"): "return delegate('child_tool').work()",
    ("child_tool", "work"): "return delegate('grandchild').dig()",
    ("grandchild", "dig"): "return 'bottom'",
}


def _prompts(code: str = "return 1", *args: Any, **options: Any) -> tuple[str, str]:
    """System and user prompt of one call of tester.run(*args)."""
    provider = ScriptedProvider({"run": code})
    options.setdefault("log", False)
    Agent("tester", provider=provider, **options).run(*args)
    request = provider.requests[0]
    return request.system_prompt, request.user_prompt


def _section(prompt: str, name: str) -> str:
    match = re.search(rf"<{name}>\n?(.*?)</{name}>", prompt, re.DOTALL)
    assert match, f"<{name}> missing"
    return match.group(1)


class TestSystemPrompt:
    """The system prompt names the identity, the execution surface and the policies."""

    def test_identity_depends_on_depth(self) -> None:
        """Depth 0 is a Tool Builder, depth 1 a Tool, depth 2 a Worker; each names its role."""
        provider = ScriptedProvider(CHAIN)
        Agent("builder", provider=provider, log=False).run()

        builder, child, worker = (r.system_prompt for r in provider.requests)
        assert "You are a Tool Builder called 'builder'." in builder
        assert "You are a Tool called 'child_tool'," in child
        assert "You are a Worker called 'grandchild', running at call depth 2." in worker
        assert "Tool Builder" not in child.split("## Your Environment")[0]
        assert [r.depth for r in provider.requests] == [0, 1, 2]

    def test_execution_surface_names_are_all_described(self) -> None:
        """Every name the sandbox defines appears in backticks, plus return."""
        system, _ = _prompts()

        missing = [name for name in VISIBLE_NAMES if f"`{name}" not in system]
        assert missing == []
        assert "`return value`" in system

    def test_allowed_imports_are_listed(self) -> None:
        """The allowed-imports line lists exactly the sandbox's modules."""
        system, _ = _prompts()

        line = re.search(r"Allowed imports: (.*?)\. Nothing else", system)
        assert line is not None
        assert line.group(1).split(", ") == list(ALLOWED_MODULES)

    @pytest.mark.parametrize(
        ("network", "text"),
        [
            ("allow", "Network: any http/https host is reachable."),
            ("deny", "Network: disabled for this agent; do not attempt HTTP"),
            (["b.test", "a.test"], "Network: only these hosts are reachable: a.test, b.test."),
        ],
    )
    def test_network_policy_is_stated(self, network: Any, text: str) -> None:
        """The network option is described as the sandbox enforces it."""
        system, _ = _prompts(network=network)

        assert text in system

    def test_typed_error_vocabulary_is_listed(self) -> None:
        """The typed errors tools should use are named."""
        system, _ = _prompts()

        vocabulary = [
            "low_utility",
            "wrong_tool_boundary",
            "missing_input",
            "parse_error",
            "network_error",
            "rate_limited",
            "unsupported_capability",
        ]
        assert [word for word in vocabulary if f"`{word}`" not in system] == []

    def test_contract_block_or_operating_mode(self) -> None:
        """A contracted agent sees its contract; an uncontracted one the operating mode."""
        contracted, _ = _prompts(purpose="add numbers", intent_signature="ask: args=2")
        plain, _ = _prompts()

        assert "Tool Builder Delegation Contract" in contracted
        assert "- purpose: 'add numbers'" in contracted
        assert "- intent_signature: 'ask: args=2'" in contracted
        assert "No delegation contract is active" not in contracted
        assert "No delegation contract is active" in plain

    def test_system_prompt_does_not_change_with_memory(self) -> None:
        """Memory, tools and history live in the user prompt, so the system prompt is stable."""
        provider = ScriptedProvider({"run": "return 1"})
        agent = Agent("tester", provider=provider, log=False, toolstore_root=None)
        agent.run()
        agent.remember(value=5, tools={"feed_parser": {"purpose": "parse"}})
        agent.run()

        first, second = provider.requests
        assert first.system_prompt == second.system_prompt
        assert first.user_prompt != second.user_prompt


class TestUserPrompt:
    """The user prompt carries the invocation, memory, tools, contract and response contract."""

    def test_invocation(self) -> None:
        """Role, method, args, kwargs and depth are rendered literally."""
        provider = ScriptedProvider({"add": "return 1"})
        Agent("calculator", provider=provider, log=False).add(2, "x", precise=True)

        user = provider.requests[0].user_prompt
        assert {
            name: _section(user, name)
            for name in ("role", "method", "args", "kwargs", "current_depth")
        } == {
            "role": "calculator",
            "method": "add",
            "args": "[2, 'x']",
            "kwargs": "{'precise': True}",
            "current_depth": "0",
        }

    def test_memory_summarizes_tools_and_history_as_counts(self) -> None:
        """Tools and history appear as counts; other keys as values (keys sorted)."""
        provider = ScriptedProvider({"run": "return 1"})
        agent = Agent("tester", provider=provider, log=False, toolstore_root=None)
        agent.remember(value=5, tools={"a": {}, "b": {}})
        agent.run()
        agent.run()

        memory = _section(provider.requests[1].user_prompt, "memory")
        assert memory == (
            "{'conversation_history': {'count': 1}, 'tools': {'count': 2}, 'value': 5}"
        )

    def test_large_memory_is_shortened(self) -> None:
        """A huge memory value does not flood the prompt."""
        provider = ScriptedProvider({"run": "return 1"})
        agent = Agent("tester", provider=provider, log=False)
        agent.remember(blob="x" * 50_000, rows=list(range(1000)))
        agent.run()

        memory = _section(provider.requests[0].user_prompt, "memory")
        assert len(memory) < 1000
        assert "..." in memory

    def test_secrets_in_memory_are_redacted(self) -> None:
        """An API key stored in memory does not reach the provider."""
        provider = ScriptedProvider({"run": "return 1"})
        agent = Agent("tester", provider=provider, log=False)
        agent.remember(openai="sk-abcdefghijklmnop1234")
        agent.run()

        memory = _section(provider.requests[0].user_prompt, "memory")
        assert (
            memory
            == "{'conversation_history': {'count': 0}, 'openai': '[REDACTED]', 'tools': {'count': 0}}"
        )

    def test_known_tools_lists_twelve_most_useful_first(self) -> None:
        """Fourteen registered tools show as the twelve best, best first, with details."""
        tools: dict[str, Any] = {
            f"tool_{n:02d}": {"purpose": f"purpose {n}", "usage_count": n} for n in range(13)
        }
        tools["feed_parser"] = {
            "purpose": "parse feeds",
            "methods": ["parse"],
            "deliverable": {"type": "array"},
            "success_count": 3,
            "failure_count": 0,
            "usage_count": 3,
        }
        provider = ScriptedProvider({"run": "return 1"})
        agent = Agent("tester", provider=provider, log=False)
        agent.remember(tools=tools)
        agent.run()

        user = provider.requests[0].user_prompt
        listing = _section(user, "known_tools")
        names = re.findall(r"^- (\w+):", listing, re.MULTILINE)
        assert names == ["feed_parser", *[f"tool_{n:02d}" for n in range(12, 1, -1)]]
        assert listing.startswith(
            "- feed_parser: parse feeds\n"
            "  methods: [parse]\n"
            "  deliverable: {'type': 'array'}\n"
            "  capabilities: [rss_parse]\n"
            "  reliability: calls=3, success_rate=1.00\n"
        )
        assert "14 tools are registered, the list above shows at most 12" in user

    def test_empty_registry_says_so(self) -> None:
        """Without tools the listing says none are registered."""
        _, user = _prompts()

        assert _section(user, "known_tools") == "none registered yet\n"

    def test_active_contract_and_its_absence(self) -> None:
        """A contract is rendered field by field; without one the block says so."""
        _, contracted = _prompts(
            purpose="parse feeds",
            deliverable={"type": "array"},
            acceptance=["non-empty"],
            failure_policy={"on_error": "return_error"},
            intent_signature="ask: args=news",
        )
        _, plain = _prompts()

        block = _section(contracted, "active_contract")
        assert {
            name: _section(block, name)
            for name in (
                "purpose",
                "deliverable",
                "acceptance",
                "failure_policy",
                "intent_signature",
            )
        } == {
            "purpose": "'parse feeds'",
            "deliverable": "{'type': 'array'}",
            "acceptance": "['non-empty']",
            "failure_policy": "{'on_error': 'return_error'}",
            "intent_signature": "ask: args=news",
        }
        assert _section(plain, "active_contract").startswith(
            "None: no delegation contract is active for this call."
        )

    def test_response_contract_and_self_check(self) -> None:
        """The response contract asks for code assigning result or using return.

        Both are the same for every call, so they sit in the system prompt's shared prefix
        (ADR 0026), not in the user prompt.
        """
        system, user = _prompts()

        assert "`result` or uses `return`" in _section(system, "response_contract")
        assert "[Provenance]" in _section(system, "self_check")
        assert "<response_contract>" not in user

    def test_no_template_placeholder_leaks(self) -> None:
        """No $variable is left in either prompt."""
        system, user = _prompts(purpose="p")

        assert re.findall(r"\$\w+", system + user) == []


class TestRetryPrompts:
    """Retry prompts name the previous failure."""

    def test_generation_retry_names_the_failure_and_attempt(self) -> None:
        """Attempt 2 of 2 says the previous generation failed and why."""
        provider = ScriptedProvider({"run": [None, "return 42"]})
        outcome = Agent("tester", provider=provider, log=False).run()

        first, second = (r.user_prompt for r in provider.requests)
        assert outcome.value == 42
        assert "Previous generation failed" not in first
        assert second.startswith(first)
        assert (
            "IMPORTANT: Previous generation failed: Provider returned invalid program for run "
            "(provider returned NoneType; expected object)\nOffending line: unknown\n"
            "Required correction: fix the failing code path and regenerate with explicit None, "
            "type and shape checks\nRetry 2/2." in second
        )
        assert "non-empty `code`" in second
        assert 'error_type="unsupported_capability"' in second

    def test_only_the_latest_generation_failure_is_quoted(self) -> None:
        """Attempt 3 of 3 carries one retry block, naming the second failure."""
        provider = ScriptedProvider({"run": [None, "return (", "return 1"]})
        Agent("tester", provider=provider, log=False, max_generation_attempts=3).run()

        third = provider.requests[2].user_prompt
        assert third.count("Previous generation failed") == 1
        assert "Retry 3/3." in third
        assert "invalid Python syntax" in third


class TestTemplates:
    """render is strict about variables."""

    def test_missing_variable_fails_loudly(self) -> None:
        """A template rendered without one of its variables raises, naming it."""
        with pytest.raises(PromptTemplateError) as raised:
            render("retry_generation", previous_error="boom", attempt=2, offending_line="x")

        assert (
            str(raised.value)
            == "prompt template 'retry_generation' needs variable 'required_correction'"
        )

    def test_values_are_inserted_verbatim(self) -> None:
        """Dollar signs inside values are not treated as placeholders."""
        text = render(
            "retry_generation",
            previous_error="cost $5 ${x}",
            offending_line="unknown",
            required_correction="none",
            attempt=2,
            max_attempts=2,
        )

        assert "Previous generation failed: cost $5 ${x}" in text
