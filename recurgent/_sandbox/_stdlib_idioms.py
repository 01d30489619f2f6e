"""Stand-ins for standard-library names models reach for: ``contextlib``, ``shlex``, ``email.utils``,
``json.JSONEncoder`` (ADR 0105).

Each is the library's own behaviour with one thing taken away:

* ``contextlib.suppress`` never swallows an exception that is not an ``Exception`` (or one of the
  program's own classes): the attempt's stop, a cancellation or the host's Ctrl-C passes.
* ``contextlib.closing`` reads ``close`` through the attempt's attribute policy, not natively.
* ``shlex.split`` takes a ``str`` only (``None`` would read the host's standard input);
  ``shlex.quote``/``join`` check the size of what they build first.
* ``email.utils.getaddresses`` converts its values to text in one C call each: estimated first;
  ``formataddr`` encodes with UTF-8 only (another charset name would look up codecs).
* ``urllib.parse.quote``/``quote_plus``/``urlencode`` encode text as the sandbox's
  ``str.encode`` does, counted before it is built (``errors="namereplace"``; red team R26).
* ``json.JSONEncoder`` never takes the one-shot C encoder, which builds the whole text in one
  call: ``encode`` and ``iterencode`` produce pieces, counted (red-team F6, H10).
"""

from __future__ import annotations

import html
import json
import shlex
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from recurgent._sandbox._encodings import checked_encode
from recurgent._sandbox._integers import CheckedInt
from recurgent._sandbox._made import allow_subclassing, is_sandbox_made
from recurgent._sandbox._measure import MAX_ITEMS, check_items, true_length
from recurgent._sandbox._stdlib_text import _check_indent as check_indent, checked_iterencode
from recurgent._sandbox._text_size import check_text, check_texts

__all__ = [
    "SandboxJSONDecoder",
    "SandboxJSONEncoder",
    "counted_text",
    "email_utils_overrides",
    "html_escape",
    "make_closing",
    "shlex_overrides",
    "suppress",
    "urllib_parse_overrides",
]


def counted_text(pieces: Iterable[str], what: str) -> str:
    """The pieces joined, refused as soon as their total passes the item cap."""
    produced = 0
    kept: list[str] = []
    for piece in pieces:
        produced += len(piece)
        if produced > MAX_ITEMS:
            check_items(produced, what)
        kept.append(piece)
    return "".join(kept)


# ----------------------------------------------------------------------------- contextlib


class suppress:  # named as the library names it
    """``contextlib.suppress``: the given exceptions are swallowed, never the attempt's stop."""

    __slots__ = ("_exceptions",)

    def __init__(self, *exceptions: Any) -> None:
        for kind in exceptions:
            if not (isinstance(kind, type) and issubclass(kind, BaseException)):
                raise TypeError("suppress() takes exception classes, e.g. suppress(KeyError)")
        self._exceptions = exceptions

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> bool:
        if kind is None:
            return False
        if not issubclass(kind, Exception) and not is_sandbox_made(kind):
            # The attempt's stop, a cancellation, KeyboardInterrupt, GeneratorExit: never.
            return False
        return issubclass(kind, self._exceptions)


class _Closing:
    __slots__ = ("_close", "thing")

    def __init__(self, thing: Any, close: Callable[[], Any]) -> None:
        self.thing = thing
        self._close = close

    def __enter__(self) -> Any:
        return self.thing

    def __exit__(self, *exc_info: Any) -> None:
        self._close()


def make_closing(read: Callable[[Any, str], Any]) -> Callable[[Any], Any]:
    """``contextlib.closing`` for one attempt: ``thing.close`` read through its policy ``read``
    when the ``with`` starts (an object without one is refused there, not at its end)."""

    def closing(thing: Any) -> Any:
        return _Closing(thing, read(thing, "close"))

    return closing


for _served, _name in ((suppress, "suppress"), (_Closing, "closing")):
    _served.__module__ = "contextlib"
    _served.__qualname__ = _served.__name__ = _name


# ----------------------------------------------------------------------------- shlex


def _split(s: Any, comments: bool = False, posix: bool = True) -> list[str]:
    if type(s) is not str:
        # shlex.split(None) reads the process's standard input.
        raise TypeError(f"shlex.split() takes a str, not {type(s).__name__}")
    return shlex.split(s, comments, posix)


def _quoted_length(s: Any) -> int:
    # Each ' becomes '"'"' (five characters), and the whole is wrapped in quotes.
    return true_length(s) + 4 * str.count(s, "'") + 2 if isinstance(s, str) else 0


def _quote(s: Any) -> str:
    check_items(_quoted_length(s), "shlex.quote()")
    return shlex.quote(s)


def _join(split_command: Any) -> str:
    parts = list(split_command)
    check_items(sum(_quoted_length(part) + 1 for part in parts), "shlex.join()")
    return " ".join(shlex.quote(part) for part in parts)


def shlex_overrides() -> dict[str, Any]:
    """Checked ``shlex`` functions."""
    return {"split": _split, "quote": _quote, "join": _join}


# ----------------------------------------------------------------------------- email.utils


def _getaddresses(fieldvalues: Any) -> Any:
    import email.utils

    values = list(fieldvalues)
    # str() of each, joined: the whole list's text estimated at once (H10).
    check_text(values, "email.utils.getaddresses()")
    return email.utils.getaddresses(values)


def _email_quoted_length(s: Any) -> int:
    # Each backslash and double quote gains a backslash: up to twice the text (red team R5, K3).
    if not isinstance(s, str):
        return 0
    return true_length(s) + str.count(s, "\\") + str.count(s, '"')


def _email_quote(s: Any) -> str:
    import email.utils

    check_items(_email_quoted_length(s), "email.utils.quote()")
    return email.utils.quote(s)


def _formataddr(pair: Any, charset: Any = "utf-8") -> str:
    import email.utils

    if charset not in ("utf-8", "utf8", "UTF-8"):
        raise ValueError("email.utils.formataddr() encodes names with UTF-8 only in the sandbox")
    name, address = pair
    # The name is quoted (escaped) and wrapped: "name" <address>.
    size = _email_quoted_length(name) + (true_length(address) if isinstance(address, str) else 0)
    check_items(size + 5, "email.utils.formataddr()")
    return email.utils.formataddr((name, address), "utf-8")


def email_utils_overrides() -> dict[str, Any]:
    """Checked ``email.utils`` functions."""
    return {"getaddresses": _getaddresses, "formataddr": _formataddr, "quote": _email_quote}


# ----------------------------------------------------------------------------- urllib.parse


def _url_encoded(string: Any, encoding: Any, errors: Any, what: str) -> Any:
    """``string.encode(encoding, errors)`` as ``quote`` does it, checked (ADR 0151): a codec's
    handler writes up to 92 bytes for a character (``\\N{...}``), which ``quote`` returns as
    they are when ``safe`` holds their punctuation (red team R26). Anything but non-empty text
    is handed on as it was (``quote`` words its own errors)."""
    if not isinstance(string, str) or not string:
        return string
    return checked_encode(
        string,
        "utf-8" if encoding is None else encoding,
        "strict" if errors is None else errors,
        what,
    )


# The bytes quote never escapes (urllib.parse._ALWAYS_SAFE_BYTES).
_ALWAYS_SAFE = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~"


def _check_quoted(data: Any, safe: Any, what: str) -> None:
    """Refuse quoting ``data`` (its bytes) past the item cap: each byte neither always safe nor
    in ``safe`` is written as ``%XX`` (red team R32: ``quote('\\xff' * 5000000)`` wrote
    30 000 000 characters)."""
    if not isinstance(data, bytes | bytearray) or not isinstance(safe, str | bytes):
        return
    kept = _ALWAYS_SAFE + (str.encode(safe, "ascii", "ignore") if isinstance(safe, str) else safe)
    unsafe = len(bytes(data).translate(None, kept))
    check_items(len(data) + 2 * unsafe, what)


def _url_quote(string: Any, safe: Any = "/", encoding: Any = None, errors: Any = None) -> str:
    encoded = _url_encoded(string, encoding, errors, "urllib.parse.quote()")
    _check_quoted(encoded, safe, "urllib.parse.quote()")
    if encoded is string:
        return urllib.parse.quote(string, safe, encoding, errors)
    return urllib.parse.quote_from_bytes(encoded, safe)


def _url_quote_plus(string: Any, safe: Any = "", encoding: Any = None, errors: Any = None) -> str:
    encoded = _url_encoded(string, encoding, errors, "urllib.parse.quote_plus()")
    _check_quoted(encoded, safe, "urllib.parse.quote_plus()")
    if encoded is string:
        return urllib.parse.quote_plus(string, safe, encoding, errors)
    return urllib.parse.quote_plus(encoded, safe)


def _urlencode(
    query: Any,
    doseq: Any = False,
    safe: Any = "",
    encoding: Any = None,
    errors: Any = None,
    quote_via: Any = _url_quote_plus,
) -> str:
    # Its values converted to text in one C call each: estimated first (H10, ADR 0092).
    check_texts((query, safe, encoding, errors), "urlencode")
    return urllib.parse.urlencode(query, doseq, safe, encoding, errors, quote_via)


def urllib_parse_overrides() -> dict[str, Any]:
    """Checked ``urllib.parse`` functions."""
    for served, name in (
        (_url_quote, "quote"),
        (_url_quote_plus, "quote_plus"),
        (_urlencode, "urlencode"),
    ):
        served.__module__ = "urllib.parse"
        served.__qualname__ = served.__name__ = name
    return {"quote": _url_quote, "quote_plus": _url_quote_plus, "urlencode": _urlencode}


def html_escape(s: Any, quote: Any = True) -> Any:
    """``html.escape``, its text counted first: ``&`` writes five characters, ``<`` and ``>``
    four, and with ``quote`` both quotes six (red team R32: ``escape('&' * 9000000)`` wrote
    45 000 000)."""
    if isinstance(s, str):
        text = str.__str__(s)
        grown = 4 * str.count(text, "&") + 3 * (str.count(text, "<") + str.count(text, ">"))
        if quote:
            grown += 5 * (str.count(text, '"') + str.count(text, "'"))
        check_items(str.__len__(text) + grown, "html.escape()")
    return html.escape(s, quote)


html_escape.__module__ = "html"
html_escape.__qualname__ = html_escape.__name__ = "escape"


# ----------------------------------------------------------------------------- json


class SandboxJSONEncoder(json.JSONEncoder):
    """``json.JSONEncoder`` whose text is always built in counted pieces, its indent capped."""

    def __init__(self, *, indent: Any = None, **kwargs: Any) -> None:
        check_indent(indent, "json.JSONEncoder()")
        super().__init__(indent=indent, **kwargs)

    def iterencode(self, o: Any, _one_shot: bool = False) -> Iterator[str]:
        # The one-shot C encoder builds the whole text in one call: never taken; each string
        # is bounded before one C call writes it (red team R26).
        return checked_iterencode(self, o)

    def encode(self, o: Any) -> str:
        check_text(o, "JSONEncoder.encode()")  # a shared structure's text (H10)
        return counted_text(self.iterencode(o), "JSONEncoder.encode()")


SandboxJSONEncoder.__module__ = "json"
SandboxJSONEncoder.__qualname__ = SandboxJSONEncoder.__name__ = "JSONEncoder"
allow_subclassing(SandboxJSONEncoder)


class SandboxJSONDecoder(json.JSONDecoder):
    """``json.JSONDecoder`` whose default ``parse_int`` is the checked ``int`` (ADR 0123).

    The library's default is the builtin ``int``, stored on the instance, and a program's
    subclass reads its own instance's attributes natively: ``self.parse_int('f' * N, 16)``
    built ints past the bit cap (red team R5's open decoder finding; ADR 0129). The other
    attributes the library stores (``parse_object``, ``parse_array``, ``parse_string``,
    ``scan_once``, ``parse_constant``, ``parse_float``, ``memo``) are harmless: see
    ``specs/sandbox/test_red_team_json_decoder.py``.
    """

    def __init__(self, *, parse_int: Any = None, **kwargs: Any) -> None:
        default: Any = CheckedInt  # a class, called with the digits as int() is
        super().__init__(parse_int=default if parse_int is None else parse_int, **kwargs)


SandboxJSONDecoder.__module__ = "json"
SandboxJSONDecoder.__qualname__ = SandboxJSONDecoder.__name__ = "JSONDecoder"
allow_subclassing(SandboxJSONDecoder)
allow_subclassing(json.JSONDecoder)
