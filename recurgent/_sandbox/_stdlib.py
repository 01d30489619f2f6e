"""Checked stand-ins for standard-library functions that can run away in one call (ADR 0012).

Each replaces a function the import allow-list exposes and that, given small arguments, would
build a huge value or run for a long time inside C or inside library code that never ticks
(``math.prod(range(...))``, ``random.randbytes(10**10)``, ``hashlib.pbkdf2_hmac(..., 10**12)``,
``json.dumps(x, indent=10**7)``, ``operator.mul('a', 10**10)``, ...). They check sizes first
and raise :class:`SizeLimitExceeded`; within the caps they behave exactly like the originals.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import pprint
import random
import secrets
import statistics
import string
import textwrap
import unicodedata
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from recurgent._sandbox._limits import SizeLimitExceeded, TickingIterator
from recurgent._sandbox._measure import true_length
from recurgent._sandbox._numbers import MAX_EXPONENT, CheckedDecimal, CheckedFraction
from recurgent._sandbox._regex import (
    MAX_PATTERN_LENGTH,
    MAX_UNROLLED,
    module_names as regex_module_names,
)
from recurgent._sandbox._sizes import (
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_MODPOW_WORK,
    MAX_ROUND_DIGITS,
    check_bits,
    check_items,
    int_bits,
    size_hooks,
)

__all__ = [
    "SIZE_CAPS",
    "CheckedTemplate",
    "SandboxRandom",
    "checked_element_indent",
    "difflib_overrides",
    "hashlib_overrides",
    "itertools_overrides",
    "itertools_tee",
    "json_overrides",
    "math_overrides",
    "operator_overrides",
    "pprint_overrides",
    "re_overrides",
    "secrets_overrides",
    "statistics_overrides",
    "textwrap_overrides",
    "unicodedata_overrides",
]

_MAX_FACTORIAL = 20_000
_MAX_PBKDF2_ITERATIONS = 1_000_000
_MAX_DERIVED_KEY = 1024
_MAX_INDENT = 100
#: Longest text textwrap.wrap/fill/shorten take: their pure-Python loop never ticks.
MAX_WRAP_TEXT = 200_000
_MAX_TEE = 1000
_MAX_WIDTH = 10_000  # tuple width of itertools.product/combinations/permutations
_MAX_DIFF_WORK = 10_000_000
_NFKD_EXPANSION = 18  # the longest decomposition of one code point


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
    return math.prod(items, start=start)


def _checked_lcm(*integers: Any) -> Any:
    check_bits(sum(int_bits(item) for item in integers), "math.lcm()")
    return math.lcm(*integers)


def math_overrides() -> dict[str, Any]:
    """Checked ``math`` functions."""
    return {
        "factorial": _checked_factorial,
        "comb": _checked_comb,
        "perm": _checked_perm,
        "prod": _checked_prod,
        "lcm": _checked_lcm,
    }


# ----------------------------------------------------------------------------- random, secrets


class SandboxRandom(random.Random):
    """``random.Random`` with the sizes of generated values capped."""

    _sandbox_public_ = frozenset(name for name in dir(random.Random) if not name.startswith("_"))

    def getrandbits(self, k: int, /) -> int:
        """``Random.getrandbits`` with ``k`` capped."""
        check_bits(k, "getrandbits()")
        return super().getrandbits(k)

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
        return super().choices(population, weights, cum_weights=cum_weights, k=k)

    def sample(self, population: Any, k: int, *, counts: Any = None) -> list[Any]:
        """``Random.sample`` with ``k`` capped (``counts`` can make a population of any size)."""
        check_items(k, "sample()")
        return super().sample(population, k, counts=counts)


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


# ----------------------------------------------------------------------------- text output


def _check_indent(indent: Any, what: str) -> None:
    width = len(indent) if isinstance(indent, str) else indent
    if isinstance(width, int) and width > _MAX_INDENT:
        raise SizeLimitExceeded(f"{what} indent {width} exceeds the sandbox limit of {_MAX_INDENT}")


def _checked_dumps(obj: Any, *, indent: Any = None, separators: Any = None, **kwargs: Any) -> str:
    _check_indent(indent, "json.dumps()")
    # Always encoded in pieces and counted: the same row shared 10**4 times
    # (`[[0] * 10**4] * 10**4`) is a small object whose output is 2 * 10**8 characters, and
    # indents and long separators multiply the output too (red-team finding F6).
    encoder_class = kwargs.pop("cls", None) or json.JSONEncoder
    encoder = encoder_class(indent=indent, separators=separators, **kwargs)
    produced = 0
    pieces: list[str] = []
    for piece in encoder.iterencode(obj):
        produced += len(piece)
        if produced > MAX_ITEMS:
            check_items(produced, "json.dumps()")
        pieces.append(piece)
    return "".join(pieces)


def _checked_dump(obj: Any, fp: Any, **kwargs: Any) -> None:
    fp.write(_checked_dumps(obj, **kwargs))


def json_overrides() -> dict[str, Any]:
    """Checked ``json`` functions."""
    return {"dumps": _checked_dumps, "dump": _checked_dump}


def _checked_pformat(obj: Any, indent: int = 1, width: int = 80, **kwargs: Any) -> str:
    _check_indent(indent, "pprint.pformat()")
    return pprint.pformat(obj, indent=indent, width=width, **kwargs)


def pprint_overrides() -> dict[str, Any]:
    """Checked ``pprint`` functions."""
    return {"pformat": _checked_pformat}


def _checked_indent(text: str, prefix: str, predicate: Any = None) -> str:
    lines = str.count(text, "\n") + 1 if isinstance(text, str) else 1
    check_items(true_length(text) + lines * true_length(prefix), "textwrap.indent()")
    return textwrap.indent(text, prefix, predicate)


def _wrapping(function: Callable[..., Any]) -> Callable[..., Any]:
    def checked(text: str, width: int = 70, **kwargs: Any) -> Any:
        parts = [
            kwargs.get(name, "") for name in ("initial_indent", "subsequent_indent", "placeholder")
        ]
        indents = sum(true_length(p) if isinstance(p, str) else len(str(p)) for p in parts)
        check_items(true_length(text) * (1 + indents), f"textwrap.{function.__name__}()")
        length = true_length(text)
        if length > MAX_WRAP_TEXT:
            # textwrap is pure Python that never ticks: about 2 us a character (F7).
            raise SizeLimitExceeded(
                f"textwrap.{function.__name__}() of {length} characters exceeds the sandbox "
                f"limit of {MAX_WRAP_TEXT}"
            )
        return function(text, width, **kwargs)

    checked.__name__ = function.__name__
    return checked


def checked_element_indent(tree: Any, space: Any = "  ", level: Any = 0) -> None:
    """``ElementTree.indent`` with its ``level * space`` indentation capped."""
    if isinstance(level, int) and isinstance(space, str):
        check_items(true_length(space) * (int.__index__(level) + 1), "ElementTree.indent()")
    ElementTree.indent(tree, space, level)


def textwrap_overrides() -> dict[str, Any]:
    """Checked ``textwrap`` functions."""
    return {
        "indent": _checked_indent,
        "wrap": _wrapping(textwrap.wrap),
        "fill": _wrapping(textwrap.fill),
    }


class CheckedTemplate(string.Template):
    """``string.Template`` whose substitution checks the result's size first."""

    def _check(self, mapping: Any, kwargs: Mapping[str, Any]) -> None:
        values = {**(mapping or {}), **kwargs} if isinstance(mapping, Mapping) else dict(kwargs)
        fields = len(self.pattern.findall(self.template))
        longest = max((len(str(value)) for value in values.values()), default=0)
        check_items(len(self.template) + fields * longest, "Template.substitute()")

    def substitute(self, mapping: Any = None, /, **kwargs: Any) -> str:
        """``Template.substitute`` with the result's size checked."""
        self._check(mapping, kwargs)
        return super().substitute(mapping or {}, **kwargs)

    def safe_substitute(self, mapping: Any = None, /, **kwargs: Any) -> str:
        """``Template.safe_substitute`` with the result's size checked."""
        self._check(mapping, kwargs)
        return super().safe_substitute(mapping or {}, **kwargs)


CheckedTemplate.__module__ = "string"
CheckedTemplate.__qualname__ = CheckedTemplate.__name__ = "Template"


def _checked_normalize(form: Any, text: str) -> str:
    check_items(len(text) * _NFKD_EXPANSION // 4, "unicodedata.normalize()")
    return unicodedata.normalize(form, text)


def unicodedata_overrides() -> dict[str, Any]:
    """Checked ``unicodedata`` functions."""
    return {"normalize": _checked_normalize}


def re_overrides() -> dict[str, Any]:
    """``re`` served through the deadline-bounded ``regex`` engine (see ``_regex``)."""
    return regex_module_names()


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
        "imul": lambda a, b: inplace("*=", a, b),
        "ipow": lambda a, b: inplace("**=", a, b),
        "ilshift": lambda a, b: inplace("<<=", a, b),
        "imod": lambda a, b: inplace("%=", a, b),
    }


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

    served: dict[str, Any] = {
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


def _check_diff(a: Any, b: Any, what: str) -> None:
    work = max(len(a), 1) * max(len(b), 1)
    if work > _MAX_DIFF_WORK:
        raise SizeLimitExceeded(
            f"{what} on inputs of {len(a)} and {len(b)} items exceeds the sandbox limit "
            f"({_MAX_DIFF_WORK} item pairs)"
        )


class _CheckedSequenceMatcher(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """``difflib.SequenceMatcher`` refusing inputs whose comparison would take too long."""

    def set_seq1(self, a: Any) -> None:
        _check_diff(a, getattr(self, "b", None) or (), "SequenceMatcher")
        super().set_seq1(a)

    def set_seq2(self, b: Any) -> None:
        _check_diff(getattr(self, "a", None) or (), b, "SequenceMatcher")
        super().set_seq2(b)


_CheckedSequenceMatcher.__module__ = "difflib"
_CheckedSequenceMatcher.__qualname__ = _CheckedSequenceMatcher.__name__ = "SequenceMatcher"


def _diffing(function: Callable[..., Any]) -> Callable[..., Any]:
    def checked(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
        _check_diff(a, b, f"difflib.{function.__name__}()")
        return function(a, b, *args, **kwargs)

    checked.__name__ = function.__name__
    return checked


def _checked_close_matches(word: Any, possibilities: Any, *args: Any, **kwargs: Any) -> Any:
    possibilities = list(possibilities)
    longest = max((len(p) for p in possibilities), default=0)
    _check_diff(possibilities, range(max(len(word), 1) * max(longest, 1)), "get_close_matches()")
    return difflib.get_close_matches(word, possibilities, *args, **kwargs)


#: The ``difflib`` names exposed (Differ and HtmlDiff are left out: their cost is quadratic in
#: both lines and characters).
DIFFLIB_NAMES = frozenset(
    {
        "SequenceMatcher",
        "unified_diff",
        "context_diff",
        "ndiff",
        "get_close_matches",
        "IS_LINE_JUNK",
        "IS_CHARACTER_JUNK",
    }
)


def difflib_overrides() -> dict[str, Any]:
    """Checked ``difflib`` functions."""
    return {
        "SequenceMatcher": _CheckedSequenceMatcher,
        "unified_diff": _diffing(difflib.unified_diff),
        "context_diff": _diffing(difflib.context_diff),
        "ndiff": _diffing(difflib.ndiff),
        "get_close_matches": _checked_close_matches,
    }


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
    "statistics functions: bits of values over 64 bits": MAX_INT_BITS,
    "random.getrandbits(k)/secrets.randbits(k)": MAX_INT_BITS,
    "round(x, ndigits) digits": MAX_ROUND_DIGITS,
    "pow(base, exp, mod) exponent bits * modulus bits": MAX_MODPOW_WORK,
    "Decimal/Fraction exponent (construction and decimal context)": MAX_EXPONENT,
    "math.factorial/comb/perm(n)": _MAX_FACTORIAL,
    "hashlib.pbkdf2_hmac(iterations)": _MAX_PBKDF2_ITERATIONS,
    "hashlib.pbkdf2_hmac(dklen)": _MAX_DERIVED_KEY,
    "json.dumps/dump/pprint.pformat(indent)": _MAX_INDENT,
    "xml.etree.ElementTree.indent(space * level)": MAX_ITEMS,
    "itertools.tee(n)": _MAX_TEE,
    "itertools.product(len(iterables) * repeat)": _MAX_WIDTH,
    "itertools.combinations/combinations_with_replacement/permutations(r)": _MAX_WIDTH,
    "difflib input items a * b": _MAX_DIFF_WORK,
    "re pattern length": MAX_PATTERN_LENGTH,
    "re longest unrolled sequence": MAX_UNROLLED,
}
