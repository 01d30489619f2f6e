"""Which repeated capabilities the prompt shows (ADR 0107): the original's window, threshold,
order and limit, and how a covering tool is found."""

from __future__ import annotations

from recurgent._patterns._memory import PatternEvent
from recurgent._patterns._prompt import (
    PROMPT_LIMIT,
    pattern_prompt_applies,
    summarize_patterns,
    tool_for_capability,
)


def _events(*tag_sets: tuple[str, ...]) -> list[PatternEvent]:
    return [
        PatternEvent(
            timestamp=f"2026-12-02T00:00:{second:02d}.000Z",
            recorded_at_ms=second,
            role="assistant",
            method_name="ask",
            capability_patterns=tags,
        )
        for second, tags in enumerate(tag_sets, start=1)
    ]


class TestSummaries:
    """Counting, threshold, order, limit."""

    def test_one_occurrence_is_not_a_pattern_two_are(self) -> None:
        """A tag seen once is not shown; seen in two events it is, counted per event."""
        once = summarize_patterns(_events(("http_fetch", "http_fetch")), None)
        twice = summarize_patterns(_events(("http_fetch",), ("http_fetch",)), None)

        assert once == []
        assert [(s.capability, s.count, s.window, s.tool) for s in twice] == [
            ("http_fetch", 2, 2, None)
        ]

    def test_order_is_count_then_recency_then_name_and_four_at_most(self) -> None:
        """Most frequent first; equal counts, the most recently seen; then by name."""
        events = _events(
            ("a_tag", "b_tag", "c_tag", "d_tag", "e_tag"),
            ("a_tag", "b_tag", "c_tag", "d_tag", "e_tag"),
            ("e_tag", "c_tag"),
            ("b_tag",),
        )

        shown = summarize_patterns(events, None)

        assert [(s.capability, s.count) for s in shown] == [
            ("b_tag", 3),
            ("c_tag", 3),
            ("e_tag", 3),
            ("a_tag", 2),
        ]
        assert len(shown) == PROMPT_LIMIT

    def test_only_depth_0_dynamic_dispatch_calls_get_the_block(self) -> None:
        """ask/chat/discuss/host at depth 0 (any case); nothing else."""
        cases = [("ask", 0), ("Chat", 0), ("discuss", 0), ("host", 0), ("ask", 1), ("fetch", 0)]

        assert [pattern_prompt_applies(m, d) for m, d in cases] == [
            True,
            True,
            True,
            True,
            False,
            False,
        ]


class TestToolPresence:
    """A registered tool covers a capability when its name or purpose holds the signal words."""

    def test_best_scoring_tool_wins_ties_to_the_greater_name(self) -> None:
        """web_fetcher (http, fetch, web) beats a tool whose purpose says url once."""
        tools = {
            "linker": {"purpose": "shorten a url"},
            "web_fetcher": {"purpose": "fetch pages over http"},
            "a_fetch": {"purpose": "fetch web pages over http"},
        }

        assert tool_for_capability("http_fetch", tools) == "web_fetcher"
        assert tool_for_capability("rss_parse", tools) is None
        assert tool_for_capability("unknown_tag", tools) is None
        assert tool_for_capability("http_fetch", ["not", "a", "registry"]) is None
