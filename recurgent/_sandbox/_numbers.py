"""Decimal and Fraction in generated code: every value they can reach stays within the caps.

``decimal.Decimal("1e999999999")`` is a short literal that expands to a huge integer on
conversion, and ``Decimal(1).scaleb(999999)`` reaches the same value by arithmetic. Three
pieces keep every Decimal and Fraction of an attempt small (ADR 0022):

- the stand-ins generated code imports check the exponent before and after construction, and
  a Decimal is built as a :class:`~recurgent._sandbox._decimal_operands.SandboxDecimal`, whose
  int operands are checked before libmpdec converts them (ADR 0129);
- an attempt runs under its own decimal context whose exponent range is the construction cap,
  so every arithmetic result and method result is capped like construction (``decimal``
  raises ``Overflow``), and no process-wide context reaches the program;
- a checked Fraction is a :class:`SandboxFraction`, whose operators check the size of their
  result before computing it and return checked Fractions again.

``type()`` of a Decimal or Fraction is the stand-in (:func:`number_class`), never the raw
class, whose constructor skips the checks.
"""

from __future__ import annotations

import decimal
import fractions
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from recurgent._sandbox._decimal_operands import DECIMAL_EXPONENT_CAP, SandboxDecimal
from recurgent._sandbox._integers import CheckedInt
from recurgent._sandbox._limits import SizeLimitExceeded
from recurgent._sandbox._measure import check_bits, int_bits

__all__ = [
    "MAX_EXPONENT",
    "CheckedDecimal",
    "CheckedFraction",
    "SandboxFraction",
    "attempt_decimal_context",
    "number_class",
]

# Decimal and Fraction accept exponents in text ("1e999999999") and expand them to huge
# integers on conversion; constructors refuse exponents beyond this, and the attempt's decimal
# context refuses arithmetic results beyond it. int() of 10**MAX_EXPONENT takes about 0.5 s
# in libmpdec and is 332 193 bits, inside max_int_bits.
MAX_EXPONENT = DECIMAL_EXPONENT_CAP
_EXPONENT = re.compile(r"[eE]\s*([+-]?\d+)")


def _check_exponent(value: Any) -> None:
    if isinstance(value, decimal.Decimal):
        digits = str(abs(value.adjusted())) if value.is_finite() else "0"
    elif isinstance(value, str):
        found = _EXPONENT.search(value)
        digits = found.group(1).lstrip("+-") if found else "0"
    else:
        return
    if len(digits) > 6 or int(digits) > MAX_EXPONENT:
        shown = digits if len(digits) <= 12 else digits[:12] + "..."
        raise SizeLimitExceeded(
            f"a number with exponent {shown} exceeds the sandbox limit of {MAX_EXPONENT}"
        )


def attempt_decimal_context() -> AbstractContextManager[decimal.Context]:
    """The decimal context one attempt runs under: Python's defaults, exponents capped.

    A fresh context per attempt: the host's (possibly widened) context never reaches generated
    code, and nothing generated code does to its context outlives the attempt.
    """
    return decimal.localcontext(
        decimal.Context(
            prec=28,
            rounding=decimal.ROUND_HALF_EVEN,
            Emin=-MAX_EXPONENT,
            Emax=MAX_EXPONENT,
            capitals=1,
            clamp=0,
            flags=[],
            traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
        )
    )


# ----------------------------------------------------------------------------- Fraction


def _parts(value: Any) -> tuple[int, int]:
    """Bits of the numerator and denominator of an int or Fraction; (0, 0) for anything else."""
    if isinstance(value, fractions.Fraction):
        return int_bits(value.numerator), int_bits(value.denominator)
    if isinstance(value, int):
        return int_bits(value), 1
    return 0, 0


def _combined_bits(a: Any, b: Any) -> int:
    """An upper bound of the parts of ``a op b`` for + - * / // % divmod."""
    an, ad = _parts(a)
    bn, bd = _parts(b)
    return max(an + bd, bn + ad, ad + bd, an + bn) + 1


def _integral_exponent(exponent: Any) -> int | None:
    if isinstance(exponent, int):
        return int.__index__(exponent)
    if isinstance(exponent, fractions.Fraction) and exponent.denominator == 1:
        return int.__index__(exponent.numerator)
    return None


def _power_bits(base: Any, exponent: Any) -> int:
    power = _integral_exponent(exponent)
    if power is None or not isinstance(base, int | fractions.Fraction):
        return 0
    largest = max(_parts(base))
    # 0, 1 and -1 (and 1/1) stay that small at any power.
    return 0 if largest <= 1 else largest * abs(power)


class SandboxFraction(fractions.Fraction):
    """A Fraction whose arithmetic checks the size of its result first.

    Python's Fraction builds every result as a plain ``Fraction``; each operator here checks
    the operands, computes through the plain implementation and returns a ``SandboxFraction``
    again, so a program cannot double a denominator's size in a loop until one addition runs
    for minutes.
    """

    __slots__ = ()

    def limit_denominator(self, max_denominator: int = 1000000) -> Any:
        """``Fraction.limit_denominator`` returning a checked Fraction."""
        return _sandboxed(fractions.Fraction.limit_denominator(self, max_denominator))

    def __round__(self, ndigits: Any = None) -> Any:
        if ndigits is not None:
            # round(x, n) computes 10 ** abs(n) first.
            check_bits(abs(int.__index__(ndigits)) * 10 // 3, "Fraction round()")
        return _sandboxed(fractions.Fraction.__round__(self, ndigits))

    def __pos__(self) -> Any:
        return _sandboxed(fractions.Fraction.__pos__(self))

    def __neg__(self) -> Any:
        return _sandboxed(fractions.Fraction.__neg__(self))

    def __abs__(self) -> Any:
        return _sandboxed(fractions.Fraction.__abs__(self))


def _sandboxed(value: Any) -> Any:
    """A plain Fraction result (or a divmod pair) as SandboxFractions; anything else unchanged."""
    if type(value) is tuple:
        return tuple(_sandboxed(item) for item in value)
    if type(value) is not fractions.Fraction:
        return value
    # The parts are already reduced: copy them instead of normalizing again.
    checked = object.__new__(SandboxFraction)
    checked._numerator = value.numerator  # type: ignore[attr-defined]
    checked._denominator = value.denominator  # type: ignore[attr-defined]
    return checked


def _plain(value: Any) -> fractions.Fraction:
    plain = object.__new__(fractions.Fraction)
    plain._numerator = value.numerator  # type: ignore[attr-defined]
    plain._denominator = value.denominator  # type: ignore[attr-defined]
    return plain


def _binary(name: str, symbol: str, bits: Callable[[Any, Any], int], reflected: bool) -> None:
    plain = getattr(fractions.Fraction, name)

    def operator(self: Any, other: Any) -> Any:
        left, right = (other, self) if reflected else (self, other)
        check_bits(bits(left, right), f"Fraction {symbol}")
        if reflected and name == "__rpow__":
            # Fraction.__rpow__ computes Fraction(other) ** self, which Python hands straight
            # back to this subclass's __rpow__; a plain receiver ends that loop.
            self = _plain(self)
        return _sandboxed(plain(self, other))

    operator.__name__ = operator.__qualname__ = name
    setattr(SandboxFraction, name, operator)


_OPERATORS = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "divmod": "divmod",
    "pow": "**",
}
for _name, _symbol in _OPERATORS.items():
    _bits = _power_bits if _name == "pow" else _combined_bits
    _binary(f"__{_name}__", _symbol, _bits, reflected=False)
    _binary(f"__r{_name}__", _symbol, _bits, reflected=True)


# ----------------------------------------------------------------------------- the stand-ins


class _CheckedNumberMeta(type):
    """A stand-in class: construction is checked, everything else is the wrapped class's.

    ``isinstance(x, stand_in)`` is true for every instance of the wrapped class, and reading
    an attribute of the stand-in reads the wrapped class's.
    """

    _wrapped: type
    _builds: type

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls._wrapped)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._wrapped)

    def __call__(cls, value: Any = 0, *args: Any, **kwargs: Any) -> Any:
        _check_exponent(value)
        result = cls._builds(value, *args, **kwargs)
        _check_exponent(result)
        check_bits(max(_parts(result)), f"{cls._wrapped.__name__}()")
        return result

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._builds, name)


class CheckedDecimal(metaclass=_CheckedNumberMeta):
    """``decimal.Decimal`` as generated code constructs it: huge exponents are refused, and the
    result is a :class:`SandboxDecimal` (int operands checked, ADR 0129)."""

    _wrapped = decimal.Decimal
    _builds = SandboxDecimal


class CheckedFraction(metaclass=_CheckedNumberMeta):
    """``fractions.Fraction`` as generated code constructs it: a :class:`SandboxFraction`."""

    _wrapped = fractions.Fraction
    _builds = SandboxFraction

    @staticmethod
    def from_decimal(dec: Any) -> Any:
        """``Fraction.from_decimal`` with the exponent checked first."""
        _check_exponent(dec)
        return SandboxFraction.from_decimal(dec)

    @staticmethod
    def from_float(value: Any) -> Any:
        """``Fraction.from_float`` returning a checked Fraction."""
        return SandboxFraction.from_float(value)


SandboxFraction.__module__ = "fractions"
SandboxFraction.__name__ = SandboxFraction.__qualname__ = "Fraction"
for _checked in (CheckedDecimal, CheckedFraction):
    _checked.__module__ = _checked._wrapped.__module__
    _checked.__name__ = _checked.__qualname__ = _checked._wrapped.__name__

_STAND_INS: dict[type, Any] = {
    decimal.Decimal: CheckedDecimal,
    SandboxDecimal: CheckedDecimal,
    fractions.Fraction: CheckedFraction,
    SandboxFraction: CheckedFraction,
    int: CheckedInt,  # ADR 0123
}


def number_class(cls: type) -> Any:
    """What ``type()`` hands generated code for an object of class ``cls``.

    The raw Decimal and Fraction classes construct without the checks; their stand-ins are
    returned instead. Every other class is returned unchanged.
    """
    return _STAND_INS.get(cls, cls)
