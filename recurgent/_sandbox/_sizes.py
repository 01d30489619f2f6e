"""Size caps: the operator hooks and checked methods that keep one C call from running away.

Compiled code sends ``*``, ``**``, ``<<``, ``%``, augmented assignment and format specs through
the hooks here, and the attribute policy hands out checked versions of the few methods of plain
types that can build a huge value from small arguments (``str.ljust``, ``int.to_bytes``,
``re.Pattern.sub``, ...). A breach raises :class:`SizeLimitExceeded`, reported as
``resource_limit`` (ADR 0012).
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # the helper string.Formatter uses
import collections
import decimal
import fractions
import operator
import re
import string
from collections.abc import Callable, Iterable
from typing import Any

from recurgent._sandbox._limits import SandboxLimits, SizeLimitExceeded, TickingIterator

__all__ = [
    "MAX_INT_BITS",
    "MAX_ITEMS",
    "CheckedDecimal",
    "CheckedFraction",
    "SafeFormatter",
    "check_bits",
    "check_items",
    "checked_format",
    "int_bits",
    "pow_",
    "size_hooks",
    "special_methods",
]

_LIMITS = SandboxLimits()
MAX_ITEMS = _LIMITS.max_sequence_items
MAX_INT_BITS = _LIMITS.max_int_bits
# Three-argument pow costs about (exponent bits) x (modulus bits)^1.6; this bound keeps it short.
_MAX_MODPOW_WORK = 2**26

_SEQUENCES = (str, bytes, bytearray, list, tuple)
_WIDTH = re.compile(r"(\d+)")
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")
# Decimal and Fraction accept exponents in text ("1e999999999") and expand them to huge
# integers on conversion; constructors refuse exponents beyond this.
_MAX_EXPONENT = 100_000
_EXPONENT = re.compile(r"[eE]\s*([+-]?\d+)")
_GROUP_REFERENCE = re.compile(r"\\(?:[1-9]|g<)")
_GROUP_REFERENCE_BYTES = re.compile(rb"\\(?:[1-9]|g<)")

Binder = Callable[[Any], Callable[..., Any]]


def check_items(count: int, what: str) -> None:
    """Refuse an operation that would create more than ``max_sequence_items`` items."""
    if count > MAX_ITEMS:
        raise SizeLimitExceeded(
            f"{what} would create {count} items; the sandbox limit is {MAX_ITEMS}"
        )


def int_bits(value: Any) -> int:
    """Bits of an int, or of the larger part of a Fraction; 0 for anything else."""
    if isinstance(value, int):
        return value.bit_length()
    if isinstance(value, fractions.Fraction):
        return max(value.numerator.bit_length(), value.denominator.bit_length())
    return 0


def check_bits(bits: int, what: str) -> None:
    """Refuse an operation that would create a number of more than ``max_int_bits`` bits."""
    if bits > MAX_INT_BITS:
        raise SizeLimitExceeded(
            f"{what} would create a number of about {bits} bits; the sandbox limit is "
            f"{MAX_INT_BITS} bits"
        )


def _repeat_count(sequence: Any, count: Any) -> None:
    if isinstance(count, int) and hasattr(sequence, "__len__") and not isinstance(sequence, int):
        check_items(len(sequence) * count, "sequence repetition")


def _mul_(a: Any, b: Any) -> Any:
    ta = type(a)
    tb = type(b)
    if ta is float or tb is float:
        return a * b
    if ta is int and tb is int:
        if a.bit_length() + b.bit_length() > MAX_INT_BITS:
            check_bits(a.bit_length() + b.bit_length(), "multiplication")
        return a * b
    if isinstance(a, int | fractions.Fraction) and isinstance(b, int | fractions.Fraction):
        check_bits(int_bits(a) + int_bits(b), "multiplication")
    elif isinstance(b, int):
        _repeat_count(a, b)
    elif isinstance(a, int):
        _repeat_count(b, a)
    return a * b


def pow_(a: Any, b: Any) -> Any:
    """``a ** b`` with the result's size checked first."""
    if (
        type(b) is int
        and b > 1
        and isinstance(a, int | fractions.Fraction)
        and not (isinstance(a, int) and -1 <= a <= 1)
    ):
        check_bits(int_bits(a) * b, "exponentiation")
    return a**b


def checked_modular_pow(base: Any, exponent: Any, modulus: Any) -> Any:
    """Three-argument ``pow`` with its running time bounded."""
    if isinstance(exponent, int) and isinstance(modulus, int):
        work = abs(exponent).bit_length() * max(abs(modulus).bit_length(), 64)
        if work > _MAX_MODPOW_WORK:
            raise SizeLimitExceeded(
                f"pow() with a {abs(exponent).bit_length()}-bit exponent and a "
                f"{abs(modulus).bit_length()}-bit modulus exceeds the sandbox limit"
            )
    return pow(base, exponent, modulus)


def _lshift_(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and b > 0:
        check_bits(a.bit_length() + b, "left shift")
    return a << b


def _check_spec(spec: str) -> None:
    for digits in _WIDTH.findall(spec):
        if len(digits) > 7 or int(digits) > MAX_ITEMS:
            raise SizeLimitExceeded(
                f"format width {digits} exceeds the sandbox limit of {MAX_ITEMS}"
            )


def _sized(value: Any) -> int:
    return len(value) if isinstance(value, str | bytes | bytearray) else 0


def _mod_(a: Any, b: Any) -> Any:
    if type(a) is int or type(a) is float:
        return a % b
    if isinstance(a, str | bytes):
        template = a if isinstance(a, str) else a.decode("latin-1")
        stars = 0
        for width, precision in _PERCENT_FIELD.findall(template):
            for part in (width, precision):
                if part == "*":
                    stars += 1
                elif part:
                    _check_spec(part)
        values = b if isinstance(b, tuple) else (b,)
        if stars:
            for value in values[: stars * 2]:
                if isinstance(value, int) and value > MAX_ITEMS:
                    _check_spec(str(value))
        fields = template.count("%")
        if isinstance(b, dict):
            # Named fields may repeat one large value any number of times.
            values, repeats = tuple(b.values()), fields
        else:
            repeats = min(fields, len(values))
        check_items(len(template) + repeats * max(map(_sized, values), default=0), "%-formatting")
    return a % b


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


def _format_(value: Any, conversion: int, spec: str) -> str:
    if conversion == ord("s"):
        value = str(value)
    elif conversion == ord("r"):
        value = repr(value)
    elif conversion == ord("a"):
        value = ascii(value)
    _check_spec(spec)
    return format(value, spec)


def checked_format(value: Any, spec: str = "") -> str:
    """The sandbox's ``format()`` builtin: widths are capped."""
    _check_spec(spec)
    return format(value, spec)


def size_hooks() -> dict[str, Any]:
    """The operator hooks compiled code calls, by the names the policy emits."""
    return {
        "_mul_": _mul_,
        "_pow_": pow_,
        "_lshift_": _lshift_,
        "_mod_": _mod_,
        "_inplace_": _inplace_,
        "_format_": _format_,
    }


class SafeFormatter(string.Formatter):
    """``str.format`` that resolves ``{0.attr}`` through the sandbox attribute policy.

    It also counts what it produces, so a template repeating one large argument many times
    stops at the size cap instead of exhausting memory.
    """

    def __init__(self, getattr_guard: Callable[[Any, str], Any]) -> None:
        self._getattr_guard = getattr_guard
        self._produced = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self._produced = len(format_string)
        return super().vformat(format_string, args, kwargs)

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attribute, key in rest:
            obj = self._getattr_guard(obj, key) if is_attribute else obj[key]
        return obj, first

    def format_field(self, value: Any, format_spec: str) -> Any:
        _check_spec(format_spec)
        text = format(value, format_spec)
        self._produced += len(text)
        check_items(self._produced, "str.format")
        return text


# ----------------------------------------------------------------------------- checked methods


def _padding(method: str) -> Binder:
    def bind(obj: Any) -> Callable[..., Any]:
        def padded(width: int, *args: Any) -> Any:
            check_items(int(width), f"str.{method}")
            return getattr(obj, method)(width, *args)

        return padded

    return bind


def _bind_expandtabs(obj: Any) -> Callable[..., Any]:
    def expandtabs(tabsize: int = 8) -> Any:
        check_items(len(obj) * max(int(tabsize), 1), "str.expandtabs")
        return obj.expandtabs(tabsize)

    return expandtabs


def _bind_replace(obj: Any) -> Callable[..., Any]:
    def replace(old: Any, new: Any, count: int = -1) -> Any:
        if len(new) > len(old):
            occurrences = len(obj) + 1 if not old else obj.count(old)
            if count >= 0:
                occurrences = min(occurrences, count)
            check_items(len(obj) + occurrences * (len(new) - len(old)), "str.replace")
        return obj.replace(old, new, count)

    return replace


def _bind_join(obj: Any) -> Callable[..., Any]:
    def join(iterable: Iterable[Any]) -> Any:
        items = list(iterable)
        if obj and items:
            total = len(obj) * (len(items) - 1)
            total += sum(len(item) for item in items if isinstance(item, _SEQUENCES))
            check_items(total, "str.join")
        return obj.join(items)

    return join


def _bind_translate(obj: Any) -> Callable[..., Any]:
    def translate(table: Any) -> Any:
        if isinstance(obj, str) and isinstance(table, dict):
            longest = max((len(v) for v in table.values() if isinstance(v, str)), default=1)
            check_items(len(obj) * longest, "str.translate")
        return obj.translate(table)

    return translate


def _bind_to_bytes(obj: Any) -> Callable[..., Any]:
    def to_bytes(length: int = 1, byteorder: str = "big", *, signed: bool = False) -> bytes:
        check_items(int(length), "int.to_bytes")
        return int.to_bytes(obj, length, byteorder, signed=signed)  # type: ignore[arg-type]

    return to_bytes


def _expansion_bound(template: Any, string_length: int) -> int:
    pattern = _GROUP_REFERENCE if isinstance(template, str) else _GROUP_REFERENCE_BYTES
    return len(template) + len(pattern.findall(template)) * string_length


def checked_expand(match: re.Match[Any], template: Any) -> Any:
    """``Match.expand`` with the expansion's size checked first."""
    check_items(_expansion_bound(template, len(match.string)), "re.Match.expand")
    return match.expand(template)


def checked_sub(
    pattern: re.Pattern[Any], repl: Any, text: Any, count: int = 0, *, with_count: bool = False
) -> Any:
    """``Pattern.sub``/``subn`` that stops once the result would pass the size cap."""
    if isinstance(repl, str | bytes):
        matches = len(text) + 1 if count <= 0 else min(count, len(text) + 1)
        if len(text) + matches * _expansion_bound(repl, len(text)) <= MAX_ITEMS:
            return pattern.subn(repl, text, count) if with_count else pattern.sub(repl, text, count)
    budget = MAX_ITEMS - len(text)
    backslash = "\\" if isinstance(repl, str) else b"\\"
    literal = isinstance(repl, str | bytes) and backslash not in repl  # type: ignore[operator]

    def expand(match: re.Match[Any]) -> Any:
        if literal:
            return repl
        return repl(match) if callable(repl) else checked_expand(match, repl)

    def replacement(match: re.Match[Any]) -> Any:
        nonlocal budget
        piece = expand(match)
        budget -= len(piece)
        if budget < 0:
            check_items(MAX_ITEMS - budget, "re.sub")
        return piece

    return (
        pattern.subn(replacement, text, count)
        if with_count
        else pattern.sub(replacement, text, count)
    )


def _bind_sub(obj: Any) -> Callable[..., Any]:
    return lambda repl, string, count=0: checked_sub(obj, repl, string, count)


def _bind_subn(obj: Any) -> Callable[..., Any]:
    return lambda repl, string, count=0: checked_sub(obj, repl, string, count, with_count=True)


def _bind_expand(obj: Any) -> Callable[..., Any]:
    return lambda template: checked_expand(obj, template)


_TEXT = (str, bytes, bytearray)


def special_methods(
    formatter: SafeFormatter, tick: Callable[[], bool]
) -> dict[str, tuple[tuple[type, ...], Binder]]:
    """Checked methods by name: ``name -> (receiver types, binder)``.

    A binder takes the receiver and returns the callable generated code gets for
    ``receiver.name``.
    """

    def bind_format(obj: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: formatter.vformat(obj, args, kwargs)

    def bind_format_map(obj: Any) -> Callable[..., Any]:
        return lambda mapping: formatter.vformat(obj, (), mapping)

    def bind_elements(obj: Any) -> Callable[..., Any]:
        return lambda: TickingIterator(obj.elements(), tick)

    return {
        "format": ((str,), bind_format),
        "format_map": ((str,), bind_format_map),
        "ljust": (_TEXT, _padding("ljust")),
        "rjust": (_TEXT, _padding("rjust")),
        "center": (_TEXT, _padding("center")),
        "zfill": (_TEXT, _padding("zfill")),
        "expandtabs": (_TEXT, _bind_expandtabs),
        "replace": (_TEXT, _bind_replace),
        "join": (_TEXT, _bind_join),
        "translate": (_TEXT, _bind_translate),
        "to_bytes": ((int,), _bind_to_bytes),
        "sub": ((re.Pattern,), _bind_sub),
        "subn": ((re.Pattern,), _bind_subn),
        "expand": ((re.Match,), _bind_expand),
        "elements": ((collections.Counter,), bind_elements),
    }


# ----------------------------------------------------------------------------- checked numbers


def _check_exponent(value: Any) -> None:
    if isinstance(value, decimal.Decimal):
        digits = str(abs(value.adjusted())) if value.is_finite() else "0"
    elif isinstance(value, str):
        found = _EXPONENT.search(value)
        digits = found.group(1).lstrip("+-") if found else "0"
    else:
        return
    if len(digits) > 6 or int(digits) > _MAX_EXPONENT:
        shown = digits if len(digits) <= 12 else digits[:12] + "..."
        raise SizeLimitExceeded(
            f"a number with exponent {shown} exceeds the sandbox limit of {_MAX_EXPONENT}"
        )


class _CheckedNumberMeta(type):
    """A stand-in class: construction is checked, everything else is the wrapped class's.

    ``isinstance(x, stand_in)`` is true for every instance of the wrapped class, and reading
    an attribute of the stand-in reads the wrapped class's.
    """

    _wrapped: type

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls._wrapped)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._wrapped)

    def __call__(cls, value: Any = 0, *args: Any, **kwargs: Any) -> Any:
        _check_exponent(value)
        result = cls._wrapped(value, *args, **kwargs)
        _check_exponent(result)
        return result

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._wrapped, name)


class CheckedDecimal(metaclass=_CheckedNumberMeta):
    """``decimal.Decimal`` as generated code constructs it: huge exponents are refused."""

    _wrapped = decimal.Decimal


class CheckedFraction(metaclass=_CheckedNumberMeta):
    """``fractions.Fraction`` as generated code constructs it: huge exponents are refused."""

    _wrapped = fractions.Fraction

    @staticmethod
    def from_decimal(dec: Any) -> Any:
        """``Fraction.from_decimal`` with the exponent checked first."""
        _check_exponent(dec)
        return fractions.Fraction.from_decimal(dec)


for _checked in (CheckedDecimal, CheckedFraction):
    _checked.__module__ = _checked._wrapped.__module__
    _checked.__name__ = _checked.__qualname__ = _checked._wrapped.__name__
