"""Red team, ADR 0129, under ``isolation="process"``: the worker's Decimals check int operands too.

A worker runs the same sandbox (ADR 0094): memory arrives by pickle as plain Decimals and is
read as checked ones, a cap-size int operand is refused before libmpdec converts it, and the
Decimals a program answers or stores come back to the host as plain ``decimal.Decimal``.
"""

from __future__ import annotations

import decimal

import pytest

from recurgent._worker._executor import ProcessExecutor
from specs.sandbox.support import Host
from specs.worker.support import run

pytestmark = pytest.mark.slow

_REFUSAL = "an int of 999001 bits as a Decimal operand exceeds the sandbox limit of 332197 bits"


@pytest.mark.parametrize(
    "expression",
    [
        "Decimal(n)",
        "Decimal(1) == n",
        "Decimal(1) + n",
        "getcontext().create_decimal(n)",
        "getcontext().add(1, n)",
        "context['price'] < n",
        "args[0] * n",
    ],
)
def test_a_cap_size_operand_is_refused_in_a_worker(
    plain_executor: ProcessExecutor, expression: str
) -> None:
    """Each payload ends as the in-process refusal, memory's and an argument's Decimal included."""
    host = Host(memory={"price": decimal.Decimal("9.99")}, args=(decimal.Decimal("2"),))
    result = run(
        plain_executor,
        f"""
        from decimal import Decimal, getcontext
        n = 1 << 999_000
        return {expression}
        """,
        host=host,
    )

    assert result.error is not None, f"expected a refusal, got {result.value!r}"
    assert result.error.error_type == "resource_limit"
    assert _REFUSAL in str(result.error)


def test_decimals_cross_back_as_plain_decimals(plain_executor: ProcessExecutor) -> None:
    """An answer and a stored value are plain Decimals with the exact value; memory is kept."""
    host = Host(memory={"price": decimal.Decimal("9.99")})

    result = run(
        plain_executor,
        """
        from decimal import Decimal
        context['total'] = context['price'] * 3
        return [context['price'] + 1, Decimal('0.1') + Decimal('0.2')]
        """,
        host=host,
    )

    assert result.error is None, result.error
    assert result.value == [decimal.Decimal("10.99"), decimal.Decimal("0.3")]
    assert [type(item) for item in result.value] == [decimal.Decimal, decimal.Decimal]
    assert (host.memory["total"], type(host.memory["total"])) == (
        decimal.Decimal("29.97"),
        decimal.Decimal,
    )
    assert (host.memory["price"], type(host.memory["price"])) == (
        decimal.Decimal("9.99"),
        decimal.Decimal,
    )
