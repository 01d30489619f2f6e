"""The tool registry in context['tools']: entries, usage counts, integrity and ranking."""

from __future__ import annotations

import datetime
import math
from typing import Any

import pytest

from recurgent import Agent
from recurgent._registry import (
    integrity_violation,
    lifecycle_state,
    overlapping_methods,
    ranked_tools,
    record_tool_use,
    register_tool,
    utility,
)
from recurgent.errors import GuardrailViolationError
from recurgent.testing import ScriptedProvider


class TestRegisterTool:
    """register_tool creates or refreshes an entry."""

    def test_new_entry_has_purpose_contract_summary_and_zero_counts(self) -> None:
        """A first registration records the contract fields and empty usage."""
        memory: dict[str, Any] = {}
        contract = {
            "purpose": "parse feeds",
            "deliverable": {"type": "array"},
            "acceptance": ["non-empty"],
            "failure_policy": {"on_error": "return_error"},
            "intent_signature": "ask: args=news",
        }

        entry = register_tool(memory, "feed_parser", contract)

        assert memory["tools"]["feed_parser"] is entry
        assert {k: v for k, v in entry.items() if k != "created_at"} == {
            "purpose": "parse feeds",
            "methods": [],
            "usage_count": 0,
            "success_count": 0,
            "failure_count": 0,
            "deliverable": {"type": "array"},
            "acceptance": ["non-empty"],
            "failure_policy": {"on_error": "return_error"},
            "intent_signature": "ask: args=news",
            "intent_signatures": ["ask: args=news"],
        }

    def test_without_a_contract_the_purpose_is_unavailable(self) -> None:
        """No contract gives the placeholder purpose."""
        entry = register_tool({}, "helper", None)

        assert entry["purpose"] == "purpose unavailable"

    def test_refresh_keeps_counts_and_keeps_the_last_six_signatures(self) -> None:
        """Re-registering keeps usage and appends intent signatures, unique, last six."""
        memory: dict[str, Any] = {}
        register_tool(memory, "t", {"purpose": "old"})
        record_tool_use(memory, "t", "run", ok=True)
        for number in range(8):
            register_tool(memory, "t", {"intent_signature": f"s{number}"})
        entry = register_tool(memory, "t", {"purpose": "new", "intent_signature": "s3"})

        assert (entry["purpose"], entry["usage_count"]) == ("new", 1)
        assert entry["intent_signatures"] == ["s2", "s4", "s5", "s6", "s7", "s3"]

    def test_registry_that_is_not_a_dict_is_replaced(self) -> None:
        """A malformed registry is replaced by a dict holding the new entry."""
        memory: dict[str, Any] = {"tools": ["junk"]}

        register_tool(memory, "t", None)

        assert list(memory["tools"]) == ["t"]


class TestRecordToolUse:
    """record_tool_use counts calls served by a tool."""

    def test_methods_and_counts_accumulate(self) -> None:
        """Methods are listed once each; successes and failures are counted."""
        memory: dict[str, Any] = {}
        register_tool(memory, "t", None)

        record_tool_use(memory, "t", "fetch", ok=True)
        record_tool_use(memory, "t", "fetch", ok=False)
        record_tool_use(memory, "t", "head", ok=True)

        entry = memory["tools"]["t"]
        assert (
            entry["methods"],
            entry["usage_count"],
            entry["success_count"],
            entry["failure_count"],
        ) == (["fetch", "head"], 3, 2, 1)
        assert "last_used_at" in entry

    def test_unregistered_tools_are_ignored(self) -> None:
        """A name that is not registered changes nothing."""
        memory: dict[str, Any] = {"tools": {}}

        record_tool_use(memory, "ghost", "run", ok=True)

        assert memory == {"tools": {}}


class TestIntegrity:
    """integrity_violation reports a registry that is not plain metadata."""

    def test_absent_or_plain_registry_is_fine(self) -> None:
        """No registry, None, or nested plain data pass."""
        plain = {"t": {"purpose": "x", "methods": ["a"], "stats": {"n": 1.5, "ok": True}}}
        for memory in ({}, {"tools": None}, {"tools": plain}):
            assert integrity_violation(memory, phase="pre_execution", role="r", method="m") is None

    def test_non_mapping_registry_is_a_shape_violation(self) -> None:
        """A list registry has subtype tool_registry_shape and names the phase."""
        violation = integrity_violation({"tools": []}, phase="remember", role="r", method="m")

        assert violation is not None
        assert (violation.subtype, violation.message) == (
            "tool_registry_shape",
            "context['tools'] must be a dict keyed by tool name, got list (remember r.m)",
        )

    @pytest.mark.parametrize(
        "executable",
        [len, lambda: 1, dict, Agent("helper", provider=ScriptedProvider(), log=False)],
        ids=["builtin", "lambda", "class", "agent"],
    )
    def test_executables_anywhere_inside_are_reported_with_paths(self, executable: Any) -> None:
        """Functions, classes and agents nested in dicts or lists are listed by path."""
        memory = {"tools": {"t": {"hooks": [1, executable]}}}

        violation = integrity_violation(memory, phase="post_execution", role="r", method="m")

        assert violation is not None
        assert violation.subtype == "executable_registry_metadata"
        assert violation.message == (
            "Tool registry metadata cannot store executable objects (post_execution r.m): "
            "context['tools']['t']['hooks'][1]"
        )

    def test_remember_refuses_executable_metadata_and_writes_nothing(self) -> None:
        """agent.remember(tools=...) with a function raises and leaves memory unchanged."""
        agent = Agent("builder", provider=ScriptedProvider(), log=False)

        with pytest.raises(GuardrailViolationError) as raised:
            agent.remember(tools={"web_fetcher": {"fetch": lambda: 1}})

        assert raised.value.message.startswith("Tool registry metadata cannot store executable")
        assert agent.runtime_context == {}


class TestRanking:
    """ranked_tools orders tools most useful first and caps the list."""

    def test_success_times_recency_then_usage_then_name(self) -> None:
        """The original's utility: success rate x recency decay + ln(1 + uses)/10. Without a
        usable stamp the decay is 0.25, so a well-used flaky tool outranks an unused one; ties
        break by name."""
        tools = {
            "flaky": {"success_count": 1, "failure_count": 4, "usage_count": 5},
            "unused_b": {},
            "unused_a": {},
            "solid": {"success_count": 5, "failure_count": 0, "usage_count": 5},
            "busy": {"success_count": 6, "failure_count": 6, "usage_count": 12},
            "broken": "not a dict",
        }

        names = [name for name, _ in ranked_tools({"tools": tools})]

        assert names == ["solid", "busy", "flaky", "unused_a", "unused_b"]

    def test_recency_decays_over_thirty_days(self) -> None:
        """The original's tested order: fresh and always right, fresh and mostly wrong, then
        right half the time but last used 90 days ago (exp(-3) of its success counts)."""
        now = datetime.datetime(2026, 12, 2, tzinfo=datetime.UTC)
        fresh = "2026-12-02T00:00:00.000Z"
        tools = {
            "stale": {
                "success_count": 5,
                "failure_count": 5,
                "last_used_at": "2026-09-03T00:00:00Z",
            },
            "fresh_poor": {"success_count": 1, "failure_count": 4, "last_used_at": fresh},
            "fresh_good": {"success_count": 5, "failure_count": 0, "last_used_at": fresh},
        }

        names = [name for name, _ in ranked_tools({"tools": tools}, now=now)]

        assert names == ["fresh_good", "fresh_poor", "stale"]
        assert utility(tools["stale"], now) == pytest.approx(
            0.5 * math.exp(-3) + math.log1p(0) / 10
        )

    def test_lifecycle_ranks_first(self) -> None:
        """durable, probation, unknown or candidate, degraded, whatever the counts; the state
        comes from lifecycle_state or an original-style version_scorecards map."""
        tools: dict[str, dict[str, Any]] = {
            "degraded": {"lifecycle_state": "degraded", "success_count": 50},
            "candidate": {"lifecycle_state": "candidate"},
            "durable": {"version_scorecards": {"a": {"lifecycle_state": "durable"}}},
            "unknown": {"success_count": 9},
            "probation": {"lifecycle_state": "probation"},
        }

        names = [name for name, _ in ranked_tools({"tools": tools})]

        assert names == ["durable", "probation", "unknown", "candidate", "degraded"]
        assert [lifecycle_state(tools[n]) for n in names] == [
            "durable",
            "probation",
            None,
            "candidate",
            "degraded",
        ]

    def test_a_future_or_unreadable_stamp(self) -> None:
        """A stamp in the future counts as now (decay 1); junk counts as no stamp (0.25)."""
        now = datetime.datetime(2026, 12, 2, tzinfo=datetime.UTC)
        entries = [
            {"success_count": 1, "last_used_at": "2027-01-01T00:00:00Z"},
            {"success_count": 1, "last_used_at": "yesterday"},
            {"success_count": 1, "last_used_at": "9" * 500},
        ]

        assert [utility(e, now) for e in entries] == [1.0, 0.25, 0.25]

    def test_malformed_counters_count_as_zero(self) -> None:
        """Counters generated code overwrote with junk neither crash ranking nor counting."""
        tools: dict[str, Any] = {
            "junk": {"success_count": "many", "failure_count": None, "usage_count": [1]},
            "good": {"success_count": 1},
        }
        memory: dict[str, Any] = {"tools": tools}

        names = [name for name, _ in ranked_tools(memory)]
        record_tool_use(memory, "junk", "run", ok=True)

        assert names == ["good", "junk"]
        assert (tools["junk"]["usage_count"], tools["junk"]["success_count"]) == (1, 1)

    def test_at_most_the_limit_is_returned(self) -> None:
        """Twenty tools are cut to twelve."""
        tools: dict[str, dict[str, Any]] = {f"tool_{n:02d}": {} for n in range(20)}

        assert len(ranked_tools({"tools": tools})) == 12


class TestInterfaceOverlap:
    """Methods of one tool that share a name word look like one capability."""

    def test_shared_words_group_methods(self) -> None:
        """fetch / fetch_url / fetchPage group; add and subtract do not; general words such as
        get do not count."""
        tools = {
            "web": {"methods": ["fetch", "fetch_url", "fetchPage", "status"]},
            "calc": {"methods": ["add", "subtract"]},
            "api": {"methods": ["get_user", "get_order"]},
            "feeds": {"methods": ["parse_feed", "read_feed", "parse_atom"]},
            "junk": {"methods": "fetch, fetch_url"},
        }

        assert overlapping_methods({"tools": tools}) == [
            ("web", ["fetch", "fetchPage", "fetch_url"]),
            ("feeds", ["parse_atom", "parse_feed", "read_feed"]),
        ]

    def test_only_the_first_tools_are_read(self) -> None:
        """Past the limit, in registry order, nothing is looked at."""
        tools = {f"t{i}": {"methods": ["load", "load_all"]} for i in range(20)}

        assert [name for name, _ in overlapping_methods({"tools": tools}, limit=3)] == [
            "t0",
            "t1",
            "t2",
        ]
