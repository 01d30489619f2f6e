"""Decimal and Fraction as generated code constructs them: numbers with huge exponents are refused.

``decimal.Decimal("1e999999999")`` is a short literal that expands to a huge integer on
conversion; the stand-ins here check the exponent before and after construction and are
otherwise the wrapped classes (ADR 0011).
"""

from __future__ import annotations

import decimal
import fractions
import re
from typing import Any

from recurgent._sandbox._limits import SizeLimitExceeded

__all__ = ["CheckedDecimal", "CheckedFraction"]

# Decimal and Fraction accept exponents in text ("1e999999999") and expand them to huge
# integers on conversion; constructors refuse exponents beyond this.
_MAX_EXPONENT = 100_000
_EXPONENT = re.compile(r"[eE]\s*([+-]?\d+)")


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
