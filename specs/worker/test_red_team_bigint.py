"""Red team, issue 21, under ``isolation="process"``: the worker's sandbox refuses the same ints.

A worker runs the same sandbox policy as an in-process call (ADR 0094), so the checked ``int``,
``from_bytes`` and the subclass base of ADR 0123 apply there too: the payloads of
``specs/sandbox/test_red_team_bigint.py`` end as the same typed ``resource_limit``, and a
number at the cap, or a ``defaultdict(int)`` written to memory, crosses back unchanged.
"""

from __future__ import annotations

import collections

import pytest

from recurgent._worker._executor import ProcessExecutor
from specs.sandbox.support import Host
from specs.worker.support import run

pytestmark = pytest.mark.slow

_LIMIT = "the sandbox limit is 1000000 bits"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "return int('f' * 9_000_000, 16)",
            "int() of text would create a number of about 35999997 bits",
        ),
        (
            "return int.from_bytes(b'\\xff' * 9_000_000, 'big')",
            "int.from_bytes() would create a number of about 72000000 bits",
        ),
        (
            "class X(int):\n    pass\nreturn X.from_bytes(b'\\x01' + bytes(125_000), 'big')",
            "X.from_bytes() would create a number of about 1000001 bits",
        ),
        (
            "return type(0)('0x' + 'f' * 250_001, 0)",
            "int() of text would create a number of about 1000001 bits",
        ),
    ],
    ids=["hex text", "from_bytes", "subclass from_bytes", "type() of an int"],
)
def test_an_int_past_the_cap_is_refused_in_a_worker(
    plain_executor: ProcessExecutor, source: str, message: str
) -> None:
    """The worker's sandbox refuses each payload with the in-process refusal."""
    result = run(plain_executor, source)

    assert result.error is not None, f"expected a refusal, got {result.value!r}"
    assert result.error.error_type == "resource_limit"
    assert f"{message}; {_LIMIT}" in str(result.error)


def test_a_number_at_the_cap_and_a_default_factory_cross_back(
    plain_executor: ProcessExecutor,
) -> None:
    """A million-bit number comes back whole; memory's defaultdict(int) holds the real int."""
    host = Host()

    result = run(
        plain_executor,
        """
        import collections
        tally = collections.defaultdict(int)
        tally['a'] += 1
        context['tally'] = tally
        return int('f' * 250_000, 16).bit_length()
        """,
        host=host,
    )

    assert result.error is None, result.error
    assert result.value == 1_000_000
    assert type(host.memory["tally"]) is collections.defaultdict
    assert (host.memory["tally"].default_factory, dict(host.memory["tally"])) == (int, {"a": 1})
