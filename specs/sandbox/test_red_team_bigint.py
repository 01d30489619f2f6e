"""Red team, issue 21: integers past the one-million-bit cap built in one linear C call (ADR 0123).

``int('f' * 9_000_000, 16)`` (power-of-two bases have no digit limit) and
``int.from_bytes(b'\\xff' * 9_000_000, 'big')`` made numbers of 36 and 72 million bits, and
``math.isqrt``, ``//`` or ``%`` of one then ran superlinear C code for minutes, past any
deadline. Every served way to build an int from text or bytes is now checked: each payload
below, one per way found, is a typed ``resource_limit`` before the number exists (or, for a
linear conversion, before anything can use it). Numbers at the cap still work, and so does
every ordinary use of ``int``.
"""

from __future__ import annotations

import pytest

from specs.sandbox.support import Host, error_of, value_of

_TEXT_REFUSAL = "int() of text would create a number of about"
_LIMIT = "the sandbox limit is 1000000 bits"

# (payload, the start of the refusal's message): one per way of building an int from text.
TEXT_PAYLOADS = {
    "hex text (the finding)": ("int('f' * 9_000_000, 16)", _TEXT_REFUSAL + " 35999997 bits"),
    "base 2": ("int('1' * 1_000_001, 2)", _TEXT_REFUSAL + " 1000001 bits"),
    "base 4": ("int('3' * 500_001, 4)", _TEXT_REFUSAL + " 1000001 bits"),
    "base 8": ("int('7' * 333_335, 8)", _TEXT_REFUSAL + " 1000003 bits"),
    "base 32": ("int('v' * 200_001, 32)", _TEXT_REFUSAL + " 1000001 bits"),
    "base keyword": ("int('f' * 250_001, base=16)", _TEXT_REFUSAL + " 1000001 bits"),
    "base 0, 0x prefix": ("int('0x' + 'f' * 250_001, 0)", _TEXT_REFUSAL + " 1000001 bits"),
    "base 0, 0b prefix": ("int('-0b' + '1' * 1_000_001, 0)", _TEXT_REFUSAL + " 1000001 bits"),
    "prefix with base 16": (
        "int(' 0X' + 'f' * 250_001 + ' ', 16)",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "underscores": ("int('f_' * 250_001 + 'f', 16)", _TEXT_REFUSAL + " 1000005 bits"),
    "bytes": ("int(b'f' * 250_001, 16)", _TEXT_REFUSAL + " 1000001 bits"),
    "bytearray": ("int(bytearray(b'f' * 250_001), 16)", _TEXT_REFUSAL + " 1000001 bits"),
    "a str subclass hiding its length": (
        "class S(str):\n"
        "    def __len__(self):\n"
        "        return 1\n"
        "    def strip(self, *a):\n"
        "        return '1'\n"
        "result = int(S('f' * 250_001), 16)",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "a base whose __index__ changes": (
        "class B(int):\n    pass\nresult = int('f' * 250_001, B(16))",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "type() of an int": ("type(0)('f' * 250_001, 16)", _TEXT_REFUSAL + " 1000001 bits"),
    "__class__ of an int": ("(7).__class__('f' * 250_001, 16)", _TEXT_REFUSAL + " 1000001 bits"),
    "int passed to map": (
        "list(map(int, ['f' * 250_001], [16]))",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "int in a partial": (
        "import functools\nresult = functools.partial(int, base=16)('f' * 250_001)",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "int read from bool.mro()": (
        "bool.mro()[1]('f' * 250_001, 16)",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "a JSON decoder's parse_int": (
        "import json\nresult = json.JSONDecoder().parse_int('f' * 250_001, 16)",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "uuid.int_ (the builtin under another name)": (
        "import uuid\nresult = uuid.int_('f' * 250_001, 16)",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "a program's int subclass": (
        "class X(int):\n    pass\nresult = X('f' * 250_001, 16)",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "int read from a subclass's mro()": (
        "class X(int):\n    pass\nresult = X.mro()[-2]('f' * 250_001, 16)",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "an IntEnum member": (
        "import enum\nclass E(enum.IntEnum):\n    A = ('f' * 250_001, 16)\nresult = E.A",
        _TEXT_REFUSAL + " 1000001 bits",
    ),
    "long decimal text": ("int('9' * 310_000)", _TEXT_REFUSAL + " 1029795 bits"),
}

BYTES_PAYLOADS = {
    "from_bytes (the finding)": (
        "int.from_bytes(b'\\xff' * 9_000_000, 'big')",
        "int.from_bytes() would create a number of about 72000000 bits",
    ),
    "from_bytes, one byte past": (
        "int.from_bytes(b'\\x01' + bytes(125_000), 'big')",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes, little endian and signed": (
        "int.from_bytes(bytes(125_000) + b'\\x01', 'little', signed=True)",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes of a bytearray": (
        "int.from_bytes(bytearray(b'\\x01' + bytes(125_000)), 'big')",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes of a list of ints": (
        "int.from_bytes([1] + [0] * 125_000, 'big')",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes read on an int": (
        "(0).from_bytes(b'\\x01' + bytes(125_000), 'big')",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes read on True": (
        "True.from_bytes(b'\\x01' + bytes(125_000), 'big')",
        "bool.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes read on type(0)": (
        "type(0).from_bytes(b'\\x01' + bytes(125_000), 'big')",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes stored in a variable": (
        "make = int.from_bytes\nresult = make(b'\\x01' + bytes(125_000), 'big')",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes through getattr()": (
        "getattr(int, 'from_bytes')(b'\\x01' + bytes(125_000))",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes through operator.methodcaller": (
        "import operator\n"
        "result = operator.methodcaller('from_bytes', b'\\x01' + bytes(125_000))(0)",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes through operator.attrgetter": (
        "import operator\n"
        "result = operator.attrgetter('from_bytes')(int)(b'\\x01' + bytes(125_000))",
        "int.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes of a program's int subclass": (
        "class X(int):\n    pass\nresult = X.from_bytes(b'\\x01' + bytes(125_000), 'big')",
        "X.from_bytes() would create a number of about 1000001 bits",
    ),
    "from_bytes read on an instance of the subclass": (
        "class X(int):\n    pass\nresult = X(3).from_bytes(b'\\x01' + bytes(125_000), 'big')",
        "X.from_bytes() would create a number of about 1000001 bits",
    ),
}


def _program(payload: str) -> str:
    return payload if "result =" in payload else f"result = {payload}"


@pytest.mark.parametrize(("payload", "message"), TEXT_PAYLOADS.values(), ids=list(TEXT_PAYLOADS))
def test_an_int_past_the_cap_from_text_is_refused(payload: str, message: str) -> None:
    """Each served way to convert text to an int refuses text past the cap, typed."""
    error_type, error = error_of(_program(payload))

    assert error_type == "resource_limit"
    assert f"{message}; {_LIMIT}" in error


@pytest.mark.parametrize(("payload", "message"), BYTES_PAYLOADS.values(), ids=list(BYTES_PAYLOADS))
def test_an_int_past_the_cap_from_bytes_is_refused(payload: str, message: str) -> None:
    """Each served way to reach ``from_bytes`` refuses a number past the cap, typed."""
    error_type, error = error_of(_program(payload))

    assert error_type == "resource_limit"
    assert f"{message}; {_LIMIT}" in error


@pytest.mark.usefixtures("unlimited_digits")
def test_long_decimal_text_is_refused_when_the_host_lifted_the_digit_limit() -> None:
    """The sandbox's own digit count, not the host's setting, refuses superlinear text."""
    error_type, error = error_of("result = int('9' * 310_000)")

    assert (error_type, f"{_TEXT_REFUSAL} 1029795 bits; {_LIMIT}" in error) == (
        "resource_limit",
        True,
    )


def test_the_subclass_to_bytes_is_capped_as_int_to_bytes_is() -> None:
    """Found in passing: ``to_bytes`` read on a program's int subclass skipped the item cap."""
    error_type, error = error_of(
        "class X(int):\n    pass\nresult = len(X.to_bytes(X(1), 20_000_000, 'big'))"
    )

    assert error_type == "resource_limit"
    assert "int.to_bytes would create 20000000 items; the sandbox limit is 10000000" in error


class TestSuperlinearOperationsRefuseOperandsPastTheCap:
    """Defence in depth: an operand past the cap (``a + a`` adds a bit) stops isqrt and gcd."""

    def test_isqrt(self) -> None:
        """``math.isqrt`` of a 1 000 001-bit number is refused before it runs."""
        error_type, error = error_of(
            "import math\nresult = math.isqrt((1 << 999_999) + (1 << 999_999))"
        )

        assert error_type == "resource_limit"
        assert "math.isqrt() of an operand would create a number of about 1000001 bits" in error

    def test_gcd(self) -> None:
        """``math.gcd`` with one operand past the cap is refused before it runs."""
        error_type, error = error_of(
            "import math\nresult = math.gcd(6, (1 << 999_999) + (1 << 999_999))"
        )

        assert error_type == "resource_limit"
        assert "math.gcd() of an operand would create a number of about 1000001 bits" in error

    def test_at_the_cap_they_answer(self) -> None:
        """Operands within the cap get Python's answers."""
        assert value_of(
            "import math\nresult = [math.gcd(1 << 999_999, 6), math.isqrt(10**20)]"
        ) == [
            2,
            10**10,
        ]


class TestNumbersAtTheCapStillWork:
    """The rule is the bit cap itself: a number of exactly one million bits is built."""

    def test_hex_text_of_exactly_the_cap(self) -> None:
        """250 000 hex digits are 1 000 000 bits; leading zeros and a prefix are not counted."""
        value = value_of(
            "result = [int('f' * 250_000, 16).bit_length(),\n"
            "          int('0x' + '0' * 2_000_000 + 'f' * 250_000, 0).bit_length(),\n"
            "          int('0' * 3_000_000 + '1', 2),\n"
            "          int(b'1' * 1_000_000, 2).bit_length()]"
        )

        assert value == [1_000_000, 1_000_000, 1, 1_000_000]

    def test_from_bytes_of_exactly_the_cap(self) -> None:
        """125 000 bytes are 1 000 000 bits; leading zero bytes are not counted."""
        value = value_of(
            "result = [int.from_bytes(b'\\xff' * 125_000, 'big').bit_length(),\n"
            "          int.from_bytes(bytes(1_000) + b'\\xff' * 125_000).bit_length(),\n"
            "          int.from_bytes(b'\\xff' * 125_000, 'little', signed=True)]"
        )

        assert value == [1_000_000, 1_000_000, -1]

    def test_a_refusal_leaves_memory_as_it_was(self) -> None:
        """The attempt fails as a whole: nothing it wrote before the refusal is kept."""
        host = Host(memory={"n": 1})

        error_type, _ = error_of(
            "context['n'] = 2\nresult = int('f' * 250_001, 16)",
            host=host,
        )

        assert (error_type, host.memory) == ("resource_limit", {"n": 1})


class TestOrdinaryIntIsUnchanged:
    """The checked ``int`` answers as the builtin does for every ordinary program."""

    def test_conversions(self) -> None:
        """Text, bytes, floats, bools, bases, prefixes and from_bytes/to_bytes as in Python."""
        value = value_of(
            "result = [int('42'), int(' -7 '), int('0x1f', 0), int('ff', 16), int(b'12'),\n"
            "          int(3.9), int(True), int(), int('1_000'), int('z', 36),\n"
            "          int.from_bytes(b'\\x01\\x00', 'big'), int.from_bytes(b'\\x01\\x00', 'little'),\n"
            "          (5).to_bytes(2, 'big'), int.from_bytes(b'\\xff', signed=True)]"
        )

        assert value == [42, -7, 31, 255, 12, 3, 1, 0, 1000, 35, 256, 1, b"\x00\x05", -1]

    def test_bad_text_is_still_a_value_error(self) -> None:
        """Invalid text fails as the builtin fails, not as a resource limit."""
        error_type, error = error_of("result = int('12a')")

        assert error_type == "execution"
        assert "ValueError: invalid literal for int() with base 10: '12a'" in error

    def test_int_is_still_the_int_class_to_a_program(self) -> None:
        """isinstance, issubclass, type(), unions, annotations, names and match-case."""
        value = value_of(
            "def kind(v):\n"
            "    match v:\n"
            "        case int(n):\n"
            "            return ('int', n)\n"
            "        case str():\n"
            "            return 'str'\n"
            "    return 'other'\n"
            "x: int | None = None\n"
            "result = [isinstance(5, int), isinstance(True, int), isinstance('5', int),\n"
            "          isinstance(5, (int, float)), issubclass(bool, int), issubclass(int, int),\n"
            "          issubclass(int, object), type(5) is int, (5).__class__ is int,\n"
            "          isinstance(5, int | None), int.__name__, str(int),\n"
            "          kind(5), kind('a'), kind(2.5), sorted(['10', '9'], key=int)]"
        )

        assert value == [
            True,
            True,
            False,
            True,
            True,
            True,
            True,
            True,
            True,
            True,
            "int",
            "<class 'int'>",
            ("int", 5),
            "str",
            "other",
            ["9", "10"],
        ]

    def test_subclasses_enums_and_default_factories(self) -> None:
        """A program's int subclass, an IntEnum and a defaultdict(int) work and cross out."""
        host = Host()

        value = value_of(
            "import collections, enum\n"
            "class Money(int):\n"
            "    def __repr__(self):\n"
            "        return f'Money({int(self)})'\n"
            "class Color(enum.IntEnum):\n"
            "    RED = 1\n"
            "    BLUE = 2\n"
            "tally = collections.defaultdict(int)\n"
            "for word in 'a b a'.split():\n"
            "    tally[word] += 1\n"
            "context['tally'] = tally\n"
            "result = [repr(Money('12')), Money(2) + 1, repr(Money.from_bytes(b'\\x02', 'big')),\n"
            "          Money(7).to_bytes(1, 'big'), Color.RED + 1, Color(2).name, dict(tally)]",
            host=host,
        )

        assert value == ["Money(12)", 3, "Money(2)", b"\x07", 2, "BLUE", {"a": 2, "b": 1}]
        assert host.memory["tally"].default_factory is int
