"""Checked stand-ins for numeric, random and iterating stdlib functions; the table of every cap.

Each replaces a function the import allow-list exposes and that, given small arguments, would
build a huge value or run for a long time inside C or inside library code that never ticks
(``math.prod(range(...))``, ``random.randbytes(10**10)``, ``hashlib.pbkdf2_hmac(..., 10**12)``,
``operator.mul('a', 10**10)``, ...). They check sizes first and raise
:class:`SizeLimitExceeded`; within the caps they behave exactly like the originals (ADR 0012).
The stand-ins that write text or compare sequences live in ``_stdlib_text``; :data:`SIZE_CAPS`
lists the caps of both.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
import operator
import random
import secrets
import statistics
from collections.abc import Callable, Iterable
from typing import Any

from recurgent._sandbox._decimal_operands import MAX_DECIMAL_OPERAND_BITS
from recurgent._sandbox._limits import SizeLimitExceeded, TickingIterator
from recurgent._sandbox._numbers import MAX_EXPONENT, CheckedDecimal, CheckedFraction
from recurgent._sandbox._regex import (
    MAX_PATTERN_LENGTH,
    MAX_UNROLLED,
)
from recurgent._sandbox._sizes import (
    MAX_INT_BITS,
    MAX_INVERSE_MODULUS_BITS,
    MAX_ITEMS,
    MAX_MODPOW_WORK,
    MAX_ROUND_DIGITS,
    check_bits,
    check_items,
    int_bits,
    size_hooks,
)
from recurgent._sandbox._stdlib_text import MAX_DIFF_WORK, MAX_INDENT, MAX_WRAP_TEXT

__all__ = [
    "SIZE_CAPS",
    "SandboxRandom",
    "hashlib_overrides",
    "itertools_overrides",
    "itertools_tee",
    "math_overrides",
    "operator_overrides",
    "secrets_overrides",
    "statistics_overrides",
]

_MAX_FACTORIAL = 20_000
_MAX_PBKDF2_ITERATIONS = 1_000_000
_MAX_DERIVED_KEY = 1024
_MAX_TEE = 1000
_MAX_WIDTH = 10_000  # tuple width of itertools.product/combinations/permutations


# ----------------------------------------------------------------------------- math


def _real_int(n: Any) -> Any:
    """The value math functions will use: an int subclass cannot lie through its operators."""
    return int.__index__(n) if isinstance(n, int) else n


def _checked_factorial(n: Any) -> Any:
    if isinstance(n, int) and _real_int(n) > _MAX_FACTORIAL:
        raise SizeLimitExceeded(
            f"math.factorial({n}) exceeds the sandbox limit of {_MAX_FACTORIAL}"
        )
    return math.factorial(n)


def _checked_comb(n: Any, k: Any) -> Any:
    if isinstance(n, int) and _real_int(n) > _MAX_FACTORIAL:
        raise SizeLimitExceeded(
            f"math.comb({n}, ...) exceeds the sandbox limit of {_MAX_FACTORIAL}"
        )
    return math.comb(n, k)


def _checked_perm(n: Any, k: Any = None) -> Any:
    if isinstance(n, int) and _real_int(n) > _MAX_FACTORIAL:
        raise SizeLimitExceeded(
            f"math.perm({n}, ...) exceeds the sandbox limit of {_MAX_FACTORIAL}"
        )
    return math.perm(n, k)


def _checked_prod(iterable: Iterable[Any], /, *, start: Any = 1) -> Any:
    items = list(iterable)
    # The product of integers has at most the sum of their bit lengths.
    check_bits(int_bits(start) + sum(int_bits(item) for item in items), "math.prod()")
    if any(isinstance(item, _REPEATED) for item in (start, *items)):
        # A sequence times ints repeats it in C (red team R33: ``prod([100] * 4, start='a')``
        # wrote 100 000 000 characters): multiplied a factor at a time by the checked ``*``.
        multiply = size_hooks()["_mul_"]
        total = start
        for item in items:
            total = multiply(total, item)
        return total
    return math.prod(items, start=start)


#: What ``*`` by an int repeats.
_REPEATED = (str, bytes, bytearray, list, tuple)


def _checked_lcm(*integers: Any) -> Any:
    check_bits(sum(int_bits(item) for item in integers), "math.lcm()")
    return math.lcm(*integers)


def _check_operands(what: str, integers: tuple[Any, ...]) -> None:
    # Defence in depth (ADR 0123): no int past the cap can be built, but these run superlinear
    # C code no deadline interrupts, so an operand past it is refused before they start.
    for item in integers:
        check_bits(int_bits(item), what)


def _checked_isqrt(n: Any, /) -> Any:
    _check_operands("math.isqrt() of an operand", (n,))
    return math.isqrt(n)


def _checked_gcd(*integers: Any) -> Any:
    _check_operands("math.gcd() of an operand", integers)
    # One C call per operand, not one for all: each step is superlinear in cap-size operands
    # (about 0.35 s), so many operands ran for a minute uninterrupted (red team R7, M2); the
    # deadline's stop lands between steps.
    result = 0
    for integer in integers:
        result = math.gcd(result, integer)
    return result


def _floor(x: Any, /) -> Any:
    return math.floor(x)


def _ceil(x: Any, /) -> Any:
    return math.ceil(x)


def _trunc(x: Any, /) -> Any:
    return math.trunc(x)


def math_overrides() -> dict[str, Any]:
    """Checked ``math`` functions."""
    return {
        # Python frames around the C call: a Decimal at the exponent cap becomes an int of
        # 332 000 bits in one C call (about 0.3 s), and a C loop calling the builtin directly
        # (``list(map(math.floor, xs))``) never reached a point where the deadline's stop
        # lands (red team R9).
        "floor": _floor,
        "ceil": _ceil,
        "trunc": _trunc,
        "factorial": _checked_factorial,
        "comb": _checked_comb,
        "perm": _checked_perm,
        "prod": _checked_prod,
        "lcm": _checked_lcm,
        "isqrt": _checked_isqrt,
        "gcd": _checked_gcd,
    }


# ----------------------------------------------------------------------------- random, secrets


class SandboxRandom(random.Random):
    """``random.Random`` with the sizes of generated values capped.

    The methods call ``random.Random``'s by name rather than through the class hierarchy, so
    the policy can also apply them to a plain ``random.Random`` a host put in memory (red-team
    F16).
    """

    _sandbox_public_ = frozenset(name for name in dir(random.Random) if not name.startswith("_"))

    def getrandbits(self, k: int, /) -> int:
        """``Random.getrandbits`` with ``k`` capped."""
        check_bits(k, "getrandbits()")
        return random.Random.getrandbits(self, k)

    def randbytes(self, n: int) -> bytes:
        """``Random.randbytes`` with ``n`` capped."""
        check_items(n, "randbytes()")
        # Random.randbytes goes through getrandbits, whose bit cap would refuse 125 001 bytes.
        return random.Random.getrandbits(self, n * 8).to_bytes(n, "little") if n else b""

    def choices(
        self,
        population: Any,
        weights: Any = None,
        *,
        cum_weights: Any = None,
        k: int = 1,
    ) -> list[Any]:
        """``Random.choices`` with ``k`` capped."""
        check_items(k, "choices()")
        return random.Random.choices(self, population, weights, cum_weights=cum_weights, k=k)

    def sample(self, population: Any, k: int, *, counts: Any = None) -> list[Any]:
        """``Random.sample`` with ``k`` capped (``counts`` can make a population of any size)."""
        check_items(k, "sample()")
        return random.Random.sample(self, population, k, counts=counts)


def _bytes_capped(function: Callable[..., Any], what: str) -> Callable[..., Any]:
    def capped(nbytes: int | None = None) -> Any:
        if nbytes is not None:
            check_items(nbytes, what)
        return function(nbytes)

    capped.__name__ = function.__name__
    return capped


def _checked_randbits(k: int) -> int:
    check_bits(k, "secrets.randbits()")
    return secrets.randbits(k)


def secrets_overrides() -> dict[str, Any]:
    """Checked ``secrets`` functions."""
    return {
        "token_bytes": _bytes_capped(secrets.token_bytes, "secrets.token_bytes()"),
        "token_hex": _bytes_capped(secrets.token_hex, "secrets.token_hex()"),
        "token_urlsafe": _bytes_capped(secrets.token_urlsafe, "secrets.token_urlsafe()"),
        "randbits": _checked_randbits,
    }


# ----------------------------------------------------------------------------- hashlib

#: Hash constructors exposed; the SHAKE functions are left out because their digest length is
#: a caller-chosen size, and scrypt because its cost parameters are.
HASHLIB_NAMES = frozenset(
    {
        "md5",
        "sha1",
        "sha224",
        "sha256",
        "sha384",
        "sha512",
        "sha3_224",
        "sha3_256",
        "sha3_384",
        "sha3_512",
        "blake2b",
        "blake2s",
        "new",
        "pbkdf2_hmac",
        "algorithms_guaranteed",
        "algorithms_available",
        "file_digest",
    }
)


def _checked_new(name: str, data: bytes = b"", **kwargs: Any) -> Any:
    if str(name).lower().startswith("shake"):
        raise ValueError("SHAKE hashes are not available in the sandbox; use sha256 or blake2b")
    return hashlib.new(name, data, **kwargs)


def _checked_pbkdf2(
    hash_name: str, password: bytes, salt: bytes, iterations: int, dklen: int | None = None
) -> bytes:
    if iterations > _MAX_PBKDF2_ITERATIONS or (dklen is not None and dklen > _MAX_DERIVED_KEY):
        raise SizeLimitExceeded(
            f"pbkdf2_hmac is limited to {_MAX_PBKDF2_ITERATIONS} iterations and "
            f"{_MAX_DERIVED_KEY}-byte keys in the sandbox"
        )
    return hashlib.pbkdf2_hmac(hash_name, password, salt, iterations, dklen)


def hashlib_overrides() -> dict[str, Any]:
    """Checked ``hashlib`` functions."""
    return {"new": _checked_new, "pbkdf2_hmac": _checked_pbkdf2}


# ----------------------------------------------------------------------------- statistics

_STATISTICS_FUNCTIONS = (
    "mean",
    "fmean",
    "geometric_mean",
    "harmonic_mean",
    "median",
    "median_low",
    "median_high",
    "median_grouped",
    "mode",
    "multimode",
    "pstdev",
    "pvariance",
    "stdev",
    "variance",
    "quantiles",
    "correlation",
    "covariance",
    "linear_regression",
)
# Values up to this many bits take statistics' fast paths; only the excess is big-int work.
_SMALL_BITS = 64


def _statistics_function(name: str) -> Callable[..., Any]:
    function = getattr(statistics, name)

    def checked(*args: Any, **kwargs: Any) -> Any:
        # statistics sums, squares and divides every value in pure Python that never ticks:
        # 1 000 values of 800 000 bits ran for minutes. Big values are paid for up front.
        data = [
            list(arg) if not isinstance(arg, str | bytes | int | float) else arg for arg in args
        ]
        big = sum(
            bits
            for values in data
            if isinstance(values, list)
            for bits in map(int_bits, values)
            if bits > _SMALL_BITS
        )
        check_bits(big, f"statistics.{name}() over big numbers")
        return function(*data, **kwargs)

    checked.__name__ = checked.__qualname__ = name
    return checked


def statistics_overrides() -> dict[str, Any]:
    """Checked ``statistics`` functions, and the checked number classes it re-exports."""
    served: dict[str, Any] = {
        name: _statistics_function(name)
        for name in _STATISTICS_FUNCTIONS
        if hasattr(statistics, name)
    }
    served.update(Decimal=CheckedDecimal, Fraction=CheckedFraction)
    return served


# ----------------------------------------------------------------------------- operator, misc


def operator_overrides() -> dict[str, Any]:
    """``operator`` functions that bypass the size hooks, replaced by the hooks."""
    hooks = size_hooks()
    inplace = hooks["_inplace_"]
    return {
        "mul": hooks["_mul_"],
        "pow": hooks["_pow_"],
        "lshift": hooks["_lshift_"],
        "mod": hooks["_mod_"],
        # Python frames around superlinear division, so a C loop over them stops at the
        # deadline (red team R7, M3); ``%`` is already the hook above.
        "floordiv": lambda a, b: a // b,
        "ifloordiv": lambda a, b: inplace("//=", a, b),
        "imul": lambda a, b: inplace("*=", a, b),
        "ipow": lambda a, b: inplace("**=", a, b),
        "ilshift": lambda a, b: inplace("<<=", a, b),
        "imod": lambda a, b: inplace("%=", a, b),
        # ``+`` in a Python frame, the items counted as ``sum()`` counts them: a C loop
        # (``functools.reduce``, ``itertools.accumulate``) over the C ``operator.add`` copied
        # its growing total unchecked and past the deadline (red team R33, ADR 0167).
        "add": lambda a, b: _checked_add(a, b, operator.add),
        "concat": lambda a, b: _checked_add(a, b, operator.concat),
        "iadd": lambda a, b: _checked_add(a, b, operator.iadd),
        "iconcat": lambda a, b: _checked_add(a, b, operator.iconcat),
    }


_SEQUENCES = (str, bytes, bytearray, list, tuple)


def _checked_add(a: Any, b: Any, join: Callable[[Any, Any], Any]) -> Any:
    """``join(a, b)``, two exact sequences' items checked first."""
    if type(a) in _SEQUENCES and type(b) in _SEQUENCES:
        check_items(len(a) + len(b), "operator.add")
    return join(a, b)


def itertools_tee(iterable: Any, n: int = 2) -> tuple[Any, ...]:
    """``itertools.tee`` with ``n`` capped."""
    if n > _MAX_TEE:
        raise SizeLimitExceeded(
            f"itertools.tee() with n={n} exceeds the sandbox limit of {_MAX_TEE}"
        )
    return itertools.tee(iterable, n)


def _check_width(width: Any, what: str) -> None:
    if isinstance(width, int) and int.__index__(width) > _MAX_WIDTH:
        raise SizeLimitExceeded(
            f"{what} would build tuples of {int.__index__(width)} items; the sandbox limit is "
            f"{_MAX_WIDTH}"
        )


def itertools_overrides(tick: Callable[[], bool]) -> dict[str, Any]:
    """``itertools`` functions whose tuple width or pool size is caller-chosen, checked first.

    Their results tick like every other served iterator (``_modules`` wraps the rest).
    """

    def product(*iterables: Any, repeat: int = 1) -> TickingIterator:
        _check_width(len(iterables) * int.__index__(repeat), "itertools.product()")
        pools: list[tuple[Any, ...]] = []
        items = 0
        for iterable in iterables:
            # product copies every input before its first item; count the copies as they grow.
            pools.append(tuple(iterable))
            items += len(pools[-1])
            check_items(items, "itertools.product()")
        return TickingIterator(itertools.product(*pools, repeat=repeat), tick)

    def combinations(iterable: Any, r: int) -> TickingIterator:
        _check_width(r, "itertools.combinations()")
        return TickingIterator(itertools.combinations(iterable, r), tick)

    def combinations_with_replacement(iterable: Any, r: int) -> TickingIterator:
        _check_width(r, "itertools.combinations_with_replacement()")
        return TickingIterator(itertools.combinations_with_replacement(iterable, r), tick)

    def permutations(iterable: Any, r: int | None = None) -> TickingIterator:
        _check_width(r, "itertools.permutations()")
        return TickingIterator(itertools.permutations(iterable, r), tick)

    def accumulate(iterable: Any, func: Any = None, *, initial: Any = None) -> TickingIterator:
        # Its default ``+`` copies a growing total in C, as ``operator.add`` did (ADR 0167).
        step = functools.partial(_checked_add, join=operator.add) if func is None else func
        return TickingIterator(itertools.accumulate(iterable, step, initial=initial), tick)

    served: dict[str, Any] = {
        "accumulate": accumulate,
        "tee": itertools_tee,
        "product": product,
        "combinations": combinations,
        "combinations_with_replacement": combinations_with_replacement,
        "permutations": permutations,
    }
    if hasattr(itertools, "batched"):  # Python 3.12+: batched allocates n slots up front

        def batched(iterable: Any, n: int) -> TickingIterator:
            _check_width(n, "itertools.batched()")
            return TickingIterator(itertools.batched(iterable, n), tick)  # type: ignore[attr-defined]

        served["batched"] = batched
    return served


# ----------------------------------------------------------------------------- the cap table

#: Every caller-chosen count, size, width, repeat or exponent a served callable accepts, with
#: its cap (ADR 0022). A value past the cap is a ``resource_limit``; ``docs/security.md`` and
#: ``specs/sandbox/test_size_caps.py`` (which runs each at the cap and one past it) read this.
SIZE_CAPS: dict[str, int] = {
    "sequence * n (items)": MAX_ITEMS,
    "str.ljust/rjust/center/zfill(width)": MAX_ITEMS,
    "str.expandtabs(tabsize) result": MAX_ITEMS,
    "str.replace(old, new) result": MAX_ITEMS,
    "str.join(iterable) result": MAX_ITEMS,
    "str.translate(table) result": MAX_ITEMS,
    "format()/str.format/f-string width and precision": MAX_ITEMS,
    "%-formatting width and result": MAX_ITEMS,
    "range() length": MAX_ITEMS,
    "bytes(n)/bytearray(n)": MAX_ITEMS,
    "int.to_bytes(length)": MAX_ITEMS,
    "re.sub/subn result": MAX_ITEMS,
    "json.dumps output": MAX_ITEMS,
    "textwrap.wrap/fill text length": MAX_WRAP_TEXT,
    "textwrap.indent result": MAX_ITEMS,
    "string.Template.substitute result": MAX_ITEMS,
    "unicodedata.normalize input * 18 / 4": MAX_ITEMS,
    "random.randbytes(n)": MAX_ITEMS,
    "random.choices(k)": MAX_ITEMS,
    "random.sample(k)": MAX_ITEMS,
    "secrets.token_bytes/token_hex/token_urlsafe(nbytes)": MAX_ITEMS,
    "itertools.product items copied": MAX_ITEMS,
    "int * int, int ** n, int << n (bits)": MAX_INT_BITS,
    "Fraction arithmetic (bits of a part)": MAX_INT_BITS,
    "math.prod/lcm (bits)": MAX_INT_BITS,
    "int(text, base)/int.from_bytes (bits)": MAX_INT_BITS,
    "math.isqrt/gcd operands (bits)": MAX_INT_BITS,
    "statistics functions: bits of values over 64 bits": MAX_INT_BITS,
    "random.getrandbits(k)/secrets.randbits(k)": MAX_INT_BITS,
    "round(x, ndigits) digits": MAX_ROUND_DIGITS,
    "pow(base, exp, mod) exponent bits * modulus bits": MAX_MODPOW_WORK,
    "pow(base, -exp, mod) modulus bits": MAX_INVERSE_MODULUS_BITS,
    "Decimal/Fraction exponent (construction and decimal context)": MAX_EXPONENT,
    "Decimal int operand (bits)": MAX_DECIMAL_OPERAND_BITS,
    "math.factorial/comb/perm(n)": _MAX_FACTORIAL,
    "hashlib.pbkdf2_hmac(iterations)": _MAX_PBKDF2_ITERATIONS,
    "hashlib.pbkdf2_hmac(dklen)": _MAX_DERIVED_KEY,
    "json.dumps/dump/pprint.pformat(indent)": MAX_INDENT,
    "xml.etree.ElementTree.indent(space * level)": MAX_ITEMS,
    "itertools.tee(n)": _MAX_TEE,
    "itertools.product(len(iterables) * repeat)": _MAX_WIDTH,
    "itertools.combinations/combinations_with_replacement/permutations(r)": _MAX_WIDTH,
    "difflib input items a * b": MAX_DIFF_WORK,
    "re pattern length": MAX_PATTERN_LENGTH,
    "re longest unrolled sequence": MAX_UNROLLED,
}
