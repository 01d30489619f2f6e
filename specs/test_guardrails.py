"""Guardrail detection on program ASTs: what each rule flags and what it deliberately allows."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from recurgent._guardrails import (
    is_external_fetch,
    is_terminal,
    provenance_violation,
    static_violations,
)


def _subtypes(source: str) -> list[str]:
    return [violation.subtype for violation in static_violations(ast.parse(source))]


SOURCE = {
    "uri": "https://example.test",
    "fetched_at": "2026-01-01T00:00:00Z",
    "retrieval_tool": "web_fetcher",
    "retrieval_mode": "live",
}


class TestMutationRule:
    """singleton_method_mutation: mutating objects the program did not create."""

    @pytest.mark.parametrize(
        "source",
        [
            "def fn():\n    return 1\nsetattr(handle, 'f', fn)",
            "setattr(handle, 'f', lambda: 1)",
            "handle.helper = lambda: 1",
            "def fn():\n    return 1\nhandle.helper = fn",
            "type(x).y = 2",
            "x.__class__ = list",
            "x.__dict__['f'] = 1",
            "object.__setattr__(handle, 'f', 1)",
            "import types\nbound = types.MethodType(len, handle)",
            "from types import MethodType",
            "f = types.MethodType",
        ],
    )
    def test_flagged(self, source: str) -> None:
        """Each way of attaching behaviour to a foreign object is flagged."""
        assert _subtypes(source) == ["singleton_method_mutation"]

    @pytest.mark.parametrize(
        "source",
        [
            "class A:\n    pass\nA.callback = lambda: 1",
            "class A:\n    pass\na = A()\na.callback = lambda: 1",
            "class A:\n    def __init__(self):\n        self.callback = lambda: 1",
            "handle.value = 5",
            "setattr(handle, 'value', 5)",
            "name = type(x).__name__",
        ],
    )
    def test_allowed(self, source: str) -> None:
        """The program's own classes and instances, and plain values on handles, are fine."""
        assert _subtypes(source) == []

    def test_violation_carries_line_and_correction(self) -> None:
        """The violation names its line and asks for tool/delegate paths."""
        [violation] = static_violations(ast.parse("x = 1\nhandle.f = lambda: 1"))

        assert violation.line == 2
        assert violation.correction is not None
        assert "tool('name')" in violation.correction


class TestToolsShapeRule:
    """context_tools_shape_misuse: the registry is a dict of name -> metadata."""

    @pytest.mark.parametrize(
        "source",
        [
            "for t in context['tools']:\n    print(t['name'])",
            "names = [t['name'] for t in context['tools']]",
            "names = [t.get('purpose') for t in memory.get('tools', {})]",
            "tools = context['tools']\nfor t in tools:\n    print(t['role'])",
            "for i, t in enumerate(context['tools']):\n    print(t['name'])",
            "first = context['tools'][0]",
            "found = {t['name']: t for t in context.get('tools', {})}",
        ],
    )
    def test_flagged(self, source: str) -> None:
        """Iterating the registry as records or indexing it by position is flagged."""
        assert _subtypes(source) == ["context_tools_shape_misuse"]

    @pytest.mark.parametrize(
        "source",
        [
            "for name, meta in context['tools'].items():\n    print(meta['purpose'])",
            "present = 'web_fetcher' in context.get('tools', {})",
            "for name in context['tools']:\n    print(context['tools'][name]['purpose'])",
            "purposes = [m['purpose'] for m in context['tools'].values()]",
            "names = sorted(context['tools'])",
        ],
    )
    def test_allowed(self, source: str) -> None:
        """Key checks and name/metadata iteration are the intended shapes."""
        assert _subtypes(source) == []


class TestHardcodedFallbackRule:
    """hardcoded_external_fallback_success: canned data returned by a fetch-style program."""

    @pytest.mark.parametrize(
        "source",
        [
            "import urllib.request\nfallback_items = [{'title': 'x'}]\nresult = fallback_items",
            "import requests\nmock_headlines = ['a', 'b']\nreturn Outcome.ok(mock_headlines)",
            "f = tool('feed_fetcher')\nitems_fallback = [1, 2]\nreturn {'items': items_fallback}",
            "from urllib import request\ntry:\n    x = 1\nexcept Exception:\n    return [{'t': 1}]",
            "h = delegate('web_fetcher')\ntry:\n    x = 1\nexcept Exception:\n"
            "    result = Outcome.ok(['a'])",
        ],
    )
    def test_flagged(self, source: str) -> None:
        """A fallback-named list or a list literal returned from except is flagged."""
        assert _subtypes(source) == ["hardcoded_external_fallback_success"]

    @pytest.mark.parametrize(
        "source",
        [
            "fallback_items = [1]\nresult = fallback_items",
            "import urllib.parse\nfallback_items = [1]\nresult = fallback_items",
            "import urllib.request\nfallback_items = [1]\n"
            "return Outcome.error('low_utility', 'none', metadata={'tried': fallback_items})",
            "import urllib.request\ndefault_urls = ['https://a.test']\nresult = {'urls': default_urls}",
            "import urllib.request\ntry:\n    x = 1\nexcept Exception:\n    return []",
            "import urllib.request\ntry:\n    x = 1\nexcept Exception:\n"
            "    return {'status': 'error', 'error_type': 'network_error'}",
        ],
        ids=[
            "not-fetching",
            "parse-only",
            "error-metadata",
            "default-inputs",
            "empty-list",
            "error-mapping",
        ],
    )
    def test_allowed(self, source: str) -> None:
        """Non-fetch programs, typed errors and ordinary default inputs are not flagged."""
        assert _subtypes(source) == []


class TestExternalFetchDetection:
    """is_external_fetch decides when provenance is required."""

    @pytest.mark.parametrize(
        ("source", "fetches"),
        [
            ("import urllib.request", True),
            ("from urllib.request import urlopen", True),
            ("from urllib import request", True),
            ("import urllib\nurllib.request.urlopen('u')", True),
            ("import http.client", True),
            ("import requests", True),
            ("delegate('web_fetcher')", True),
            ("tool('RSS_Fetch')", True),
            ("print(fetch_result)", True),
            ("import urllib.parse\nurllib.parse.quote('a b')", False),
            ("from urllib.parse import urlencode", False),
            ("delegate('feed_parser')", False),
            ("import json", False),
        ],
    )
    def test_detection(self, source: str, fetches: bool) -> None:
        """HTTP modules, urlopen and *fetch* tools count; URL building alone does not."""
        assert is_external_fetch(ast.parse(source)) is fetches


class TestProvenanceRule:
    """provenance_violation: ok values of fetch programs carry complete sources."""

    FETCH = ast.parse("delegate('web_fetcher')")

    @pytest.mark.parametrize(
        "value",
        [
            {"items": [], "provenance": {"sources": [SOURCE]}},
            {"provenance": {"sources": ({**SOURCE, "retrieval_mode": " Cached "},)}},
            {"provenance": {"sources": [SOURCE, {**SOURCE, "retrieval_mode": "fixture"}]}},
        ],
    )
    def test_complete_envelopes_pass(self, value: dict[str, Any]) -> None:
        """Every source complete, modes live/cached/fixture in any case or spacing."""
        assert provenance_violation(self.FETCH, value) is None

    @pytest.mark.parametrize(
        "value",
        [
            ["a"],
            {"items": []},
            {"provenance": "web"},
            {"provenance": {"sources": []}},
            {"provenance": {"sources": [SOURCE, {**SOURCE, "uri": " "}]}},
            {"provenance": {"sources": [{**SOURCE, "retrieval_mode": "scraped"}]}},
            {"provenance": {"sources": [{k: v for k, v in SOURCE.items() if k != "fetched_at"}]}},
            {"provenance": {"sources": ["https://example.test"]}},
        ],
    )
    def test_incomplete_envelopes_fail(self, value: Any) -> None:
        """Missing, empty or partial provenance, or an unknown mode, is a violation."""
        violation = provenance_violation(self.FETCH, value)

        assert violation is not None
        assert violation.subtype == "missing_external_provenance"

    def test_programs_that_do_not_fetch_need_no_provenance(self) -> None:
        """A computation that fetches nothing returns plain values freely."""
        assert provenance_violation(ast.parse("result = 1"), {"items": [1]}) is None


class TestTerminalMessages:
    """is_terminal recognises violations no regeneration can fix."""

    @pytest.mark.parametrize(
        ("message", "terminal"),
        [
            ("Missing credential for the weather API", True),
            ("no API key configured", True),
            ("OPENAI_API_KEY is not set", True),
            ("unsupported runtime capability: timers", True),
            ("External service unavailable", True),
            ("Defining singleton methods on Agent instances is not supported", False),
        ],
    )
    def test_classification(self, message: str, terminal: bool) -> None:
        """Credential, API key, capability and service messages are terminal."""
        assert is_terminal(message) is terminal


class TestOrdering:
    """static_violations reports violations in source order."""

    def test_violations_are_sorted_by_line(self) -> None:
        """A later mutation comes after an earlier registry misuse."""
        source = "x = context['tools'][0]\nhandle.f = lambda: 1"

        assert _subtypes(source) == ["context_tools_shape_misuse", "singleton_method_mutation"]
