"""Red team R7: library functions doing attribute work, values returned to the host, options
widening a child, and single C calls with huge arguments (the generated program is the attacker).

- **M1 (fixed)**: ``pow(m, -1, n)`` with ``n`` at the bit cap (999 990 bits) inverted ``m`` in one
  C call for 20 to 40 s past a 5 s deadline: the work bound of three-argument ``pow`` counted the
  exponent's bits (1), not the inversion, which costs about (modulus bits)^2. A negative exponent
  now refuses a modulus over 65 536 bits (about 0.2 s for the inverse at the bound).
- **M2 (fixed)**: ``math.gcd(*xs)`` of 40 cap-size operands sharing a 500 000-bit factor ran
  about 0.35 s per operand in one C call: 14 s under a 2 s deadline (each operand within the
  cap, so the operand check passed). The checked ``gcd`` now folds one C call per operand and
  the stop lands between them (5 s wall under load, 1 s of it building the operands).
- **M3 (fixed)**: ``list(map(operator.floordiv, xs, ys))`` of 40 pairs (999 000 by 499 000
  bits, about 0.33 s each) ran 13.6 s in one C loop and *succeeded* under a 2 s deadline;
  ``list(map(divmod, xs, ys))`` ran 14 s before its timeout: both callables were C builtins, so
  the deadline's stop had no bytecode to land on. ``divmod``, ``operator.floordiv`` and
  ``operator.ifloordiv`` are now Python frames around the C call (2.0 s, a timeout, for both).
  ``operator.mod``, ``pow`` and ``itertools.starmap`` already were.

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
  at the cap is the known bounded case (R6, about 1.4 s). ``int``, ``Fraction`` and
  ``as_integer_ratio`` of a 99 999-digit ``Decimal`` (under the exponent cap): about 0.3 s.
- Values returned to the host (in process and on a worker, as the answer and in memory): program
  ``int`` subclasses and ``IntEnum`` members inside tuples, frozensets, sets, dict keys,
  ``Counter``, ``OrderedDict``, ``deque`` (and its ``maxlen``), ``range``, ``Fraction`` parts,
  an ``Outcome.ok(value=..)`` and ``Outcome.error(metadata=..)`` the program built: builtin
  ``int``/``bool`` exactly. A program class, function, ``IntEnum`` class, the ``int`` stand-in,
  a dataclass instance, an exception holding a function, a generator, a ``ChainMap``, a
  ``defaultdict`` with a lambda factory: ``non_serializable_result``, never delivered.
- Options: ``delegate(..)`` with a wider or NaN ``execution_timeout_seconds``,
  ``provider_timeout_seconds=None`` under a finite parent, ``delegation_budget``,
  ``max_generation_attempts``, ``isolation``, the repair budgets, ``toolstore_root``,
  ``dependency_policy``, ``environment_cache_root``, and the same through ``**options``:
  ``delegate_option_refused``. Narrowing values given as a program ``int`` subclass reach the
  child's options as builtin ``int``/``float``. ``handle.map(..)`` is ``reserved_agent_method``;
  a child delegated from a mapped item with the agent's own timeout still ends at the item's
  deadline (0.3 s, not 3 s).
"""

from __future__ import annotations

import builtins
import math
import operator
from pathlib import Path

import pytest

from recurgent._sandbox._builtins import _shared_table
from recurgent._sandbox._stdlib import operator_overrides
from specs.map.support import counting_agent
from specs.sandbox.support import error_of, value_of

_RANDOM_PAIR = (
    "import random\n"
    "random.seed(1)\n"
    "n = random.getrandbits(999_990) | 1\n"
    "m = random.getrandbits(999_000) | 1\n"
)


class TestDivisionInACLoop:
    """M3 (fixed): a C loop over served division reaches the deadline's stop."""

    def test_floordiv_is_a_python_frame_with_the_operators_answers(self) -> None:
        """The served ``operator.floordiv``/``ifloordiv`` are not the C functions (a C loop over
        those ran 13.6 s under a 2 s deadline and answered)."""
        served = operator_overrides()

        assert served["floordiv"] is not operator.floordiv
        assert served["ifloordiv"] is not operator.ifloordiv
        program = (
            "import operator\n"
            "result = [list(map(operator.floordiv, [7, -7], [2, 2])), operator.ifloordiv(9, 4)]"
        )
        assert value_of(program) == [[3, -4], 2]

    def test_divmod_is_a_python_frame_with_the_builtins_answers(self) -> None:
        """The served ``divmod`` is not the C builtin (whose calls from C never stop)."""
        served = _shared_table()["divmod"]

        assert served is not builtins.divmod
        assert value_of("result = [list(map(divmod, [7, -7], [2, 2])), divmod(9, 4)]") == [
            [(3, 1), (-4, 1)],
            (2, 1),
        ]


class TestGcdOfManyOperands:
    """M2 (fixed): ``math.gcd`` is one bounded C call per operand, never one for all."""

    def test_each_c_call_takes_two_operands(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Before the fix the served ``gcd`` passed all operands to one C call, which no
        deadline interrupts; the answers are the builtin's."""
        arities: list[int] = []
        builtin_gcd = math.gcd

        def recording_gcd(*integers: int) -> int:
            arities.append(len(integers))
            return builtin_gcd(*integers)

        monkeypatch.setattr(math, "gcd", recording_gcd)
        program = (
            "import math\n"
            "result = [math.gcd(12, 18, -8), math.gcd(), math.gcd(-6), math.gcd(True, 4, 6)]"
        )

        assert value_of(program) == [2, 0, 6, 1]
        assert arities and max(arities) == 2


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


_ATTRIBUTE_WORK = [
    "operator.attrgetter('from_bytes')(int)(B, 'big')",
    "getattr(int, 'from_' + 'bytes')(B, 'big')",
    "operator.methodcaller('from_bytes', B, 'big')(int)",
    "functools.partial(int.from_bytes)(B, 'big')",
    "list(map(functools.partial(int, base=16), [T]))",
    "sorted([T], key=lambda s: int(s, 16))",
    "collections.defaultdict(type(0)).default_factory(T, 16)",
    "json.loads('[' + D + ']', parse_int=int)",
]


class TestLibraryAttributeWork:
    """Held: a library reading ``from_bytes`` or calling ``int`` for the program is checked."""

    @pytest.mark.parametrize("call", _ATTRIBUTE_WORK)
    def test_past_the_cap_is_refused(self, call: str) -> None:
        """``B`` is 200 000 bytes (1 600 000 bits), ``T`` 300 000 hex digits, ``D`` 400 000
        decimal digits: each is refused by the bit cap's check, whichever library calls."""
        program = (
            "import collections, functools, json, operator\n"
            "B = b'\\xff' * 200000\nT = 'f' * 300000\nD = '9' * 400000\n"
            f"x = {call}\nresult = 1"
        )

        error_type, message = error_of(program)

        assert error_type == "resource_limit"
        assert "the sandbox limit is 1000000 bits" in message


class TestTheHostGetsPlainData:
    """Held: program-made ints reach the host as builtin ints; program code never does."""

    def test_outcomes_the_program_builds_hold_builtin_ints(self, tmp_path: Path) -> None:
        """Keys, frozenset members and tuple items of a program ``Outcome``'s value."""
        program = (
            "import enum\nclass X(int):\n    pass\nclass E(enum.IntEnum):\n    A = 1\n"
            "result = Outcome.ok(value={X(7): (E.A, frozenset({X(2)}))})"
        )
        agent, _ = counting_agent(tmp_path, program)

        value = agent.probe().value

        assert value == {7: (1, frozenset({2}))}
        [(key, (member, members))] = value.items()
        assert [type(key), type(member), *map(type, members)] == [int, int, int]

    @pytest.mark.parametrize(
        ("shape", "where"),
        [
            ("X", "the class X"),
            ("int", "the class int"),
            ("{'e': E}", "result['e'] holds the class E"),
            ("[f]", "a function"),
        ],
    )
    def test_program_code_is_never_delivered(self, tmp_path: Path, shape: str, where: str) -> None:
        program = (
            "import enum\nclass X(int):\n    pass\nclass E(enum.IntEnum):\n    A = 1\n"
            f"def f():\n    return 1\nresult = {shape}"
        )
        agent, _ = counting_agent(tmp_path, program)

        outcome = agent.probe()

        assert outcome.error_type == "non_serializable_result"
        assert where in (outcome.error_message or "")


class TestAProgramCannotWidenAChild:
    """Held: options from generated code only narrow; ``map`` is not the program's."""

    @pytest.mark.parametrize(
        "options",
        [
            "execution_timeout_seconds=float('nan')",
            "**{'execution_timeout_seconds': 600}",
            "isolation='in_process'",
            "max_generation_attempts=100",
        ],
    )
    def test_widening_options_are_refused(self, tmp_path: Path, options: str) -> None:
        agent, _ = counting_agent(tmp_path, f"c = delegate('helper', {options})\nresult = 1")

        outcome = agent.probe()

        assert outcome.error_type == "guardrail_retry_exhausted"
        assert "delegate_option_refused" in (outcome.error_message or "")

    def test_map_through_a_handle_is_reserved(self, tmp_path: Path) -> None:
        program = (
            "c = delegate('helper')\nr = c.map('work', [1, 2], timeout_seconds=600)\nresult = 1"
        )
        agent, _ = counting_agent(tmp_path, program)

        outcome = agent.probe()

        assert outcome.error_type == "guardrail_retry_exhausted"
        assert "reserved_agent_method" in (outcome.error_message or "")
