"""Size caps: the operator hooks and checked methods that keep one C call from running away.

Compiled code sends ``*``, ``**``, ``<<``, ``%``, augmented assignment and format specs through
the hooks here, and the attribute policy hands out checked versions of the few methods of plain
types that can build a huge value from small arguments (``str.ljust``, ``int.to_bytes``,
``re.Pattern.sub``, ...). A breach raises :class:`SizeLimitExceeded`, reported as
``resource_limit`` (ADR 0012).

Checks never trust what generated code can override: sizes come from ``_measure`` (read
through the builtin base classes), an int operand is compared as ``int(x)``, and a str is
counted with ``str.count``, so a subclass lying in ``__len__``, ``count`` or ``__gt__`` gains
nothing.
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # the helper string.Formatter uses
import collections
import fractions
import operator
import re
import string
from collections.abc import Callable, Iterable
from typing import Any

from recurgent._sandbox._generators import GENERATOR_EXIT
from recurgent._sandbox._limits import SizeLimitExceeded, TickingIterator
from recurgent._sandbox._measure import (
    MAX_INT_BITS,
    MAX_ITEMS,
    check_bits,
    check_items,
    int_bits,
    true_length,
)

__all__ = [
    "MAX_INT_BITS",
    "MAX_ITEMS",
    "MAX_MODPOW_WORK",
    "MAX_ROUND_DIGITS",
    "SIZED_DUNDERS",
    "SafeFormatter",
    "check_bits",
    "check_items",
    "checked_format",
    "checked_round",
    "int_bits",
    "pow_",
    "size_hooks",
    "sized_dunder",
    "special_methods",
    "true_length",
]

# Three-argument pow costs about (exponent bits) x (modulus bits)^1.6; this bound keeps it short.
MAX_MODPOW_WORK = 2**26

# round(x, n) of an int, Fraction or Decimal builds 10 ** abs(n): about 3.3 bits per digit.
MAX_ROUND_DIGITS = MAX_INT_BITS * 3 // 10
_EXACT_STR = frozenset({str})
_WIDTH = re.compile(r"(\d+)")
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")
_GROUP_REFERENCE = re.compile(r"\\(?:[1-9]|g<)")
_GROUP_REFERENCE_BYTES = re.compile(rb"\\(?:[1-9]|g<)")

Binder = Callable[[Any], Callable[..., Any]]


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
        if exponent_bits * max(modulus_bits, 64) > MAX_MODPOW_WORK:
            raise SizeLimitExceeded(
                f"pow() with a {exponent_bits}-bit exponent and a {modulus_bits}-bit modulus "
                "exceeds the sandbox limit"
            )
    return pow(base, exponent, modulus)


def checked_round(number: Any, ndigits: Any = None) -> Any:
    """The sandbox's ``round()``: an int rounded to ``-n`` digits computes ``10 ** n`` first."""
    if ndigits is not None and isinstance(ndigits, int) and not isinstance(number, float):
        places = abs(int.__index__(ndigits))
        if places > MAX_ROUND_DIGITS:
            raise SizeLimitExceeded(
                f"round() to {int.__index__(ndigits)} digits exceeds the sandbox limit of "
                f"{MAX_ROUND_DIGITS} digits"
            )
    return round(number) if ndigits is None else round(number, ndigits)


def _lshift_(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and int(b) > 0:
        check_bits(int_bits(a) + int(b), "left shift")
    return a << b


def _check_spec(spec: str) -> None:
    for digits in _WIDTH.findall(spec):
        if len(digits) > 8 or int(digits) > MAX_ITEMS:
            raise SizeLimitExceeded(
                f"format width {digits} exceeds the sandbox limit of {MAX_ITEMS}"
            )


def _sized(value: Any) -> int:
    return true_length(value) if isinstance(value, str | bytes | bytearray) else 0


def _check_percent(a: Any, b: Any) -> None:
    if not isinstance(a, str | bytes):
        return
    template = str.__str__(a) if isinstance(a, str) else bytes.decode(a, "latin-1")
    stars = 0
    for width, precision in _PERCENT_FIELD.findall(template):
        for part in (width, precision):
            if part == "*":
                stars += 1
            elif part:
                _check_spec(part)
    # A tuple subclass may hide items from iteration; % reads its real items.
    values = tuple.__getitem__(b, slice(None)) if isinstance(b, tuple) else (b,)
    if stars:
        for value in values[: stars * 2]:
            if isinstance(value, int):  # a negative * width pads to the left
                _check_spec(str(abs(int(value))))
    fields = template.count("%")
    if isinstance(b, dict):
        # Named fields may repeat one large value any number of times.
        values, repeats = tuple(dict.values(b)), fields
    else:
        repeats = min(fields, len(values))
    check_items(len(template) + repeats * max(map(_sized, values), default=0), "%-formatting")


def _mod_(a: Any, b: Any) -> Any:
    if type(a) is int or type(a) is float:
        return a % b
    _check_percent(a, b)
    return a % b


_DUNDER_CHECKS: dict[str, Callable[[Any, Any], None]] = {
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
        if len(operands) == 2:
            check(*operands)
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
        check_items(true_length(obj) * max(int(tabsize), 1), "str.expandtabs")
        return obj.expandtabs(tabsize)

    return expandtabs


def _text_base(obj: Any) -> Any:
    return next(base for base in _TEXT if isinstance(obj, base))


def _bind_replace(obj: Any) -> Callable[..., Any]:
    def replace(old: Any, new: Any, count: int = -1) -> Any:
        old_length, new_length = true_length(old), true_length(new)
        if new_length > old_length:
            length = true_length(obj)
            occurrences = length + 1 if not old_length else _text_base(obj).count(obj, old)
            if int(count) >= 0:
                occurrences = min(occurrences, int(count))
            check_items(length + occurrences * (new_length - old_length), "str.replace")
        return obj.replace(old, new, count)

    return replace


def _joined_length(separator: Any, items: list[Any]) -> int:
    total = true_length(separator) * (len(items) - 1)
    if isinstance(separator, str) and {*map(type, items)} <= _EXACT_STR:
        # The common case at C speed: len() of an exact str is its real length.
        return total + sum(map(len, items))
    if isinstance(separator, str):
        return total + sum(true_length(item) for item in items if isinstance(item, str))
    # bytes.join takes any buffer; nbytes is its real size (len() of a cast memoryview is not).
    return total + sum(memoryview(item).nbytes for item in items if _is_buffer(item))


def _is_buffer(item: Any) -> bool:
    try:
        memoryview(item).release()
    except TypeError:  # join refuses it
        return False
    return True


def _bind_join(obj: Any) -> Callable[..., Any]:
    def join(iterable: Iterable[Any]) -> Any:
        # A list is joined as it is: no generated code runs between the check and the join
        # (lengths are read through the builtin types), so it cannot change in between.
        items = iterable if type(iterable) is list else list(iterable)
        if items:
            check_items(_joined_length(obj, items), "str.join")
        return obj.join(items)

    return join


def _resolved_table(text: str, table: Any) -> dict[int, Any]:
    """The entries of a translation table ``text`` uses, read once into a plain dict."""
    resolved: dict[int, Any] = {}
    for char in set(str.__str__(text)):
        try:
            resolved[ord(char)] = table[ord(char)]
        except LookupError:  # str.translate leaves such a character as it is
            pass
    return resolved


def _bind_translate(obj: Any) -> Callable[..., Any]:
    def translate(table: Any) -> Any:
        if isinstance(obj, str):
            # A mapping that is not a plain dict could answer the check and translate()
            # differently; translate() gets the entries the check measured.
            if type(table) is not dict:
                table = _resolved_table(obj, table)
            longest = max((true_length(v) for v in table.values() if isinstance(v, str)), default=1)
            check_items(true_length(obj) * longest, "str.translate")
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


def checked_expand(match: Any, template: Any) -> Any:
    """``Match.expand`` with the expansion's size checked first."""
    check_items(_expansion_bound(template, len(match.string)), "re.Match.expand")
    return match.expand(template)


def checked_sub(
    pattern: Any,
    repl: Any,
    text: Any,
    count: int = 0,
    *,
    with_count: bool = False,
    timeout: float | None = None,
) -> Any:
    """``Pattern.sub``/``subn`` that stops once the result would pass the size cap.

    ``pattern`` is an ``re`` or ``regex`` pattern; ``timeout`` is passed on to a ``regex`` one.
    """
    options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    if isinstance(repl, str | bytes):
        matches = len(text) + 1 if count <= 0 else min(count, len(text) + 1)
        if len(text) + matches * _expansion_bound(repl, len(text)) <= MAX_ITEMS:
            return (
                pattern.subn(repl, text, count, **options)
                if with_count
                else pattern.sub(repl, text, count, **options)
            )
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
        pattern.subn(replacement, text, count, **options)
        if with_count
        else pattern.sub(replacement, text, count, **options)
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
