"""Red team R7: library functions doing attribute work, values returned to the host, options
widening a child, and single C calls with huge arguments (the generated program is the attacker).

- **M1 (fixed)**: ``pow(m, -1, n)`` with ``n`` at the bit cap (999 990 bits) inverted ``m`` in one
  C call for 20 to 40 s past a 5 s deadline: the work bound of three-argument ``pow`` counted the
  exponent's bits (1), not the inversion, which costs about (modulus bits)^2. A negative exponent
  now refuses a modulus over 65 536 bits (about 0.2 s for the inverse at the bound).

Payloads that held (pinned below where cheap):

- Attribute work done by a library on the checked ``int``: ``operator.attrgetter('from_bytes')``,
  ``getattr(int, 'from_' + 'bytes')``, ``operator.methodcaller('from_bytes', ..)``,
  ``functools.partial(int.from_bytes)``, ``map(functools.partial(int, base=16), ..)``,
  ``map(int, ..)``, ``sorted(key=lambda s: int(s, 16))``, ``dataclasses.field(default_factory=int)``
  and ``collections.defaultdict(type(0))`` factories, ``json.loads(parse_int=int)`` and plain
  ``json.loads`` of 400 000 digits, ``'{0.from_bytes}'.format(1)`` (a name only): every one
  checked or refused. ``string.Formatter`` and the functional ``Enum`` API are not served.
  ``Fraction('1' * 400000)``, ``Fraction('1/' + '1' * 400000)``, ``Fraction('1e400000')``,
  ``int(Decimal('9' * 400000))``, ``int``/``round``/``math.floor``/``math.trunc``/
  ``as_integer_ratio``/``Fraction`` of ``Decimal('1e400000')``: refused (digit limit or exponent cap).
- Single C calls at the cap (1 << 999 990): ``str``, ``repr``, f-string, ``'%d'``,
  ``format(n, ',')``, ``json.dumps`` and ``Fraction`` text refuse past 4 300 digits (CPython's
  own limit); ``hex``/``format(n, 'x')``, ``hash``, ``bit_count`` are linear; ``n ** 2``,
  ``n * n``, ``pow(n, n - 2, n)`` are refused; ``math.isqrt`` (~0.25 s), ``divmod`` by a
  half-size int (~0.3 s), ``math.gcd``/``Fraction(n, m)`` of two random cap-size ints (~1.2 s)
  are bounded; ``to_bytes`` past the item cap and ``Decimal`` precision past 1 000 (modular
  ``pow`` of Decimals) are refused. ``bytes.fromhex`` is not served. ``Decimal(n)`` of an int
  at the cap is the known bounded case (R6, about 1.4 s).
"""

from __future__ import annotations

import pytest

from specs.sandbox.support import error_of, value_of

_RANDOM_PAIR = (
    "import random\n"
    "random.seed(1)\n"
    "n = random.getrandbits(999_990) | 1\n"
    "m = random.getrandbits(999_000) | 1\n"
)


class TestAModularInverseOfACapSizeModulus:
    """M1 (fixed): a negative exponent's inversion is bounded by the modulus's bits."""

    @pytest.mark.parametrize(
        "call",
        [
            "pow(m, -1, n)",
            "pow(m, -2, n)",
            "list(map(pow, [m], [-1], [n]))",
            "functools.partial(pow, m, -1)(n)",
        ],
    )
    def test_inverse_modulo_a_cap_size_int_is_refused(self, call: str) -> None:
        """Before the fix each ran 20 to 40 s in one C call, past the 5 s deadline."""
        program = "import functools\n" + _RANDOM_PAIR + f"result = {call}"

        assert error_of(program) == (
            "resource_limit",
            "Resource limit in tester.run: pow() with a negative exponent and a 999990-bit "
            "modulus exceeds the sandbox limit of 65536 bits",
        )

    def test_inverse_at_the_bound_still_answers(self) -> None:
        """A 65 536-bit modulus is served: 5 times its inverse is 1 modulo it."""
        program = "n = 2 ** 65_535 + 1\nresult = [pow(5, -1, n) * 5 % n, pow(5, -1, 7)]"

        assert value_of(program) == [1, 3]
