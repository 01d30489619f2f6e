"""The stored form of an answer: compact JSON, kind, size, digest, or a marked rendering
(ADRs 0101, 0122)."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from decimal import Decimal
from typing import Any

import pytest

from recurgent._content_serialization import FALLBACK_KEY, serialize


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class TestSerialize:
    """Plain data is kept as its own JSON; anything else as a marked, bounded rendering."""

    @pytest.mark.parametrize(
        ("value", "text", "kind"),
        [
            ({"a": [1, 2.5, None]}, '{"a":[1,2.5,null]}', "object"),
            ([1, "x"], '[1,"x"]', "array"),
            ((1, 2), "[1,2]", "array"),
            ("héllo", '"héllo"', "string"),
            (42, "42", "number"),
            (1.5, "1.5", "number"),
            (True, "true", "boolean"),
            (None, "null", "null"),
            ({1: "one"}, '{"1":"one"}', "object"),
            (OrderedDict(b=1), '{"b":1}', "object"),
        ],
    )
    def test_plain_data_is_its_compact_json(self, value: Any, text: str, kind: str) -> None:
        """Kind by top-level JSON type; bytes and digest of the UTF-8 text; mode json_safe."""
        stored = serialize(value)

        assert (stored.text, stored.kind, stored.size, stored.digest, stored.mode) == (
            text,
            kind,
            len(text.encode()),
            _digest(text),
            "json_safe",
        )

    @pytest.mark.parametrize(
        ("value", "representation"),
        [
            ({1, 2}, [1, 2]),
            (Decimal("1.5"), "Decimal('1.5')"),
            ({"x": float("nan")}, {"x": "nan"}),
            (2**20000, None),
        ],
        ids=["set", "decimal", "nan", "huge-int"],
    )
    def test_other_values_are_a_marked_rendering(self, value: Any, representation: Any) -> None:
        """Sets, Decimals, NaN and huge ints are kept as {__content_fallback__, value_class,
        representation}, kind ``fallback``, mode ``fallback_rendering``."""
        stored = serialize(value)
        payload = json.loads(stored.text)

        assert (stored.kind, stored.mode, payload[FALLBACK_KEY], payload["value_class"]) == (
            "fallback",
            "fallback_rendering",
            True,
            type(value).__name__,
        )
        if representation is not None:
            assert payload["representation"] == representation
        else:
            assert payload["representation"].endswith("digits>")

    def test_a_rendering_is_bounded(self) -> None:
        """A set of 20,000 strings (2 MB of text) renders its first 1,000 and counts the rest."""
        stored = serialize({f"{n:07d}" + "x" * 100 for n in range(20_000)})
        shown = json.loads(stored.text)["representation"]

        assert (stored.kind, len(shown), shown[-1]) == ("fallback", 1001, "<19000 more items>")
        assert stored.size < 120_000

    def test_a_cycle_is_rendered_not_followed(self) -> None:
        """A list that contains itself is not plain data; its rendering is finite."""
        loop: list[Any] = [1]
        loop.append(loop)

        stored = serialize(loop)

        assert (stored.kind, json.loads(stored.text)["value_class"]) == ("fallback", "list")


class Label(str):
    """A str subclass: not a plain str for the scalar shortcut."""


class Count(int):
    """An int subclass with its own repr: JSON still writes its number."""

    def __repr__(self) -> str:
        return "Count!"


class TestScalarShortcut:
    """A payload of exactly int, str, bool, None or float is encoded without ``json.dumps``
    (ADR 0122); every result is the one ``json.dumps`` gives, and what it refuses falls back."""

    @pytest.mark.parametrize(
        "value",
        [
            0,
            -7,
            10**300,
            "",
            "plain",
            'quote " backslash \\ newline \n tab \t',
            "\x00\x1f\x7f control",
            "héllo ✓ 𝄞",
            "lone \ud800 surrogate",
            True,
            False,
            None,
            0.1,
            -0.0,
            1e308,
            5e-324,
            Label("sub"),
            Count(3),
        ],
    )
    def test_the_text_is_json_dumps(self, value: Any) -> None:
        """Text, kind, size, digest and mode equal those of the general path's json.dumps."""
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        raw = text.encode("utf-8", "surrogatepass")
        kind = {bool: "boolean", str: "string", type(None): "null"}.get(type(value), "number")
        if isinstance(value, str):
            kind = "string"

        stored = serialize(value)

        assert (stored.text, stored.kind, stored.size, stored.digest, stored.mode) == (
            text,
            kind,
            len(raw),
            f"sha256:{hashlib.sha256(raw).hexdigest()}",
            "json_safe",
        )

    @pytest.mark.parametrize(
        "value",
        [float("nan"), float("inf"), -float("inf"), 10**5000],
        ids=["nan", "inf", "-inf", "huge-int"],
    )
    def test_what_json_refuses_is_a_rendering(self, value: Any) -> None:
        """NaN, the infinities and an int too long for str() take the marked rendering."""
        stored = serialize(value)

        assert (stored.kind, stored.mode, json.loads(stored.text)["value_class"]) == (
            "fallback",
            "fallback_rendering",
            type(value).__name__,
        )
