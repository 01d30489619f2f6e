"""json_safe, safe_repr and utc_timestamp: values made safe for logs and history."""

from __future__ import annotations

import datetime
import enum
import json
from typing import Any

import pytest

from recurgent import Agent, Outcome
from recurgent._values import json_safe, safe_repr, utc_timestamp


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
        }

    def test_agents_render_as_repr_without_dispatch(self) -> None:
        """An Agent renders as its repr; nothing is dispatched."""
        agent = Agent("helper", log=False)

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


class TestSafeRepr:
    """safe_repr never raises."""

    def test_broken_repr_gives_a_marker(self) -> None:
        """An object whose repr raises gives <unrepresentable Class: Error>."""

        class Broken:
            def __repr__(self) -> str:
                raise ValueError("no")

        assert safe_repr(Broken()) == "<unrepresentable Broken: ValueError>"

    def test_repr_is_redacted(self) -> None:
        """A repr containing a key is masked."""
        assert safe_repr(["sk-abcdefgh12345"]) == "['[REDACTED]']"


class TestUtcTimestamp:
    """utc_timestamp formats with milliseconds and Z."""

    def test_format(self) -> None:
        """A moment renders as YYYY-MM-DDTHH:MM:SS.mmmZ in UTC."""
        moment = datetime.datetime(
            2024, 5, 6, 9, 8, 7, 654321, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
        )

        assert utc_timestamp(moment) == "2024-05-06T07:08:07.654Z"
