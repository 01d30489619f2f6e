"""Integers built from text or bytes: none past the bit cap comes into existence (ADR 0123).

``int('f' * 9_000_000, 16)`` and ``int.from_bytes(b'\\xff' * 9_000_000, 'big')`` are short,
linear C calls that make a 36- or 72-million-bit number; ``math.isqrt``, ``//`` or ``%`` of it
then run superlinear C code no deadline can interrupt. Every way generated code is served to
build an int from text or bytes goes through a check here:

- the builtin ``int`` (and ``type()`` of an int) is :class:`CheckedInt`, a stand-in whose call
  converts through :func:`checked_int`; ``isinstance``, ``issubclass``, ``int | None`` and
  ``case int(n)`` behave as with the builtin;
- ``from_bytes`` read from ``int``, ``bool`` or an int (``(0).from_bytes``) is
  :func:`checked_from_bytes` (the attribute policy serves it);
- a program's ``class X(int)`` derives from :class:`SandboxInt`, whose ``__new__``,
  ``from_bytes`` and ``to_bytes`` are checked; the sandbox's ``IntEnum`` members are made by
  :func:`new_int`.

The rule is the same everywhere: where the conversion is superlinear (a base that is not a
power of two), the count of significant digits is checked before converting; the result's
``int.bit_length()`` is checked after every conversion (power-of-two bases and bytes convert in
linear time, so the number exists only for as long as the check takes).
"""

from __future__ import annotations

import math
import operator
from typing import Any

from recurgent._journal._shared import FACTORY_STAND_INS
from recurgent._sandbox._measure import check_bits, check_items

__all__ = [
    "CheckedInt",
    "SandboxInt",
    "checked_from_bytes",
    "checked_int",
    "new_int",
    "plain_int_class",
]

_TEXT_TYPES = (str, bytes, bytearray, memoryview)
# Bits per digit of the bases CPython converts in linear time, and the prefixes base 0 reads.
_POWER_OF_TWO_BITS = {2: 1, 4: 2, 8: 3, 16: 4, 32: 5}
_PREFIX_BASES = {"0x": 16, "0o": 8, "0b": 2}
# Decimal text this short is at most about 13 300 bits: it needs no count.
_SHORT_TEXT = 4_000


def _plain_text(value: Any) -> str:
    """The real contents of str/bytes/bytearray/memoryview text as an exact str.

    Read through the base classes: a program's subclass may override ``strip`` or ``__len__``.
    Bytes are read as latin-1, one character per byte; a non-ASCII byte is never a digit.
    """
    if isinstance(value, str):
        return str.strip(value)
    if isinstance(value, bytes):
        return bytes.decode(value, "latin-1").strip()
    if isinstance(value, bytearray):
        return bytearray.decode(value, "latin-1").strip()
    return memoryview.tobytes(value).decode("latin-1").strip()


def _check_digits(value: Any, base: int) -> None:
    """Refuse text whose significant digits alone make a number past the cap.

    A lower bound: signs, a base prefix, leading zeros and underscores are not counted, so
    text that converts to a number within the cap is never refused here.
    """
    body = _plain_text(value).lstrip("+-")
    prefix = body[:2].lower()
    if prefix in _PREFIX_BASES and base in (0, _PREFIX_BASES[prefix]):
        base = _PREFIX_BASES[prefix]
        body = body[2:]
    elif base == 0:
        base = 10
    body = body.lstrip("0_")
    digits = len(body) - body.count("_")
    if digits <= 1 or not 2 <= base <= 36:
        return  # int() itself refuses a base outside 2..36
    per_digit = _POWER_OF_TWO_BITS.get(base)
    if per_digit is not None:
        least_bits = (digits - 1) * per_digit + 1
    else:
        least_bits = math.floor((digits - 1) * math.log2(base)) + 1
    check_bits(least_bits, "int() of text")


def _convert(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``int.__new__(cls, *args, **kwargs)`` with the digits and the result's bits checked."""
    if args and isinstance(args[0], _TEXT_TYPES):
        if len(args) > 1 or "base" in kwargs:
            # The base is read once: a program's __index__ could answer differently later.
            base = operator.index(args[1] if len(args) > 1 else kwargs.pop("base"))
            args = (args[0], base)
        else:
            base = 10
        if isinstance(args[0], memoryview):
            args = (memoryview.tobytes(args[0]), *args[1:])
        _check_digits(args[0], base)
    result: int = int.__new__(cls, *args, **kwargs)
    check_bits(int.bit_length(result), "int()")
    return result


def checked_int(*args: Any, **kwargs: Any) -> Any:
    """The sandbox's ``int()``: what the builtin returns, refused past the bit cap."""
    if len(args) == 1 and not kwargs:
        value = args[0]
        kind = type(value)
        if kind is int or kind is float or kind is bool:
            return int(value)  # a float is at most 1024 bits
        if kind is str and len(value) <= _SHORT_TEXT:
            return int(value)  # decimal text
    return _convert(int, args, kwargs)


def new_int(cls: type, *args: Any, **kwargs: Any) -> Any:
    """``int.__new__(cls, *args)`` for an int subclass, checked like :func:`checked_int`."""
    return _convert(cls, args, kwargs)


def checked_from_bytes(
    cls: type, data: Any, byteorder: Any = "big", *, signed: bool = False
) -> Any:
    """``cls.from_bytes(data, byteorder, signed=signed)`` with the result's bits checked.

    ``int.from_bytes`` is linear in the length of ``data``, so the number is checked once made,
    before anything superlinear can use it; only then is ``cls`` (a subclass) built from it.
    """
    value = int.from_bytes(data, byteorder, signed=signed)
    check_bits(int.bit_length(value), f"{cls.__name__}.from_bytes()")
    if cls is int:
        return value
    return cls(value)


def checked_to_bytes(
    value: int, length: Any = 1, byteorder: Any = "big", *, signed: bool = False
) -> bytes:
    """``int.to_bytes`` with the length checked against the item cap first."""
    check_items(operator.index(length), "int.to_bytes")
    return int.to_bytes(value, length, byteorder, signed=signed)


class SandboxInt(int):
    """The base a program's ``class X(int)`` derives from: construction and bytes are checked.

    ``int`` itself is a C type whose constructor cannot be changed; a program's subclass
    inherits it unless a checked ``__new__`` stands between them. ``from_bytes`` and
    ``to_bytes`` read natively on the program's class are the checked ones too.
    """

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _convert(cls, args, kwargs)

    @classmethod
    def from_bytes(cls, data: Any, byteorder: str = "big", *, signed: bool = False) -> Any:
        """``int.from_bytes`` returning this class, refused past the bit cap."""
        return checked_from_bytes(cls, data, byteorder, signed=signed)

    def to_bytes(self, length: Any = 1, byteorder: str = "big", *, signed: bool = False) -> bytes:
        """``int.to_bytes``, refused past the item cap."""
        return checked_to_bytes(self, length, byteorder, signed=signed)


SandboxInt.__module__ = "builtins"
SandboxInt.__name__ = SandboxInt.__qualname__ = "int"


class _IntStandInType(type):
    """The class of :class:`CheckedInt`: it answers as the builtin ``int`` does."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, int)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return subclass is cls or issubclass(subclass, int)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return checked_int(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(int, name)

    def __or__(cls, other: Any) -> Any:
        return int | other

    def __ror__(cls, other: Any) -> Any:
        return other | int

    def __repr__(cls) -> str:
        return "<class 'int'>"


class CheckedInt(metaclass=_IntStandInType):
    """``int`` as generated code sees it: the builtin, with construction checked.

    ``case int(n)`` binds ``n.real``: the builtin matches itself, which only a real subclass
    of ``int`` can; ``real`` of an int is the int (of a bool, its int value).
    """

    __match_args__ = ("real",)

    @staticmethod
    def from_bytes(data: Any, byteorder: Any = "big", *, signed: bool = False) -> Any:
        """``int.from_bytes``, refused past the bit cap."""
        return checked_from_bytes(int, data, byteorder, signed=signed)


CheckedInt.__module__ = "builtins"
CheckedInt.__name__ = CheckedInt.__qualname__ = "int"
CheckedInt.__doc__ = int.__doc__  # what a program reads as int.__doc__
_IntStandInType.__name__ = _IntStandInType.__qualname__ = "type"  # named in refusals


def plain_int_class(cls: Any) -> Any:
    """``int`` for the stand-in, ``cls`` for anything else (what the policy reads attributes of)."""
    return int if cls is CheckedInt else cls


# defaultdict(int) in a program holds the stand-in; what leaves the attempt holds int.
FACTORY_STAND_INS.append((CheckedInt, int))
