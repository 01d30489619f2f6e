"""Red team: an int near the bit cap as a Decimal operand (the R6 "open, bounded" finding, ADR 0129).

libmpdec converts an int to a Decimal in one C call costing about (bits)^2: for a 999 000-bit int
(within the bit cap) about 1.5 s, which no deadline stop interrupts. Every Decimal operation with
an int operand converts it that way. Each payload below spent that second and a half before the
fix; each is now refused (``resource_limit``) before libmpdec sees the int: every Decimal a
program holds is a ``SandboxDecimal`` whose operators and methods check int operands against
``MAX_DECIMAL_OPERAND_BITS`` (332 197, the bits of ``10 ** 100_001``: any larger int is past the
exponent cap, so no capped Decimal equals it) and answer checked Decimals again; the attempt's
context checks its methods' operands the same way; plain Decimals from the host are rebuilt as
checked ones on the way in and leave as plain ones.

Payloads, all with ``n = 1 << 999_000`` (refused unless said otherwise):

- Construction: ``Decimal(n)``, ``Decimal(value=n)``, ``type(Decimal(1))(n)``,
  ``fractions.Decimal(n)``, ``Decimal.from_float(n)`` (it takes ints),
  ``getcontext().create_decimal(n)``, ``create_decimal_from_float(n)``, ``map(Decimal, [n])``.
- Operators, both sides: ``+ - * / // % ** divmod pow(d, e, n)``, ``+=``, ``== != < <= > >=``,
  ``n == d``, ``Fraction(n, 3) < d`` and ``d == Fraction(n, 3)`` (comparisons convert a
  Rational's parts), ``d in {k}``/``k in {d: 1}`` with ``k`` a cap-size int hashing like ``d``,
  ``NaN``/``Infinity`` receivers, a program ``int`` subclass whose ``bit_length`` lies.
- Methods taking an operand: ``compare``, ``compare_signal``, ``compare_total(_mag)``,
  ``copy_sign``, ``fma``, ``logical_and/or/xor``, ``max(_mag)``, ``min(_mag)``, ``next_toward``,
  ``quantize``, ``remainder_near``, ``rotate``, ``same_quantum``, ``scaleb``, ``shift``, also with
  keyword operands (``compare(other=n)``, ``fma(2, third=n)``, ``quantize(exp=n)``); every
  context operation (``ctx.add(1, n)``, ``power`` and its ``modulo=``, ``divmod``, ``is_zero``,
  ``to_sci_string``...) on ``getcontext()``, ``Context()``, ``localcontext()``, ``.copy()``,
  ``type(getcontext())()`` and unbound ``decimal.Context.add(ctx, 1, n)``.
- Results of every kind as the receiver: arithmetic, ``abs``/``-``/``round(d, 2)``, ``sqrt``,
  ``exp``, ``imag``/``real``/``conjugate()``, ``copy.copy``, ``statistics.mean``/``median``,
  ``json.loads(parse_float=Decimal)``, ``sum``, ``max``, ``functools.reduce(operator.add)``,
  ``heapq.nsmallest``, ``bisect``, ``sorted``, ``operator.lt``/``methodcaller('compare', n)``,
  ``functools.partial(d.compare, n)``, ``map(operator.add, ..)``,
  ``json.JSONDecoder(parse_float=Decimal)``.
- Plain Decimals from the host: memory (top level, in a list, a tuple, a dict; through
  ``get``, ``values()``, ``items()``, ``dict(context)``, ``setdefault``, ``copy()``, ``pop``),
  arguments, keyword arguments, another agent's memory through a handle, a child's answer.

Held before and pinned here: ``Decimal.__new__``/``Decimal(1).__add__`` (refused at compile
time), ``class D(Decimal)`` (refused base), ``math.fsum([d, n])`` (float overflow, linear).
Held, not pinned: ``getattr(d, '__add__')``/``'__self__'`` of a method (refused at run time),
``getattr(d, '__class__')`` and ``operator.attrgetter('__class__')`` (the stand-in),
``Decimal.mro()`` (the stand-in and ``object``), ``statistics.Decimal`` (denied),
``Decimal.imag`` read on the class (a slotted descriptor whose class is all it leads to),
``class C(decimal.Context)``, ``class F(Fraction)``, ``class R(numbers.Rational)`` (refused
bases), ``numbers.Rational.register`` (refused), a ``__class__`` property (refused at compile
time), ``math.isclose(d, n)`` (float overflow). Bounded, as before: a Decimal of 9 000 000
fractional digits times itself is one 0.35 s C call (libmpdec multiplies the whole coefficients
before rounding). Found in passing, not changed: ``round(d, 1 << 400_000)`` is refused with a
``ValueError`` from the refusal's own message (it prints the huge ``ndigits``), not a
``resource_limit``.
Not closed: a plain Decimal the host passes *inside* a container argument (``args[0][0]``) is
the caller's own object, handed over as it is, so its operators still convert natively (about
1.4 s per call, bounded by the deadline's next tick; in a worker by the kill).
"""

from __future__ import annotations

import decimal
import fractions
from typing import Any

import pytest

from recurgent._sandbox import _decimal_operands
from recurgent._sandbox._decimal_operands import MAX_DECIMAL_OPERAND_BITS, SandboxDecimal
from recurgent._sandbox._idioms import SandboxContext
from recurgent._sandbox._numbers import MAX_EXPONENT
from recurgent.outcome import Outcome
from specs.sandbox.support import FakeAgent, Host, error_of, execute, value_of

_PRELUDE = (
    "import bisect, copy, decimal, functools, heapq, json, operator, statistics\n"
    "from decimal import Decimal, getcontext, localcontext\n"
    "from fractions import Fraction\nn = 1 << 999_000\n"
)
_REFUSAL = "an int of 999001 bits as a Decimal operand exceeds the sandbox limit of 332197 bits"


def _refused(source: str, host: Host | None = None) -> tuple[str, str]:
    result = execute(_PRELUDE + source, host=host)
    assert result.error is not None, f"expected a refusal, got {result.value!r}"
    return result.error.error_type, str(result.error)


_OPERATORS = [
    "Decimal(1) + n",
    "n + Decimal(1)",
    "Decimal(1) - n",
    "n - Decimal(1)",
    "Decimal(1) * n",
    "n * Decimal(1)",
    "Decimal(1) / n",
    "n / Decimal(1)",
    "Decimal(1) // n",
    "n // Decimal(1)",
    "Decimal(1) % n",
    "n % Decimal(1)",
    "Decimal(1) ** n",
    "n ** Decimal(1)",
    "divmod(Decimal(1), n)",
    "divmod(n, Decimal(1))",
    "pow(Decimal(2), 3, n)",
    "Decimal(1) == n",
    "n == Decimal(1)",
    "Decimal(1) != n",
    "Decimal(1) < n",
    "Decimal(1) <= n",
    "Decimal(1) > n",
    "n >= Decimal(1)",
    "Decimal(1) == Fraction(n, 3)",
    "Fraction(n, 3) < Decimal(1)",
    "Decimal(1) in {1 + (2 ** 61 - 1) * (1 << 998_000)}",
    "(1 + (2 ** 61 - 1) * (1 << 998_000)) in {Decimal(1): 1}",
    "Decimal('NaN') == n",
    "Decimal('Infinity') > n",
]
_REFUSAL_998 = "an int of 998061 bits as a Decimal operand"

_METHODS_WITH_OPERANDS = [
    "compare(n)",
    "compare_signal(n)",
    "compare_total(n)",
    "compare_total_mag(n)",
    "copy_sign(n)",
    "fma(2, n)",
    "fma(n, 2)",
    "logical_and(n)",
    "logical_or(n)",
    "logical_xor(n)",
    "max(n)",
    "max_mag(n)",
    "min(n)",
    "min_mag(n)",
    "next_toward(n)",
    "quantize(n)",
    "remainder_near(n)",
    "rotate(n)",
    "same_quantum(n)",
    "scaleb(n)",
    "shift(n)",
    "compare(other=n)",
    "fma(2, third=n)",
    "quantize(exp=n)",
]

_CONSTRUCTION_AND_CONTEXTS = [
    "Decimal(n)",
    "type(Decimal(1))(n)",
    "Decimal.from_float(n)",
    "decimal.Decimal(-n)",
    "getcontext().create_decimal(n)",
    "getcontext().create_decimal_from_float(n)",
    "getcontext().add(1, n)",
    "getcontext().power(2, n)",
    "getcontext().power(2, 3, n)",
    "getcontext().divmod(n, 3)",
    "getcontext().is_zero(n)",
    "getcontext().to_sci_string(n)",
    "getcontext().compare(1, n)",
    "getcontext().fma(1, 2, n)",
    "getcontext().copy().multiply(n, 1)",
    "decimal.Context(prec=5).subtract(1, n)",
    "Decimal(value=n)",
    "getcontext().power(2, 3, modulo=n)",
    "type(getcontext())().add(1, n)",
    "decimal.Context.add(getcontext(), 1, n)",
    "list(map(Decimal, [n]))",
    "list(map(getcontext().create_decimal, [n]))",
]


class TestIntOperandsAreRefusedFirst:
    """Each conversion of a cap-size int is refused before libmpdec runs it."""

    @pytest.mark.parametrize("expression", _OPERATORS)
    def test_operators_and_comparisons(self, expression: str) -> None:
        """Every operator, reflected or not, and every comparison (Fractions too) refuses."""
        kind, message = _refused(f"result = {expression}")
        assert kind == "resource_limit"
        assert (_REFUSAL if "998_000" not in expression else _REFUSAL_998) in message

    @pytest.mark.parametrize("call", _METHODS_WITH_OPERANDS)
    def test_methods_taking_an_operand(self, call: str) -> None:
        """Every Decimal method converting an int operand refuses a cap-size one."""
        assert _refused(f"result = Decimal(1).{call}") == (
            "resource_limit",
            f"Resource limit in tester.run: {_REFUSAL}",
        )

    @pytest.mark.parametrize("expression", _CONSTRUCTION_AND_CONTEXTS)
    def test_construction_and_context_operations(self, expression: str) -> None:
        """Construction (from_float takes ints) and the context's operations refuse."""
        assert _refused(f"result = {expression}") == (
            "resource_limit",
            f"Resource limit in tester.run: {_REFUSAL}",
        )

    def test_augmented_assignment_and_a_local_context(self) -> None:
        """``d += n`` and a ``localcontext()``'s operations refuse like the rest."""
        assert _refused("d = Decimal(1)\nd += n\nresult = d")[0] == "resource_limit"
        source = "with localcontext() as c:\n    result = c.multiply(n, 1)"
        assert _refused(source)[0] == "resource_limit"

    def test_construction_never_reaches_the_conversion(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The refusal comes before libmpdec's constructor: it is never called with the int.

        (Before the fix ``Decimal(n)`` converted first and refused the exponent after.)
        """
        seen: list[Any] = []
        real = _decimal_operands._new_decimal

        def recording(cls: Any, value: Any = "0", context: Any = None) -> Any:
            seen.append(value)
            return real(cls, value, context)

        monkeypatch.setattr(_decimal_operands, "_new_decimal", recording)
        assert _refused("result = Decimal(n)")[0] == "resource_limit"
        assert [value for value in seen if isinstance(value, int)] == []

    @pytest.mark.parametrize(
        "receiver",
        [
            "Decimal(1) + 0",
            "abs(Decimal(-1))",
            "-Decimal(1)",
            "round(Decimal('1.25'), 1)",
            "Decimal(2).sqrt()",
            "Decimal(1).exp()",
            "Decimal(1).imag",
            "Decimal(1).real",
            "Decimal(1).conjugate()",
            "divmod(Decimal(7), 2)[0]",
            "getcontext().add(1, 2)",
            "getcontext().divmod(7, 2)[1]",
            "Decimal(1).to_integral(context=getcontext())",
            "copy.copy(Decimal(1))",
            "statistics.mean([Decimal(1), Decimal(2)])",
            "statistics.median([Decimal(1), Decimal(2)])",
            "json.loads('1.5', parse_float=Decimal)",
            "sum([Decimal(1), Decimal(2)])",
            "max([Decimal(1), Decimal(2)])",
            "Decimal((0, (1,), 0))",
        ],
    )
    def test_every_result_is_checked_again(self, receiver: str) -> None:
        """A Decimal any operation, method or library function answers checks its operands."""
        assert _refused(f"result = ({receiver}) < n") == (
            "resource_limit",
            f"Resource limit in tester.run: {_REFUSAL}",
        )

    @pytest.mark.parametrize(
        "expression",
        [
            "sorted([Decimal(1), n])",
            "heapq.nsmallest(1, [Decimal(1), n])",
            "bisect.bisect([Decimal(1)], n)",
            "functools.reduce(operator.add, [Decimal(1), n])",
            "operator.lt(Decimal(1), n)",
            "operator.methodcaller('compare', n)(Decimal(1))",
            "max(Decimal(1), n)",
            "n in [Decimal(1)]",
            "functools.partial(Decimal(1).compare, n)()",
            "list(map(operator.add, [Decimal(1)], [n]))",
        ],
    )
    def test_library_code_comparing_for_the_program(self, expression: str) -> None:
        """Builtins and library functions comparing or adding for the program are refused."""
        assert _refused(f"result = {expression}")[0] == "resource_limit"


class TestPlainDecimalsFromTheHost:
    """Decimals the host holds reach the program as checked ones, and leave as plain ones."""

    def _host(self) -> Host:
        host = Host(
            memory={
                "d": decimal.Decimal(1),
                "xs": [decimal.Decimal(2)],
                "t": (decimal.Decimal(3),),
                "m": {"k": decimal.Decimal(4)},
            },
            args=(decimal.Decimal(5),),
            kwargs={"k": decimal.Decimal(7)},
        )
        host.children["peer"] = FakeAgent(
            "peer",
            memory={"v": decimal.Decimal(8)},
            reply=lambda method, args, kwargs: Outcome.ok(decimal.Decimal(9)),
        )
        return host

    @pytest.mark.parametrize(
        "read",
        [
            "context['d']",
            "memory.get('d')",
            "list(context.values())[0]",
            "[v for k, v in context.items()][0]",
            "dict(context)['d']",
            "context['xs'][0]",
            "context['t'][0]",
            "context['m']['k']",
            "args[0]",
            "kwargs['k']",
            "delegate('peer').v",
            "delegate('peer').run().value",
            "context.setdefault('d', 0)",
            "context.copy()['d']",
            "context.pop('d')",
        ],
    )
    def test_a_host_decimal_checks_its_operands(self, read: str) -> None:
        """Memory (at any depth), arguments and another agent's memory hold checked Decimals."""
        host = self._host()
        assert _refused(f"result = {read} + n", host=host) == (
            "resource_limit",
            f"Resource limit in tester.run: {_REFUSAL}",
        )
        assert host.memory["d"] == 1 and type(host.memory["d"]) is decimal.Decimal

    def test_values_leave_as_plain_decimals_and_memory_keeps_its_objects(self) -> None:
        """An answer, a new memory value and an unchanged one are plain Decimals after the call."""
        host = self._host()
        original = host.memory["d"]
        result = execute(
            _PRELUDE
            + "context['new'] = Decimal('1.5') + 1\n"
            + "context['same'] = context['d']\n"
            + "result = [context['d'] * 2, context['xs'][0] + Decimal('0.5')]",
            host=host,
        )
        assert result.error is None, result.error
        assert result.value == [decimal.Decimal(2), decimal.Decimal("2.5")]
        assert [type(item) for item in result.value] == [decimal.Decimal, decimal.Decimal]
        assert host.memory["d"] is original
        assert (host.memory["new"], type(host.memory["new"])) == (
            decimal.Decimal("2.5"),
            decimal.Decimal,
        )
        assert type(host.memory["same"]) is decimal.Decimal
        assert type(host.memory["xs"][0]) is decimal.Decimal


# Decimal expressions with small ints whose answers must match plain CPython's exactly.
_ORDINARY = [
    "Decimal('1.1') + 2",
    "2 + Decimal('1.1')",
    "Decimal(7) - 10",
    "10 - Decimal(7)",
    "Decimal('2.5') * 4",
    "4 * Decimal('2.5')",
    "Decimal(1) / 3",
    "1 / Decimal(3)",
    "Decimal(7) // 2",
    "7 // Decimal(2)",
    "Decimal(-7) % 3",
    "-7 % Decimal(3)",
    "divmod(Decimal(7), 3)",
    "divmod(7, Decimal(3))",
    "Decimal(2) ** 10",
    "2 ** Decimal(10)",
    "pow(Decimal(3), 4, 5)",
    "Decimal(1) == 1",
    "1 == Decimal(1)",
    "Decimal('1.5') != 1",
    "Decimal(1) < 2",
    "2 > Decimal(1)",
    "Decimal(1) <= Fraction(3, 2)",
    "Fraction(1, 3) < Decimal('0.34')",
    "Decimal('0.5') == Fraction(1, 2)",
    "Decimal('0.5') == 0.5",
    "Decimal(1) == 'x'",
    "hash(Decimal(5)) == hash(5)",
    "{Decimal(1): 'a'}[1]",
    "-Decimal(3)",
    "+Decimal('1.23456789012345678901234567890')",
    "abs(Decimal(-2))",
    "round(Decimal('2.675'), 2)",
    "round(Decimal('2.5'))",
    "Decimal(2).sqrt()",
    "Decimal(1).exp()",
    "Decimal(10).ln()",
    "Decimal(1000).log10()",
    "Decimal('1.2345').quantize(Decimal('0.01'))",
    "Decimal('1.2345').quantize(1)",
    "Decimal(1).compare(2)",
    "Decimal(3).max(5)",
    "Decimal(3).min(5)",
    "Decimal(2).fma(3, 4)",
    "Decimal(1).scaleb(3)",
    "Decimal(12).shift(2)",
    "Decimal(12).rotate(1)",
    "Decimal(1).copy_sign(-1)",
    "Decimal(1).next_toward(2)",
    "Decimal(5).remainder_near(3)",
    "Decimal(1).same_quantum(1)",
    "Decimal(10).logical_and(11)",
    "Decimal('1.50').normalize()",
    "Decimal('2.5').to_integral()",
    "Decimal('0.1').imag",
    "Decimal('0.1').real",
    "Decimal(1).as_tuple()",
    "Decimal('0.75').as_integer_ratio()",
    "sum([Decimal('0.1')] * 3)",
    "max(Decimal(1), 2)",
    "sorted([3, Decimal(1), 2])",
    "Decimal.from_float(0.1)",
    "Decimal.from_float(3)",
    "Decimal(10 ** 50)",
    "Decimal(1) < 10 ** 100_001",
    "int(Decimal('12.7'))",
    "float(Decimal('0.5'))",
    "str(Decimal('1e5'))",
    "format(Decimal('1234.5'), ',.2f')",
    "getcontext().add(1, 2)",
    "getcontext().power(2, 10)",
    "getcontext().divmod(7, 2)",
    "getcontext().create_decimal(12345)",
    "getcontext().create_decimal_from_float(0.25)",
    "getcontext().is_zero(0)",
    "getcontext().to_sci_string(123)",
    "getcontext().multiply(Decimal('1.5'), 2)",
]


def _plain_answers() -> list[tuple[str, str]]:
    context = decimal.Context(
        prec=28,
        Emin=-MAX_EXPONENT,
        Emax=MAX_EXPONENT,
        traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow],
    )
    names = {
        "Decimal": decimal.Decimal,
        "Fraction": fractions.Fraction,
        "getcontext": decimal.getcontext,
    }
    with decimal.localcontext(context):
        values = [eval(expression, names) for expression in _ORDINARY]  # this module's own text
    return [(repr(value), type(value).__name__) for value in values]


class TestOrdinaryUseIsUnchanged:
    """Decimal work with small ints answers exactly what plain CPython answers."""

    def test_answers_and_type_names_match_plain_python(self) -> None:
        """Each expression's repr and type name equal plain CPython's under the same context."""
        listing = ",\n".join(_ORDINARY)
        answers = value_of(
            _PRELUDE
            + f"values = [\n{listing},\n]\n"
            + "result = [(repr(v), type(v).__name__) for v in values]"
        )
        assert [tuple(pair) for pair in answers] == _plain_answers()

    def test_decimal_results_are_the_stand_in_type(self) -> None:
        """``type()`` of a result is ``Decimal`` as the program imports it; ``isinstance`` holds."""
        assert value_of(
            _PRELUDE
            + "values = [Decimal(1) + 1, 1 - Decimal(2), getcontext().add(1, 2), Decimal(2).sqrt()]\n"
            + "result = [type(v) is Decimal and isinstance(v, Decimal) for v in values]"
        ) == [True, True, True, True]

    def test_the_bound_is_ten_to_the_cap_plus_one(self) -> None:
        """The largest int converted is as long as ``10 ** (MAX_EXPONENT + 1)``; one bit more is refused."""
        assert MAX_DECIMAL_OPERAND_BITS == (10 ** (MAX_EXPONENT + 1)).bit_length() == 332_197
        assert value_of(_PRELUDE + "result = str(Decimal(-1).compare(-(2 ** 332_196)))") == "1"
        assert error_of(_PRELUDE + "result = Decimal(-1) < -(2 ** 332_197)") == (
            "resource_limit",
            "Resource limit in tester.run: an int of 332198 bits as a Decimal operand exceeds "
            "the sandbox limit of 332197 bits",
        )


# What the checked kinds leave to the plain class: answers that are no plain Decimal (ints,
# strings, bools, tuples, the number itself) and the object protocol.
_DECIMAL_UNCHANGED = {
    "__bool__", "__ceil__", "__complex__", "__copy__", "__deepcopy__", "__float__",
    "__floor__", "__format__", "__getattribute__", "__int__", "__reduce__", "__repr__",
    "__sizeof__", "__str__", "__trunc__", "adjusted", "as_integer_ratio", "as_tuple",
    "conjugate", "is_canonical", "is_finite", "is_infinite", "is_nan", "is_normal", "is_qnan",
    "is_signed", "is_snan", "is_subnormal", "is_zero", "number_class", "real", "to_eng_string",
}  # fmt: skip
# copy() is overridden already (it answers a capped context, ADR 0048).
_CONTEXT_UNCHANGED = {"clear_flags", "clear_traps", "Etiny", "Etop"}


class TestEveryOperationIsCovered:
    """A Decimal or context operation added by a future Python fails here until it is checked."""

    def test_every_decimal_method_is_checked_or_answers_no_decimal(self) -> None:
        """The plain class's attributes the checked one leaves alone are exactly the known ones."""
        unchanged = {name for name in vars(decimal.Decimal) if name not in vars(SandboxDecimal)}
        assert unchanged == _DECIMAL_UNCHANGED

    def test_every_context_operation_is_checked(self) -> None:
        """Every public method of ``decimal.Context`` is checked on the sandbox's context."""
        methods = {
            name
            for name, attribute in vars(decimal.Context).items()
            if not name.startswith("_") and callable(attribute)
        }
        unchanged = {name for name in methods if vars(SandboxContext).get(name) is None}
        assert unchanged == _CONTEXT_UNCHANGED


class TestRoutesThatHeld:
    """Routes to the plain class or its C methods that were already closed."""

    @pytest.mark.parametrize(
        "source",
        ["result = Decimal.__new__(Decimal, n)", "result = Decimal(1).__add__(n)"],
    )
    def test_dunder_routes_are_refused_at_compile_time(self, source: str) -> None:
        """``__new__`` and ``__add__`` of Decimal are private names: the program does not compile."""
        with pytest.raises(Exception, match="invalid attribute name because it starts with"):
            execute(_PRELUDE + source)

    def test_a_program_subclass_of_decimal_is_refused(self) -> None:
        """``class D(Decimal)`` is refused before any instance exists."""
        kind, message = _refused("class D(Decimal):\n    pass\nresult = D(1) + n")
        assert kind == "execution"
        assert "class D may not derive from Decimal" in message

    def test_fsum_converts_to_float(self) -> None:
        """``math.fsum`` converts ints to float (linear): an overflow, no Decimal conversion."""
        kind, message = _refused("import math\nresult = math.fsum([Decimal(1), n])")
        assert (kind, "OverflowError: int too large to convert to float" in message) == (
            "execution",
            True,
        )
