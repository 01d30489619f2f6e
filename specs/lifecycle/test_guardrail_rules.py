"""Every guardrail in a call: the violating program, the feedback it earns, and the rollback."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent._guardrails import MUTATION_CORRECTION

from .support import FIXED, scripted, tag

PROVENANCE = (
    "{'sources': [{'uri': 'https://example.test/feed', 'fetched_at': '2026-01-01T00:00:00Z', "
    "'retrieval_tool': 'web_fetcher', 'retrieval_mode': 'live'}]}"
)


def _run_then_fix(program: str, **options: Any) -> tuple[Any, Any, Any]:
    """Run ``program`` then FIXED; return (agent, provider, outcome)."""
    agent, provider = scripted([program, FIXED], **options)
    agent.remember(items=[1])
    outcome = agent.run()
    return agent, provider, outcome


class TestSingletonMethodMutation:
    """Mutating agents, handles or host classes: subtype singleton_method_mutation."""

    @pytest.mark.parametrize(
        ("program", "line"),
        [
            (
                "context['items'].append(2)\nh = delegate('helper')\n"
                "def fn():\n    return 1\nsetattr(h, 'f', fn)\nresult = 1",
                5,
            ),
            ("context['items'].append(2)\nh = delegate('helper')\nh.helper = lambda: 1", 3),
            ("context['items'].append(2)\nx = [1]\ntype(x).y = 2\nresult = 1", 3),
            ("context['items'].append(2)\nx = {}\nx.__class__ = list\nresult = 1", 3),
            (
                "context['items'].append(2)\nimport types\n"
                "bound = types.MethodType(len, context)\nresult = 1",
                3,
            ),
        ],
        ids=["setattr", "handle-attribute", "type-of", "dunder-class", "method-type"],
    )
    def test_static_mutation_is_refused_before_running(self, program: str, line: int) -> None:
        """The program never runs; the retry prompt names the mutation and the correction."""
        agent, provider, outcome = _run_then_fix(program)

        prompt = provider.requests[1].user_prompt
        assert (outcome.value, provider.calls) == ("fixed", 2)
        assert tag(prompt, "violation_subtype") == "singleton_method_mutation"
        quoted = program.splitlines()[line - 1]
        assert tag(prompt, "violation_location") == f"line {line}: {quoted}"
        assert tag(prompt, "required_correction") == MUTATION_CORRECTION
        assert agent.runtime_context["items"] == [1]
        assert "tools" not in agent.runtime_context

    def test_runtime_mutation_of_a_module_is_rolled_back(self) -> None:
        """setattr on an imported module is caught while running; earlier writes are undone."""
        program = "context['items'].append(2)\nimport json\nsetattr(json, 'x', 1)\nresult = 1"

        agent, provider, outcome = _run_then_fix(program)

        prompt = provider.requests[1].user_prompt
        assert outcome.value == "fixed"
        assert tag(prompt, "violation_subtype") == "singleton_method_mutation"
        assert tag(prompt, "violation_message").startswith(
            "Generated code may not modify ModuleFacade object"
        )
        assert tag(prompt, "required_correction") == MUTATION_CORRECTION
        assert agent.runtime_context["items"] == [1]


class TestContextToolsShapeMisuse:
    """Treating context['tools'] as a list of records: subtype context_tools_shape_misuse."""

    def test_reading_name_fields_of_registry_entries_is_refused(self) -> None:
        """A comprehension reading t['name'] over the registry earns the dict-shape correction."""
        program = "names = [t['name'] for t in context['tools']]\nresult = names"
        fixed = "result = 'web_fetcher' in context['tools']"
        agent, provider = scripted([program, fixed])
        agent.remember(tools={"web_fetcher": {"purpose": "fetch pages"}})

        outcome = agent.run()

        prompt = provider.requests[1].user_prompt
        assert (outcome.value, provider.calls) == (True, 2)
        assert tag(prompt, "violation_subtype") == "context_tools_shape_misuse"
        assert (
            tag(prompt, "violation_location")
            == "line 1: names = [t['name'] for t in context['tools']]"
        )
        assert "context['tools'].items()" in tag(prompt, "required_correction")

    def test_indexing_the_registry_by_position_is_refused(self) -> None:
        """context['tools'][0] is a shape misuse too."""
        _, provider, outcome = _run_then_fix("result = context['tools'][0]")

        assert outcome.value == "fixed"
        assert tag(provider.requests[1].user_prompt, "violation_subtype") == (
            "context_tools_shape_misuse"
        )


class TestHardcodedExternalFallback:
    """A fetch-style program returning canned data as success."""

    @pytest.mark.parametrize(
        "program",
        [
            "import urllib.request\n"
            "fallback_items = [{'title': 'Example headline'}]\n"
            "try:\n"
            "    body = urllib.request.urlopen('https://example.test', timeout=5).read()\n"
            "    result = {'items': [body]}\n"
            "except Exception:\n"
            "    result = fallback_items",
            "fetcher = delegate('web_fetcher')\n"
            "try:\n"
            "    page = fetcher.fetch('https://example.test')\n"
            "    return page.value\n"
            "except Exception:\n"
            "    return Outcome.ok([{'title': 'Example headline'}])",
        ],
        ids=["urllib-fallback-variable", "web-fetcher-except-literal"],
    )
    def test_fallback_success_is_refused_and_a_typed_error_is_returned(self, program: str) -> None:
        """The retry gets the fallback feedback; a low_utility error is then returned as is."""
        honest = (
            "return Outcome.error(error_type='low_utility', error_message='no headlines fetched')"
        )
        agent, provider = scripted([program, honest])

        outcome = agent.run()

        prompt = provider.requests[1].user_prompt
        assert (outcome.error_type, outcome.retriable, provider.calls) == (
            "low_utility",
            False,
            2,
        )
        assert tag(prompt, "violation_subtype") == "hardcoded_external_fallback_success"
        assert "low_utility" in tag(prompt, "required_correction")
        assert "tools" not in agent.runtime_context


class TestMissingExternalProvenance:
    """External-data success must carry provenance.sources[]."""

    COMPLETE = (
        "delegate('web_fetcher')\nresult = {'items': ['a'], 'provenance': " + PROVENANCE + "}"
    )

    @pytest.mark.parametrize(
        "value",
        [
            "{'items': ['a']}",
            "{'items': ['a'], 'provenance': {'sources': []}}",
            "{'items': ['a'], 'provenance': {'sources': [{'uri': 'https://example.test', "
            "'retrieval_tool': 'web_fetcher', 'retrieval_mode': 'live'}]}}",
            "{'items': ['a'], 'provenance': {'sources': [{'uri': 'https://example.test', "
            "'fetched_at': '2026-01-01T00:00:00Z', 'retrieval_tool': 'web_fetcher', "
            "'retrieval_mode': 'scraped'}]}}",
        ],
        ids=["no-provenance", "no-sources", "no-fetched-at", "scraped-mode"],
    )
    def test_incomplete_provenance_is_refused_and_rolled_back(self, value: str) -> None:
        """The violating attempt's registry entry and memory write are undone."""
        program = (
            f"context['note'] = 'x'\ndelegate('web_fetcher', purpose='fetch')\nresult = {value}"
        )
        agent, provider, outcome = _run_then_fix(program)

        prompt = provider.requests[1].user_prompt
        assert outcome.value == "fixed"
        assert tag(prompt, "violation_subtype") == "missing_external_provenance"
        assert tag(prompt, "violation_message").startswith(
            "External-data success must include `provenance.sources[]` with `uri`, `fetched_at`, "
            "`retrieval_tool`, and `retrieval_mode` (`live|cached|fixture`)"
        )
        assert "retrieval_mode" in tag(prompt, "required_correction")
        assert sorted(agent.runtime_context) == ["after", "conversation_history", "items"]

    def test_complete_envelope_passes_with_the_value_unchanged(self) -> None:
        """A complete provenance envelope is ok after one call, value as returned."""
        agent, provider = scripted(self.COMPLETE)

        outcome = agent.run()

        assert provider.calls == 1
        assert outcome.value == {
            "items": ["a"],
            "provenance": {
                "sources": [
                    {
                        "uri": "https://example.test/feed",
                        "fetched_at": "2026-01-01T00:00:00Z",
                        "retrieval_tool": "web_fetcher",
                        "retrieval_mode": "live",
                    }
                ]
            },
        }

    def test_missing_then_complete_provenance_succeeds_in_two_calls(self) -> None:
        """A retry that adds the envelope succeeds."""
        missing = "delegate('web_fetcher')\nresult = {'items': ['a']}"
        agent, provider = scripted([missing, self.COMPLETE])

        outcome = agent.run()

        assert (outcome.status, provider.calls) == ("ok", 2)

    def test_exhaustion_reports_the_provenance_subtype(self) -> None:
        """Missing provenance on every attempt exhausts with that subtype."""
        agent, _ = scripted("delegate('web_fetcher')\nresult = {'items': ['a']}")

        outcome = agent.run()

        assert outcome.error_type == "guardrail_retry_exhausted"
        assert outcome.metadata["last_violation_subtype"] == "missing_external_provenance"
        assert outcome.metadata["guardrail_subtype"] == "missing_external_provenance"


class TestToolRegistryIntegrity:
    """The registry stays a mapping of plain metadata (checked before and after running)."""

    @pytest.mark.parametrize(
        ("program", "path"),
        [
            ("context['tools']['x'] = {'run': lambda: 1}", "context['tools']['x']['run']"),
            (
                "context['tools']['x'] = {'run': context['host_function']}",
                "context['tools']['x']['run']",
            ),
            ("context['tools']['x'] = delegate('x')", "context['tools']['x']"),
        ],
        ids=["generated-lambda", "host-function", "agent-handle"],
    )
    def test_executable_metadata_is_refused_after_running(self, program: str, path: str) -> None:
        """An executable stored in the registry earns registry feedback; the entry is undone."""
        agent, provider = scripted([f"context['items'].append(2)\n{program}", FIXED])
        agent.remember(items=[1], tools={}, host_function=len)

        outcome = agent.run()

        prompt = provider.requests[1].user_prompt
        assert outcome.value == "fixed"
        assert tag(prompt, "violation_subtype") == "executable_registry_metadata"
        assert tag(prompt, "violation_message") == (
            "Tool registry metadata cannot store executable objects (post_execution tester.run): "
            f"{path}"
        )
        assert (agent.runtime_context["tools"], agent.runtime_context["items"]) == ({}, [1])

    def test_registry_that_is_not_a_mapping_is_refused_after_running(self) -> None:
        """Replacing context['tools'] with a list earns the shape feedback and is undone."""
        agent, provider = scripted(["context['tools'] = ['web_fetcher']\nresult = 1", FIXED])
        agent.remember(tools={"web_fetcher": {"purpose": "fetch"}})

        outcome = agent.run()

        prompt = provider.requests[1].user_prompt
        assert outcome.value == "fixed"
        assert tag(prompt, "violation_subtype") == "tool_registry_shape"
        assert tag(prompt, "violation_message") == (
            "context['tools'] must be a dict keyed by tool name, got list "
            "(post_execution tester.run)"
        )
        assert agent.runtime_context["tools"] == {"web_fetcher": {"purpose": "fetch"}}

    def test_registry_that_is_not_a_mapping_before_running_is_terminal(self) -> None:
        """A caller who replaced the registry with a list gets a terminal violation at once."""
        agent, provider = scripted(FIXED)
        agent.runtime_context["tools"] = ["web_fetcher"]

        outcome = agent.run()

        assert (outcome.error_type, provider.calls) == ("tool_registry_violation", 1)
        assert outcome.error_message == (
            "context['tools'] must be a dict keyed by tool name, got list (pre_execution tester.run)"
        )


class TestSelfMaterialization:
    """An agent delegating to its own role, in any letter case."""

    @pytest.mark.parametrize(
        "call",
        ["delegate('tester')", "delegate('TESTER')", "delegate(' Tester ')", "tool('Tester')"],
    )
    def test_self_materialization_is_refused_and_rolled_back(self, call: str) -> None:
        """The retry prompt names self_materialization; the attempt's writes are undone."""
        agent, provider, outcome = _run_then_fix(f"context['items'].append(2)\nh = {call}")

        prompt = provider.requests[1].user_prompt
        assert outcome.value == "fixed"
        assert tag(prompt, "violation_subtype") == "self_materialization"
        assert tag(prompt, "violation_message").startswith(
            "Self-materialization is not allowed in tester."
        )
        assert tag(prompt, "required_correction") == (
            "implement the behaviour directly in this program instead of delegating to your own "
            "role"
        )
        assert agent.runtime_context["items"] == [1]
