"""``str.encode`` and ``bytes.decode`` as generated code gets them: what a codec and its error
handler make is counted before it is kept (ADR 0151).

One call of either is one C loop, and its output can be many times its input:
``errors="namereplace"`` writes ``\\N{...}`` with the character's whole name (up to 92 bytes
for one character), ``backslashreplace``, ``xmlcharrefreplace`` and the ``unicode_escape``
codecs up to 10, and decoding with ``backslashreplace`` four characters per byte. Ten million
characters made 870 MB in one call, past the item cap and the memory cap the watchdog reads
between calls.

An input too short to pass the item cap whatever its codec does is converted natively (the
usual case). A longer one is converted by the codec's incremental encoder (or decoder), 65 536
characters (or bytes) at a time, with the running size checked between steps (Python frames,
where the watchdog's stop lands at the deadline): the same output, never more than the cap
built. Codecs whose incremental form differs from their whole-input form (``punycode``,
``utf-7``, ``idna``) are converted natively, within a bound of their own.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from typing import Any, TypeVar

from recurgent._sandbox._measure import MAX_ITEMS, check_items, true_length

__all__ = ["bind_decode", "bind_encode", "checked_decode", "checked_encode"]

_STEP = 1 << 16
_Part = TypeVar("_Part", bytes, str)
# Handlers that put at most what the codec itself writes (or one character) for a character
# (or byte) they handle.
_PLAIN_ERRORS = frozenset({"strict", "ignore", "replace", "surrogateescape", "surrogatepass"})
# Codecs that write at most four bytes per character (UTF-32's) plus a byte-order mark, and
# decode at most one character per byte, with a plain handler. Other codecs may write more
# (``unicode_escape`` ten, ``utf-7`` eight, ISO-2022 escapes between characters) and are
# measured as they convert once an input is long enough to matter.
_PLAIN_CODECS = frozenset(
    {
        "utf-8",
        "utf-8-sig",
        "utf-16",
        "utf-16-le",
        "utf-16-be",
        "utf-32",
        "utf-32-le",
        "utf-32-be",
        "ascii",
        "iso8859-1",
    }
)
_PLAIN_BYTES_PER_CHARACTER = 4
_MARKS = 8
# Most bytes one character becomes under any codec and handler: "\N{...}" of the longest
# character name (88 characters in Unicode 14), with room for longer names in later versions.
_MOST_BYTES_PER_CHARACTER = 4 + 100
# Most characters one byte becomes when decoded: "\xff" under backslashreplace.
_MOST_CHARACTERS_PER_BYTE = 4
# Codecs whose incremental form converts each piece on its own (punycode, utf-7: each piece
# would close its own run), or keeps the whole input until the end (idna, whose label runs to
# the next dot): the whole input is converted at once, within this bound per character.
# Punycode's digits per character stay under eleven; IDNA writes a label as "xn--" and its
# punycode, a label taking at least a character and a dot; UTF-7 writes a lone astral
# character as "+", six digits and "-".
_WHOLE_INPUT_CODECS = {"punycode": 11, "idna": 11, "utf-7": 8}


def _codec(encoding: str) -> codecs.CodecInfo | None:
    """The text codec ``encoding`` names, or ``None`` (the native call words the error)."""
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        return None
    # A bytes-to-bytes or str-to-str codec (hex, rot13) is refused by str.encode itself.
    return info if getattr(info, "_is_text_encoding", True) else None


def checked_encode(
    text: str, encoding: Any = "utf-8", errors: Any = "strict", what: str = "str.encode"
) -> bytes:
    """``text.encode(encoding, errors)``, refused past the item cap before it is built."""
    length = true_length(text)
    if length * _MOST_BYTES_PER_CHARACTER + _MARKS <= MAX_ITEMS:
        return str.encode(text, encoding, errors)  # the usual case: short text
    if not isinstance(encoding, str) or not isinstance(errors, str):
        return str.encode(text, encoding, errors)  # raises Python's TypeError
    # str.encode reads a str subclass's characters, never its methods: so does the lookup.
    encoding, errors = str.__str__(encoding), str.__str__(errors)
    info = _codec(encoding)
    if info is None:
        return str.encode(text, encoding, errors)  # raises Python's LookupError
    plain = info.name in _PLAIN_CODECS and errors in _PLAIN_ERRORS
    if plain and length * _PLAIN_BYTES_PER_CHARACTER + _MARKS <= MAX_ITEMS:
        return str.encode(text, encoding, errors)
    whole = _WHOLE_INPUT_CODECS.get(info.name)
    if whole is not None:
        check_items(length * whole + _MARKS, what)
        return str.encode(text, encoding, errors)
    make_encoder: Any = info.incrementalencoder  # a host's own codec may have none
    if make_encoder is None:
        check_items(length * _MOST_BYTES_PER_CHARACTER + _MARKS, what)
        return str.encode(text, encoding, errors)
    exact = str.__str__(text)
    encoder = make_encoder(errors)
    return b"".join(
        _in_steps(lambda start, final: _encoded(encoder, exact, start, final=final), length, what)
    )


def _in_steps(step: Callable[[int, bool], _Part], length: int, what: str) -> list[_Part]:
    """The parts ``step(start, final)`` converts, a step at a time, refused once their total
    passes the item cap. The last step (empty when the length is a whole number of steps) is
    final."""
    parts: list[_Part] = []
    total = 0
    for start in range(0, length + 1, _STEP):
        part = step(start, start + _STEP > length)
        total += len(part)
        check_items(total, what)
        parts.append(part)
    return parts


def _encoded(encoder: Any, text: str, start: int, *, final: bool) -> bytes:
    try:
        return bytes(encoder.encode(text[start : start + _STEP], final))
    except UnicodeEncodeError as error:
        # Positions in the whole text, as one call gives them.
        raise UnicodeEncodeError(
            error.encoding, text, error.start + start, error.end + start, error.reason
        ) from None


def checked_decode(
    data: bytes | bytearray,
    encoding: Any = "utf-8",
    errors: Any = "strict",
    what: str = "bytes.decode",
) -> str:
    """``data.decode(encoding, errors)``, refused past the item cap before it is built."""
    length = true_length(data)
    decode: Callable[[Any, Any, Any], str] = (
        bytearray.decode if isinstance(data, bytearray) else bytes.decode
    )
    if length * _MOST_CHARACTERS_PER_BYTE <= MAX_ITEMS:
        return decode(data, encoding, errors)  # the usual case: short data
    if not isinstance(encoding, str) or not isinstance(errors, str):
        return decode(data, encoding, errors)  # raises Python's TypeError
    encoding, errors = str.__str__(encoding), str.__str__(errors)
    info = _codec(encoding)
    if info is None:
        return decode(data, encoding, errors)  # raises Python's LookupError
    if info.name in _PLAIN_CODECS and errors in _PLAIN_ERRORS and length <= MAX_ITEMS:
        return decode(data, encoding, errors)  # at most one character per byte
    if info.name in _WHOLE_INPUT_CODECS:
        # At most one character per byte with a plain handler; another (backslashreplace)
        # writes up to four for each byte the codec refuses: UTF-7 decoded 9 million bytes of
        # b"\x80" to 36 million characters in one call (red team R26).
        if errors not in _PLAIN_ERRORS:
            check_items(length * _MOST_CHARACTERS_PER_BYTE, what)
        elif length > MAX_ITEMS:
            check_items(length, what)
        return decode(data, encoding, errors)
    make_decoder: Any = info.incrementaldecoder  # a host's own codec may have none
    if make_decoder is None:
        check_items(length * _MOST_CHARACTERS_PER_BYTE, what)
        return decode(data, encoding, errors)
    exact = bytes(data)
    decoder = make_decoder(errors)
    return "".join(
        _in_steps(lambda start, final: _decoded(decoder, exact, start, final=final), length, what)
    )


def _decoded(decoder: Any, data: bytes, start: int, *, final: bool) -> str:
    # Bytes a step left undecoded (a character cut in two) come first in the next one.
    carried = len(decoder.getstate()[0])
    try:
        return str(decoder.decode(data[start : start + _STEP], final))
    except UnicodeDecodeError as error:
        # Positions in the whole data, as one call gives them.
        offset = start - carried
        raise UnicodeDecodeError(
            error.encoding, data, error.start + offset, error.end + offset, error.reason
        ) from None


def bind_encode(obj: Any) -> Callable[..., bytes]:
    """``obj.encode`` for the checked-method table."""

    def encode(encoding: Any = "utf-8", errors: Any = "strict") -> bytes:
        return checked_encode(obj, encoding, errors)

    return encode


def bind_decode(obj: Any) -> Callable[..., str]:
    """``obj.decode`` (bytes or bytearray) for the checked-method table."""

    def decode(encoding: Any = "utf-8", errors: Any = "strict") -> str:
        return checked_decode(obj, encoding, errors)

    return decode
