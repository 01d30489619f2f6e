"""Red team R9: an attempt's forwarded operations as one ``Forwarding`` object, the plain
answer's Outcome built already stamped with its origin, and checked Decimal (ADR 0129), each
attacked by the generated program.

Payloads tried, and what happened (BROKEN = failed before the fix of this round):

1. BROKEN, fixed: ``list(map(math.floor, xs))`` and ``list(map(math.trunc, xs))`` of 40
   Decimals at the exponent cap (``Decimal('9.99..e99999')``, 99 990 digits) ran 11.9 s under
   a 2 s deadline: ``math.floor``/``ceil``/``trunc`` were served as the C builtins, each call
   turns the Decimal into a 332 000-bit int in C (about 0.3 s), and a C loop calling the C
   function has no bytecode for the deadline's stop to land on (the shape of R7's M3). The
   served three are now Python frames around the C call (2.0 s, a timeout). ``map`` over
   ``int``, ``round``, ``fractions.Fraction``, ``Decimal.as_integer_ratio`` and
   ``operator.methodcaller('as_integer_ratio')`` already stopped at 2.1 s; ``str``, ``float``,
   ``hash``, ``to_integral``, ``as_tuple``, ``adjusted``, ``to_eng_string`` and the context's
   ``to_integral_value``/``to_sci_string`` of the same Decimals are cheap (40 in 0.1 s).
2. BROKEN, fixed (parity, not reach): under ``isolation="process"``,
   ``delegate('helper', name='x')`` failed with ``RuntimeError: delegate failed:
   _Forwarder.opener.<locals>.open_handle() got multiple values for argument 'name'`` where the
   in-process sandbox (since ``Forwarding``'s positional-only ``name``) answers: the worker's
   own opener still took ``name`` by keyword. It is positional-only too; ``self='x'`` already
   worked there.
3. Held (``Forwarding``): ``delegate``/``tool``/``remember`` seen by the program are the
   sandbox's sealed closures: ``repr`` is ``<function delegate>``; ``__self__``,
   ``__closure__``, ``__globals__``, ``__reduce_ex__`` through ``operator.attrgetter``/
   ``methodcaller``: private-name refusal; ``getattr(delegate, '__self__', 'none')`` and
   ``'__wrapped__'``: the default; ``vars``: refused; ``dir``, ``inspect``, ``pickle``, ``gc``:
   not served; ``copy.copy``: refused; ``functools.partial(delegate, ..).func``: not served;
   ``e.__traceback__``/``__context__``/``__cause__``: refused at compile time. A handle's
   ``_handle_ops``, ``__dict__``, ``__self__``, ``_runtime``: ``None`` (no such attributes).
   A refused option's error echoes the option's value only (no host object); an option whose
   value is ``delegate`` or another function, and a role that is a function:
   ``non_serializable_result`` before the host runs. No message names ``Forwarding``,
   ``_runtime``, ``AgentRuntime``, ``HostBridge`` or a bound method.
4. Held (option names): ``self``, ``name``, ``options``, ``_runtime``, ``_invocation``,
   ``invocation`` (also through ``**{..}``) are unknown options, ignored as before, and the
   child answers; ``role`` (``delegate``) and ``name`` (``tool``) collide with the sandbox
   closure's own parameter: a ``TypeError`` in the program, the host never called.
   ``remember(self=1, entries=2, name=3)`` writes three keys; ``remember({..})`` positionally
   is a ``TypeError`` in the program. ``role_profile``, ``delegation_budget``, ``network='open'``,
   ``execution_timeout_seconds=1e9``: ``delegate_option_refused``; ``max_output_chars=10**9``
   is an unknown option (ignored; the child's limits are the parent's). Option values that are
   Outcomes (``purpose``, ``intent_signature``: ``UsageError``; ``forwarded_call_budget``,
   a ``network`` entry: ``delegate_option_refused``) and ``execution_timeout_seconds=True``:
   refused, the message echoing only the program's value. ``delegation_contract`` carrying
   ``role_profile``: dropped from the child's contract. ``delegate('planner')``,
   ``delegate(' planner ')``, ``tool('planner')`` from ``planner``: ``self_materialization``.
   SandboxDecimals as delegate options, handle call arguments, a handle's setter and
   ``remember``, ``remember()``, memory writes and an Outcome's value and metadata reach the
   host as plain ``decimal.Decimal``.
5. Held (stamped Outcome): ``Outcome.ok(5, call_id='forged', code=..)``,
   ``Outcome(status='ok', ..., call_id='forged', tool_role='other')``,
   ``Outcome.error(.., call_id='forged')``, ``{'status': 'ok', 'value': 5, 'call_id': ..}``
   (plain data, the whole mapping is the value), ``{'status': 'error', .., 'call_id': ..}``, a
   child's Outcome passed on, and a plain ``5``: the caller's ``outcome.call_id`` and the
   history record's ``call_id`` are the call's own and ``outcome.code`` is the program that
   ran, never the forged text.
6. Held (Decimal, single C calls): ints of 999 000 bits through ``Decimal(n)``, the Decimal
   class reached by ``type(d).mro()[0]``, ``Context()``/``getcontext().copy()``
   ``create_decimal`` (also ``num=``), ``create_decimal_from_float``, ``from_float``,
   ``power(2, 3, n)``, ``to_sci_string``, ``is_zero``, ``number_class``, ``compare_total``,
   ``canonical``, ``functools.reduce(operator.add, ..)``, ``methodcaller('quantize', n)``,
   ``sorted(key=Decimal)``, ``max``/``min``/``sum``/``sorted`` of mixed lists, ``in``,
   ``list.count``, ``operator.eq``, reflected ``!=``/``<``, an ``int`` subclass, a
   ``Fraction(n, 3)`` compared, ``bisect``, ``heapq``, ``statistics.median``/``mean`` of mixed
   lists, ``divmod``/``pow(d, 3, n)``, ``round(d, n)``: ``resource_limit``.
   ``statistics.mean``/``variance`` of ``1e99999`` and ``1e-99999``: ``resource_limit``.
   ``ExtendedContext``/``BasicContext``/``DefaultContext``: not served. ``Context(prec=10**9)``,
   ``localcontext(prec=10**9)``, ``setcontext(Context(prec=10**9))``, ``ctx.Emax = 10**9``:
   ``resource_limit``. ``scaleb(10**400000)``: the bit cap; ``scaleb(10**10)``,
   ``Decimal((0, (1,), 10**18))``: ``InvalidOperation``; ``format(d, '.999999999f')``: width
   cap; ``Decimal('1' * 400000)`` and a 400 000-digit tuple: exponent cap. ``str``/``format
   'f'``/``hash`` of ``1e99999`` and ``1e-99999``, ``int``/``round``/``math.floor``/
   ``as_integer_ratio`` of ``1e99999`` (332 190 bits): bounded single calls (about 0.3 s).
   ``Fraction(Decimal('1e99999'))``, ``Fraction.from_decimal``: the 4 300-digit text limit.
   ``{Decimal(1): 1}.get(n)``, ``{d} == {n}``, ``collections.Counter``: hashes differ, no
   conversion. ``math.fsum``, ``math.isclose``, ``statistics.fmean``: float conversion.
7. Held (values to the host): a ``Decimal`` answer and Decimals inside a list and a dict reach
   the host as plain ``decimal.Decimal``; ``getcontext()`` as the answer:
   ``non_serializable_result``.
"""

from __future__ import annotations

import decimal
import math
from typing import Any

import pytest

from recurgent import Agent
from recurgent._history import HISTORY_KEY
from recurgent._sandbox._stdlib import math_overrides
from recurgent.testing import ScriptedProvider
from specs.sandbox.support import error_of, execute, value_of


class TestDecimalRoundingInACLoop:
    """Payload 1 (fixed): a C loop over served ``math.floor``/``ceil``/``trunc`` reaches the
    deadline's stop."""

    def test_the_served_functions_are_python_frames_with_the_builtins_answers(self) -> None:
        """Before the fix they were the C builtins: ``list(map(math.floor, xs))`` of 40
        Decimals at the exponent cap ran 11.9 s under a 2 s deadline and answered."""
        served = math_overrides()

        assert served["floor"] is not math.floor
        assert served["ceil"] is not math.ceil
        assert served["trunc"] is not math.trunc
        program = (
            "import decimal, fractions, math\nD = decimal.Decimal\n"
            "result = [math.floor(D('-2.5')), math.ceil(D('-2.5')), math.trunc(D('-2.5')),"
            " math.floor(-2.5), math.ceil(fractions.Fraction(7, 2)), math.trunc(3),"
            " list(map(math.floor, [1.5, D('2.5')])),"
            " sorted([D('2.7'), D('1.2')], key=math.ceil)]"
        )
        assert value_of(program) == [
            -3,
            -2,
            -2,
            -3,
            4,
            3,
            [1, 2],
            [decimal.Decimal("1.2"), decimal.Decimal("2.7")],
        ]

    def test_a_non_number_is_the_builtins_type_error(self) -> None:
        """The wrapper adds nothing to the message."""
        assert error_of("import math\nresult = math.floor('a')") == (
            "execution",
            "Execution error in tester.run: TypeError: must be real number, not str",
        )


_HUGE = (
    "import decimal, functools, operator, statistics\nn = (1 << 999000) - 1\nD = decimal.Decimal\n"
)


class TestHugeIntsReachingDecimal:
    """Payload 6 (held): an int past 332 197 bits meets the check whoever converts it."""

    @pytest.mark.parametrize(
        "call",
        [
            "type(D(1)).mro()[0](n)",
            "decimal.Context().create_decimal(num=n)",
            "decimal.getcontext().copy().power(2, 3, n)",
            "decimal.getcontext().to_sci_string(n)",
            "decimal.getcontext().create_decimal_from_float(n)",
            "functools.reduce(operator.add, [D(1), n])",
            "operator.methodcaller('quantize', n)(D(1))",
            "sorted([n, 1], key=D)",
            "n in [D(1)]",
            "[D(1)].count(n)",
            "n < D(1)",
            "statistics.median([D(1), n, D(2)])",
            "pow(D(2), 3, n)",
        ],
    )
    def test_refused(self, call: str) -> None:
        """Each would convert ``n`` in one C call of about 1.5 s."""
        assert error_of(_HUGE + f"result = str({call})[:3]") == (
            "resource_limit",
            "Resource limit in tester.run: an int of 999000 bits as a Decimal operand exceeds "
            "the sandbox limit of 332197 bits",
        )

    @pytest.mark.parametrize("name", ["ExtendedContext", "BasicContext", "DefaultContext"])
    def test_module_contexts_are_not_served(self, name: str) -> None:
        """Plain contexts whose methods would convert unchecked."""
        assert error_of(f"import decimal\nresult = str(decimal.{name}.add(1, 2))") == (
            "execution",
            f"Execution error in tester.run: AttributeError: decimal.{name} is not available "
            "in the sandbox",
        )

    def test_the_host_gets_plain_decimals_and_never_a_context(self) -> None:
        """Payload 7: checked Decimals leave as ``decimal.Decimal``; a context is refused."""
        answer = value_of(
            "import decimal\nresult = [decimal.Decimal('1.5'), {'a': decimal.Decimal(2)}]"
        )
        refused = execute("import decimal\nresult = decimal.getcontext()")

        assert answer == [decimal.Decimal("1.5"), {"a": decimal.Decimal(2)}]
        assert type(answer[0]) is decimal.Decimal
        assert type(answer[1]["a"]) is decimal.Decimal
        assert refused.error is not None
        assert refused.error.error_type == "non_serializable_result"


def _planner(program: str) -> Agent:
    provider = ScriptedProvider(
        {("planner", "make"): program, ("helper", "work"): "result = 'done'"}
    )
    return Agent("planner", provider=provider, guardrail_recovery_budget=0, log=False)


class TestForwardedOperations:
    """Payloads 3 and 4 (held): the program reaches no host object through the forwarders."""

    @pytest.mark.parametrize(
        ("program", "value"),
        [
            (
                "result = repr(delegate) + repr(tool) + repr(remember)",
                "<function delegate><function tool><function remember>",
            ),
            (
                "result = [getattr(delegate, '__self__', 'none'), getattr(tool, '__wrapped__', 0)]",
                ["none", 0],
            ),
            (
                "h = delegate('helper')\nresult = [getattr(h, n, None) for n in "
                "('_handle_ops', '__dict__', '__self__', '_runtime')]",
                [None, None, None, None],
            ),
            ("result = delegate('helper', **{'self': 1, 'options': 2}).work()", "done"),
            ("result = delegate('helper', **{'_runtime': 1, '_invocation': 2}).work()", "done"),
        ],
    )
    def test_held(self, program: str, value: Any) -> None:
        """Unknown option names (the bound methods' own included) are ignored options."""
        outcome = _planner(program).make()

        assert (outcome.status, outcome.value) == ("ok", value)

    def test_attrgetter_of_self_is_refused(self) -> None:
        """``operator.attrgetter('__self__')`` is the private-name refusal, not the object."""
        outcome = _planner(
            "import operator\nresult = operator.attrgetter('__self__')(delegate)"
        ).make()

        assert outcome.error_type == "execution"
        assert (outcome.error_message or "").endswith(
            "AttributeError: '__self__' is not accessible: names starting with '_' are private "
            "in the sandbox; single-underscore names are readable on your own classes, their "
            "instances and your functions"
        )


class TestForgedOrigin:
    """Payload 5 (held): the caller sees the call's own id and program, never forged ones."""

    @pytest.mark.parametrize(
        "program",
        [
            "result = Outcome.ok(5, call_id='forged', code='forged code')",
            "result = Outcome(status='ok', value=5, call_id='forged', code='forged code')",
            "result = Outcome.error('boom', 'msg', call_id='forged', code='forged code')",
            "result = {'status': 'ok', 'value': 5, 'call_id': 'forged', 'code': 'forged code'}",
            "result = delegate('helper').work()",
            "result = 5",
        ],
    )
    def test_call_id_and_code_are_the_calls(self, program: str) -> None:
        planner = _planner(program)
        outcome = planner.make()
        record = planner._agent.memory[HISTORY_KEY][-1]

        assert outcome.call_id == record["call_id"]
        assert outcome.call_id != "forged"
        assert outcome.code == program


@pytest.mark.slow
class TestOptionNamesOnAWorker:
    """Payload 2 (fixed): an option named ``name`` is an option on a worker too."""

    @pytest.mark.parametrize("option", ["name", "self"])
    def test_the_child_answers(self, option: str) -> None:
        """Before the fix ``name`` was a ``TypeError`` in the worker's own opener."""
        provider = ScriptedProvider(
            {
                ("planner", "make"): f"result = delegate('helper', {option}='x').work()",
                ("helper", "work"): "result = 'done'",
            }
        )
        planner = Agent(
            "planner",
            provider=provider,
            guardrail_recovery_budget=0,
            log=False,
            isolation="process",
        )

        outcome = planner.make()

        assert (outcome.status, outcome.value) == ("ok", "done")
