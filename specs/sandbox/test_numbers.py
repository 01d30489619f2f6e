"""Decimal and Fraction in generated code: no raw class, every result capped (issue 9 R3, ADR 0022)."""

from __future__ import annotations

import decimal
import fractions

import pytest

from recurgent._sandbox._numbers import MAX_EXPONENT, SandboxFraction, attempt_decimal_context
from specs.sandbox.support import error_of, value_of

EXPONENT_LIMIT = f"exceeds the sandbox limit of {MAX_EXPONENT}"


def test_the_exponent_cap_is_pinned() -> None:
    """The construction cap and the attempt's decimal exponent range are both 100 000."""
    assert MAX_EXPONENT == 100_000
    with attempt_decimal_context() as context:
        assert (context.Emax, context.Emin, context.prec) == (100_000, -100_000, 28)


@pytest.mark.parametrize(
    "source",
    [
        "import decimal\nD = type(decimal.Decimal(1))\nresult = D('1e99999999')",
        "from decimal import Decimal\nD = type(Decimal(1) + 1)\nresult = D('1e100001')",
        "from decimal import Decimal\nD = type(Decimal(1))\nresult = D((0, (1,), 100001))",
        "import fractions\nF = type(fractions.Fraction(1))\nresult = F('1e99999999')",
        "import fractions\nF = type(fractions.Fraction(1, 3) + 1)\nresult = F('1e100001')",
    ],
)
def test_type_of_a_number_constructs_only_through_the_check(source: str) -> None:
    """``type(x)`` of a Decimal or Fraction is the checked class: a huge exponent is refused."""
    kind, message = error_of(source)
    assert kind == "resource_limit"
    assert EXPONENT_LIMIT in message


def test_type_of_a_number_is_the_imported_class() -> None:
    """``type(Decimal(1)) is Decimal`` and the Fraction equivalent hold, as in plain Python."""
    assert value_of(
        "from decimal import Decimal\nfrom fractions import Fraction\n"
        "result = [type(Decimal(1)) is Decimal, type(Decimal(1) * 3) == Decimal,\n"
        "          type(Fraction(1, 2)) is Fraction, type(Fraction(1, 2) + 1) is Fraction,\n"
        "          isinstance(Fraction(1, 2) * 2, Fraction), type(Decimal(1)).__name__]"
    ) == [True, True, True, True, True, "Decimal"]


@pytest.mark.parametrize(
    ("expression", "signal"),
    [
        ("Decimal(1).scaleb(100001)", "Overflow"),
        ("Decimal(1).scaleb(999999)", "InvalidOperation"),
        ("Decimal(10) ** 100001", "Overflow"),
        ("Decimal('1e99999') * Decimal('1e10')", "Overflow"),
        ("Decimal('9e100000').fma(10, 0)", "Overflow"),
        ("Decimal('1e50000').quantize(Decimal('1e-60000'))", "InvalidOperation"),
        # 10 ** 100001 is the largest operand converted (332 197 bits, ADR 0129); a larger
        # one is refused before libmpdec converts it (specs/sandbox/test_red_team_decimal.py).
        ("Decimal(1) * 10 ** 100001", "Overflow"),
        ("Decimal('1e99999').exp()", "Overflow"),
        ("Decimal(20).scaleb(100000)", "Overflow"),
    ],
)
def test_decimal_results_past_the_exponent_cap_fail(expression: str, signal: str) -> None:
    """Arithmetic and methods cannot build a Decimal past the cap: decimal signals the overflow."""
    kind, message = error_of(f"from decimal import Decimal\nresult = str({expression})")
    assert kind == "execution"
    assert signal in message


def test_decimal_results_at_the_exponent_cap_work() -> None:
    """Results with exponents up to the cap are computed as plain Python computes them."""
    assert value_of(
        "from decimal import Decimal\n"
        "result = [str(Decimal(1).scaleb(100000)), str(Decimal(10) ** 100000),\n"
        "          str(Decimal('1e99999') * 10), str(Decimal(1).scaleb(-100000)),\n"
        "          str(Decimal('1.2345').quantize(Decimal('0.01'))), str(Decimal(2).sqrt())]"
    ) == [
        "1E+100000",
        "1.000000000000000000000000000E+100000",
        "1.0E+100000",
        "1E-100000",
        "1.23",
        "1.414213562373095048801688724",
    ]


def test_the_attempt_decimal_context_is_not_the_hosts() -> None:
    """A widened host context does not reach generated code, and the host's is unchanged after."""
    with decimal.localcontext() as host:
        host.prec = 60
        host.Emax = 999_999_999
        assert (
            value_of("from decimal import Decimal\nresult = str(Decimal(1) / Decimal(3))")
            == "0." + "3" * 28
        )
        assert decimal.getcontext().prec == 60
        assert decimal.getcontext().Emax == 999_999_999


def test_fraction_arithmetic_stops_growing_at_the_bit_cap() -> None:
    """Adding fractions with coprime denominators in a loop stops at the bit cap, typed."""
    kind, message = error_of(
        "from fractions import Fraction\n"
        "f = Fraction(1, 3)\n"
        "while True:\n"
        "    f = f + Fraction(1, f.denominator + 1)\n"
    )
    assert kind == "resource_limit"
    assert "Fraction + would create a number of about" in message
    assert "the sandbox limit is 1000000 bits" in message


@pytest.mark.parametrize(
    "expression",
    [
        "Fraction(3 ** 400000, 7) - Fraction(1, 5 ** 300000)",
        "Fraction(3 ** 400000, 7) * Fraction(5 ** 300000, 11)",
        "Fraction(1, 3 ** 400000) / Fraction(1, 5 ** 300000)",
        "Fraction(3, 2) ** 2000000",
        "Fraction(1, 3) ** Fraction(2000000)",
        "3 ** Fraction(2000000)",
        "round(Fraction(1, 3), 10 ** 9)",
        "divmod(Fraction(3 ** 400000, 7), Fraction(1, 5 ** 300000))",
    ],
)
def test_fraction_operations_past_the_bit_cap_are_refused(expression: str) -> None:
    """Every Fraction operator checks its result's size first: a typed resource_limit."""
    kind, message = error_of(f"from fractions import Fraction\nresult = str({expression})")
    assert kind == "resource_limit"
    assert "exceeds the sandbox limit" in message or "the sandbox limit is 1000000 bits" in message


def test_fraction_results_stay_checked_and_exact() -> None:
    """Fraction results are checked Fractions with the values plain Python computes."""
    assert value_of(
        "from decimal import Decimal\nfrom fractions import Fraction as F\n"
        "values = [F(1, 3) + F(1, 6), F(1, 3) * 2, divmod(F(7, 2), F(1, 3)), -F(1, 2),\n"
        "          round(F(7, 3), 2), F(3, 4) ** 2, abs(F(-1, 2)), F(1, 3) - 1, 1 - F(1, 3),\n"
        "          F(1, 2) / 3, 3 // F(2, 3), F(7, 2) % 1, F(3, 10).limit_denominator(3),\n"
        "          F.from_float(0.5), F.from_decimal(Decimal('0.25')),\n"
        "          F(1) ** 10 ** 9, 2 ** F(1, 2)]\n"
        "result = [str(v) for v in values] + [type(v) is F for v in values[3:4]]"
    ) == [
        "1/2",
        "2/3",
        "(10, Fraction(1, 6))",
        "-1/2",
        "233/100",
        "9/16",
        "1/2",
        "-2/3",
        "2/3",
        "1/6",
        "4",
        "1/2",
        "1/3",
        "1/2",
        "1/4",
        "1",
        "1.4142135623730951",
        True,
    ]


def test_copies_of_a_checked_fraction_stay_checked() -> None:
    """``copy`` of a checked Fraction is a checked Fraction: its arithmetic is still capped."""
    kind, message = error_of(
        "import copy\nfrom fractions import Fraction\n"
        "f = copy.deepcopy(copy.copy(Fraction(1, 3 ** 400000)))\n"
        "result = str(f + Fraction(1, 5 ** 300000))"
    )
    assert kind == "resource_limit"
    assert "Fraction + would create a number of about" in message


def test_sandbox_fraction_equals_the_plain_fraction() -> None:
    """A checked Fraction compares, hashes and prints like the plain Fraction of its value."""
    checked = SandboxFraction(1, 3)
    plain = fractions.Fraction(1, 3)
    assert (checked == plain, hash(checked) == hash(plain), repr(checked)) == (
        True,
        True,
        "Fraction(1, 3)",
    )


@pytest.mark.parametrize(
    "source",
    [
        "import statistics\nresult = statistics.Decimal('1e999999999')",
        "import statistics\nresult = statistics.Fraction('1e999999999')",
        "import fractions\nresult = fractions.Decimal('1e999999999')",
        "import json, decimal\nresult = json.loads('1e999999999', parse_float=decimal.Decimal)",
    ],
)
def test_re_exported_number_classes_are_the_checked_ones(source: str) -> None:
    """Modules that re-export Decimal or Fraction serve the checked classes, not the raw ones."""
    kind, message = error_of(source)
    assert kind == "resource_limit"
    assert EXPONENT_LIMIT in message
