"""Log lines against the original's published log schema (``recurgent-log-entry.schema.json``).

The published schema (draft 2020-12, tolerant: unknown fields allowed) types the continuity
fields this port now writes (ADRs 0101-0103). :data:`ENTRY_SCHEMA` restates, in this port's
words, its required fields and its typing of the history and content-store fields, and every
line a range of calls writes is validated against it. The pattern and user-correction fields
(ADRs 0107, 0108) are the original's too, but its schema does not type them:
:data:`PATTERN_PROPERTIES` types them as the original writes them. When the original's repository is
named by ``RECURGENT_REFERENCE_REPO`` (a git checkout of kulesh/recurgent; opt-in, never in CI),
the lines are also validated against the published file itself, and the restatement is checked
against it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from recurgent import Agent, configure_runtime
from recurgent.testing import ScriptedProvider, read_log

_COUNT = {"type": ["integer", "null"], "minimum": 0}
_FLAG = {"type": ["boolean", "null"]}
_TEXT = {"type": ["string", "null"]}
_NAMES = {"type": ["array", "null"], "items": {"type": "string"}}

#: The published schema's required fields and its typing of the continuity fields, restated.
CONTINUITY_PROPERTIES: dict[str, Any] = {
    "history_record_appended": _FLAG,
    "conversation_history_size": _COUNT,
    "history_access_detected": _FLAG,
    "history_query_patterns": _NAMES,
    "content_store_write_applied": _FLAG,
    "content_store_write_ref": _TEXT,
    "content_store_write_kind": _TEXT,
    "content_store_write_bytes": _COUNT,
    "content_store_write_digest": _TEXT,
    "content_store_write_skipped_reason": _TEXT,
    "content_store_eviction_count": _COUNT,
    "content_store_read_hit_count": _COUNT,
    "content_store_read_miss_count": _COUNT,
    "content_store_read_refs": _NAMES,
    "content_store_entry_count": _COUNT,
    "content_store_total_bytes": _COUNT,
}
#: The original's pattern and correction fields (its ``observability.rb``), typed as it writes
#: them; its published schema leaves them untyped.
PATTERN_PROPERTIES: dict[str, Any] = {
    "capability_patterns": {"type": "array", "items": {"type": "string"}},
    "capability_pattern_evidence": {
        "type": ["object", "null"],
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
    },
    "user_correction_detected": {"type": "boolean"},
    "user_correction_signal": {
        "type": ["string", "null"],
        "enum": ["temporal_reask", "temporal_reask_no_tooling", None],
    },
    "user_correction_reference_call_id": _TEXT,
}
ENTRY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": [
        "timestamp",
        "role",
        "model",
        "method",
        "args",
        "kwargs",
        "code",
        "duration_ms",
        "generation_attempt",
        *CONTINUITY_PROPERTIES,
        *PATTERN_PROPERTIES,
    ],
    "properties": {**CONTINUITY_PROPERTIES, **PATTERN_PROPERTIES},
}
_SCHEMA_PATH = "specs/contract/v1/recurgent-log-entry.schema.json"

FOLLOW_UP = (
    "h = context['conversation_history']\n"
    "ref = h[-1]['outcome_summary'].get('content_ref')\n"
    "return [content(ref), content('content:' + '0' * 24), len(h)]"
)


def _published() -> dict[str, Any] | None:
    named = os.environ.get("RECURGENT_REFERENCE_REPO")
    if not named or not Path(named).exists():
        return None
    repo = Path(named)
    try:
        text = subprocess.run(
            ["git", "-C", str(repo), "show", f"HEAD:{_SCHEMA_PATH}"],
            capture_output=True,
            check=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    schema: dict[str, Any] = json.loads(text)
    return schema


@pytest.fixture(scope="module")
def published() -> dict[str, Any]:
    schema = _published()
    if schema is None:
        pytest.skip("set RECURGENT_REFERENCE_REPO to a checkout of the original to run this")
    return schema


@pytest.fixture
def lines(log_path: Path) -> list[dict[str, Any]]:
    """Lines of: a kept answer, a follow-up with a hit and a miss, a failing call, a nested
    call kept with nested capture, and a too-large answer skipped."""
    configure_runtime(content_store_nested_capture_enabled=True, content_store_max_bytes=64)
    provider = ScriptedProvider(
        {
            ("assistant", "latest"): "return {'headline': 'x'}",
            ("assistant", "again"): FOLLOW_UP,
            ("assistant", "broken"): "raise ValueError('no')",
            ("assistant", "big"): "return 'y' * 100",
            ("assistant", "team"): "return delegate('helper', purpose='p').compute().value",
            ("helper", "compute"): "return [1, 2]",
        }
    )
    agent = Agent("assistant", provider=provider, log=log_path, toolstore_root=None)
    agent.latest()
    agent.again()
    agent.broken()
    agent.big()
    agent.team()
    return read_log(log_path)


class TestLogSchema:
    """Every line validates; the continuity fields carry their values."""

    def test_every_line_validates_against_the_restated_schema(
        self, lines: list[dict[str, Any]]
    ) -> None:
        """Six lines (one nested), none with a schema error."""
        validator = Draft202012Validator(ENTRY_SCHEMA)

        errors = [error.message for line in lines for error in validator.iter_errors(line)]

        assert (len(lines), errors) == (6, [])

    def test_the_lines_say_what_was_kept_read_and_skipped(
        self, lines: list[dict[str, Any]]
    ) -> None:
        """Per line: applied, skip reason, hits, misses, history access."""
        shown = [
            (
                line["method"],
                line["content_store_write_applied"],
                line["content_store_write_skipped_reason"],
                line["content_store_read_hit_count"],
                line["content_store_read_miss_count"],
                line["history_access_detected"],
                line["history_query_patterns"],
            )
            for line in lines
        ]

        assert shown == [
            ("latest", True, None, 0, 0, False, []),
            ("again", True, None, 1, 1, True, ["count", "index"]),
            ("broken", False, "error_payload_capture_disabled", 0, 0, False, []),
            ("big", False, "entry_exceeds_max_bytes", 0, 0, False, []),
            ("compute", True, None, 0, 0, False, []),
            ("team", True, None, 0, 0, False, []),
        ]

    def test_every_line_validates_against_the_published_schema(
        self, lines: list[dict[str, Any]], published: dict[str, Any]
    ) -> None:
        """The original's own schema file accepts every line."""
        validator = Draft202012Validator(published)

        errors = [error.message for line in lines for error in validator.iter_errors(line)]

        assert errors == []

    def test_the_restatement_matches_the_published_typing(self, published: dict[str, Any]) -> None:
        """Each restated continuity field is typed exactly as the published schema types it."""
        properties = published["properties"]

        assert {name: properties[name] for name in CONTINUITY_PROPERTIES} == CONTINUITY_PROPERTIES
        assert ENTRY_SCHEMA["required"][:9] == published["required"]


#: A one-off program that fetches and reads headlines, and a plain answer.
HEADLINES = (
    "import urllib.request\n"
    "items = [{'title': 'a', 'link': 'b'}]\n"
    "return {'items': [{'title': i['title'], 'link': i['link']} for i in items], "
    "'provenance': {'sources': [{'uri': 'https://x.example/rss', 'fetched_at': '2026-12-02', "
    "'retrieval_tool': 'urllib', 'retrieval_mode': 'fixture'}]}}"
)


@pytest.fixture
def pattern_lines(tmp_path: Path, log_path: Path) -> list[dict[str, Any]]:
    """Lines of: a one-off fetch, the same asked again, a plain answer twice, a stored program
    answering again."""
    provider = ScriptedProvider(
        {"ask": [HEADLINES, HEADLINES, "return 'hm'", "return 'hm'"], "total": "return 3"}
    )
    agent = Agent("assistant", provider=provider, log=log_path, toolstore_root=tmp_path / "s")
    for question in ("news", "news again", "hello", "hello?"):
        agent.ask(question)
    agent.total()
    agent.total()
    return read_log(log_path)


class TestPatternFields:
    """The pattern and user-correction fields validate and say what happened."""

    def test_every_line_validates(self, pattern_lines: list[dict[str, Any]]) -> None:
        """Six lines, no schema error."""
        validator = Draft202012Validator(ENTRY_SCHEMA)

        errors = [e.message for line in pattern_lines for e in validator.iter_errors(line)]

        assert (len(pattern_lines), errors) == (6, [])

    def test_the_fields_per_line(self, pattern_lines: list[dict[str, Any]]) -> None:
        """Tags of generated programs only; corrections name the call before."""
        shown = [
            (
                line["capability_patterns"],
                line["user_correction_detected"],
                line["user_correction_signal"],
                line["user_correction_reference_call_id"] == previous["call_id"],
            )
            for previous, line in zip(
                [{"call_id": "none"}, *pattern_lines], pattern_lines, strict=False
            )
        ]

        assert shown == [
            (["http_fetch", "news_headline_extract"], False, None, False),
            (["http_fetch", "news_headline_extract"], True, "temporal_reask", True),
            ([], False, None, False),
            ([], True, "temporal_reask_no_tooling", True),
            ([], False, None, False),
            ([], False, None, False),
        ]
        assert [line["program_source"] for line in pattern_lines[4:]] == [
            "generated",
            "persisted",
        ]

    def test_the_published_schema_leaves_the_pattern_fields_to_us(
        self, published: dict[str, Any]
    ) -> None:
        """None of them is typed there (so the restatement cannot contradict it)."""
        assert [name for name in PATTERN_PROPERTIES if name in published["properties"]] == []
