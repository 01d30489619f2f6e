"""Conversation history: one record per logical call, readable by code, counted in prompts."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Unpack

from recurgent import Agent
from recurgent._history import (
    HISTORY_LIMIT,
    HistoryCursor,
    append_record,
    history_records,
    outcome_summary,
)
from recurgent._option_types import AgentOptionsDict
from recurgent._values import json_safe
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider, read_log

VIOLATING = "context['x'] = 1\nh = delegate('helper')\nh.helper = lambda: 1"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _agent(
    replies: object, *, method: str = "echo", **options: Unpack[AgentOptionsDict]
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider({method: replies})
    options.setdefault("log", False)
    options["provider"] = provider
    return Agent("assistant", **options), provider


class TestOneRecordPerCall:
    """Records are appended once per logical call, after its outcome is known."""

    def test_guardrail_retry_then_success_appends_one_record(self) -> None:
        """Two attempts, one record, with the final (ok) status."""
        agent, provider = _agent([VIOLATING, "return args[0].upper()"])

        agent.echo("hello", loud=True)

        records = agent.runtime_context["conversation_history"]
        assert provider.calls == 2
        assert len(records) == 1
        record = records[0]
        assert TIMESTAMP.match(record["timestamp"])
        assert re.fullmatch(r"[0-9a-f]{16}", record["call_id"])
        assert {key: record[key] for key in record if key not in ("timestamp", "call_id")} == {
            "speaker": "user",
            "method_name": "echo",
            "args": ["hello"],
            "kwargs": {"loud": True},
            "outcome_summary": {
                "status": "ok",
                "ok": True,
                "error_type": None,
                "retriable": False,
                "value_class": "str",
                "value_preview": '"HELLO"',
                # The kept answer (ADR 0102): JSON text '"HELLO"', 7 bytes.
                "content_ref": record["outcome_summary"]["content_ref"],
                "content_kind": "string",
                "content_bytes": 7,
                "content_digest": "sha256:" + hashlib.sha256(b'"HELLO"').hexdigest(),
            },
            "trace_id": record["trace_id"],
            "parent_call_id": None,
            "depth": 0,
            "duration_ms": record["duration_ms"],
        }

    def test_record_call_id_matches_the_log_line(self, log_path: Path) -> None:
        """The record and the log line share the call id; the log says the record was appended."""
        agent, _ = _agent("return 1", log=log_path)

        agent.echo()

        [entry] = read_log(log_path)
        record = agent.runtime_context["conversation_history"][0]
        assert (record["call_id"], record["trace_id"]) == (entry["call_id"], entry["trace_id"])
        assert (entry["history_record_appended"], entry["conversation_history_size"]) == (True, 1)

    def test_failed_call_records_an_error_summary(self) -> None:
        """An exhausted call appends one record with the error type and message."""
        agent, _ = _agent(VIOLATING)

        agent.echo()

        [record] = agent.runtime_context["conversation_history"]
        assert record["outcome_summary"] == {
            "status": "error",
            "ok": False,
            "error_type": "guardrail_retry_exhausted",
            "retriable": False,
            "error_message": "This request couldn't be completed after multiple attempts. "
            "Last cause: singleton_method_mutation: Generated code defines methods on an existing "
            "object or class; defining singleton methods on Agent instances or mutating host "
            "classes is not supported; use tool/delegate invocation paths.",
        }
        assert "x" not in agent.runtime_context

    def test_record_is_appended_after_the_attempts(self) -> None:
        """Code running in the call sees the earlier records only, not its own."""
        agent, _ = _agent("return len(context['conversation_history'])")

        first = agent.echo()
        second = agent.echo()

        assert (first.value, second.value) == (0, 1)
        assert len(agent.runtime_context["conversation_history"]) == 2

    def test_delegated_calls_record_in_the_child_only(self) -> None:
        """The child's call is recorded by the child (speaker tool), not by the parent."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "h = delegate('child_tool')\nh.work()\n"
                "return [len(context['conversation_history']), h.conversation_history]",
                ("child_tool", "work"): "return 'done'",
            }
        )
        builder = Agent("builder", provider=provider, log=False)

        outcome = builder.run()

        child_count, child_records = outcome.value
        assert child_count == 0
        assert [(r["speaker"], r["method_name"], r["depth"]) for r in child_records] == [
            ("tool", "work", 1)
        ]
        assert len(builder.runtime_context["conversation_history"]) == 1


class TestHistoryInCodeAndPrompts:
    """Generated code can read the records; prompts show only their count."""

    def test_generated_code_reads_earlier_records(self) -> None:
        """A follow-up call can answer from the previous record."""
        provider = ScriptedProvider(
            {
                "echo": "return args[0]",
                "previous": "return context['conversation_history'][-1]['args'][0]",
            }
        )
        agent = Agent("assistant", provider=provider, log=False)

        agent.echo("SECRET-VALUE-42")
        outcome = agent.previous()

        assert outcome.value == "SECRET-VALUE-42"

    def test_prompt_shows_the_count_and_no_record_content(self) -> None:
        """The user prompt has the record count and none of the records' data."""
        provider = ScriptedProvider({"echo": "return args[0]", "previous": "return 1"})
        agent = Agent("assistant", provider=provider, log=False)
        agent.echo("SECRET-VALUE-42")
        call_id = agent.runtime_context["conversation_history"][0]["call_id"]

        agent.previous()

        prompt = provider.requests_for("previous")[0].user_prompt
        assert "<record_count>1</record_count>" in prompt
        assert "'conversation_history': {'count': 1}" in prompt
        assert "SECRET-VALUE-42" not in prompt
        assert call_id not in prompt


class TestMalformedHistory:
    """A malformed history is repaired, never fatal."""

    def test_string_history_becomes_a_list_with_the_new_record(self) -> None:
        """remember(conversation_history='malformed') then a call leaves one canonical record."""
        agent, _ = _agent("return 'hi'")
        agent.remember(conversation_history="malformed")

        outcome = agent.echo("hello")

        records = agent.runtime_context["conversation_history"]
        assert outcome.value == "hi"
        assert [(r["method_name"], r["outcome_summary"]["status"]) for r in records] == [
            ("echo", "ok")
        ]

    def test_entries_without_a_record_marker_are_dropped(self) -> None:
        """Junk appended by generated code is dropped at the next append; sizes are 1 then 2."""
        agent, _ = _agent(
            "context['conversation_history'].append('junk')\n"
            "context['conversation_history'].append({'note': 1})\n"
            "return 1"
        )

        agent.echo()
        agent.echo()

        records = agent.runtime_context["conversation_history"]
        assert [r["method_name"] for r in records] == ["echo", "echo"]


class TestHistoryHelpers:
    """The record-building helpers."""

    def test_history_records_repairs_in_place(self) -> None:
        """A kept entry is rebuilt with the record keys and the list object is kept."""
        history: list[object] = [{"call_id": "a", "extra": 1}, 3]
        memory: dict[str, object] = {"conversation_history": history}

        records = history_records(memory)

        assert records is history
        assert records == [
            {
                "call_id": "a",
                "timestamp": None,
                "speaker": None,
                "method_name": None,
                "args": None,
                "kwargs": None,
                "outcome_summary": None,
                "trace_id": None,
                "parent_call_id": None,
                "depth": None,
                "duration_ms": None,
            }
        ]

    def test_summary_of_a_sourced_value_names_its_sources(self) -> None:
        """An ok value with provenance gets source count, uris and retrieval mode."""
        value = {
            "items": [1],
            "provenance": {
                "sources": [
                    {"uri": "https://a.test", "retrieval_mode": "live"},
                    {"uri": "https://b.test", "retrieval_mode": "cached"},
                ]
            },
        }

        summary = outcome_summary(Outcome.ok(value))

        assert (
            summary["source_count"],
            summary["source_uris"],
            summary["primary_uri"],
            summary["retrieval_mode"],
        ) == (2, ["https://a.test", "https://b.test"], "https://a.test", "live")

    def test_summary_without_an_outcome_is_unknown(self) -> None:
        """A call that ended without an Outcome is summarized as unknown."""
        assert outcome_summary(None) == {
            "status": "unknown",
            "ok": False,
            "error_type": "unknown",
            "retriable": False,
        }

    def test_long_values_are_previewed_and_capped(self) -> None:
        """The value preview is JSON, capped at 500 characters plus '...'."""
        summary = outcome_summary(Outcome.ok("x" * 1000))

        assert (len(summary["value_preview"]), summary["value_preview"][-3:]) == (503, "...")

    def test_an_int_preview_is_what_the_general_path_gives(self) -> None:
        """A short exact int takes its own route to the preview (ADR 0122): for ints at and
        past its bounds, an int subclass and a bool, the preview is json_safe's value as
        JSON text, as the general path makes it, and the summary has the same keys."""

        class Count(int):
            pass

        values: list[object] = [0, -7, 10**18 - 1, 10**18, -(10**18) + 1, -(10**18)]
        values += [10**400, 2**40000, Count(3), True, 1.5]
        for value in values:
            safe = json_safe(value)
            general = str(safe) if type(safe) is int else json.dumps(safe, ensure_ascii=False)
            expected = general if len(general) <= 500 else general[:500] + "..."

            summary = outcome_summary(Outcome.ok(value))

            assert (summary["value_preview"], summary["value_class"]) == (
                expected,
                type(value).__name__,
            ), value
            assert set(summary) == {
                "status",
                "ok",
                "error_type",
                "retriable",
                "value_class",
                "value_preview",
            }

    def test_empty_and_given_kwargs_are_recorded_alike(self) -> None:
        """No keyword arguments record ``{}`` (what json_safe makes of an empty dict, which
        the record now skips); given ones are their JSON-safe copy."""
        memory: dict[str, object] = {}
        for kwargs in ({}, {"n": 1, "s": "t"}):
            append_record(
                memory,
                call_id="c",
                method_name="m",
                args=(),
                kwargs=kwargs,
                outcome=Outcome.ok(1),
                trace_id="t",
                parent_call_id=None,
                depth=0,
                duration_ms=1.0,
            )
        records = memory["conversation_history"]
        assert isinstance(records, list)
        assert [record["kwargs"] for record in records] == [{}, {"n": 1, "s": "t"}]
        assert type(records[0]["kwargs"]) is dict

    def test_append_record_returns_the_new_length(self) -> None:
        """append_record answers the history length after appending."""
        memory: dict[str, Any] = {}

        size = append_record(
            memory,
            call_id="c",
            method_name="m",
            args=(object,),
            kwargs={},
            outcome=Outcome.ok(1),
            trace_id="t",
            parent_call_id=None,
            depth=2,
            duration_ms=1.26,
        )

        [record] = memory["conversation_history"]
        assert (size, record["speaker"], record["duration_ms"], record["args"]) == (
            1,
            "tool",
            1.3,
            ["<class 'object'>"],
        )


def _append(memory: dict[str, object], n: int, cursor: HistoryCursor | None = None) -> int:
    size = 0
    for i in range(n):
        size = append_record(
            memory,
            call_id=f"c{i}",
            method_name="m",
            args=(),
            kwargs={},
            outcome=Outcome.ok(i),
            trace_id="t",
            parent_call_id=None,
            depth=0,
            duration_ms=1.0,
            cursor=cursor,
        )
    return size


class _Untouchable(Mapping[str, object]):
    """A history entry that fails the moment anything reads it."""

    def __getitem__(self, key: str) -> object:
        raise AssertionError("an already checked record was read again")

    def __iter__(self) -> Iterator[str]:
        raise AssertionError("an already checked record was read again")

    def __len__(self) -> int:
        raise AssertionError("an already checked record was read again")


class TestHistoryCost:
    """No per-call step walks the whole history (ADR 0028)."""

    def test_memory_keeps_the_last_thousand_records(self) -> None:
        """After 1,005 appends memory holds 1,000 records, the oldest five dropped."""
        memory: dict[str, object] = {}

        size = _append(memory, HISTORY_LIMIT + 5, HistoryCursor())

        records = memory["conversation_history"]
        assert isinstance(records, list)
        assert (size, len(records), records[0]["call_id"], records[-1]["call_id"]) == (
            1000,
            1000,
            "c5",
            "c1004",
        )

    def test_checked_records_are_not_read_again(self) -> None:
        """With a cursor, a later check looks only at records added since the last one."""
        memory: dict[str, object] = {}
        cursor = HistoryCursor()
        _append(memory, 3, cursor)
        records = memory["conversation_history"]
        assert isinstance(records, list)
        records[0] = _Untouchable()
        records.append(7)  # malformed, added after the last check

        checked = history_records(memory, cursor)

        assert (len(checked), isinstance(checked[0], _Untouchable)) == (3, True)

    def test_a_replaced_list_is_checked_in_full(self) -> None:
        """When code replaces the list, the cursor starts over and repairs all of it."""
        memory: dict[str, object] = {}
        cursor = HistoryCursor()
        _append(memory, 2, cursor)
        memory["conversation_history"] = [5, {"call_id": "kept"}]

        checked = history_records(memory, cursor)

        assert [record["call_id"] for record in checked] == ["kept"]

    def test_a_last_record_replaced_in_place_is_checked(self) -> None:
        """A list of the same length whose last record was swapped for a malformed entry is
        not taken as already checked (the shortcut for an unchanged list, ADR 0122)."""
        memory: dict[str, object] = {}
        cursor = HistoryCursor()
        _append(memory, 2, cursor)
        records = memory["conversation_history"]
        assert isinstance(records, list)
        records[-1] = 7

        checked = history_records(memory, cursor)

        assert [record["call_id"] for record in checked] == ["c0"]

    def test_an_unchanged_list_is_returned_as_it_is(self) -> None:
        """With nothing added since the last check, no record is read and the list (the same
        object) comes back; a non-list value in its place is still replaced."""
        memory: dict[str, object] = {}
        cursor = HistoryCursor()
        _append(memory, 2, cursor)
        records = memory["conversation_history"]
        assert isinstance(records, list)
        records[0] = _Untouchable()

        assert history_records(memory, cursor) is records
        memory["conversation_history"] = "gone"
        assert history_records(memory, cursor) == []
