"""History access read from a program's tree: whether it read the history, and how (ADR 0103)."""

from __future__ import annotations

import pytest

from recurgent._history_access import PATTERNS, detect_history_access


class TestAccess:
    """Access is an expression that reads the history, not a mention of its name."""

    @pytest.mark.parametrize(
        "code",
        [
            "h = context['conversation_history']\nresult = 1",
            "result = context.get('conversation_history', [])",
            "result = memory.get('conversation_history') or []",
            "t = tool('x')\nresult = t.conversation_history",
        ],
        ids=["subscript", "get", "get-or", "handle-attribute"],
    )
    def test_reads_are_access(self, code: str) -> None:
        """Subscript, get(), a handle's attribute: accessed, no pattern."""
        assert detect_history_access(code) == (True, [])

    @pytest.mark.parametrize(
        "code",
        [
            "result = 1",
            "# conversation_history is not needed here\nresult = 1",
            "context['conversation_history'] = []\nresult = 0",
            "result = 'conversation_history'",
            "",
            None,
        ],
        ids=["absent", "comment", "write", "string", "empty", "none"],
    )
    def test_mentions_and_writes_are_not_access(self, code: str | None) -> None:
        """A comment, a write or a bare string is no read (the original's regex counted them)."""
        assert detect_history_access(code) == (False, [])

    def test_unparsable_code_that_names_it_counts_as_access(self) -> None:
        """A program that cannot be parsed but names the history: accessed, no patterns."""
        assert detect_history_access("context['conversation_history'][") == (True, [])


class TestPatterns:
    """Each pattern counts only when applied to the history (or a name bound to it)."""

    @pytest.mark.parametrize(
        ("code", "patterns"),
        [
            (
                "h = context['conversation_history']\n"
                "result = [r for r in h if r['method_name'] == 'ask']",
                ["filter"],
            ),
            (
                "result = [r['method_name'] for r in context.get('conversation_history', [])]",
                ["map"],
            ),
            ("h = context['conversation_history']\nresult = h[-3:]", ["slice"]),
            ("result = len(context['conversation_history'])", ["count"]),
            (
                "import itertools\nh = context['conversation_history']\n"
                "result = [k for k, _ in itertools.groupby(h, key=len)]",
                ["group"],
            ),
            ("h = context['conversation_history']\nresult = h[-1]", ["index"]),
            (
                "h = context['conversation_history']\n"
                "result = next((r for r in reversed(h) if r['outcome_summary'].get('content_ref')),"
                " None)",
                ["filter", "reverse"],
            ),
            ("result = 0\nfor r in context['conversation_history']:\n    result += 1", ["iterate"]),
            ("h = context['conversation_history']\nresult = h[::-1]", ["slice", "reverse"]),
            ("result = list(filter(None, context['conversation_history']))", ["filter"]),
            ("result = list(map(str, context['conversation_history']))", ["map"]),
        ],
        ids=[
            "filter",
            "map",
            "slice",
            "count",
            "group",
            "index",
            "newest-match",
            "for",
            "reverse-slice",
            "filter-call",
            "map-call",
        ],
    )
    def test_pattern(self, code: str, patterns: list[str]) -> None:
        """The detected patterns, in PATTERNS order."""
        assert detect_history_access(code) == (True, patterns)

    def test_names_bound_through_other_names_are_followed(self) -> None:
        """``h = context[...]; recent = h[-5:]; len(recent)`` counts the slice and the count."""
        code = (
            "h = context['conversation_history']\nrecent = h[-5:]\n"
            "result = len(recent)\nother = [1, 2]\nn = len(other)"
        )

        assert detect_history_access(code) == (True, ["slice", "count"])

    def test_patterns_on_other_values_do_not_count(self) -> None:
        """len(), slices and comprehensions on other lists are not history patterns."""
        code = (
            "h = context['conversation_history']\nitems = [1, 2, 3]\n"
            "result = (len(items), items[:2], [i for i in items if i])"
        )

        assert detect_history_access(code) == (True, [])

    def test_the_pattern_vocabulary(self) -> None:
        """The original's five, then index, reverse and iterate."""
        assert PATTERNS == (
            "filter",
            "map",
            "slice",
            "count",
            "group",
            "index",
            "reverse",
            "iterate",
        )

    def test_a_huge_program_is_not_parsed(self) -> None:
        """Past 200,000 characters only the mention is checked."""
        code = "h = context['conversation_history']\nresult = len(h)\n" + "#" * 200_000

        assert detect_history_access(code) == (True, [])
