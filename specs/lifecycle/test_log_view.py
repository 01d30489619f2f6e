"""LogView (recurgent/_lifecycle/_log_view.py, ADR 0125): its copies are json_safe's.

The view remembers the copies of short strings per set of secrets and copies small containers by
a direct walk. Every copy it makes must be the one ``json_safe`` makes with the log's caps and
the call's secrets (the rule the log line had before, ADR 0063): these specs compare the two on
thousands of generated values (scalars, secret-named keys over every kind of value, long and
non-ASCII strings, deep, long and near-budget containers), on the second sight of a value as on
the first, and check that a copy remembered under one set of secrets never serves another.
"""

from __future__ import annotations

import enum
import json
import random
from typing import Any

import pytest

from recurgent._lifecycle._log_view import (
    LOG_FIELD_BUDGET,
    LOG_ITEMS,
    LOG_STRING_CHARS,
    LOG_TEXT_CHARS,
    LogView,
)
from recurgent._redact import MASK, redact
from recurgent._values import json_safe

SECRET_SETS: tuple[dict[str, str], ...] = (
    {},
    {"api_key": "abcd1234"},
    {"password": "snapshot", "token": "0000", "db_secret": "ré-sécret-✓"},
)
WORDS = (
    "",
    "x",
    "tick",
    "snapshot",
    "execution_snapshot_ref",
    "abcd1234",
    "0000000000000001",
    "Bearer abcdefghijklmnop",
    "sk-abcdefghijklmnop",
    "password=hunter2hunter2",
    "authorization: Basic dXNlcjpwYXNz",
    "résumé ✓",
    "lone \ud800 surrogate",
    "ré-sécret-✓ inside",
    "[REDACTED]",
)
KEYS = (
    "name",
    "password",
    "api_key",
    "token",
    "max_tokens",
    "snapshot",
    "a snapshot",
    "a [REDACTED]",
    "Authorization",
    "résumé",
)


class Color(enum.Enum):
    RED = "red snapshot"


class Text(str):
    """A str subclass: copied as text, never through the view's memory of plain strings."""


def _view(secrets: dict[str, str]) -> LogView:
    return LogView((), dict(secrets), {}, with_history=False)


def _reference(value: Any, view: LogView) -> Any:
    return json_safe(
        value,
        max_chars=LOG_STRING_CHARS,
        max_items=LOG_ITEMS,
        budget=LOG_FIELD_BUDGET,
        secrets=view.secrets,
    )


def _reference_field(value: Any, view: LogView) -> Any:
    """The field rule before ADR 0125 (``_LogView.field`` in ``_lifecycle/_state.py``)."""
    kind = type(value)
    if value is None or kind is bool or (kind is int and -(2**53) < value < 2**53):
        return value
    if kind is float and value == value and value not in (float("inf"), float("-inf")):
        return value
    if kind is str:
        if len(value) <= LOG_STRING_CHARS and value.isascii():
            return redact(value, view.secrets)
        return json_safe(value, max_chars=LOG_STRING_CHARS, secrets=view.secrets)
    return _reference(value, view)


def _word(rng: random.Random) -> Any:
    pick = rng.random()
    if pick < 0.7:
        return rng.choice(WORDS)
    if pick < 0.8:
        return rng.choice(WORDS) * rng.choice((20, 300))  # past the remembered length
    if pick < 0.9:
        return f"{rng.choice(WORDS)}-{rng.randrange(10**6)}"
    return Text(rng.choice(WORDS))


def _scalar(rng: random.Random) -> Any:
    return rng.choice(
        (
            None,
            True,
            False,
            0,
            -7,
            2**53,
            2**60,
            1.5,
            -0.0,
            float("nan"),
            float("inf"),
            b"by\xfftes",
            Color.RED,
            _word(rng),
            _word(rng),
            _word(rng),
        )
    )


def _value(rng: random.Random, depth: int = 0) -> Any:
    if depth > 4 or rng.random() < 0.45:
        return _scalar(rng)
    long = depth < 2 and rng.random() < 0.02
    size = LOG_ITEMS + 3 if long else rng.choice((0, 1, 2, 3, 5, 8))
    shape = rng.random()
    if shape < 0.45:
        mapping: dict[Any, Any] = {}
        for _ in range(size):
            key = rng.choice(KEYS) if rng.random() < 0.9 else rng.choice((1, None, True, Text("k")))
            mapping[key] = _value(rng, depth + 1)
        return mapping
    items = [_value(rng, depth + 1) for _ in range(size)]
    if shape < 0.85:
        return items
    return tuple(items) if shape < 0.95 else frozenset(rng.choice(WORDS) for _ in items)


def _same(copy: Any, expected: Any) -> bool:
    # json.dumps tells 1 from 1.0 and True, which == does not.
    return json.dumps(copy, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)


@pytest.mark.parametrize("secrets", SECRET_SETS, ids=["no secrets", "one", "three"])
def test_value_field_and_text_are_json_safes_copies(secrets: dict[str, str]) -> None:
    """1,500 generated values per set of secrets: value(), field() and text() give json_safe's
    copy with the log's caps, the first time and again from what the view remembered."""
    rng = random.Random(125)
    values = [_value(rng) for _ in range(1_500)]
    for attempt in ("first", "remembered"):
        view = _view(secrets)
        for value in values:
            assert _same(view.value(value), _reference(value, view)), (attempt, value)
            assert _same(view.field(value), _reference_field(value, view)), (attempt, value)
            if isinstance(value, str):
                expected = json_safe(value, max_chars=LOG_TEXT_CHARS, secrets=view.secrets)
                assert view.text(value) == expected, (attempt, value)


@pytest.mark.parametrize("count", [379, 380, 381, 383, 384, 400, 1_000])
def test_containers_near_the_budget_are_cut_as_json_safe_cuts_them(count: int) -> None:
    """Lists of 250-character strings around the field budget (100,000): the copy is json_safe's,
    cut where it cuts, whether the direct walk or json_safe made it."""
    view = _view({"api_key": "abcd1234"})
    strings = [f"{index:05d}" + "y" * 245 for index in range(count)]
    nested = [strings[start : start + 100] for start in range(0, count, 100)]
    flat = strings[:100]
    keyed = {f"k{index}": rows for index, rows in enumerate(nested)}
    for value in (nested, keyed, flat):
        assert _same(view.value(value), _reference(value, view))


def test_deep_containers_are_json_safes() -> None:
    """Nesting past the direct walk's depth (and past json_safe's 32 levels), with an int too
    long for str() at the bottom, is json_safe's."""
    view = _view({})
    value: Any = ["leaf", 2**20_000]
    for depth in range(40):
        value = [value] if depth % 2 else {"level": value}
    assert _same(view.value(value), _reference(value, view))


def test_a_copy_remembered_under_one_set_of_secrets_never_serves_another() -> None:
    """A string copied unchanged while it was no secret is masked once it is one, in a field,
    a value and a text; and unmasked again when it no longer is."""
    text = "call-id-snapshot-42"
    value = {"ref": text, "refs": [text]}
    before = _view({})
    assert (before.field(text), before.value(value), before.text(text)) == (text, value, text)

    during = _view({"password": "snapshot"})
    masked = "call-id-[REDACTED]-42"
    assert (during.field(text), during.value(value), during.text(text)) == (
        masked,
        {"ref": masked, "refs": [masked]},
        masked,
    )

    after = _view({})
    assert (after.field(text), after.value(value), after.text(text)) == (text, value, text)


def test_a_flag_or_number_under_a_secret_named_key_is_masked() -> None:
    """As json_safe does, any non-null value under a secret-named key is masked, flags and
    numbers too, at any depth; null stays null."""
    view = _view({})
    value = {"token": True, "inner": {"password": 7, "api_key": None, "secret": [1]}}
    assert view.value(value) == {
        "token": MASK,
        "inner": {"password": MASK, "api_key": None, "secret": MASK},
    }


def test_many_distinct_strings_are_copied_right_after_the_memory_is_full() -> None:
    """Past the strings the view remembers (ids and times differ every call), copies stay
    json_safe's: a fresh memory starts under the same secrets."""
    view = _view({"api_key": "abcd1234"})
    for index in range(10_000):
        text = f"id-{index}-abcd1234"
        assert view.field(text) == f"id-{index}-{MASK}"
    assert view.value([f"x-{index}" for index in range(50)]) == [f"x-{i}" for i in range(50)]


def test_long_texts_are_remembered_within_their_budget() -> None:
    """A program text longer than the remembered strings is copied as json_safe copies it,
    the second time from memory, and a text past the memory's budget is still copied."""
    program = "key = 'sk-abcdefghijklmnop'\n" + "x = 1\n" * 200
    huge = "token=abcdefghij " * 70_000  # 1.19 M characters
    view = _view({})
    for _ in range(2):
        assert view.text(program) == json_safe(program, max_chars=LOG_TEXT_CHARS)
        assert view.text(huge) == json_safe(huge, max_chars=LOG_TEXT_CHARS)
