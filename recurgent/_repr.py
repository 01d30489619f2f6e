"""The bounded text of any value, which never raises: :func:`safe_repr` and its ``reprlib``.

:func:`safe_repr` returns at most ``limit`` characters of a value's ``repr``, redacted, for any
input (a huge ``int``, a broken ``__repr__``, a 50 MB string, a container holding one long
string many times), and never raises. A long string is sliced, and a big container or a plain
exception is written by a ``reprlib`` that stops once past the limit, *before* the text is
redacted, so the text written stays near the limit whatever the value's size (ADR 0032, red
teams R17 and R19). :class:`SafeRepr` is a ``reprlib.Repr`` whose ints never hit CPython's
int-to-str limit.

Also owns the text bounds the JSON-safe copies of :mod:`recurgent._values` share with it:
:func:`shorten`, :func:`int_text` (an int's text past CPython's digit limit),
:data:`DEFAULT_MAX_CHARS`, :data:`REDACT_MARGIN` and :data:`INT_BITS_AS_NUMBER`. Imports nothing
from :mod:`recurgent._values` or :mod:`recurgent._display`, which build on it.
"""

from __future__ import annotations

import collections
import datetime
import itertools
import math
import reprlib
from collections.abc import Sequence
from typing import Any

from recurgent._redact import redact

__all__ = [
    "BOUNDED_KINDS",
    "DEFAULT_MAX_CHARS",
    "INT_BITS_AS_NUMBER",
    "REDACT_MARGIN",
    "SafeRepr",
    "int_text",
    "safe_repr",
    "shorten",
]

DEFAULT_MAX_CHARS = 65_536
"""Longest string a history record or log copy keeps, and longest ``safe_repr``, by default;
longer ones end in a marker."""

#: Text is cut this far past its limit before redaction, so a secret straddling the cut is still
#: recognised and masked whole, then the text is cut to its limit.
REDACT_MARGIN = 1_024
#: Ints up to this size stay JSON numbers (well under CPython's 4300-digit str() limit, which
#: json.dumps and json.loads both obey), and int_text writes them in full; bigger ones become
#: text.
INT_BITS_AS_NUMBER = 10_000
# Above this size even the leading digits cost more than a log line is worth: a power of ten
# and a division, 2 ms at 100 000 bits and 72 ms at a million (a program's list of one such int
# a thousand times over took 67 s to render, red team R14).
_INT_BITS_WITH_DIGITS = 100_000
_LOG10_2 = math.log10(2)
_LEADING_DIGITS = 20


def shorten(text: str, limit: int) -> str:
    """``text`` itself when it fits in ``limit`` characters, else its head and a length marker."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...<{len(text) - limit} more chars>"


def int_text(value: int) -> str:
    """Decimal text of any int, without CPython's int-to-str digit limit getting in the way.

    Ints too long for ``str()`` become their leading digits and the digit count, e.g.
    ``10000000000000000000...<5001 digits>``.
    """
    magnitude = abs(int(value))
    bits = magnitude.bit_length()
    sign = "-" if value < 0 else ""
    if bits <= INT_BITS_AS_NUMBER:
        return sign + str(magnitude)
    if bits > _INT_BITS_WITH_DIGITS:
        return f"{sign}<int with about {int(bits * _LOG10_2) + 1} digits>"
    digits = int(bits * _LOG10_2) + 1
    if 10 ** (digits - 1) > magnitude:
        digits -= 1
    leading = magnitude // 10 ** (digits - _LEADING_DIGITS)
    return f"{sign}{leading}...<{digits} digits>"


def safe_repr(
    value: Any, secrets: Sequence[str] | None = None, *, limit: int = DEFAULT_MAX_CHARS
) -> str:
    """``repr`` that never raises, never triggers dynamic dispatch, and is at most ``limit`` long.

    A long string or bytes value is sliced before ``repr`` runs, so its size does not matter.

    Args:
        value: Any object.
        secrets: Passed to :func:`~recurgent._redact.redact`.
        limit: Characters kept (a longer repr ends in a ``...<N more chars>`` marker).
    """
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            text = int_text(value)
        elif isinstance(value, str | bytes | bytearray) and len(value) > limit + REDACT_MARGIN:
            head = repr(value[: limit + REDACT_MARGIN])
            text = f"{head}...<{len(value) - limit - REDACT_MARGIN} more>"
        elif _bounded_kind(value) and not _fits(value, limit + REDACT_MARGIN):
            text = _BoundedRepr(limit + REDACT_MARGIN).repr(value)
        else:
            text = repr(value)
        return shorten(redact(text[: limit + REDACT_MARGIN], secrets), limit)
    except Exception as error:  # noqa: BLE001 - a broken __repr__ must not break logging
        return f"<unrepresentable {type(value).__name__}: {type(error).__name__}>"


def _fits(value: Any, limit: int) -> bool:
    """Whether a container's repr is surely short: its strings and elements add up under limit.

    Visits at most ``limit`` elements, so the check costs no more than the repr it avoids.
    """
    remaining = limit
    stack = [value]
    while stack:
        item = stack.pop()
        remaining -= 4 + (len(item) if isinstance(item, str | bytes | bytearray) else 0)
        if type(item) is int:
            # Its digits: ``[n] * 300`` of 4 299 digits was 1.3 million characters of repr; an
            # int past the text limit made the repr raise (red team R14): the bounded repr
            # writes a long one as its leading digits.
            bits = item.bit_length()
            if bits > INT_BITS_AS_NUMBER:
                return False
            remaining -= bits * 3 // 10
        if remaining < 0:
            return False
        if isinstance(item, dict):
            stack.extend(itertools.islice(itertools.chain.from_iterable(item.items()), remaining))
        elif isinstance(item, list | tuple | set | frozenset | collections.deque):
            stack.extend(itertools.islice(item, remaining))
        elif not isinstance(item, _SHORT_TEXT_KINDS):
            # Its text is not known without writing it: a set of one long string, a timezone
            # named by a million characters, counted as four, made ``[x] * 16_000`` a repr of
            # billions (red team R17). The bounded repr writes it within the limit.
            return False
    return True


#: The kinds safe_repr writes by the bounded repr when their text may be long: containers, and
#: exceptions, whose text writes their arguments' (a set, a deque or an exception were written
#: in full, then cut, red team R19). :mod:`recurgent._display` counts them among the kinds
#: whose text may outgrow their memory.
BOUNDED_KINDS = (list, tuple, dict, set, frozenset, collections.deque)


def _bounded_kind(value: Any) -> bool:
    return isinstance(value, BOUNDED_KINDS) or _plain_exception(value)


def _plain_exception(value: Any) -> bool:
    """An exception written by ``BaseException.__repr__`` (its type's name and its arguments),
    as every exception a program may answer is; a host's own may write anything."""
    return isinstance(value, BaseException) and type(value).__repr__ is BaseException.__repr__


# Kinds whose text is a few dozen characters at most, or counted above (strings, ints).
_SHORT_TEXT_KINDS = (
    str,
    bytes,
    bytearray,
    int,
    float,
    complex,
    type(None),
    datetime.date,
    datetime.timedelta,
)


class SafeRepr(reprlib.Repr):
    """``reprlib.Repr`` whose ints never hit CPython's int-to-str limit (``10 ** 5000``)."""

    def repr_int(self, x: int, level: int) -> str:
        text = int_text(x)
        if len(text) <= self.maxlong:
            return text
        return text[: max(0, self.maxlong - 3)] + "..."

    def repr_bytes(self, x: bytes, level: int) -> str:
        # reprlib has no bytes rule and would repr all of a 50 MB value before cutting it.
        if len(x) <= self.maxstring:
            return repr(x)
        return repr(x[: self.maxstring]) + "..."

    repr_bytearray = repr_bytes


class _BoundedRepr(SafeRepr):
    """A repr of a big container that slices each string, shows at most a few elements, and
    writes ``...`` for every part reached once ``limit`` characters are written.

    Without the total, ``((('x' * 60_000,) * 100,) * 100,) * 30`` (a dict key in a refused
    result's path) was 300 000 strings of 1 224 characters each: 6.3 s and 1.1 GB after the
    program's deadline (red team R17).
    """

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.maxstring = self.maxother = self.maxlong = limit
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = self.maxfrozenset = 100
        self.maxlevel = 8
        self._left = limit

    def repr1(self, x: Any, level: int) -> str:
        left = self._left
        if left <= 0:
            return "..."
        kind = type(x)
        if kind in _REPRLIB_KINDS:
            text = super().repr1(x, level)
        elif _plain_exception(x):
            # reprlib writes any other object's full repr before cutting it: an exception (or
            # an OrderedDict, a Counter) holding ``[[s] * 100] * 100`` of a 10 000-character
            # ``s`` wrote 100 million characters for a 2 000-character preview (red team R19).
            args = BaseException.__dict__["args"].__get__(x)
            if level <= 0:
                inner = "..."  # as reprlib writes a container past its depth
            elif len(args) == 1:
                inner = self.repr1(args[0], level - 1)
            else:
                inner = self.repr_tuple(args, level).removeprefix("(").removesuffix(")")
            text = f"{kind.__name__}({inner})"
        elif isinstance(x, dict):
            text = f"{kind.__name__}({self.repr_dict(x, level)})"
        elif isinstance(x, _REPRLIB_CONTAINERS):
            method = getattr(self, f"repr_{_base_container(x).__name__}")
            text = f"{kind.__name__}({method(x, level)})"
        else:
            text = super().repr1(x, level)
        # The text holds its parts' texts, which counted themselves: it replaces them.
        self._left = left - len(text)
        return text


# The kinds reprlib writes by a rule of its own (by their type's name); any other kind it writes
# by its full repr, cut afterwards.
_REPRLIB_CONTAINERS = (list, tuple, set, frozenset, collections.deque)
_REPRLIB_KINDS = frozenset({*_REPRLIB_CONTAINERS, dict, str, bytes, bytearray, int})


def _base_container(value: Any) -> type:
    return next(kind for kind in _REPRLIB_CONTAINERS if isinstance(value, kind))
