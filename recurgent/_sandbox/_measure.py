"""Real sizes of values, and the caps every size check compares them with (ADR 0012).

Sizes are read through the builtin base classes (``int.bit_length``, ``str.__len__``):
generated code may subclass ``int``, ``str``, ``list`` or ``tuple`` and override
``bit_length`` or ``__len__``, and a check that trusted those would pass while the C operation
uses the real value.
"""

from __future__ import annotations

import fractions
from collections.abc import Callable
from typing import Any

from recurgent._sandbox._limits import SandboxLimits, SizeLimitExceeded

__all__ = ["MAX_INT_BITS", "MAX_ITEMS", "check_bits", "check_items", "int_bits", "true_length"]

_LIMITS = SandboxLimits()
MAX_ITEMS = _LIMITS.max_sequence_items
MAX_INT_BITS = _LIMITS.max_int_bits

_EXACT_SEQUENCES = frozenset({str, bytes, bytearray, list, tuple})
_REAL_LENGTHS: tuple[tuple[type, Callable[[Any], int]], ...] = (
    (str, str.__len__),
    (bytes, bytes.__len__),
    (bytearray, bytearray.__len__),
    (list, list.__len__),
    (tuple, tuple.__len__),
)


def check_items(count: int, what: str) -> None:
    """Refuse an operation that would create more than ``max_sequence_items`` items."""
    if count > MAX_ITEMS:
        raise SizeLimitExceeded(
            f"{what} would create {count} items; the sandbox limit is {MAX_ITEMS}"
        )


def check_bits(bits: int, what: str) -> None:
    """Refuse an operation that would create a number of more than ``max_int_bits`` bits."""
    if bits > MAX_INT_BITS:
        raise SizeLimitExceeded(
            f"{what} would create a number of about {bits} bits; the sandbox limit is "
            f"{MAX_INT_BITS} bits"
        )


def true_length(value: Any) -> int:
    """``len(value)``; for a subclass of a builtin sequence, the length of its real contents."""
    if type(value) in _EXACT_SEQUENCES:
        return len(value)
    for base, length in _REAL_LENGTHS:
        if isinstance(value, base):
            return length(value)
    return len(value)


def int_bits(value: Any) -> int:
    """Bits of an int, or of the larger part of a Fraction; 0 for anything else."""
    if isinstance(value, int):
        return int.bit_length(value)
    if isinstance(value, fractions.Fraction):
        return max(int_bits(value.numerator), int_bits(value.denominator))
    return 0
