"""A registry entry's tool telemetry (ADR 0109): how observations of calls through a tool fold
into method state keys, signatures, capabilities, the consistency ratio and the lifecycle
snapshot, and the bounds that keep an entry small."""

from __future__ import annotations

from typing import Any

from recurgent._store._batch import UsesDelta, apply_uses
from recurgent._tool_telemetry import (
    KEY_CHARS,
    KEYS_SHOWN,
    METHODS_OBSERVED,
    ToolObservation,
    consistency_ratio,
    merge_observations,
    reflects,
)

FETCH = ToolObservation(
    method="fetch",
    state_keys=("last_url", "pages"),
    primary_key="pages",
    signature="args:0|kwargs:none",
    capabilities=("http_fetch",),
    lifecycle_state="probation",
    lifecycle_decision="continue_probation",
    policy_version="solver_promotion_v1",
)
PARSE = ToolObservation(
    method="parse",
    state_keys=("pages",),
    primary_key="pages",
    signature="args:0|kwargs:strict",
    capabilities=("rss_parse", "xml_parse", "http_fetch"),
)


class TestMerge:
    """The fields an observation writes."""

    def test_the_originals_fields_and_ours(self) -> None:
        """Per-method maps, the capability union in order, the ratio, the lifecycle snapshot;
        other fields untouched."""
        entry = merge_observations({"purpose": "p", "usage_count": 3}, [FETCH, PARSE])

        assert entry == {
            "purpose": "p",
            "usage_count": 3,
            "lifecycle_state": "probation",
            "lifecycle_decision": "continue_probation",
            "promotion_policy_version": "solver_promotion_v1",
            "method_state_keys": {"fetch": ["last_url", "pages"], "parse": ["pages"]},
            "method_primary_keys": {"fetch": "pages", "parse": "pages"},
            "method_signatures": {"fetch": "args:0|kwargs:none", "parse": "args:0|kwargs:strict"},
            "method_capabilities": {
                "fetch": ["http_fetch"],
                "parse": ["rss_parse", "xml_parse", "http_fetch"],
            },
            "capabilities": ["http_fetch", "rss_parse", "xml_parse"],
            "state_key_consistency_ratio": 1.0,
        }

    def test_a_new_program_replaces_the_methods_view(self) -> None:
        """A later observation of a method drops what it no longer shows (keys, tags); a
        lifecycle it does not know keeps the last one known."""
        first = merge_observations({}, [FETCH])
        later = ToolObservation(method="fetch", signature="args:none|kwargs:url")

        entry = merge_observations(first, [later])

        assert "fetch" not in entry["method_state_keys"]
        assert (entry["method_signatures"], entry["capabilities"]) == (
            {"fetch": "args:none|kwargs:url"},
            [],
        )
        assert entry["lifecycle_state"] == "probation"

    def test_consistency_is_the_share_of_the_dominant_primary_key(self) -> None:
        """Two methods on one key, one on another: 2/3; none with a key: 1.0."""
        assert [
            consistency_ratio({"a": "k", "b": "k", "c": "other"}),
            consistency_ratio({"a": "k", "b": None}),
            consistency_ratio({}),
        ] == [0.6667, 1.0, 1.0]

    def test_nothing_observed_changes_nothing(self) -> None:
        """No observation (or only malformed ones): the entry as it was."""
        entry: dict[str, Any] = {"purpose": "p", "method_state_keys": "junk"}

        assert merge_observations(entry, []) == entry
        assert merge_observations(entry, [ToolObservation(method="")]) == entry


class TestBounds:
    """An entry stays small whatever a tool's programs do."""

    def test_keys_tags_and_methods_are_capped(self) -> None:
        """KEYS_SHOWN keys of at most KEY_CHARS characters, well-formed tags only, the
        METHODS_OBSERVED most recently observed methods."""
        wide = ToolObservation(
            method="wide",
            state_keys=("x" * (KEY_CHARS + 1), *(f"k{i:02d}" for i in range(20))),
            capabilities=("http_fetch", "Not A Tag", "</tools>"),
        )
        entry = merge_observations({}, [wide])
        many = [ToolObservation(method=f"m{i:03d}", signature="s") for i in range(50)]
        crowded = merge_observations(entry, many)

        assert entry["method_state_keys"]["wide"] == [f"k{i:02d}" for i in range(KEYS_SHOWN)]
        assert entry["capabilities"] == ["http_fetch"]
        assert len(crowded["method_signatures"]) == METHODS_OBSERVED
        assert "wide" not in crowded["method_state_keys"]
        assert list(crowded["method_signatures"])[-1] == "m049"

    def test_malformed_maps_written_by_a_program_start_over(self) -> None:
        """A registry map a program overwrote with a list is replaced, not crashed on."""
        entry = merge_observations({"method_signatures": ["x"], "capabilities": 7}, [FETCH])

        assert entry["method_signatures"] == {"fetch": "args:0|kwargs:none"}


class TestBatched:
    """On disk, observations travel with the batched usage counts (ADR 0055)."""

    def test_a_delta_keeps_the_latest_observation_per_method(self) -> None:
        """Two calls of fetch and one of parse: fetch's second observation is written."""
        delta = UsesDelta()
        delta.add("fetch", True, "2026-12-02T00:00:01.000Z", FETCH)
        delta.add("parse", False, "2026-12-02T00:00:02.000Z", PARSE)
        later = UsesDelta()
        later.add(
            "fetch", True, "2026-12-02T00:00:03.000Z", ToolObservation("fetch", signature="s")
        )
        delta.merge(later)

        entry = apply_uses({"purpose": "p"}, delta)

        assert (entry["usage_count"], entry["success_count"], entry["failure_count"]) == (3, 2, 1)
        assert entry["method_signatures"] == {"parse": "args:0|kwargs:strict", "fetch": "s"}
        assert entry["capabilities"] == ["rss_parse", "xml_parse", "http_fetch"]


class TestReflects:
    """An entry that already says what an observation would write needs no merge."""

    def test_after_a_merge_the_same_observation_is_reflected(self) -> None:
        """Merged once: reflected; a changed signature or lifecycle: not."""
        entry = merge_observations({}, [FETCH])
        moved = ToolObservation(**{**_fields(FETCH), "lifecycle_state": "durable"})
        resigned = ToolObservation(**{**_fields(FETCH), "signature": "args:1|kwargs:none"})

        assert [reflects(entry, FETCH), reflects(entry, moved), reflects(entry, resigned)] == [
            True,
            False,
            False,
        ]
        assert reflects({}, FETCH) is False


def _fields(seen: ToolObservation) -> dict[str, Any]:
    return {name: getattr(seen, name) for name in ToolObservation.__slots__}
