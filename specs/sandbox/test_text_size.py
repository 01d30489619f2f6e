"""The text of a structure, estimated before a conversion builds it (red-team H10, ADR 0092).

``estimated_text`` must be at least the real length for the kinds it knows (so nothing past the
cap is built), close to it (so what fits is not refused), and cheap on shared structures (it
walks distinct containers, not references).
"""

from __future__ import annotations

import collections
import time
from typing import Any

import pytest

from recurgent._sandbox import _text_size
from recurgent._sandbox._limits import SizeLimitExceeded
from recurgent._sandbox._measure import MAX_ITEMS
from recurgent._sandbox._text_size import check_text, estimated_text, measured_length
from specs.sandbox.support import error_of, value_of

_ROW = [0, 1, 22, 333]
point = collections.namedtuple("point", "x y")


@pytest.mark.parametrize(
    "value",
    [
        [],
        [0, -1, 2**70, True, None, 1.5],
        ["a", "it's", "back\\slash", "line\nbreak", "\x00", "é", ""],
        {"k": [1, 2], (1, 2): {"x"}},
        (1,),
        [[0] * 3] * 4,
        collections.deque([1, 2]),
        collections.Counter("abca"),
        collections.OrderedDict(a=1),
        point(1, 2),
        [b"\x00\xff", bytearray(b"ab")],
        frozenset({1, 2}),
        {1, 2},
    ],
    ids=repr,
)
def test_the_estimate_is_at_least_the_real_length(value: Any) -> None:
    """For known kinds the estimate bounds ``len(str(value))`` from above, within 4x + 100."""
    real = len(str(value))
    estimate = estimated_text(value)
    assert real <= estimate <= 4 * real + 100


def test_a_cycle_is_counted_once() -> None:
    """A list holding itself prints as ``[...]``; the estimate ends."""
    looped: list[Any] = [1]
    looped.append(looped)
    assert len(str(looped)) <= estimated_text(looped) < 200


def test_shared_rows_count_once_per_reference_and_cost_the_distinct_ones() -> None:
    """A thousand references to one row cost one walk of the row."""
    row = list(range(1000))
    shared = [row] * 1000
    started = time.monotonic()
    estimate = estimated_text(shared, limit=10**12)
    assert time.monotonic() - started < 1.0
    assert len(str(shared)) <= estimate


def test_three_levels_of_sharing_are_refused_without_building_them() -> None:
    """10**9 zeros of text are refused in a walk of two distinct containers."""
    deep = [[[0] * 1000] * 1000] * 1000
    with pytest.raises(SizeLimitExceeded, match="str\\(\\) would create"):
        check_text(deep, "str()")


def test_exceptions_print_their_args() -> None:
    """An exception holding a shared structure is refused like the structure."""
    error = ValueError([[0] * 10**4] * 2000)
    with pytest.raises(SizeLimitExceeded):
        check_text(error, "str()")
    check_text(ValueError("small"), "str()")


def test_what_fits_converts_as_before() -> None:
    """A structure just under the cap converts in a program; the real text is under the cap."""
    assert value_of("x = [[0] * 1000] * 1000\nresult = len(str(x))") == len(
        str([[0] * 1000] * 1000)
    )
    assert len(str([[0] * 1000] * 1000)) < MAX_ITEMS


@pytest.mark.parametrize(
    ("convert", "refusal"),
    [
        ("str(e)", "str() would create"),
        ("f'{e}'", "converting a container to text would create"),
        ("repr(e)", "repr() would create"),
        ("collections.namedtuple('n', x)", "namedtuple would create"),
        ("urllib.parse.urlencode({'k': x})", "urlencode would create"),
        ("xml.etree.ElementTree.QName(x)", "QName takes text in the sandbox, not list"),
        ("pprint.saferepr(x)", "saferepr would create"),
        ("pprint.pformat(x)", "pprint.pformat() would create"),
        ("string.Template('$a').substitute(a=x)", "Template.substitute() would create"),
    ],
)
def test_library_conversions_of_a_shared_structure_are_refused(convert: str, refusal: str) -> None:
    """Exceptions' text, and library code that converts its arguments, meet the same cap."""
    source = (
        "import collections, pprint, string, urllib.parse, xml.etree.ElementTree\n"
        "x = [[0] * 10**4] * 2000\n"
        "e = ValueError(x)\n"
        f"result = len(str({convert}))\n"
    )
    _, message = error_of(source)
    assert refusal in message


@pytest.mark.parametrize(
    "call",
    ["str(*[x])", "str(object=x)", "str(**{'object': x})", "str(*(), object=x)"],
)
def test_str_by_name_with_spread_or_keyword_arguments_is_capped(call: str) -> None:
    """``str`` called by its name in any form converts one object under the same cap as
    ``str(x)`` (red team R22: ``str(*[x])`` built 60 million characters in one C call). The estimate
    stops once past the cap, so the message names where it stopped."""
    source = f"x = [[0] * 10**4] * 2000\nresult = len({call})\n"
    error_type, message = error_of(source)
    assert (error_type, message) == (
        "resource_limit",
        "Resource limit in tester.run: str() would create 10001002 items; the sandbox limit is"
        " 10000000",
    )


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        ("str(*[12])", "12"),
        ("str(object=[1, 2])", "[1, 2]"),
        ("str(b'ab', 'utf-8')", "ab"),
        ("str(*[b'\\xff'], errors='replace', encoding='utf-8')", "\ufffd"),
        ("str(encoding='utf-8')", ""),
        ("str()", ""),
    ],
)
def test_str_by_name_in_other_forms_converts_as_python_does(call: str, expected: str) -> None:
    """Spread, keyword and decoding forms of ``str`` give Python's own text when they fit."""
    assert value_of(f"result = {call}") == expected


@pytest.mark.parametrize(
    "call",
    ["type(re.I)(x)", "type(re.I)(1)", "re.RegexFlag(x)", "uuid.SafeUUID(x)"],
)
def test_a_host_enum_class_constructs_nothing(call: str) -> None:
    """A host enum class formats a value it refuses with ``%r`` in one C call (a shared
    structure's text): its members are served, the class is sealed or denied."""
    source = f"import re, uuid\nx = [[0] * 10**4] * 2000\nresult = {call}\n"
    error_type, message = error_of(source)
    assert error_type == "execution"
    assert "cannot be created by generated code" in message or "is not available" in message


def test_a_host_enums_members_still_work() -> None:
    """``re.I`` and friends combine and compare as before."""
    assert value_of("import re\nresult = [int(re.I | re.M), re.I == re.IGNORECASE]") == [10, True]


class TestEscapedText:
    """``repr``/``ascii`` of a string, and the text of bytes, write escapes: up to ten
    characters for one (``\\U0010ffff``), four for a byte (ADR 0151). They are counted before
    the text is built; what fits is Python's own text."""

    @pytest.mark.parametrize(
        ("conversion", "what"),
        [
            ("repr(s)", "repr()"),
            ("ascii(s)", "ascii()"),
            ("f'{s!r}'", "an f-string"),
            ("f'{s!a:>5}'", "an f-string"),
            ("'%r' % (s,)", "%-formatting"),
            ("'%a' % s", "%-formatting"),
            ("'{!r}'.format(s)", "str.format"),
            ("'{k!a}'.format_map({'k': s})", "str.format"),
        ],
    )
    def test_a_strings_escapes_are_counted(self, conversion: str, what: str) -> None:
        """Two million astral characters would be twenty million characters of text (built in
        one C call before; refused now, having written a step of it)."""
        error_type, message = error_of(f"s = chr(0x10FFFF) * 2 * 10**6\nresult = len({conversion})")
        assert (error_type, message.startswith(f"Resource limit in tester.run: {what} would")) == (
            "resource_limit",
            True,
        )

    @pytest.mark.parametrize(
        "conversion", ["str(b)", "f'{b}'", "repr(b)", "'%s' % [b]", "print(b)"]
    )
    def test_bytes_escapes_are_counted(self, conversion: str) -> None:
        """Three million zero bytes are twelve million characters as text."""
        error_type, _ = error_of(f"b = bytes(3 * 10**6)\nresult = {conversion}")
        assert error_type == "resource_limit"

    def test_what_fits_is_pythons(self) -> None:
        """A long printable string, one with a few escapes, bytes and an ascii() of non-ASCII
        text, each within the cap, convert as Python converts them."""
        assert value_of(
            "s = 'x' * 5 * 10**6\n"
            "t = 'y\\n' * 2 * 10**6\n"
            "b = bytes(2 * 10**6)\n"
            "result = [len(repr(s)), len(repr(t)), len(str(b)), len(ascii('é' * 10**6)),\n"
            "          repr('\\x00\\'\"'), ascii('é\\U0010ffff'), f'{s[:3]!r}', '%r' % 'a']\n"
        ) == [
            5_000_002,
            6_000_002,
            8_000_003,
            4_000_002,
            "'\\x00\\'\"'",
            "'\\xe9\\U0010ffff'",
            "'xxx'",
            "'a'",
        ]


@pytest.mark.parametrize(
    "text",
    [
        "a'b",
        'a"b',
        "a'b\"c",
        "\\\\'\n\t\x00é\U0010ffff" * 3,
        "'" * 9 + '"',
        '"' * 9,
        "é" * 20,
        "",
    ],
)
@pytest.mark.parametrize("ascii_only", [False, True])
def test_a_measured_repr_is_at_least_the_real_one(
    text: str, ascii_only: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measured a few characters at a time (each step choosing its own quotes), the length is
    never below the whole text's, and above it by at most its single quotes."""
    monkeypatch.setattr(_text_size, "_MEASURE_STEP", 3)
    write = ascii if ascii_only else repr
    real = len(write(text))
    measured = measured_length(text, write, 10**6)
    assert (measured >= real, measured - real <= text.count("'")) == (True, True)
    data = text.encode("utf-8", "surrogatepass")
    assert (
        len(repr(data)) <= measured_length(data, repr, 10**6) <= len(repr(data)) + data.count(b"'")
    )
