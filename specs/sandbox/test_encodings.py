"""``str.encode`` and ``bytes.decode`` count what a codec and its handler make (ADR 0151).

Pinned: an encoding past the item cap is refused before it is built, in every form a program can
reach it (the method, read unbound or through ``getattr``/``methodcaller``, ``bytes()``,
``bytearray()``, ``UserString.encode``, ``str(data, encoding, errors)``); what fits is Python's
own result, the same bytes or text as one native call and the same error positions; and
arguments Python refuses are refused with Python's words.
"""

from __future__ import annotations

import random

import pytest

from recurgent._sandbox import _encodings, _measure
from recurgent._sandbox._encodings import checked_decode, checked_encode
from recurgent._sandbox._limits import SizeLimitExceeded
from specs.sandbox.support import error_of, value_of

_NAMED = "s = chr(0xFBF9) * 10**6\n"  # an 83-letter name: 87 bytes each under namereplace
_ASTRAL = "s = chr(0x10FFFF) * 2 * 10**6\n"  # ten bytes each as \U0010ffff or &#1114111;


def _refused(what: str) -> str:
    return f"Resource limit in tester.run: {what} would create "


class TestRefusedBeforeBuilt:
    """An output past the item cap is refused while at most a step past it is written."""

    @pytest.mark.parametrize(
        ("source", "what"),
        [
            (_NAMED + "result = s.encode('ascii', 'namereplace')", "str.encode"),
            (_NAMED + "result = s.encode(errors='namereplace', encoding='ascii')", "str.encode"),
            (_NAMED + "result = str.encode(s, 'ascii', 'namereplace')", "str.encode"),
            (_NAMED + "result = getattr(s, 'encode')('ascii', 'namereplace')", "str.encode"),
            (
                _NAMED + "import operator\n"
                "result = operator.methodcaller('encode', 'ascii', 'namereplace')(s)",
                "str.encode",
            ),
            (_NAMED + "result = bytes(s, 'ascii', 'namereplace')", "bytes()"),
            (_NAMED + "result = bytearray(s, 'ascii', errors='namereplace')", "bytearray()"),
            (
                _NAMED + "import collections\n"
                "result = collections.UserString(s).encode('ascii', 'namereplace')",
                "str.encode",
            ),
            (_ASTRAL + "result = s.encode('ascii', 'xmlcharrefreplace')", "str.encode"),
            (_ASTRAL + "result = s.encode('unicode_escape')", "str.encode"),
            (_ASTRAL + "result = s.encode('ascii', 'backslashreplace')", "str.encode"),
            ("s = chr(0x10FFFF) * 3 * 10**6\nresult = s.encode('utf-8')", "str.encode"),
            ("s = chr(0x10FFFF) * 10**6\nresult = s.encode('punycode')", "str.encode"),
            (
                "b = b'\\xff' * 3 * 10**6\nresult = b.decode('utf-8', 'backslashreplace')",
                "bytes.decode",
            ),
            (
                "b = bytearray(b'\\xff' * 3 * 10**6)\nresult = b.decode(errors='backslashreplace')",
                "bytes.decode",
            ),
            ("b = b'\\xff' * 3 * 10**6\nresult = str(b, 'utf-8', 'backslashreplace')", "str()"),
            (
                "b = b'\\xff' * 3 * 10**6\n"
                "result = str(object=b, errors='backslashreplace', encoding='ascii')",
                "str()",
            ),
        ],
    )
    def test_refused(self, source: str, what: str) -> None:
        """Each form is refused as a resource limit naming the operation (87 million bytes of
        ``\\N{...}`` were built in one call before)."""
        error_type, message = error_of(source)
        assert (error_type, message.startswith(_refused(what))) == ("resource_limit", True)

    def test_what_fits_is_pythons(self) -> None:
        """Short inputs are converted natively; a long one within the cap goes by steps and is
        the same value."""
        assert value_of(
            "s = 'a' * 3 * 10**6 + 'é'\n"
            "e = s.encode('utf-8')\n"
            "result = [len(e), e[-3:], len(e.decode('utf-8')), 'é'.encode('ascii', 'namereplace'),\n"
            "          bytes('é', encoding='utf-8'), bytes(bytearray('é', 'latin-1')),\n"
            "          str(b'\\xff', 'utf-8', 'backslashreplace'), str(b'ab', errors='strict')]\n"
        ) == [
            3_000_002,
            b"a\xc3\xa9",
            3_000_001,
            b"\\N{LATIN SMALL LETTER E WITH ACUTE}",
            b"\xc3\xa9",
            b"\xe9",
            "\\xff",
            "ab",
        ]


class TestPythonsWords:
    """Arguments Python refuses are refused with its own message."""

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            ("result = bytes('a', errors='strict')", "string argument without an encoding"),
            ("result = bytes(errors='strict')", "errors without a string argument"),
            ("result = bytes(b'a', 'utf-8')", "encoding without a string argument"),
            ("result = 'a'.encode(5)", "encode() argument 'encoding' must be str, not int"),
            ("result = 'a'.encode('no-such-codec')", "unknown encoding: no-such-codec"),
            (
                "result = ('a' * 10**6).encode('hex')",
                "'hex' is not a text encoding; use codecs.encode() to handle arbitrary codecs",
            ),
            ("result = b'a'.decode('utf-8', 5)", "decode() argument 'errors' must be str, not int"),
        ],
    )
    def test_message(self, source: str, message: str) -> None:
        """The error is Python's, as the program would meet it outside the sandbox."""
        error_type, text = error_of(source)
        assert (error_type, text.endswith(message)) == ("execution", True), text


def _sample(seed: int, length: int) -> str:
    random.seed(seed)
    pool = ["a", "é", "あ", "\U0001f600", "\n", "'", "-", "+", "\\", "€", "中", ".", "\x00"]
    return "".join(random.choice(pool) for _ in range(length))


def _steps_under_a_large_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every input takes the step path, and none is refused."""
    monkeypatch.setattr(_encodings, "MAX_ITEMS", 10**6)
    monkeypatch.setattr(_measure, "MAX_ITEMS", 10**6)
    monkeypatch.setattr(_encodings, "_MOST_BYTES_PER_CHARACTER", 10**4)
    monkeypatch.setattr(_encodings, "_MOST_CHARACTERS_PER_BYTE", 10**4)
    monkeypatch.setattr(_encodings, "_PLAIN_CODECS", frozenset())


class TestSteps:
    """The step path (forced here with a small cap and small steps) gives one call's result."""

    @pytest.fixture(autouse=True)
    def _small_steps(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(_encodings, "_STEP", 7)
        monkeypatch.setattr(_encodings, "MAX_ITEMS", 20)
        monkeypatch.setattr(_measure, "MAX_ITEMS", 20)

    @pytest.mark.parametrize(
        ("encoding", "errors"),
        [
            ("utf-8", "strict"),
            ("utf-16", "surrogatepass"),
            ("utf-32", "strict"),
            ("utf-8", "backslashreplace"),
            ("ascii", "namereplace"),
            ("cp1252", "replace"),
            ("iso2022_jp", "backslashreplace"),
            ("unicode_escape", "strict"),
            ("shift_jis", "xmlcharrefreplace"),
        ],
    )
    def test_same_bytes_and_text(
        self, encoding: str, errors: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Encoded and decoded back by steps, as one native call does."""
        text = _sample(1, 400)
        native = text.encode(encoding, errors)
        _steps_under_a_large_cap(monkeypatch)
        assert checked_encode(text, encoding, errors) == native
        assert checked_decode(native, encoding, "replace") == native.decode(encoding, "replace")

    def test_refused_once_past_the_cap(self) -> None:
        """The running size is checked after each step: 28 bytes of 40 written, then refused."""
        with pytest.raises(SizeLimitExceeded) as raised:
            checked_encode("é" * 40, "ascii", "xmlcharrefreplace")
        assert str(raised.value) == ("str.encode would create 42 items; the sandbox limit is 20")

    def test_error_positions_are_the_whole_inputs(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A strict codec's error names the position in the whole text (or data), a character
        cut between two steps included."""
        _steps_under_a_large_cap(monkeypatch)
        with pytest.raises(UnicodeEncodeError) as encoding:
            checked_encode("a" * 30 + "é", "ascii")
        assert str(encoding.value) == (
            "'ascii' codec can't encode character '\\xe9' in position 30: ordinal not in range(128)"
        )
        with pytest.raises(UnicodeDecodeError) as decoding:
            checked_decode(b"a" * 27 + b"\xc3(", "utf-8")
        assert str(decoding.value) == (
            "'utf-8' codec can't decode byte 0xc3 in position 27: invalid continuation byte"
        )
        with pytest.raises(UnicodeDecodeError) as truncated:
            checked_decode(b"a" * 27 + b"\xc3", "utf-8")
        assert str(truncated.value) == (
            "'utf-8' codec can't decode byte 0xc3 in position 27: unexpected end of data"
        )
