"""Every cap in the table is pinned: its value, a call at the cap (works), one past it (refused).

Issue 9 R4: every count, size, width, repeat or exponent parameter of a served callable is
capped and listed in ``SIZE_CAPS`` (ADR 0022). Arguments are chosen so the at-cap call stays
cheap; where running at the cap would take seconds (pbkdf2 iterations, sampling ten million
items) only the constant and the past-cap refusal are pinned.
"""

from __future__ import annotations

import pytest

from recurgent._sandbox._stdlib import SIZE_CAPS

from .support import execute

M = 10_000_000
BITS = 1_000_000

EXPECTED_CAPS = {
    "sequence * n (items)": M,
    "str.ljust/rjust/center/zfill(width)": M,
    "str.expandtabs(tabsize) result": M,
    "str.replace(old, new) result": M,
    "str.join(iterable) result": M,
    "str.translate(table) result": M,
    "format()/str.format/f-string width and precision": M,
    "%-formatting width and result": M,
    "range() length": M,
    "bytes(n)/bytearray(n)": M,
    "int.to_bytes(length)": M,
    "re.sub/subn result": M,
    "json.dumps output": M,
    "textwrap.wrap/fill text length": 200_000,
    "textwrap.indent result": M,
    "string.Template.substitute result": M,
    "unicodedata.normalize input * 18 / 4": M,
    "random.randbytes(n)": M,
    "random.choices(k)": M,
    "random.sample(k)": M,
    "secrets.token_bytes/token_hex/token_urlsafe(nbytes)": M,
    "itertools.product items copied": M,
    "int * int, int ** n, int << n (bits)": BITS,
    "Fraction arithmetic (bits of a part)": BITS,
    "math.prod/lcm (bits)": BITS,
    "int(text, base)/int.from_bytes (bits)": BITS,
    "math.isqrt/gcd operands (bits)": BITS,
    "statistics functions: bits of values over 64 bits": BITS,
    "random.getrandbits(k)/secrets.randbits(k)": BITS,
    "round(x, ndigits) digits": 300_000,
    "pow(base, exp, mod) exponent bits * modulus bits": 2**26,
    "pow(base, -exp, mod) modulus bits": 2**16,
    "Decimal/Fraction exponent (construction and decimal context)": 100_000,
    "Decimal int operand (bits)": 332_197,
    "math.factorial/comb/perm(n)": 20_000,
    "hashlib.pbkdf2_hmac(iterations)": 1_000_000,
    "hashlib.pbkdf2_hmac(dklen)": 1024,
    "json.dumps/dump/pprint.pformat(indent)": 100,
    "xml.etree.ElementTree.indent(space * level)": M,
    "itertools.tee(n)": 1000,
    "itertools.product(len(iterables) * repeat)": 10_000,
    "itertools.combinations/combinations_with_replacement/permutations(r)": 10_000,
    "difflib input items a * b": 10_000_000,
    "re pattern length": 10_000,
    "re longest unrolled sequence": 500,
}

# cap -> (program at the cap, its expected result; program one past the cap). ``None`` at the
# cap: too slow to run in a spec, the constant is pinned instead.
BOUNDARIES: dict[str, tuple[str | None, object, str]] = {
    "sequence * n (items)": ("len('x' * 10_000_000)", M, "'x' * 10_000_001"),
    "str.ljust/rjust/center/zfill(width)": (
        "[len('x'.ljust(M)), len('x'.rjust(M)), len('x'.center(M)), len('1'.zfill(M))]",
        [M, M, M, M],
        "'x'.center(M + 1)",
    ),
    "str.expandtabs(tabsize) result": ("len('\\t'.expandtabs(M))", M, "'\\t'.expandtabs(M + 1)"),
    "str.replace(old, new) result": (
        "len('a'.replace('a', 'b' * M))",
        M,
        "'a'.replace('a', 'b' * (M + 1))",
    ),
    "str.join(iterable) result": (
        "len(''.join(['x' * 5_000_000, 'y' * 5_000_000]))",
        M,
        "'-'.join(['x' * 5_000_000, 'y' * 5_000_000])",
    ),
    "str.translate(table) result": (
        "len('a'.translate({97: 'b' * M}))",
        M,
        "'a'.translate({97: 'b' * (M + 1)})",
    ),
    "format()/str.format/f-string width and precision": (
        # str.format counts its template too: 12 characters + 9 999 988.
        "[len(format(1, '>10000000')), len('{:>9999988}'.format(1)), len(f'{1:>10000000}')]",
        [M, 9_999_988, M],
        "format(1, '>10000001')",
    ),
    "%-formatting width and result": ("len('%10000000s' % 'x')", M, "'%10000001s' % 'x'"),
    "range() length": ("len(range(M))", M, "range(M + 1)"),
    "bytes(n)/bytearray(n)": ("[len(bytes(M)), len(bytearray(M))]", [M, M], "bytes(M + 1)"),
    "int.to_bytes(length)": ("len((1).to_bytes(M, 'big'))", M, "(1).to_bytes(M + 1, 'big')"),
    "re.sub/subn result": (
        "len(re.sub('x', 'y' * (M - 1), 'x'))",
        M - 1,
        "re.sub('x', 'y' * M, 'x')",
    ),
    "json.dumps output": (
        "len(json.dumps(['a' * (M - 6)], indent=0))",
        M,
        "json.dumps(['a' * (M - 5)], indent=0)",
    ),
    "textwrap.wrap/fill text length": (
        "len(textwrap.fill('a' * 200_000, width=100_000))",
        200_001,
        "textwrap.fill('a' * 200_001, width=100_000)",
    ),
    "textwrap.indent result": (
        "len(textwrap.indent('x', 'p' * (M - 1)))",
        M,
        "textwrap.indent('x', 'p' * M)",
    ),
    "string.Template.substitute result": (
        "len(string.Template('$a').substitute(a='x' * (M - 2)))",
        M - 2,
        "string.Template('$a').substitute(a='x' * (M - 1))",
    ),
    "unicodedata.normalize input * 18 / 4": (
        "len(unicodedata.normalize('NFC', 'a' * 2_222_222))",
        2_222_222,
        "unicodedata.normalize('NFC', 'a' * 2_222_223)",
    ),
    "random.randbytes(n)": ("len(random.randbytes(M))", M, "random.randbytes(M + 1)"),
    "random.choices(k)": (None, None, "random.choices('ab', k=M + 1)"),
    "random.sample(k)": (None, None, "random.sample(['a'], M + 1, counts=[10 ** 9])"),
    "secrets.token_bytes/token_hex/token_urlsafe(nbytes)": (
        "len(secrets.token_bytes(M))",
        M,
        "secrets.token_hex(M + 1)",
    ),
    "itertools.product items copied": (
        "len(next(itertools.product('x' * M)))",
        1,
        "itertools.product('x' * M, [1])",
    ),
    "int * int, int ** n, int << n (bits)": (
        "[(1 << 999_999).bit_length(), (3 ** 500_000).bit_length()]",
        [BITS, 792_482],
        "1 << 1_000_000",
    ),
    "Fraction arithmetic (bits of a part)": (
        "(Fraction(1, 2 ** 499_999) + Fraction(1, 2 ** 499_998 + 1)).denominator.bit_length()",
        999_998,
        "Fraction(1, 2 ** 499_999) + Fraction(1, 2 ** 499_999 + 1)",
    ),
    "math.prod/lcm (bits)": (
        "math.prod([1 << 999_998]).bit_length()",
        999_999,
        "math.prod([1 << 999_999])",
    ),
    "int(text, base)/int.from_bytes (bits)": (
        "[int('f' * 250_000, 16).bit_length(), int.from_bytes(b'\\xff' * 125_000).bit_length()]",
        [BITS, BITS],
        "int.from_bytes(b'\\x01' + bytes(125_000))",
    ),
    "math.isqrt/gcd operands (bits)": (
        "[math.gcd(1 << 999_999, 6), math.isqrt(1 << 100)]",
        [2, 1 << 50],
        "math.isqrt((1 << 999_999) + (1 << 999_999))",
    ),
    "statistics functions: bits of values over 64 bits": (
        "statistics.mean([1 << 499_999, 1 << 499_999]).bit_length()",
        500_000,
        "statistics.mean([1 << 499_999, 1 << 500_000])",
    ),
    "random.getrandbits(k)/secrets.randbits(k)": (
        "random.getrandbits(BITS).bit_length() <= BITS",
        True,
        "secrets.randbits(BITS + 1)",
    ),
    "round(x, ndigits) digits": ("round(1, -300_000)", 0, "round(1, -300_001)"),
    "pow(base, exp, mod) exponent bits * modulus bits": (
        "pow(3, 2 ** 65_535, 2 ** 1023 + 1) > 0",
        True,
        "pow(3, 2 ** 65_535, 2 ** 1024 + 1)",
    ),
    "pow(base, -exp, mod) modulus bits": (
        "pow(5, -1, 2 ** 65_535 + 1) * 5 % (2 ** 65_535 + 1)",
        1,
        "pow(3, -1, 2 ** 65_536 + 1)",
    ),
    "Decimal/Fraction exponent (construction and decimal context)": (
        "[str(Decimal('1e100000')), Fraction('1e100000').numerator.bit_length()]",
        ["1E+100000", 332_193],
        "Decimal('1e100001')",
    ),
    # 10 ** 100_001 has 332 197 bits: the largest int libmpdec converts (ADR 0129).
    "Decimal int operand (bits)": (
        "[Decimal(1) < 10 ** 100_001, str(Decimal(-1).compare(-(2 ** 332_196)))]",
        [True, "1"],
        "Decimal(1) < 2 ** 332_197",
    ),
    "math.factorial/comb/perm(n)": (
        "[math.factorial(20_000) > 0, math.comb(20_000, 2), math.perm(20_000, 1)]",
        [True, 199_990_000, 20_000],
        "math.factorial(20_001)",
    ),
    "hashlib.pbkdf2_hmac(iterations)": (
        None,
        None,
        "hashlib.pbkdf2_hmac('sha256', b'p', b's', 1_000_001)",
    ),
    "hashlib.pbkdf2_hmac(dklen)": (
        "len(hashlib.pbkdf2_hmac('sha256', b'p', b's', 1, 1024))",
        1024,
        "hashlib.pbkdf2_hmac('sha256', b'p', b's', 1, 1025)",
    ),
    "json.dumps/dump/pprint.pformat(indent)": (
        "len(json.dumps([1], indent=100))",
        105,
        "json.dumps([1], indent=101)",
    ),
    "xml.etree.ElementTree.indent(space * level)": (
        "ET.indent(ET.fromstring('<a><b/></a>'), ' ' * 5_000_000, 1)",
        None,
        "ET.indent(ET.fromstring('<a><b/></a>'), ' ' * 5_000_000, 2)",
    ),
    "itertools.tee(n)": ("len(itertools.tee([], 1000))", 1000, "itertools.tee([], 1001)"),
    "itertools.product(len(iterables) * repeat)": (
        "len(next(itertools.product([1], repeat=10_000)))",
        10_000,
        "itertools.product([1], repeat=10_001)",
    ),
    "itertools.combinations/combinations_with_replacement/permutations(r)": (
        "[len(next(itertools.combinations(range(10_000), 10_000))),\n"
        " len(next(itertools.permutations(range(10_000), 10_000))),\n"
        " len(next(itertools.combinations_with_replacement([1], 10_000)))]",
        [10_000, 10_000, 10_000],
        "itertools.permutations(range(3), 10_001)",
    ),
    "difflib input items a * b": (
        "difflib.SequenceMatcher(None, 'a' * 1000, 'b' * 10_000).ratio()",
        0.0,
        "difflib.SequenceMatcher(None, 'a' * 1000, 'b' * 10_001).ratio()",
    ),
    "re pattern length": (
        "len(re.compile('|'.join(['abcdefghi'] * 1000) + 'x').pattern)",
        10_000,
        "re.compile('|'.join(['abcdefghi'] * 1000) + 'xy')",
    ),
    "re longest unrolled sequence": (
        "re.compile('x{500}').fullmatch('x' * 500) is not None",
        True,
        "re.compile('x{501}')",
    ),
}

PRELUDE = (
    "import difflib, hashlib, itertools, json, math, random, re, secrets, statistics, string\n"
    "import textwrap\n"
    "import unicodedata\nimport xml.etree.ElementTree as ET\nfrom decimal import Decimal\nfrom fractions import Fraction\n"
    f"M = {M}\nBITS = {BITS}\n"
)


def test_the_cap_table_is_pinned() -> None:
    """Every cap in ``SIZE_CAPS`` has the value this spec expects; none is added or dropped."""
    assert SIZE_CAPS == EXPECTED_CAPS


def test_every_cap_has_a_boundary_case() -> None:
    """Each cap of the table is exercised at and past its boundary below."""
    assert set(BOUNDARIES) == set(SIZE_CAPS)


AT_CAP = [(name, case[0], case[1]) for name, case in BOUNDARIES.items() if case[0] is not None]


@pytest.mark.parametrize(("name", "source", "expected"), AT_CAP, ids=[c[0] for c in AT_CAP])
def test_a_call_at_the_cap_works(name: str, source: str, expected: object) -> None:
    """A call whose size is exactly at the cap succeeds with the plain Python result."""
    result = execute(PRELUDE + f"result = {source}")
    assert result.error is None, f"{name}: {result.error}"
    assert result.value == expected


@pytest.mark.parametrize(
    ("name", "source"),
    [(name, case[2]) for name, case in BOUNDARIES.items()],
    ids=list(BOUNDARIES),
)
def test_a_call_one_past_the_cap_is_a_resource_limit(name: str, source: str) -> None:
    """One past the cap, the call is refused before it runs: a typed ``resource_limit``."""
    result = execute(PRELUDE + f"result = {source}")
    assert result.error is not None, f"{name}: expected a refusal, got {result.value!r}"
    assert result.error.error_type == "resource_limit", f"{name}: {result.error}"


@pytest.mark.parametrize(
    "source",
    [
        "json.dumps([0] * 150, separators=(' ' * 10 ** 7, ':'))",
        "json.dumps([0] * 150, indent=100, separators=(',' * 10 ** 6, ':'))",
        "itertools.product([1], repeat=2 * 10 ** 8)",
        "itertools.product(*[range(5_000_000)] * 3)",
        "itertools.combinations_with_replacement([1], 10 ** 9)",
        "round(1, -10 ** 9)",
        "random.sample(['a'], 10 ** 9, counts=[10 ** 10])",
        "ET.indent(ET.fromstring('<a><b/></a>'), 'ab', 10 ** 9)",
        "statistics.variance([3 ** 500_000, 3 ** 500_000 + 1] * 500)",
        "statistics.mean(iter([3 ** 500_000] * 100_000))",
    ],
)
def test_the_issue_examples_are_refused_before_they_run(source: str) -> None:
    """The size parameters issue 9 found unchecked are refused up front: ``resource_limit``."""
    result = execute(PRELUDE + f"result = {source}")
    assert result.error is not None
    assert result.error.error_type == "resource_limit", str(result.error)


@pytest.mark.parametrize(
    "source",
    ["round(1, 1 << 400_000)", "round(1, -(1 << 400_000))", "round(Decimal('1.5'), 1 << 400_000)"],
)
def test_a_huge_ndigits_is_a_resource_limit_whose_message_fits(source: str) -> None:
    """``round`` to more digits than Python can print is refused as ``resource_limit``, its
    message naming the size in bits (printing the number itself hit CPython's digit limit
    and the refusal became an ``execution`` error)."""
    result = execute(PRELUDE + "from decimal import Decimal\n" + f"result = {source}")
    assert result.error is not None
    assert (result.error.error_type, "400001 bits" in str(result.error)) == (
        "resource_limit",
        True,
    )
