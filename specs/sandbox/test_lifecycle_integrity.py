"""Phase 4 of the sandbox plan: the call lifecycle keeps its invariants with the sandbox receiver.

Repeated assistant-style calls that reuse a delegated tool still log a depth-1 line for every
delegated call under the right parent; every lane still retries through the sandbox; and a call's
conversation-history record is appended once however many attempts it took.
"""

from __future__ import annotations

from pathlib import Path

from recurgent import Agent
from recurgent.testing import ScriptedProvider, read_log

FIRST_ASK = """
summarizer = delegate("page_summarizer", purpose="summarize a page")
pages = [summarizer.summarize(url) for url in ("a", "b")]
return [page.value for page in pages if page.ok]
"""
LATER_ASK = """
summarizer = tool("page_summarizer")
return summarizer.summarize(args[0]).value
"""
SUMMARIZE = "return 'page ' + args[0]"


class TestDelegatedCallsAcrossRepeatedCalls:
    """Each delegated call of a reused tool logs its own depth-1 line under the calling ask."""

    def test_every_delegated_call_logs_at_depth_one_under_its_ask(self, log_path: Path) -> None:
        """Three asks, the tool reused through tool(): four summarize lines, each under its own ask."""
        provider = ScriptedProvider(
            {
                "ask": [FIRST_ASK, LATER_ASK, LATER_ASK],
                ("page_summarizer", "summarize"): SUMMARIZE,
            }
        )
        assistant = Agent("assistant", provider=provider, log=log_path)

        values = [assistant.ask().value, assistant.ask("c").value, assistant.ask("d").value]

        lines = read_log(log_path)
        asks = [line for line in lines if line["method"] == "ask"]
        summaries = [line for line in lines if line["method"] == "summarize"]
        parents = {ask["call_id"]: index for index, ask in enumerate(asks)}
        assert values == [["page a", "page b"], "page c", "page d"]
        assert [(f["role"], f["depth"], parents[f["parent_call_id"]]) for f in summaries] == [
            ("page_summarizer", 1, 0),
            ("page_summarizer", 1, 0),
            ("page_summarizer", 1, 1),
            ("page_summarizer", 1, 2),
        ]
        assert {line["trace_id"] for line in lines} == {asks[0]["trace_id"]}
        assert {line["execution_receiver"] for line in lines} == {"sandbox"}
        assert [ask["depth"] for ask in asks] == [0, 0, 0]


class TestLanesUnderTheSandbox:
    """Guardrail, execution and outcome lanes each recover through a fresh sandbox."""

    def test_three_lanes_then_success_append_one_history_record(self, log_path: Path) -> None:
        """A call needing a guardrail retry, an execution repair and an outcome repair is one turn."""
        provider = ScriptedProvider(
            {
                "ask": [
                    "context['draft'] = 1\nh = delegate('helper')\nh.run = lambda: 1\nreturn 0",
                    "context['draft'] = 2\nitems = None\nitems.append(1)",
                    "context['draft'] = 3\nreturn Outcome.error(error_type='parse_error', "
                    "error_message='bad', retriable=True)",
                    "return sorted(context)",
                ]
            }
        )
        assistant = Agent("assistant", provider=provider, log=log_path)

        outcome = assistant.ask()

        [line] = read_log(log_path)
        history = assistant.runtime_context["conversation_history"]
        assert outcome.value == ["conversation_history"]
        assert [
            line[key]
            for key in (
                "attempt_id",
                "guardrail_recovery_attempts",
                "execution_repair_attempts",
                "outcome_repair_attempts",
                "execution_receiver",
                "conversation_history_size",
            )
        ] == [4, 1, 1, 1, "sandbox", 1]
        assert [failure["stage"] for failure in line["attempt_failures"]] == [
            "validation",
            "execution",
            "outcome_policy",
        ]
        assert [
            (record["method_name"], record["outcome_summary"]["status"]) for record in history
        ] == [("ask", "ok")]
        assert provider.calls == 4
