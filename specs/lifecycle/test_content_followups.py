"""Follow-ups through the public API: answers kept, named in history, read with content(ref).

Pins ADRs 0101-0103 end to end: what a call keeps and logs, what ``content(ref)`` gives a
program (in process, across handles and in a worker process), and that the retention is the
agent's settings at the moment of use.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, configure_runtime
from recurgent._content_store import ContentStore
from recurgent.testing import ScriptedProvider, read_log

REF = re.compile(r"content:[0-9a-f]{24}")

ANSWER = "return {'headline': 'Rates rise', 'items': ['a', 'b']}"
ANSWER_JSON = '{"headline":"Rates rise","items":["a","b"]}'

#: The follow-up protocol as a program: newest record with a ref, content(ref), or a typed error.
REFORMAT = """
history = context.get("conversation_history", [])
ref = None
for record in reversed(history):
    ref = record["outcome_summary"].get("content_ref")
    if ref:
        break
if ref is None:
    return Outcome.error(error_type="content_ref_not_found", error_message="no earlier answer")
earlier = content(ref)
if earlier is None:
    return Outcome.error(error_type="content_ref_not_found", error_message="evicted")
return "# " + earlier["headline"] + "\\n" + "\\n".join("- " + i for i in earlier["items"])
"""
MARKDOWN = "# Rates rise\n- a\n- b"


def _assistant(log: Path | bool = False, **replies: Any) -> Agent:
    return Agent(
        "assistant",
        provider=ScriptedProvider(replies),
        log=log,
        toolstore_root=None,
    )


def _summary(agent: Agent, index: int = -1) -> dict[str, Any]:
    summary: dict[str, Any] = agent.runtime_context["conversation_history"][index][
        "outcome_summary"
    ]
    return summary


class TestKeptAnswers:
    """Every ok depth-0 answer is kept and named by its history record and log line."""

    def test_the_record_and_the_log_line_name_the_kept_answer(self, log_path: Path) -> None:
        """outcome_summary gains content_ref/kind/bytes/digest; the log line says the same."""
        agent = _assistant(log_path, latest=ANSWER)

        agent.latest()

        summary = _summary(agent)
        ref = summary["content_ref"]
        assert REF.fullmatch(ref)
        digest = "sha256:" + hashlib.sha256(ANSWER_JSON.encode()).hexdigest()
        assert {key: summary[key] for key in summary if key.startswith("content_")} == {
            "content_ref": ref,
            "content_kind": "object",
            "content_bytes": len(ANSWER_JSON),
            "content_digest": digest,
        }
        [entry] = read_log(log_path)
        assert {key: entry[key] for key in entry if key.startswith("content_store_")} == {
            "content_store_write_applied": True,
            "content_store_write_ref": ref,
            "content_store_write_kind": "object",
            "content_store_write_bytes": len(ANSWER_JSON),
            "content_store_write_digest": digest,
            "content_store_write_skipped_reason": None,
            "content_store_eviction_count": 0,
            "content_store_read_hit_count": 0,
            "content_store_read_miss_count": 0,
            "content_store_read_refs": [],
            "content_store_entry_count": 1,
            "content_store_total_bytes": len(ANSWER_JSON),
        }
        assert (entry["history_access_detected"], entry["history_query_patterns"]) == (False, [])

    def test_a_follow_up_reads_the_whole_earlier_answer(self, log_path: Path) -> None:
        """The follow-up program finds the ref in history and reformats the answer; its log
        line records one hit on that ref and the history patterns it used."""
        agent = _assistant(log_path, latest=ANSWER, as_markdown=REFORMAT)
        agent.latest()
        ref = _summary(agent)["content_ref"]

        formatted = agent.as_markdown()

        assert formatted.value == MARKDOWN
        entry = read_log(log_path)[-1]
        assert (
            entry["content_store_read_hit_count"],
            entry["content_store_read_miss_count"],
            entry["content_store_read_refs"],
            entry["history_access_detected"],
            entry["history_query_patterns"],
            entry["content_store_entry_count"],
        ) == (1, 0, [ref], True, ["reverse", "iterate"], 2)

    def test_a_program_may_change_its_copy_freely(self) -> None:
        """A program that changes what content() gave it changes neither the store, nor what
        the caller holds; and the caller changing its value changes nothing kept."""
        agent = _assistant(
            latest=ANSWER,
            mangle="ref = context['conversation_history'][0]['outcome_summary']['content_ref']\n"
            "copy = content(ref)\ncopy['items'].append('z')\ncopy['headline'] = 'x'\n"
            "return [copy, content(ref)]",
        )
        answer = agent.latest()
        answer.value["items"].clear()

        mangled = agent.mangle()

        assert mangled.value == [
            {"headline": "x", "items": ["a", "b", "z"]},
            {"headline": "Rates rise", "items": ["a", "b"]},
        ]

    def test_an_unknown_ref_is_none_and_a_typed_error_passes_through(self, log_path: Path) -> None:
        """content() of a ref this agent never kept is None; the program's
        content_ref_not_found error is the answer; the log counts one miss."""
        unknown = "content:" + "0" * 24
        agent = _assistant(
            log_path,
            fetch_old=f"if content({unknown!r}) is None:\n"
            "    return Outcome.error(error_type='content_ref_not_found', "
            "error_message='missing or evicted')\nreturn 'found'",
        )

        outcome = agent.fetch_old()

        assert (outcome.error_type, outcome.retriable) == ("content_ref_not_found", False)
        entry = read_log(log_path)[-1]
        assert (
            entry["content_store_read_miss_count"],
            entry["content_store_read_refs"],
            entry["content_store_write_skipped_reason"],
        ) == (1, [unknown], "error_payload_capture_disabled")

    def test_content_reads_spend_the_forwarded_call_budget(self, log_path: Path) -> None:
        """Each content() read is a forwarded call; a budget of 2 refuses the third read. The
        call is regenerated once (execution repair) and the log counts the last attempt's two
        reads."""
        agent = Agent(
            "assistant",
            provider=ScriptedProvider(
                {"probe": "return [content('content:' + str(n) * 24) for n in range(3)]"}
            ),
            log=log_path,
            toolstore_root=None,
            forwarded_call_budget=2,
        )

        outcome = agent.probe()

        assert outcome.error_type == "resource_limit"
        assert "more than 2 forwarded calls" in (outcome.error_message or "")
        assert read_log(log_path)[-1]["content_store_read_miss_count"] == 2

    def test_a_value_that_is_not_plain_data_comes_back_marked(self) -> None:
        """A set answer is kept as its rendering, kind fallback."""
        agent = _assistant(
            tags="return {'b', 'a'}",
            reread="return content(context['conversation_history'][0]['outcome_summary']"
            "['content_ref'])",
        )

        agent.tags()
        reread = agent.reread()

        assert _summary(agent, 0)["content_kind"] == "fallback"
        assert reread.value["__content_fallback__"] is True
        assert (reread.value["value_class"], sorted(reread.value["representation"])) == (
            "set",
            ["a", "b"],
        )


class TestSettings:
    """What is kept follows the agent's settings, read when it is used."""

    def test_error_payloads_are_kept_when_configured(self) -> None:
        """content_store_store_error_payloads: an error's fields are kept and readable."""
        configure_runtime(content_store_store_error_payloads=True)
        agent = _assistant(
            fail="return Outcome.error(error_type='not_found', error_message='no such item')",
            reread=REFORMAT.replace('earlier["headline"]', 'earlier["error_type"]').replace(
                '"\\n".join("- " + i for i in earlier["items"])', 'earlier["error_message"]'
            ),
        )

        agent.fail()

        assert _summary(agent)["content_kind"] == "object"
        assert agent.reread().value == "# not_found\nno such item"

    def test_max_entries_from_the_environment_evicts_the_oldest(
        self, monkeypatch: pytest.MonkeyPatch, log_path: Path
    ) -> None:
        """RECURGENT_CONTENT_STORE_MAX_ENTRIES=1: the second answer evicts the first, whose ref
        then reads as None."""
        monkeypatch.setenv("RECURGENT_CONTENT_STORE_MAX_ENTRIES", "1")
        agent = _assistant(
            log_path,
            first="return 'one'",
            second="return 'two'",
            both="h = context['conversation_history']\n"
            "return [content(r['outcome_summary']['content_ref']) for r in h[:2]]",
        )
        agent.first()
        agent.second()

        both = agent.both()

        assert both.value == [None, "two"]
        entries = read_log(log_path)
        assert [e["content_store_eviction_count"] for e in entries] == [0, 1, 1]
        assert entries[-1]["content_store_entry_count"] == 1

    def test_max_bytes_bounds_a_single_answer(self, log_path: Path) -> None:
        """content_store_max_bytes=10: a 12-byte answer is skipped with its reason and the
        record names no content."""
        configure_runtime(content_store_max_bytes=10)
        agent = _assistant(log_path, long="return 'x' * 10")

        agent.long()

        assert "content_ref" not in _summary(agent)
        entry = read_log(log_path)[-1]
        assert (
            entry["content_store_write_applied"],
            entry["content_store_write_skipped_reason"],
        ) == (
            False,
            "entry_exceeds_max_bytes",
        )

    def test_ttl_expires_an_answer(self) -> None:
        """content_store_ttl_seconds=30 with the store's clock 31 s on: the ref reads None."""
        configure_runtime(content_store_ttl_seconds=30)
        now = [0.0]
        agent = _assistant(first="return 'one'", reread=REFORMAT)
        agent._agent.content = ContentStore(clock=lambda: now[0])
        agent.first()

        now[0] = 31.0
        reread = agent.reread()

        assert (reread.error_type, reread.error_message) == ("content_ref_not_found", "evicted")

    @pytest.mark.parametrize("runtime", ["replaced", "rebuilt"])
    def test_a_changed_retention_applies_from_the_next_write(self, runtime: str) -> None:
        """Replacing the agent's captured settings (as an applied retention proposal does, the
        lifecycle's runtime replaced with the new options or built again) bounds the next write
        by the new max_entries, in the same store."""
        agent = _assistant(a="return 1", b="return 2", c="return 3")
        agent.a()
        agent.b()
        internals = agent._agent
        store = internals.content
        settings = dataclasses.replace(internals.options.settings, content_store_max_entries=1)
        internals.options = dataclasses.replace(internals.options, settings=settings)
        if runtime == "replaced":
            assert internals.runtime is not None
            internals.runtime = dataclasses.replace(internals.runtime, options=internals.options)
        else:
            internals.runtime = None

        agent.c()

        assert internals.runtime is not None and internals.runtime.content is store
        assert list(store) == [_summary(agent)["content_ref"]]

    def test_agents_with_different_settings_keep_their_own_retention(self) -> None:
        """Two agents built under different settings, called in turn: each write is bounded by
        its own agent's max_entries (the retention memo is per settings object, ADR 0122)."""
        configure_runtime(content_store_max_entries=1)
        one = _assistant(a="return 1", b="return 2", c="return 3")
        configure_runtime(content_store_max_entries=3)
        three = _assistant(a="return 1", b="return 2", c="return 3")

        for name in ("a", "b", "c"):
            getattr(one, name)()
            getattr(three, name)()

        assert (len(one._agent.content), len(three._agent.content)) == (1, 3)


class TestAcrossHandles:
    """Each agent keeps and reads its own answers; a ref is never another agent's."""

    def test_a_tool_reads_its_own_earlier_answer_through_a_handle(self) -> None:
        """The host asks the writer (depth 0, kept in the writer's store); the editor's program
        calls the writer through a handle, and the writer's program (depth 1) reads its own
        answer with content(ref)."""
        provider = ScriptedProvider(
            {
                ("writer", "draft"): ANSWER,
                ("writer", "as_markdown"): REFORMAT,
                ("editor", "polish"): "out = args[0].as_markdown()\nreturn out.value.upper()",
            }
        )
        writer = Agent("writer", provider=provider, log=False, toolstore_root=None)
        editor = Agent("editor", provider=provider, log=False, toolstore_root=None)
        writer.draft()

        polished = editor.polish(writer)

        assert polished.value == MARKDOWN.upper()
        assert len(writer._agent.content) == 1  # the depth-1 answer was not kept
        assert len(editor._agent.content) == 1

    def test_a_parent_cannot_read_a_childs_ref(self, log_path: Path) -> None:
        """With nested capture on, a delegated tool keeps its answer; the parent's program sees
        the ref in the tool's history but content(ref) is None in the parent's store (a miss)."""
        configure_runtime(content_store_nested_capture_enabled=True)
        provider = ScriptedProvider(
            {
                ("helper", "compute"): "return [1, 2, 3]",
                ("boss", "run"): "h = delegate('helper', purpose='compute')\n"
                "h.compute()\n"
                "ref = h.conversation_history[-1]['outcome_summary']['content_ref']\n"
                "return [ref, content(ref)]",
            }
        )
        boss = Agent("boss", provider=provider, log=log_path, toolstore_root=None)

        ref, value = boss.run().value

        assert REF.fullmatch(ref)
        assert value is None
        entry = next(e for e in read_log(log_path) if e["role"] == "boss")
        assert (entry["content_store_read_miss_count"], entry["content_store_read_refs"]) == (
            1,
            [ref],
        )
        helper_entry = next(e for e in read_log(log_path) if e["role"] == "helper")
        assert (helper_entry["depth"], helper_entry["content_store_write_ref"]) == (1, ref)

    def test_nested_answers_are_not_kept_by_default(self, log_path: Path) -> None:
        """A delegated tool's depth-1 answer: skipped as nested_capture_disabled, no ref."""
        provider = ScriptedProvider(
            {
                ("helper", "compute"): "return 7",
                ("boss", "run"): "return delegate('helper', purpose='c').compute().value",
            }
        )
        boss = Agent("boss", provider=provider, log=log_path, toolstore_root=None)

        assert boss.run().value == 7

        helper_entry = next(e for e in read_log(log_path) if e["role"] == "helper")
        assert (
            helper_entry["content_store_write_applied"],
            helper_entry["content_store_write_skipped_reason"],
        ) == (False, "nested_capture_disabled")


class TestProcessIsolation:
    """Under isolation="process" content(ref) is forwarded to the parent's store."""

    def test_a_worker_program_reads_a_kept_answer(self, log_path: Path) -> None:
        """The follow-up runs in a worker; content() crosses the pipe and the parent logs
        the hit."""
        agent = Agent(
            "assistant",
            provider=ScriptedProvider({"latest": ANSWER, "as_markdown": REFORMAT}),
            log=log_path,
            toolstore_root=None,
            isolation="process",
        )
        agent.latest()
        ref = _summary(agent)["content_ref"]

        formatted = agent.as_markdown()

        assert formatted.value == MARKDOWN
        entry = read_log(log_path)[-1]
        assert (
            entry["execution_receiver"],
            entry["content_store_read_hit_count"],
            entry["content_store_read_refs"],
            entry["forwarded_calls"],
        ) == ("worker", 1, [ref], 1)
