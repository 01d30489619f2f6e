"""The text of a value for people to read: an outcome's ``repr``/``str``, an agent's memory keys.

A value's own ``repr`` or ``str`` is shown as it is, unless its text surely holds more than
:data:`DISPLAY_MAX_CHARS` characters: then a bounded, redacted preview and a note stand for it
(ADR 0142). :func:`describe` never raises. Built on :mod:`recurgent._repr` (``safe_repr``) and
:mod:`recurgent._values` (``json_safe``, ``outgrows``), which import nothing from here.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Collection
from typing import Any

from recurgent._repr import BOUNDED_KINDS, int_text, safe_repr, shorten
from recurgent._values import json_safe, outgrows

__all__ = [
    "DISPLAY_MAX_CHARS",
    "SHOWN_KEYS",
    "SHOWN_KEY_CHARS",
    "ShownAs",
    "describe",
    "display_text",
    "key_listing",
    "too_long_to_show",
]


class ShownAs:
    """An object whose ``repr`` is the text it was made with: it stands for something shown by
    a description or by its source, without quotes."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


#: The most characters a value is shown with in full (ADR 0142). A program's answer may repeat its
#: parts: ten megabytes of memory make ten gigabytes of text, which a notebook displaying the
#: outcome, or an f-string, would otherwise write.
DISPLAY_MAX_CHARS = 1_000_000
_DISPLAY_PREVIEW_CHARS = 2_000
# The kinds whose text can be far longer than their memory (parts written once per reference);
# any other object is shown by its own repr, which the walk would otherwise run a second time.
_REPEATING_KINDS = (str, bytes, bytearray, BaseException, *BOUNDED_KINDS)


def too_long_to_show(value: Any) -> bool:
    """Whether ``value``'s text surely holds more than :data:`DISPLAY_MAX_CHARS` characters."""
    return isinstance(value, _REPEATING_KINDS) and outgrows(value, DISPLAY_MAX_CHARS)


def describe(value: Any, *, use_repr: bool) -> str:
    """``repr(value)`` or ``str(value)`` for display; never raises (huge ints, broken dunders).

    Unlike :func:`~recurgent._repr.safe_repr` the text is neither redacted nor shortened when
    the plain conversion works: it is what the caller's own value looks like. A value whose text
    surely holds more than :data:`DISPLAY_MAX_CHARS` characters
    (:func:`~recurgent._values.outgrows`), or whose text turns out longer once written (escaped
    characters, a kind the walk does not look into), is shown by the bounded, redacted
    :func:`~recurgent._repr.safe_repr` of its first 2 000 characters and a note instead.
    """
    return display_text(value, use_repr=use_repr)[0]


def display_text(value: Any, *, use_repr: bool) -> tuple[str, bool]:
    """:func:`describe`'s text of ``value``, and whether it shows the value in full."""
    try:
        if not too_long_to_show(value):
            text = repr(value) if use_repr else str(value)
            # The walk counts a character as one, but an escaped one writes up to ten
            # (``repr(chr(0x10FFFF))`` is ``'\\U0010ffff'``), and a kind it does not walk (a
            # datetime, whose text writes its timezone's name) is written once, here: a string
            # of 999 000 such characters was ten million characters of repr (red team R19).
            if len(text) <= DISPLAY_MAX_CHARS:
                return text, True
        preview = safe_repr(value, limit=_DISPLAY_PREVIEW_CHARS)
        return (
            f"{preview} <not shown in full: its text is over {DISPLAY_MAX_CHARS:,} "
            "characters; the value itself is whole>"
        ), False
    except Exception as error:  # noqa: BLE001 - describing a value must not raise
        if isinstance(value, int) and not isinstance(value, bool):
            return int_text(value), False  # a repr of it (rich's) would raise too
        try:
            rendered = json_safe(value, budget=DISPLAY_MAX_CHARS)
            text = (
                rendered if isinstance(rendered, str) else json.dumps(rendered, ensure_ascii=False)
            )
        except Exception:  # noqa: BLE001 - last resort below
            return f"<unrepresentable {type(value).__name__}: {type(error).__name__}>", False
        return shorten(text, DISPLAY_MAX_CHARS), False


#: Memory keys an agent's ``repr`` lists, and the characters shown of each (ADR 0142).
SHOWN_KEYS = 50
SHOWN_KEY_CHARS = 80


def key_listing(keys: Collection[Any]) -> str:
    """``repr`` of the first :data:`SHOWN_KEYS` of ``keys`` as text, each cut to
    :data:`SHOWN_KEY_CHARS` characters, and how many more there are.

    A key that is not a string is shown by its bounded :func:`~recurgent._repr.safe_repr`:
    memory may hold a tuple key whose parts repeat, whose plain ``str`` is gigabytes (ADR 0142).
    """
    # Taken in one C-level step: another thread may add a key while the text is made.
    head = list(itertools.islice(keys, SHOWN_KEYS))
    shown = [
        shorten(key, SHOWN_KEY_CHARS) if type(key) is str else safe_repr(key, limit=SHOWN_KEY_CHARS)
        for key in head
    ]
    listed = repr(shown)
    more = len(keys) - len(shown)
    return f"{listed[:-1]}, ...<{more} more>]" if more > 0 else listed
