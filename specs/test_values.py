"""json_safe, utc_timestamp and secret_values: values made safe for logs and history."""

from __future__ import annotations

import datetime
import enum
import json
from collections import UserDict
from typing import Any

import pytest
from freezegun import freeze_time

from recurgent import Agent, Outcome
from recurgent._values import json_safe, secret_values, utc_timestamp
from recurgent.testing import ScriptedProvider


class Colour(enum.Enum):
    RED = "red"


class TestJsonSafe:
    """json_safe returns JSON types only."""

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (None, None),
            (True, True),
            (3, 3),
            (1.5, 1.5),
            (float("inf"), "inf"),
            (float("nan"), "nan"),
            ("text", "text"),
            (b"ok\xff", "ok\ufffd"),
            (bytearray(b"ab"), "ab"),
            ("a\udcffb", "a?b"),
            ((1, 2), [1, 2]),
            (frozenset({1}), [1]),
            ({1: "a", (2, 3): "b"}, {"1": "a", "[2, 3]": "b"}),
            (Colour.RED, "red"),
            (datetime.date(2024, 1, 2), "2024-01-02"),
            (datetime.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05"),
        ],
    )
    def test_converts(self, value: Any, expected: Any) -> None:
        """Each kind of value maps to its JSON-safe form."""
        assert json_safe(value) == expected

    def test_pydantic_models_are_dumped(self) -> None:
        """An Outcome becomes its field dict."""
        assert json_safe(Outcome.ok(1, tool_role="r", method_name="m")) == {
            "status": "ok",
            "value": 1,
            "error_type": None,
            "error_message": None,
            "retriable": False,
            "tool_role": "r",
            "method_name": "m",
            "metadata": {},
            "code": None,
            "call_id": None,
        }

    def test_agents_render_as_repr_without_dispatch(self) -> None:
        """An Agent renders as its repr; nothing is dispatched."""
        agent = Agent("helper", provider=ScriptedProvider(), log=False)

        assert json_safe({"child": agent}) == {"child": "<Agent(helper) context=[]>"}

    def test_cycles_are_cut(self) -> None:
        """A self-referencing list ends in a marker instead of recursing forever."""
        loop: list[Any] = []
        loop.append(loop)

        rendered = json_safe(loop)

        assert "<nested too deeply>" in json.dumps(rendered)

    def test_result_is_json_serializable(self) -> None:
        """The result of a mixed structure passes json.dumps."""
        value = {"a": [object(), {1, 2}, b"\x00\xff"], "b": {"c": Colour.RED}}

        json.dumps(json_safe(value))

    def test_strings_are_redacted(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Secrets inside strings and keys are masked."""
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdef123456")

        assert json_safe({"sk-test-abcdef123456": ["key sk-test-abcdef123456"]}) == {
            "[REDACTED]": ["key [REDACTED]"]
        }


class TestUtcTimestamp:
    """utc_timestamp formats with milliseconds and Z."""

    def test_format(self) -> None:
        """A moment renders as YYYY-MM-DDTHH:MM:SS.mmmZ in UTC."""
        moment = datetime.datetime(
            2024, 5, 6, 9, 8, 7, 654321, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
        )

        assert utc_timestamp(moment) == "2024-05-06T07:08:07.654Z"

    def test_utc_moments_and_early_years(self) -> None:
        """A UTC moment is used as is; years before 1000 keep four digits."""
        moment = datetime.datetime(999, 1, 2, 3, 4, 5, 6_000, tzinfo=datetime.UTC)

        assert utc_timestamp(moment) == "0999-01-02T03:04:05.006Z"

    def test_now_under_a_frozen_clock(self) -> None:
        """Without a moment it stamps the current UTC time, the same text as isoformat."""
        with freeze_time("2026-12-02T03:04:05.678901+00:00"):
            assert utc_timestamp() == "2026-12-02T03:04:05.678Z"
        with freeze_time("2026-12-02T03:04:06.001+00:00"):
            assert utc_timestamp() == "2026-12-02T03:04:06.001Z"

    def test_now_changes_second_within_one_process(self) -> None:
        """The memo of the last second's text never shows a stale second."""
        with freeze_time("2030-01-01T23:59:59.999+00:00") as frozen:
            first = utc_timestamp()
            frozen.tick(datetime.timedelta(milliseconds=2))
            second = utc_timestamp()
        assert (first, second) == ("2030-01-01T23:59:59.999Z", "2030-01-02T00:00:00.001Z")


class TestShortcuts:
    """Values json_safe returns without a walk come back exactly as the walk would give them."""

    @pytest.mark.parametrize(
        "value",
        [None, True, 7, -(2**40), 1.5, [], (), {}, [1, True, None], (3, 4), [0] * 16],
    )
    def test_shortcut_matches_the_walk(self, value: Any) -> None:
        """Scalars, empty containers and short lists of small atoms equal the walked copy."""
        walked = json_safe({"k": value})["k"]  # inside a mapping: always walked

        assert json_safe(value) == walked
        assert type(json_safe(value)) is type(walked)

    def test_caps_still_cut_short_lists(self) -> None:
        """max_items and a small budget cut a short list of numbers as before."""
        assert json_safe([1, 2, 3, 4], max_items=2) == [1, 2, "<2 more items>"]
        assert json_safe(list(range(10)), budget=20) == [0, 1, 2, "<7 more items>"]


class TestBounds:
    """json_safe is bounded and total (ADR 0032)."""

    def test_long_strings_are_cut_with_a_marker(self) -> None:
        """A string over max_chars keeps its head and says how many characters were cut."""
        assert json_safe("abcdefghij", max_chars=4) == "abcd...<6 more chars>"
        assert json_safe("x" * 70_000) == "x" * 65_536 + "...<4464 more chars>"

    def test_long_bytes_are_cut(self) -> None:
        """Bytes far over the limit are sliced before decoding."""
        rendered = json_safe(b"y" * 1_000_000, max_chars=10)

        assert rendered.startswith("yyyyyyyyyy...<")
        assert len(rendered) < 100

    def test_containers_are_cut_at_max_items(self) -> None:
        """Lists and mappings keep max_items elements and count the rest."""
        assert json_safe(list(range(10)), max_items=3) == [0, 1, 2, "<7 more items>"]
        assert json_safe({str(n): n for n in range(5)}, max_items=2) == {
            "0": 0,
            "1": 1,
            "...": "<3 more keys>",
        }

    def test_budget_bounds_the_whole_copy(self) -> None:
        """With a budget, the JSON of 1000 long strings stays near the budget."""
        rendered = json_safe(["z" * 1000] * 1000, max_chars=500, budget=5_000)

        assert len(json.dumps(rendered)) < 8_000
        assert rendered[0] == "z" * 500 + "...<500 more chars>"

    def test_huge_ints_become_text(self) -> None:
        """Ints over 10,000 bits become leading digits and a digit count; smaller stay ints."""
        assert json_safe(2**9999) == 2**9999
        assert json_safe(10**5000) == "10000000000000000000...<5001 digits>"
        assert json_safe(-(10**5000) + 1) == "-99999999999999999999...<5000 digits>"

    def test_secret_keys_are_masked_at_any_depth(self) -> None:
        """Values under secret-named keys become [REDACTED]; None and other keys stay."""
        assert json_safe({"a": {"Password": "p", "token": None, "n": 1}, "api_key": [1]}) == {
            "a": {"Password": "[REDACTED]", "token": None, "n": 1},
            "api_key": "[REDACTED]",
        }


class TestSecretValues:
    """secret_values: which strings under secret-named keys a log line masks (ADR 0063)."""

    def test_values_under_secret_keys_are_found_at_any_depth(self) -> None:
        """Nested dicts, lists and tuples are searched; masks and short values are skipped."""
        found = secret_values(
            {"config": {"db": ({"password": "hunter22"},), "api_key": "[REDACTED]"}},
            [{"token": "abc"}, {"session_token": "tok-123456"}],
        )

        assert sorted(found) == ["hunter22", "tok-123456"]

    def test_each_container_is_searched_up_to_64_entries(self) -> None:
        """Row 64 (the 64th) is searched, row 65 is not: the walk is bounded per container."""
        rows: list[dict[str, int | str]] = [{"id": index} for index in range(100)]
        rows[63] = {"id": 63, "password": "inside-the-cap"}
        rows[64] = {"id": 64, "password": "past-the-cap"}

        assert secret_values({"rows": rows}) == ("inside-the-cap",)

    def test_a_mapping_with_unhashable_or_odd_keys_is_read(self) -> None:
        """A Mapping whose keys are not all strings is searched key by key."""
        table = UserDict({1: "one", "token": "value-1234", ("a",): "tuple key"})

        assert secret_values(table) == ("value-1234",)
