"""Re-ask signals (ADR 0108): the original's rule, with the window's edges."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent._patterns._memory import PatternEvent
from recurgent._reask import REASK_WINDOW_SECONDS, detect_reask, overlap_ratio

T0 = 1_800_000_000_000


def _previous(**overrides: Any) -> PatternEvent:
    fields: dict[str, Any] = {
        "timestamp": "2026-12-02T00:00:00.000Z",
        "recorded_at_ms": T0,
        "role": "assistant",
        "method_name": "ask",
        "trace_id": "trace",
        "call_id": "c0ffee0000000001",
        "depth": 0,
        "capability_patterns": ("http_fetch", "rss_parse", "news_headline_extract"),
        "code_checksum": "sha256:ab",
    }
    fields.update(overrides)
    return PatternEvent(**fields)


def _detect(previous: PatternEvent | None, **overrides: Any) -> Any:
    call: dict[str, Any] = {
        "method": "ask",
        "depth": 0,
        "trace_id": "trace",
        "now_ms": T0 + 10_000,
        "patterns": ("rss_parse", "http_fetch", "news_headline_extract"),
        "had_child_calls": False,
    }
    call.update(overrides)
    return detect_reask(previous, **call)


class TestWindow:
    """0 to 180 seconds after the previous event, both ends included."""

    @pytest.mark.parametrize(
        ("elapsed_ms", "detected"),
        [
            (-1, False),
            (0, True),
            (REASK_WINDOW_SECONDS * 1000, True),
            (REASK_WINDOW_SECONDS * 1000 + 1, False),
        ],
    )
    def test_edges(self, elapsed_ms: int, detected: bool) -> None:
        """A clock that went back, at once, at exactly 180 s, one millisecond past."""
        assert (_detect(_previous(), now_ms=T0 + elapsed_ms) is not None) is detected

    def test_the_correction_names_the_previous_call_and_the_shared_tags(self) -> None:
        """Signal, reference, the matched tags sorted, and the previous program's checksum."""
        found = _detect(_previous())

        assert (
            found.signal,
            found.correction_of_call_id,
            found.matched_capability_patterns,
            found.correction_of_checksum,
        ) == (
            "temporal_reask",
            "c0ffee0000000001",
            ("http_fetch", "news_headline_extract", "rss_parse"),
            "sha256:ab",
        )


class TestEligibility:
    """Depth 0 both, one trace, a previous event with a time."""

    @pytest.mark.parametrize(
        ("previous", "call"),
        [
            ({}, {"depth": 1}),
            ({"depth": 1}, {}),
            ({}, {"trace_id": "other"}),
            ({}, {"trace_id": None}),
            ({}, {"method": "  "}),
            ({"recorded_at_ms": 0}, {}),
        ],
    )
    def test_not_a_reask(self, previous: dict[str, Any], call: dict[str, Any]) -> None:
        """Each broken condition alone keeps the call from being a re-ask."""
        assert _detect(_previous(**previous), **call) is None

    def test_an_event_without_a_call_id_is_corrected_as_empty(self) -> None:
        """A hand-written event with no call id still matches; the reference is "" (the
        original's nil.to_s)."""
        found = _detect(_previous(call_id=None))

        assert (found.signal, found.correction_of_call_id) == ("temporal_reask", "")

    def test_no_previous_event(self) -> None:
        """The first call of a method is never a re-ask."""
        assert _detect(None) is None

    def test_a_previous_event_without_a_depth_reads_as_top_level(self) -> None:
        """As the original reads a missing depth (nil.to_i is 0)."""
        assert _detect(_previous(depth=None)) is not None


class TestOverlap:
    """Two thirds of the larger tag set must be shared."""

    def test_ratio(self) -> None:
        """Shared over the larger set; nothing shared is 0."""
        assert [
            overlap_ratio(["a", "b", "c"], ["a", "b"]),
            overlap_ratio(["a", "b", "c"], ["a"]),
            overlap_ratio([], []),
            overlap_ratio(["a"], ["b"]),
        ] == [pytest.approx(2 / 3), pytest.approx(1 / 3), 0.0, 0.0]

    def test_two_of_three_is_enough_one_of_two_is_not(self) -> None:
        """The threshold is the original's 0.67: 2/3 (0.6667) is below it, so two shared tags of
        three do not count, nor one of two; three of three do."""
        two_of_three = _detect(_previous(), patterns=("http_fetch", "rss_parse", "xml_parse"))
        one_of_two = _detect(_previous(capability_patterns=("a_tag", "b_tag")), patterns=("a_tag",))
        three_of_three = _detect(_previous())

        assert (two_of_three, one_of_two) == (None, None)
        assert three_of_three is not None

    def test_shifted_capabilities_are_not_a_reask(self) -> None:
        """The original's case: the second call reads XML instead of fetching headlines."""
        assert _detect(_previous(), patterns=("xml_parse",)) is None


class TestNoTooling:
    """A plain answer asked for again: no tags either time, no child agents either time."""

    def test_detected(self) -> None:
        """Both tagless, neither delegated."""
        found = _detect(_previous(capability_patterns=()), patterns=())

        assert (found.signal, found.matched_capability_patterns) == (
            "temporal_reask_no_tooling",
            (),
        )

    @pytest.mark.parametrize(
        ("previous", "call"),
        [({"had_delegated_calls": True}, {}), ({}, {"had_child_calls": True})],
    )
    def test_a_child_agent_either_time_is_not_a_plain_answer(
        self, previous: dict[str, Any], call: dict[str, Any]
    ) -> None:
        """A call that made child agents used tools: not the no-tooling signal."""
        previous = {"capability_patterns": (), **previous}

        assert _detect(_previous(**previous), patterns=(), **call) is None
