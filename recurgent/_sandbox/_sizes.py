"""Operator size caps: the hooks for ``*``, ``**``, ``<<``, ``%``, ``op=`` and format specs.

Compiled code sends ``*``, ``**``, ``<<``, ``%``, augmented assignment and format specs through
the hooks here (installed by :func:`size_hooks`), and the builtins use the checked ``pow``,
``round`` and ``format``. The checked methods of plain types (``str.ljust``, ``int.to_bytes``,
``re.Pattern.sub``, ...) are in ``_checked_methods``. A breach raises
:class:`SizeLimitExceeded`, reported as ``resource_limit`` (ADR 0012).

Checks never trust what generated code can override: sizes come from ``_measure`` (read
through the builtin base classes), an int operand is compared as ``int(x)``, and a str is
counted with ``str.count``, so a subclass lying in ``__len__``, ``count`` or ``__gt__`` gains
nothing.
"""

from __future__ import annotations

import collections
import decimal
import fractions
import math
import operator
import re
from collections.abc import Callable
from typing import Any

from recurgent._sandbox._encodings import checked_decode
from recurgent._sandbox._generators import GENERATOR_EXIT
from recurgent._sandbox._limits import SizeLimitExceeded
from recurgent._sandbox._measure import (
    MAX_INT_BITS,
    MAX_ITEMS,
    check_bits,
    check_items,
    int_bits,
    true_length,
)
from recurgent._sandbox._stepped_text import (
    converted,
    formatted,
    objects_own,
    percent_needs_steps,
    stepped_percent,
    text_of,
)
from recurgent._sandbox._text_size import (
    check_text,
    estimate,
    is_text_container,
    repr_length,
    texted,
)

__all__ = [
    "MAX_INT_BITS",
    "MAX_INVERSE_MODULUS_BITS",
    "MAX_ITEMS",
    "MAX_MODPOW_WORK",
    "MAX_ROUND_DIGITS",
    "SIZED_DUNDERS",
    "check_bits",
    "check_format_spec",
    "check_items",
    "checked_format",
    "checked_round",
    "int_bits",
    "pow_",
    "size_hooks",
    "sized_dunder",
    "true_length",
]

# Three-argument pow costs about (exponent bits) x (modulus bits)^1.6; this bound keeps it short.
MAX_MODPOW_WORK = 2**26
# A negative exponent first inverts base modulo mod: CPython's Euclid costs about (modulus bits)^2
# whatever the exponent (a 1-bit exponent and a 999 990-bit modulus ran 20 to 40 s in C).
MAX_INVERSE_MODULUS_BITS = 2**16

# round(x, n) of an int, Fraction or Decimal builds 10 ** abs(n): about 3.3 bits per digit.
MAX_ROUND_DIGITS = MAX_INT_BITS * 3 // 10
_WIDTH = re.compile(r"(\d+)")
# A field: its text, width, precision and conversion.
_PERCENT_FIELD = re.compile(r"(%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?([a-zA-Z%]))")


def _repeat_count(sequence: Any, count: Any) -> None:
    if isinstance(count, int) and hasattr(sequence, "__len__") and not isinstance(sequence, int):
        check_items(true_length(sequence) * int(count), "sequence repetition")


def _check_product(a: Any, b: Any) -> None:
    if isinstance(a, int | fractions.Fraction) and isinstance(b, int | fractions.Fraction):
        check_bits(int_bits(a) + int_bits(b), "multiplication")
    elif isinstance(b, int):
        _repeat_count(a, b)
    elif isinstance(a, int):
        _repeat_count(b, a)


def _mul_(a: Any, b: Any) -> Any:
    ta = type(a)
    tb = type(b)
    if ta is float or tb is float:
        return a * b
    if ta is int and tb is int:
        if a.bit_length() + b.bit_length() > MAX_INT_BITS:
            check_bits(a.bit_length() + b.bit_length(), "multiplication")
        return a * b
    _check_product(a, b)
    return a * b


def pow_(a: Any, b: Any) -> Any:
    """``a ** b`` with the result's size checked first."""
    if isinstance(b, int) and int(b) > 1 and isinstance(a, int | fractions.Fraction):
        bits = int_bits(a)
        if bits > 1:  # 0, 1, -1 (and Fraction(1)) stay that small at any power
            check_bits(bits * int(b), "exponentiation")
    return a**b


def checked_modular_pow(base: Any, exponent: Any, modulus: Any) -> Any:
    """Three-argument ``pow`` with its running time bounded."""
    if isinstance(exponent, int) and isinstance(modulus, int):
        exponent_bits, modulus_bits = int_bits(int(exponent)), int_bits(int(modulus))
        if int(exponent) < 0 and modulus_bits > MAX_INVERSE_MODULUS_BITS:
            raise SizeLimitExceeded(
                f"pow() with a negative exponent and a {modulus_bits}-bit modulus exceeds the "
                f"sandbox limit of {MAX_INVERSE_MODULUS_BITS} bits"
            )
        if exponent_bits * max(modulus_bits, 64) > MAX_MODPOW_WORK:
            raise SizeLimitExceeded(
                f"pow() with a {exponent_bits}-bit exponent and a {modulus_bits}-bit modulus "
                "exceeds the sandbox limit"
            )
    return pow(base, exponent, modulus)


def checked_round(number: Any, ndigits: Any = None) -> Any:
    """The sandbox's ``round()``: an int rounded to ``-n`` digits computes ``10 ** n`` first."""
    if ndigits is not None and isinstance(ndigits, int) and not isinstance(number, float):
        wanted = int.__index__(ndigits)
        places = abs(wanted)
        if places > MAX_ROUND_DIGITS:
            # A number too long to print (CPython's digit limit) is named by its size.
            shown = wanted if places.bit_length() <= 64 else f"an int of {places.bit_length()} bits"
            raise SizeLimitExceeded(
                f"round() to {shown} digits exceeds the sandbox limit of {MAX_ROUND_DIGITS} digits"
            )
    return round(number) if ndigits is None else round(number, ndigits)


def _lshift_(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and int(b) > 0:
        check_bits(int_bits(a) + int(b), "left shift")
    return a << b


def check_format_spec(spec: str) -> None:
    for digits in _WIDTH.findall(spec):
        if len(digits) > 8 or int(digits) > MAX_ITEMS:
            raise SizeLimitExceeded(
                f"format width {digits} exceeds the sandbox limit of {MAX_ITEMS}"
            )


def _sized(value: Any, conversions: frozenset[str] = frozenset()) -> int:
    """What ``%`` writes of ``value`` at most, before widths and precisions: text and bytes
    their length; an int its digits in the widest base of ``conversions`` (octal, hex, else
    decimal), a sign and a prefix; a float or ``Decimal`` its shortest text, its integer digits
    too under ``%f`` and ``%d``; a ``Fraction`` its terms' digits (red team R32: ``('%x' * 100) % ((1 << 999999,) * 100)`` wrote 25 000 000
    characters, ints and floats counted as nothing)."""
    kind = type(value)
    if kind is str or kind is bytes:
        return len(value)
    if kind is not int and kind is not float and isinstance(value, collections.UserString):
        value = value.data  # its % and %s are its data's (red-team R3, H9)
    if isinstance(value, str | bytes | bytearray):
        return true_length(value)
    if isinstance(value, int):
        per_bit = 1 / 3 if "o" in conversions else 1 / 4 if conversions & _HEX else _DECIMAL
        return int(int.bit_length(value) * per_bit) + 4  # a digit more, "-", "0x"
    if isinstance(value, float):
        magnitude = abs(float.__float__(value))
        if conversions & _FIXED and magnitude >= _FLOAT_DIGITS_FROM and math.isfinite(magnitude):
            return int(math.log10(magnitude)) + _FLOAT_TEXT
        return _FLOAT_TEXT
    if isinstance(value, fractions.Fraction):  # %d its integer part, %s its terms
        bits = int.bit_length(value.numerator) + int.bit_length(value.denominator)
        return int(bits * _DECIMAL) + _FLOAT_TEXT
    if isinstance(value, decimal.Decimal):
        _, digits, exponent = value.as_tuple()
        zeros = exponent if isinstance(exponent, int) and conversions & _FIXED else 0
        return len(digits) + max(zeros, 0) + _FLOAT_TEXT  # %d of 9E+4000: 4001 digits
    return 0


_HEX = frozenset("xX")
_FIXED = frozenset("fFdiu")  # a float's (or Decimal's) integer digits written in full
_DECIMAL = 0.30103  # digits per bit
# A float's text but %f's integer digits: "-1.2345678901234567e-308", "%f" under 1e16.
_FLOAT_TEXT = 32
_FLOAT_DIGITS_FROM = 1e16


def _sizes_of(
    values: tuple[Any, ...],
    sized: Callable[[Any, frozenset[str]], int],
    conversions: frozenset[str],
) -> list[int]:
    """``sized`` of each value, a value held many times measured once."""
    seen: dict[int, int] = {}
    sizes = []
    for value in values:
        size = seen.get(id(value))
        if size is None:
            size = seen[id(value)] = sized(value, conversions)
        sizes.append(size)
    return sizes


def _field_padding(
    fields: list[tuple[str, str, str, str]], values: tuple[Any, ...], sizes: list[int], largest: int
) -> int:
    """What ``%``'s widths and precisions add to the values' text (``sizes``, a tuple's items
    in order; else ``largest`` for each field), each checked: a field writes its value's text
    padded to its width (the field's own characters, counted in the template, deducted), a
    number its precision's digits too (red team R32: ``('%9000000.1f' * 5) % ...`` wrote
    45 000 000 characters, each width checked alone). A ``*`` takes the next argument, as
    CPython's cursor over a tuple does, so a value formatted after it is not read as a width
    (``'%*d' % (5, 10**9)`` was refused)."""
    total = 0
    cursor = 0
    for text, width, precision, conversion in fields:
        if conversion == "%" and not width and not precision:
            continue  # "%%": a literal, no argument taken
        if width == "*":
            star = values[cursor] if cursor < len(values) else None
            cursor += 1
            # A negative * width pads to the left; CPython refuses a * that is no int.
            width = str(abs(int(star))) if isinstance(star, int) else ""
        if precision == "*":
            star = values[cursor] if cursor < len(values) else None
            cursor += 1
            precision = str(abs(int(star))) if isinstance(star, int) else ""
        size = sizes[cursor] if cursor < len(sizes) else largest
        cursor += 1
        if width:
            check_format_spec(width)
            total += max(int(width) - size - len(text), 0)
        if precision:
            check_format_spec(precision)
            if conversion not in _TEXT_FIELDS:
                total += int(precision)
    return total


_TEXT_FIELDS = frozenset("sra")  # a precision cuts their text


def _check_percent(a: Any, b: Any) -> bool:
    """Refuse ``a % b`` past the item cap by its estimate; ``True`` when it must be written in
    steps instead of one C call (``_stepped_text.percent_needs_steps``, ADR 0162)."""
    if isinstance(a, collections.UserString):
        a = a.data
    if not isinstance(a, str | bytes):
        return False
    template = str.__str__(a) if isinstance(a, str) else bytes.decode(a, "latin-1")
    fields_found = _PERCENT_FIELD.findall(template)
    # A tuple subclass may hide items from iteration; % reads its real items.
    values = tuple.__getitem__(b, slice(None)) if isinstance(b, tuple) else (b,)
    spoken = _check_values(values)  # a shared structure's text (H10)
    fields = template.count("%")
    conversions = frozenset(conversion for _, _, _, conversion in fields_found)
    # %r and %a write a value's repr, a string's escapes too (ADR 0151): ascii's length is at
    # least repr's, so it bounds either (a container's estimate only bounds the conversion it
    # was made for: %r alone is counted as repr, red team R26). A str template's %s of bytes
    # writes their repr too (red team R32: four times their length, \\xNN a byte).
    sized = _sized
    if "a" in conversions:
        sized = _ascii_sized
    elif "r" in conversions:
        sized = _repr_sized
    elif "s" in conversions and isinstance(a, str):
        sized = _str_sized
    sizes = _sizes_of(values, sized, conversions) if fields_found else []
    if isinstance(b, dict):
        # Named fields may repeat one large value any number of times.
        largest = max((sized(value, conversions) for value in dict.values(b)), default=0)
        written, sizes = fields * largest, []
    else:
        # A tuple's item is written by one field at most: their sum bounds the fields' text.
        largest = max(sizes, default=0)
        written = sum(sizes) if isinstance(b, tuple) else min(fields, 1) * largest
    padded = any(width or precision for _, width, precision, _ in fields_found)
    padding = _field_padding(fields_found, values, sizes, largest) if padded else 0
    check_items(len(template) + written + padding, "%-formatting")
    return percent_needs_steps(a, b, values, spoken)


def _check_values(values: tuple[Any, ...]) -> bool:
    """``check_text`` of each value; ``True`` when one's text is the program's code."""
    spoken = False
    seen: set[int] = set()
    for value in values:
        if type(value) in PLAIN_TEXT or id(value) in seen:
            continue  # its text is its own, or checked already: nothing to check
        seen.add(id(value))
        if isinstance(value, BaseException):
            # its text is its args' (H10), an OSError's its fields' too (red team R32)
            size, said = estimate(texted(value))
            check_items(size, "%-formatting")
            spoken = spoken or said
        elif is_text_container(value) and not isinstance(value, collections.UserString):
            size, said = estimate(value)
            check_items(size, "%-formatting")
            spoken = spoken or said
        else:
            check_text(value, "%-formatting")
    return spoken


def _repr_sized(value: Any, conversions: frozenset[str] = frozenset()) -> int:
    return max(_sized(value, conversions), repr_length(value))


def _ascii_sized(value: Any, conversions: frozenset[str] = frozenset()) -> int:
    return max(_sized(value, conversions), repr_length(value, ascii_only=True))


def _str_sized(value: Any, conversions: frozenset[str] = frozenset()) -> int:
    """A str template's ``%s`` writes bytes as their repr, a container (an exception) its
    items' (its args') text (red team R32: ``('%s' * 100) % (([S],) * 100)``, ``S`` a million
    characters, wrote 100 000 400 characters, each list's text checked alone)."""
    if type(value) in PLAIN_TEXT or isinstance(value, collections.UserString):
        return _sized(value, conversions)
    if isinstance(value, bytes | bytearray | BaseException) or is_text_container(value):
        return repr_length(value)
    return _sized(value, conversions)


def _mod_(a: Any, b: Any) -> Any:
    if type(a) is int or type(a) is float:
        return a % b
    if isinstance(b, collections.UserString) and not isinstance(
        a, str | bytes | collections.UserString
    ):
        return _user_string_rmod(a, b)
    if _check_percent(a, b):
        if type(a) is collections.UserString:
            # UserString's own % formats its data (``self.__class__(self.data % args)``),
            # the data read once.
            data = a.data
            if type(data) is str:
                return collections.UserString(stepped_percent(data, b))
            return collections.UserString(data % b)
        if _str_formats(a, b):
            return stepped_percent(a, b)
    return a % b


def _str_formats(a: Any, b: Any) -> bool:
    """True when ``a % b`` is ``str.__mod__(a, b)`` (or an exact bytes' ``bytes.__mod__``): no
    ``__mod__`` of a subclass, no ``__rmod__`` of a right operand's subclass first."""
    kind = type(a)
    if kind is bytes:
        return type(b) is bytes or not issubclass(type(b), bytes)
    return (
        isinstance(a, str)
        and kind.__mod__ is str.__mod__
        and (type(b) is kind or not issubclass(type(b), kind))
    )


def _user_string_rmod(a: Any, b: collections.UserString) -> Any:
    # What ``a % b`` does when ``a`` does not handle it: UserString.__rmod__ formats str(a),
    # a template of any width (red-team R3, H9), so it is formatted here, checked.
    method = getattr(type(a), "__mod__", None)
    result = NotImplemented if method is None else method(a, b)
    if result is not NotImplemented:
        return result
    check_text(a, "%-formatting")  # str(a) is one C call over a shared structure (ADR 0155)
    template = str(a)
    if _check_percent(template, b):
        return collections.UserString(stepped_percent(template, b))
    return collections.UserString(template % b)


def _is_str_method(method: Any, receiver: Any) -> bool:
    return getattr(method, "__objclass__", None) is str and isinstance(receiver, str)


_DUNDER_CHECKS: dict[str, Callable[[Any, Any], bool | None]] = {
    "__mul__": _check_product,
    "__rmul__": lambda receiver, other: _check_product(other, receiver),
    "__mod__": _check_percent,
}

#: Dunder methods that build a value as large as ``*`` or ``%`` does; see :func:`sized_dunder`.
SIZED_DUNDERS = frozenset(_DUNDER_CHECKS)


def sized_dunder(method: Any, name: str) -> Callable[..., Any]:
    """``method`` (``super().__mul__`` and the like) with the check of its operator first.

    ``method`` is bound (its receiver is ``__self__``) or, read through a class, unbound.
    """
    check = _DUNDER_CHECKS[name]
    bound = hasattr(method, "__self__")
    receiver = getattr(method, "__self__", None)

    def checked(*args: Any) -> Any:
        operands = (receiver, *args) if bound else args
        if len(operands) == 2 and check(*operands) and _is_str_method(method, operands[0]):
            return stepped_percent(*operands)  # str.__mod__'s text, in steps (ADR 0162)
        return method(*args)

    return checked


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "|=": operator.ior,
    "^=": operator.ixor,
    "&=": operator.iand,
    "@=": operator.imatmul,
}
_CHECKED_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "*=": _mul_,
    "**=": pow_,
    "<<=": _lshift_,
    "%=": _mod_,
}


def _inplace_(op: str, a: Any, b: Any) -> Any:
    check = _CHECKED_INPLACE.get(op)
    if check is None:
        return _INPLACE[op](a, b)
    if op == "*=" and isinstance(b, int) and not isinstance(a, int):
        _repeat_count(a, b)
        return _INPLACE[op](a, b)
    return check(a, b)


_CONVERSIONS = {ord("s"): "str", ord("r"): "repr", ord("a"): "ascii"}


def _format_(value: Any, conversion: int, spec: str) -> str:
    # A string's escapes too (ADR 0151); a container with the program's code in steps (ADR 0162).
    mode = _CONVERSIONS.get(conversion)
    if mode is not None:
        value = text_of(value, mode, "an f-string")
    check_format_spec(spec)
    return formatted(value, spec, "an f-string")  # a shared structure's text (H10)


def checked_format(value: Any, spec: str = "") -> str:
    """The sandbox's ``format()`` builtin: widths and the text of a structure are capped."""
    check_format_spec(spec)
    return formatted(value, spec, "format()")


def checked_repr(value: Any, /) -> str:
    """The sandbox's ``repr()``: the text of a structure (H10) and a string's escapes (ADR
    0151) are capped, written in steps when the program's code is in it (ADR 0162)."""
    return text_of(value, "repr", "repr()")


def checked_ascii(value: Any, /) -> str:
    """The sandbox's ``ascii()``: the text of a structure (H10) and a string's escapes (ADR
    0151) are capped, written in steps when the program's code is in it (ADR 0162)."""
    return text_of(value, "ascii", "ascii()")


def _str_(maker: Any, value: Any) -> Any:
    """``str(value)`` as compiled code calls it (``maker`` is whatever ``str`` names there):
    the builtin ``str`` of a structure is capped by its text (H10), written in steps when the
    program's code is in it (ADR 0162)."""
    if maker is str:
        return text_of(value, "str", "str()")
    return maker(value)


def _text_(value: Any) -> Any:
    """``value`` as an f-string's ``{value}`` converts it, once its text is known to fit: a
    container's text itself when the program's code is in it (written in steps, ADR 0162)."""
    if converted(value) and objects_own(value, "__format__"):
        return text_of(value, "str", "converting a container to text")
    check_text(value, "converting a container to text")
    return value


def _str_spread_(maker: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``str(*args, **kwargs)`` in any other form than one positional argument: the builtin's
    text of one object (``str(*[x])``, ``str(object=x)``) is capped as :func:`_str_` caps it;
    decoding bytes (``str(data, "utf-8", "backslashreplace")``) is ``data.decode``'s, checked
    (ADR 0151). Any other form is Python's own (its errors worded by Python)."""
    if maker is str and len(args) + len(kwargs) == 1:
        if args or "object" in kwargs:
            return text_of(args[0] if args else kwargs["object"], "str", "str()")
    elif maker is str and len(args) <= 3 and set(kwargs) <= _STR_OPTIONS:
        named = dict(zip(("object", "encoding", "errors"), args, strict=False))
        if named.keys().isdisjoint(kwargs):
            named.update(kwargs)
            data = named.get("object", b"")
            encoding = named.get("encoding", "utf-8")
            errors = named.get("errors", "strict")
            if type(data) in _DECODED and isinstance(encoding, str) and isinstance(errors, str):
                # Bytes decoded: as bytes.decode, counted before it is built (ADR 0151).
                return checked_decode(data, encoding, errors, "str()")
    return maker(*args, **kwargs)


_STR_OPTIONS = frozenset({"object", "encoding", "errors"})
_DECODED = frozenset({bytes, bytearray})


#: Types whose text never expands: the fast path converts them natively.
PLAIN_TEXT = frozenset({str, int, float, bool, type(None)})


def size_hooks() -> dict[str, Any]:
    """The run-time names compiled code uses, by the names the policy emits.

    The operator and format hooks, and the exception class rewritten generators catch (ADR 0060).
    """
    return {
        GENERATOR_EXIT: GeneratorExit,
        "_mul_": _mul_,
        "_pow_": pow_,
        "_lshift_": _lshift_,
        "_mod_": _mod_,
        "_inplace_": _inplace_,
        "_format_": _format_,
        "_str_": _str_,
        "_str_spread_": _str_spread_,
        "_text_": _text_,
        "_STR_": str,
        "_PLAIN_TEXT_": PLAIN_TEXT,
    }
