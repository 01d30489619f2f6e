"""JSON-safe, bounded rendering of arbitrary values for logs and history records, and id/time formats.

Every function here is total: it returns a value for any input (a huge ``int``, a broken
``__repr__``, a 50 MB string) and never raises. Long strings are shortened *before* they are
redacted, so a large value costs one bounded slice, never a walk over all of it (ADR 0032).
A value of no JSON kind becomes its bounded ``repr``, :func:`~recurgent._repr.safe_repr`
(:mod:`recurgent._repr`, which imports nothing from here). How a value is shown to people (an
outcome's text, an agent's memory keys) is :mod:`recurgent._display`, built on these.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import functools
import itertools
import math
import re
import sys
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

from recurgent._redact import MASK, environment_secrets, is_secret_key, redact
from recurgent._repr import (
    DEFAULT_MAX_CHARS,
    INT_BITS_AS_NUMBER,
    REDACT_MARGIN,
    int_text,
    safe_repr,
    shorten,
)

__all__ = [
    "KEPT_ATOM_KINDS",
    "json_safe",
    "outgrows",
    "secret_values",
    "utc_timestamp",
]

_MAX_DEPTH = 32


# The text of the last second stamped: every call stamps two or three times within one second,
# so the date and time are formatted once a second and only the milliseconds each time.
_second_text: tuple[int, str] = (-1, "")


def utc_timestamp(moment: datetime.datetime | None = None) -> str:
    """UTC time as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (now, without ``moment``)."""
    global _second_text  # a process-wide memo; one assignment, so threads see old or new
    if moment is None:
        # Integer microseconds, rounded as datetime.now() rounds them: float seconds would turn
        # .001 into .000 now and then.
        second, micros = divmod((time.time_ns() + 500) // 1000, 1_000_000)
        cached = _second_text
        if cached[0] != second:
            cached = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
            _second_text = cached
        return f"{cached[1]}.{micros // 1000:03d}Z"
    if moment.tzinfo is not datetime.UTC:
        moment = moment.astimezone(datetime.UTC)
    # isoformat is one C call (strftime costs several times more).
    return moment.isoformat(timespec="milliseconds")[:-6] + "Z"


class _Walk:
    """One bounded conversion: per-string and per-container caps, and an optional total budget."""

    def __init__(
        self,
        max_chars: int,
        max_items: int | None,
        budget: int | None,
        secrets: Sequence[str],
    ) -> None:
        self.max_chars = max_chars
        self.max_items = max_items
        self.remaining = budget
        self.secrets = secrets

    def spend(self, amount: int) -> None:
        if self.remaining is not None:
            self.remaining -= amount

    def spent(self) -> bool:
        return self.remaining is not None and self.remaining <= 0

    def text(self, raw: str) -> str:
        limit = self.max_chars
        if self.remaining is not None:
            limit = max(0, min(limit, self.remaining))
        if len(raw) <= limit and raw.isascii():
            # Most strings of a log line (field values, keys, short messages): ASCII text has no
            # lone surrogates to replace and needs no cut, so only the redaction runs.
            clean = redact(raw, self.secrets)
            result = shorten(clean, limit)
            self.spend(len(result))
            return result
        head = raw[: limit + REDACT_MARGIN]
        clean = redact(head.encode("utf-8", "replace").decode("utf-8"), self.secrets)
        if len(raw) > len(head):
            # The slice hid the tail: count it from the original length.
            result = f"{clean[:limit]}...<{len(raw) - limit} more chars>"
        else:
            result = shorten(clean, limit)
        self.spend(len(result))
        return result

    def items_cap(self) -> int | None:
        if self.spent():
            return 0
        return self.max_items

    def convert(self, item: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            return "<nested too deeply>"
        if item is None or isinstance(item, bool):
            return item
        if isinstance(item, int):
            bits = item.bit_length()
            if bits <= INT_BITS_AS_NUMBER:
                # Its digits: a budget counting 8 for a 3 000-digit int kept 125 000 of them
                # within a million characters (red team R14).
                self.spend(max(8, bits * 3 // 10))
                return int(item)
            text = self.text(int_text(item))
            # Its digits too: the text is short, but making it costs as the digits do.
            self.spend(bits * 3 // 10)
            return text
        if isinstance(item, float):
            self.spend(8)
            return item if math.isfinite(item) else repr(item)
        if isinstance(item, str):
            return self.text(item)
        if isinstance(item, bytes | bytearray):
            head = bytes(item[: (self.max_chars + REDACT_MARGIN) * 4])
            text = self.text(head.decode("utf-8", "replace"))
            if len(head) < len(item):
                text += f"...<{len(item) - len(head)} more bytes>"
            return text
        if isinstance(item, Enum):
            return self.convert(item.value, depth + 1)
        if isinstance(item, Mapping):
            return self.mapping(item, depth)
        if isinstance(item, list | tuple | set | frozenset):
            return self.sequence(item, depth)
        if isinstance(item, datetime.datetime | datetime.date | datetime.time):
            return item.isoformat()
        if callable(getattr(type(item), "model_dump", None)):
            try:
                return self.convert(item.model_dump(), depth + 1)
            except Exception:  # noqa: BLE001 - fall back to repr
                pass
        return self.text(safe_repr(item, self.secrets, limit=self.max_chars))

    def mapping(self, item: Mapping[Any, Any], depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        shown = 0
        for key, child in self._bounded(item.items()):
            if self.spent():
                break
            shown += 1
            name = str(self.convert(key, depth + 1))
            if child is not None and is_secret_key(name):
                result[name] = MASK
                self.spend(len(MASK))
            else:
                result[name] = self.convert(child, depth + 1)
        omitted = len(item) - shown
        if omitted > 0:
            result["..."] = f"<{omitted} more keys>"
        return result

    def sequence(self, item: Collection[Any], depth: int) -> list[Any]:
        result: list[Any] = []
        for child in self._bounded(item):
            if self.spent():
                break
            result.append(self.convert(child, depth + 1))
        omitted = len(item) - len(result)
        if omitted > 0:
            result.append(f"<{omitted} more items>")
        return result

    def _bounded(self, iterable: Iterable[Any]) -> list[Any]:
        # A snapshot, so another thread changing the container cannot break the walk, and only
        # as many elements as will be shown are visited.
        cap = self.items_cap()
        self.spend(1)
        if cap is None:
            return list(iterable)
        return list(itertools.islice(iterable, cap))


_SECRET_VALUES_MAX = 64
_SECRET_VALUE_MIN_CHARS = 4
_SECRET_WALK_ITEMS = 64
_SECRET_WALK_DEPTH = 8
_SECRET_WALK_NODES = 10_000
_SECRET_WALK_LEAVES = frozenset({str, int, float, bool, type(None), bytes})


def secret_values(*values: Any) -> tuple[str, ...]:
    """Strings stored under secret-named keys anywhere in ``values``, so text can be masked too.

    A bounded walk (8 levels, 64 entries per container, 10 000 nodes, at most 64 values of 4+
    characters); values already masked are skipped.
    """
    found: set[str] = set()
    stack: list[tuple[Any, int]] = [(value, 0) for value in values]
    visited = 0
    while stack and len(found) < _SECRET_VALUES_MAX and visited < _SECRET_WALK_NODES:
        item, depth = stack.pop()
        if depth > _SECRET_WALK_DEPTH:
            continue
        kind = type(item)
        if kind is dict or (kind is not list and kind is not tuple and isinstance(item, Mapping)):
            try:
                # A snapshot (another thread may change the mapping), sliced only when long.
                if kind is dict and len(item) <= _SECRET_WALK_ITEMS:
                    keys, children = list(item), list(item.values())
                else:
                    pairs = list(itertools.islice(item.items(), _SECRET_WALK_ITEMS))
                    keys, children = [key for key, _ in pairs], [child for _, child in pairs]
            except Exception:  # noqa: BLE001 - a mapping that cannot be read hides nothing
                continue
            for index in _secret_positions(keys):
                child = children[index]
                if (
                    isinstance(child, str)
                    and len(child) >= _SECRET_VALUE_MIN_CHARS
                    and child != MASK
                ):
                    found.add(child)
        elif kind is list or kind is tuple or isinstance(item, list | tuple):
            children = item[:_SECRET_WALK_ITEMS]
        else:
            visited += 1
            continue
        # Every node counts against the bound, but scalar children (most of them) are counted in
        # one step: nothing can hide below a scalar, so they are never pushed.
        visited += 1 + len(children)
        if not _SECRET_WALK_LEAVES.issuperset(map(type, children)):
            stack.extend(
                (child, depth + 1) for child in children if type(child) not in _SECRET_WALK_LEAVES
            )
    return tuple(found)


_SECRET_KEY_TUPLE_MAX = 16


def _secret_positions(keys: list[Any]) -> tuple[int, ...]:
    """Indexes of the secret-named string keys in ``keys``."""
    if len(keys) <= _SECRET_KEY_TUPLE_MAX:
        try:
            return _secret_positions_cached(tuple(keys))
        except TypeError:  # an unhashable key cannot be a key of a dict; a Mapping may have one
            pass
    return tuple(
        index for index, key in enumerate(keys) if isinstance(key, str) and is_secret_key(key)
    )


@functools.lru_cache(maxsize=1024)
def _secret_positions_cached(keys: tuple[Any, ...]) -> tuple[int, ...]:
    # Rows of one table share their keys, so a walk over many rows asks the same question.
    return tuple(
        index for index, key in enumerate(keys) if isinstance(key, str) and is_secret_key(key)
    )


_SHORT_SEQUENCE = 16
_SMALL_INT = 2**53


def _is_small_atom(item: Any) -> bool:
    kind = type(item)
    return item is None or kind is bool or (kind is int and -_SMALL_INT < item < _SMALL_INT)


def json_safe(
    value: Any,
    *,
    max_chars: int = DEFAULT_MAX_CHARS,
    max_items: int | None = None,
    budget: int | None = None,
    secrets: Sequence[str] | None = None,
) -> Any:
    """A bounded copy of ``value`` made of JSON types only.

    Mappings and sequences recurse; keys become strings; invalid UTF-8 in bytes is replaced;
    non-finite floats, ints too long for ``str()`` and every other object become text. Strings
    are redacted, and the value of every non-null entry whose key names a secret
    (:func:`~recurgent._redact.is_secret_key`) becomes ``[REDACTED]``.

    Args:
        value: Anything.
        max_chars: Longest string kept; longer ones are cut and end in a length marker.
        max_items: Most elements kept per container (``None``: all); a marker counts the rest.
        budget: Approximate total characters for the whole copy (``None``: unbounded); once
            spent, strings are emptied and containers cut.
        secrets: From :func:`~recurgent._redact.environment_secrets`; read now when omitted.
    """
    kind = type(value)
    # The commonest values of a record or a log field need no walk (and no secrets read).
    if value is None or kind is bool or (kind is float and math.isfinite(value)):
        return value
    if kind is int and value.bit_length() <= INT_BITS_AS_NUMBER:
        return value
    if (kind is list or kind is tuple or kind is dict) and not value:
        return {} if kind is dict else []
    if (
        (kind is list or kind is tuple)
        and len(value)
        <= (_SHORT_SEQUENCE if max_items is None else min(max_items, _SHORT_SEQUENCE))
        and (budget is None or budget > 8 * (len(value) + 1))
        and all(map(_is_small_atom, value))
    ):
        return list(value)  # a call's arguments are mostly a few numbers or flags
    walk = _Walk(
        max_chars, max_items, budget, environment_secrets() if secrets is None else secrets
    )
    return walk.convert(value, 0)


def outgrows(payload: Any, limit: int, *, escapes: bool = False) -> bool:
    """Whether ``payload``'s JSON text, and its ``repr``, surely hold more than ``limit``
    characters, found by a walk that stops once it has counted past ``limit`` (red team R12).

    With ``escapes``, a string also counts the characters JSON adds to escape it (one for a
    quote, a backslash, ``\\n``; five for ``\\u0000``), and the answer is of JSON's text only:
    counted as one each, ``['\\x00' * 1_000_000] * 60`` passed a 64-million check and a dump
    wrote 360 million characters (red team R19). Each string is scanned once per walk.

    Counts a lower bound of both (a string's characters and quotes, an int's digits, a float's
    text, bytes and the other kinds a rebuilt value may hold (:func:`_other_chars`), one per
    other atom, brackets and a separator per item), each time a container or string is reached:
    ``[[s] * 1000] * 1000`` of one 10 000-character ``s`` is ten million characters of program
    memory and ten billion of JSON, which the content store's ``json.dumps`` wrote in full
    (73 s, 3.4 GB, after the deadline) before comparing its size with the store's limit.
    ``[n] * 400_000`` of one 4 299-digit ``n`` is 1.7 billion characters that an int counted as
    one character hid (112 s, 3.3 GB, red team R14). A container's items are counted before they
    are stacked, so a flat list of ten million is refused without a copy of it.
    """
    count = 0
    stack = [payload]
    pop, push = stack.pop, stack.append
    texts: dict[int, tuple[Any, int]] = {}
    escaped: dict[int, tuple[str, int]] | None = {} if escapes else None
    while stack:
        item = pop()
        kind = type(item)
        if kind is str:
            count += len(item) + 2
            if escaped is not None and (not item.isprintable() or '"' in item or "\\" in item):
                count += _escaped_extra(item, escaped)
        elif kind is list or kind is tuple:
            count += len(item) + 1
            if count > limit:
                return True
            stack.extend(item)
        elif kind is dict:
            count += 2 * len(item) + 1
            if count > limit:
                return True
            for key, entry in item.items():
                push(key)
                push(entry)
        elif kind is int:
            count += _digits_at_least(item)
        elif kind is float:
            count += len(float.__repr__(item))  # up to 24 characters ("nan" in a repr)
        elif kind in _SHORT_ATOMS:
            count += 1
        else:
            chars, parts = _other_chars(item, texts)
            count += chars
            if count > limit:
                return True
            stack.extend(parts)
            continue
        if count > limit:
            return True
    return False


def _other_chars(item: Any, texts: dict[int, tuple[Any, int]]) -> tuple[int, Iterable[Any]]:
    """What :func:`outgrows` counts for a value of none of the exact JSON types, and the parts
    its text writes: the other kinds a value leaving an attempt may hold (``rebuild`` keeps
    them). Counted as one character each, ``[bytes(2_000_000)] * 100`` passed the ten-million
    bound on ``delegate`` options, and its ``repr`` (the kept child's key) took 12 s and 2.8
    GB after the deadline; a hundred references to an agent whose memory has a 2-million-
    character key, 1.7 s and 622 MB (red team R15)."""
    if isinstance(item, str):
        return len(item) + 2, ()
    if isinstance(item, bytes | bytearray):
        return len(item) + 3, ()
    if isinstance(item, int):
        return _digits_at_least(item), ()
    if isinstance(item, list | tuple | set | frozenset | collections.deque):
        return len(item) + 1, item
    if isinstance(item, dict):
        return 2 * len(item) + 1, itertools.chain.from_iterable(dict.items(item))
    if isinstance(item, range):
        # ``range(0, 10 ** 4000)``: a "fixed-size" kind with 8 000 characters of text, counted
        # as one (red team R17).
        step = 0 if item.step == 1 else 2 + _digits_at_least(item.step)  # shown when not 1
        return 9 + _digits_at_least(item.start) + _digits_at_least(item.stop) + step, ()
    if type(item) is datetime.timezone:
        # Its name is any text: ``timezone(timedelta(0), 'x' * 1_000_000)`` (red team R17).
        return len(item.tzname(None)) + 2, ()
    if isinstance(item, datetime.datetime | datetime.time):
        # Its text writes its timezone's.
        return 1, () if item.tzinfo is None else (item.tzinfo,)
    if isinstance(item, fractions.Fraction):
        return _digits_at_least(item.numerator) + _digits_at_least(item.denominator), ()
    if isinstance(item, BaseException):
        return len(type(item).__name__) + 2, (BaseException.__dict__["args"].__get__(item),)
    if isinstance(item, decimal.Decimal) and sys.getsizeof(item) <= _SMALL_DECIMAL:
        return 12, ()  # up to 76 digits: at least "Decimal('1')", without writing it
    from recurgent.outcome import Outcome  # imported here: it imports this module

    if type(item) is Outcome:
        return 10, (item.value, item.metadata, item.error_message)
    # Anything else (a long Decimal, an agent, whose repr lists its memory's keys, a host
    # object): its repr's length. Each writing adds its length to the count, so all of them
    # write no more than the limit; the last few are remembered, for shared objects met again.
    known = texts.get(id(item))
    if known is None:
        try:
            length = len(repr(item))
        except Exception:  # noqa: BLE001 - what cannot be written counts as one
            length = 1
        if len(texts) >= _REMEMBERED_TEXTS:
            texts.clear()
        known = texts[id(item)] = (item, length)
    return known[1], ()


_REMEMBERED_TEXTS = 64
# The control characters JSON writes in two characters (``\\n``); the others take six.
_SHORT_ESCAPES = "\b\t\n\f\r"
_LONG_ESCAPES = tuple(chr(code) for code in range(32) if chr(code) not in _SHORT_ESCAPES)


def _escaped_extra(text: str, seen: dict[int, tuple[str, int]]) -> int:
    """The characters JSON adds to ``text`` to escape it; a string met again (the same object,
    among the last few) is not scanned again."""
    known = seen.get(id(text))
    if known is not None and known[0] is text:
        return known[1]
    extra = text.count('"') + text.count("\\")
    if not text.isprintable():  # control characters among others; most text has none
        extra += sum(map(text.count, _SHORT_ESCAPES))
        extra += 5 * sum(map(text.count, _LONG_ESCAPES))
    if len(seen) >= _REMEMBERED_TEXTS:
        seen.clear()
    seen[id(text)] = (text, extra)
    return extra


# sys.getsizeof of a Decimal whose coefficient fits the four words allocated at least (76
# digits): a longer one is measured by its text.
_SMALL_DECIMAL = sys.getsizeof(decimal.Decimal(0))
#: Kinds besides JSON's that a result may hold and the sandbox's rebuild keeps as they are
#: (besides Decimal and Fraction). Most write a few characters; a range's ints and a
#: timezone's name (in a datetime's or time's text too) are any size (red team R17).
KEPT_ATOM_KINDS = frozenset(
    {
        complex,
        range,
        datetime.date,
        datetime.datetime,
        datetime.time,
        datetime.timedelta,
        datetime.timezone,
    }
)
# Kinds whose text is a few characters, counted as one without a look (the commonest atoms
# of an answer besides numbers and strings, and the kept kinds whose text is short).
_SHORT_ATOMS = frozenset({complex, datetime.date, datetime.timedelta}) | {
    type(None),
    bool,
    re.Pattern,
    re.Match,
}


def _digits_at_least(number: int) -> int:
    """A lower bound of the characters ``str(number)`` writes (log10(2) > 0.3); 1 for an int
    whose text ``str`` refuses outright (past CPython's int-to-str digit limit), so such an int
    costs what its bounded rendering does."""
    digits = number.bit_length() * 3 // 10
    if digits < 16:
        return 1
    cap = sys.get_int_max_str_digits()
    return 1 if cap and digits > cap else digits
