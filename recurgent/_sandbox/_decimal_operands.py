"""Decimal in generated code: an int operand too large for any capped Decimal is refused first.

libmpdec converts an int to a Decimal in one C call that costs about (bits)^2: a 999 000-bit int
(within the bit cap) takes about 1.5 s, and no deadline stop lands inside it. Every Decimal
operation converts an int operand that way (``Decimal(1) + n``, ``Decimal(1) == n``,
``d.quantize(n)``, ``ctx.add(1, n)``, ``Decimal(n)``), and comparisons convert a Fraction's
numerator and denominator too. The attempt's exponent cap (ADR 0022) bounds every Decimal a
program can hold, so an int past :data:`MAX_DECIMAL_OPERAND_BITS` is larger than any of them;
such an operand is refused (``resource_limit``) before the C call (ADR 0129).

Every Decimal generated code holds is a :class:`SandboxDecimal`: construction builds one, each
operator and method checks its operands and hands its Decimal results back as
``SandboxDecimal`` again (libmpdec builds plain Decimals), and the attempt's decimal context
(:mod:`recurgent._sandbox._idioms`) does the same for its methods. Plain Decimals arriving from
the host (arguments, memory, another agent's values) are rebuilt by :func:`sandbox_decimal`;
a ``SandboxDecimal`` leaving the attempt becomes a plain Decimal again (``_boundary``).
"""

from __future__ import annotations

import decimal
import fractions
import numbers
from collections.abc import Callable
from typing import Any

from recurgent._sandbox._limits import SizeLimitExceeded

__all__ = [
    "DECIMAL_EXPONENT_CAP",
    "MAX_DECIMAL_OPERAND_BITS",
    "SandboxDecimal",
    "check_operands",
    "checked_context_method",
    "sandbox_decimal",
    "sandboxed_decimals",
]

#: The attempt's decimal exponent cap (``_numbers.MAX_EXPONENT``, ADR 0022).
DECIMAL_EXPONENT_CAP = 100_000
#: The bits of ``10 ** (DECIMAL_EXPONENT_CAP + 1)``: every int with more bits is at least that
#: large, so its adjusted exponent is past the cap and no capped Decimal equals it. Converting
#: an int of this size takes about 0.15 s in libmpdec (a ninth of the bit cap's 1.5 s).
MAX_DECIMAL_OPERAND_BITS = 332_197

_DECIMAL = decimal.Decimal
_new_decimal = decimal.Decimal.__new__
_bit_length = int.bit_length


def _refuse(bits: int) -> None:
    raise SizeLimitExceeded(
        f"an int of {bits} bits as a Decimal operand exceeds the sandbox limit of "
        f"{MAX_DECIMAL_OPERAND_BITS} bits"
    )


def check_operands(values: tuple[Any, ...]) -> None:
    """Refuse any int among ``values`` that libmpdec would convert at a cost past the bound."""
    for value in values:
        if isinstance(value, int):
            bits = _bit_length(value)  # the builtin's, whatever a subclass defines
            if bits > MAX_DECIMAL_OPERAND_BITS:
                _refuse(bits)


def _comparable(other: Any) -> Any:
    """A comparison operand as libmpdec may convert it, checked.

    Decimal comparisons convert a Rational's ``numerator`` and ``denominator``; a program's
    Rational could answer a small value to the check and a huge one to the C call, so each
    is read once and the comparison gets a plain Fraction of what was checked.
    """
    if isinstance(other, int):
        bits = _bit_length(other)
        if bits > MAX_DECIMAL_OPERAND_BITS:
            _refuse(bits)
        return other
    if isinstance(other, numbers.Rational):
        numerator, denominator = other.numerator, other.denominator
        if not isinstance(numerator, int) or not isinstance(denominator, int):
            return NotImplemented
        check_operands((numerator, denominator))
        if type(other) is fractions.Fraction:
            return other
        plain = object.__new__(fractions.Fraction)
        plain._numerator = int.__index__(numerator)  # type: ignore[attr-defined]
        plain._denominator = int.__index__(denominator)  # type: ignore[attr-defined]
        return plain
    return other


def sandbox_decimal(value: decimal.Decimal) -> SandboxDecimal:
    """``value`` (a Decimal) as the checked kind generated code holds (an exact copy)."""
    if type(value) is SandboxDecimal:
        return value
    built: SandboxDecimal = _new_decimal(SandboxDecimal, value)
    return built


def sandboxed_decimals(value: Any) -> Any:
    """A plain Decimal result (or a tuple of results, ``divmod``) as ``SandboxDecimal``."""
    kind = type(value)
    if kind is _DECIMAL:
        return _new_decimal(SandboxDecimal, value)
    if kind is tuple:
        return tuple(sandboxed_decimals(item) for item in value)
    return value


class _Zero:
    """``Decimal.imag``: a checked zero (the plain one is a plain Decimal).

    A slotted descriptor rather than a property: what a program can reach from it is its class
    alone (a property would lead to a function and its module's globals).
    """

    __slots__ = ()

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self if instance is None else _new_decimal(SandboxDecimal, 0)


class SandboxDecimal(decimal.Decimal):
    """``decimal.Decimal`` whose int operands are checked and whose results stay checked.

    Equal to, hashing as, printing as and formatting as the plain Decimal; ``type()`` of one is
    the ``Decimal`` stand-in (``_numbers.number_class``).
    """

    __slots__ = ()

    def __new__(cls, value: Any = "0", context: Any = None) -> SandboxDecimal:
        check_operands((value,))
        built: SandboxDecimal = _new_decimal(cls, value, context)
        return built

    # Defining __eq__ would otherwise clear the inherited hash.
    __hash__ = decimal.Decimal.__hash__

    imag = _Zero()

    @classmethod
    def from_float(cls, f: Any) -> Any:
        """``Decimal.from_float`` (which converts an int too), the int checked first."""
        check_operands((f,))
        return sandbox_decimal(_DECIMAL.from_float(f))

    def __pow__(self, other: Any, modulo: Any = None) -> Any:
        check_operands((other, modulo))
        return sandboxed_decimals(_DECIMAL.__pow__(self, other, modulo))

    def __rpow__(self, other: Any, modulo: Any = None) -> Any:
        check_operands((other, modulo))
        return sandboxed_decimals(_DECIMAL.__rpow__(self, other, modulo))


def _binary(name: str) -> None:
    plain = getattr(_DECIMAL, name)
    pair = name in ("__divmod__", "__rdivmod__")

    def operator(self: Any, other: Any) -> Any:
        if isinstance(other, int) and _bit_length(other) > MAX_DECIMAL_OPERAND_BITS:
            _refuse(_bit_length(other))
        result = plain(self, other)
        if pair:
            return sandboxed_decimals(result)
        # Inlined: these run for every operator of ordinary Decimal code.
        return _new_decimal(SandboxDecimal, result) if type(result) is _DECIMAL else result

    operator.__name__ = operator.__qualname__ = name
    setattr(SandboxDecimal, name, operator)


def _comparison(name: str) -> None:
    plain = getattr(_DECIMAL, name)

    def compare(self: Any, other: Any) -> Any:
        if type(other) is SandboxDecimal:
            return plain(self, other)
        checked = _comparable(other)
        if checked is NotImplemented:
            return NotImplemented
        return plain(self, checked)

    compare.__name__ = compare.__qualname__ = name
    setattr(SandboxDecimal, name, compare)


def _checked_method(owner: type, name: str) -> Callable[..., Any]:
    """``owner.<name>`` with its int operands checked and its results checked Decimals."""
    plain = getattr(owner, name)

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        check_operands(args)
        check_operands(tuple(kwargs.values()))
        return sandboxed_decimals(plain(self, *args, **kwargs))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = plain.__doc__
    return method


def _method(name: str) -> None:
    setattr(SandboxDecimal, name, _checked_method(_DECIMAL, name))


_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "divmod")
_COMPARISONS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
# Methods whose results are plain Decimals (or take operands): checked and re-wrapped. The
# others answer ints, floats, bools, strings or the number itself.
_METHODS = (
    "__abs__",
    "__neg__",
    "__pos__",
    "__round__",
    "canonical",
    "compare",
    "compare_signal",
    "compare_total",
    "compare_total_mag",
    "copy_abs",
    "copy_negate",
    "copy_sign",
    "exp",
    "fma",
    "ln",
    "log10",
    "logb",
    "logical_and",
    "logical_invert",
    "logical_or",
    "logical_xor",
    "max",
    "max_mag",
    "min",
    "min_mag",
    "next_minus",
    "next_plus",
    "next_toward",
    "normalize",
    "quantize",
    "radix",
    "remainder_near",
    "rotate",
    "same_quantum",
    "scaleb",
    "shift",
    "sqrt",
    "to_integral",
    "to_integral_exact",
    "to_integral_value",
)
for _name in _BINARY:
    _binary(f"__{_name}__")
    _binary(f"__r{_name}__")
for _name in _COMPARISONS:
    _comparison(_name)
for _name in _METHODS:
    _method(_name)

SandboxDecimal.__module__ = "decimal"
SandboxDecimal.__name__ = SandboxDecimal.__qualname__ = "Decimal"


def checked_context_method(name: str) -> Callable[..., Any]:
    """``decimal.Context.<name>`` with its int operands checked and its results checked Decimals."""
    return _checked_method(decimal.Context, name)
