"""Red team R24: library functions that do attribute work, objects that come back to the host,
options that widen a child, and single C calls with huge arguments.

Tried against R23's changes (native star-argument calls, ``zip`` as a runtime function,
``print`` counting its line, ``SealedCallable``'s renamed binding errors, ``named()``, method
and generator names), by a hostile program:

1. Attribute work done by library code: ``operator.attrgetter('__self__')(print)``,
   ``operator.methodcaller('__reduce_ex__', 2)``, ``functools.reduce(getattr,
   ['__globals__'], print)``, ``map(getattr, [print], ['__self__'])``, ``'{0.__self__}'.format``,
   ``copy.copy``/``deepcopy`` of ``getattr``, ``print`` and a wide zip, ``json.dumps(default=)``.
   Held: private names are refused in every path; names read are the program's names
   (``print``, ``getattr``, a generator's ``g``).
2. ``named()`` and the rewritten binding ``TypeError``: UserString's checked methods called
   wrongly, then ``str``'s, then UserString's again, in separate sandboxes. Held: each binder
   makes a fresh closure, so renaming in place shares nothing; messages name the method.
3. Objects that come back to the host: a narrow and a wide ``zip``, a generator, ``print``,
   ``getattr`` as the result, in ``memory``, in ``remember()`` and in ``delegate(*['x'],
   **opts)``. Held: the boundary refuses each as an iterator or a function. The wide zip's
   ``TickingIterator`` cannot be copied or created by the program. (The process worker was not
   attacked: from a worktree it imports the installed package.)
4. ``zip(strict=...)`` through ``**``: held, answers as Python's.
5. Single C calls with huge arguments. BROKEN, fixed (two):

   - ``print('a', 'b', sep=[[1] * 1000] * 100000)``: the sandbox's ``print`` converted ``sep``
     and ``end`` with ``str()``, so a shared list's text (300 MB; 3 GB for a million rows)
     was built in one C call before the line was counted (5 s). Python's ``print`` refuses a
     separator or end that is not text; the sandbox's now does too.
   - ``list(zip(*[range(10**7)] * 16))``: sixteen iterables stayed native, so ``list`` built
     ten million 16-tuples (160 million references, about 2 GB) in one C call: 11 s against a
     5 s deadline, twice the 1 GiB memory cap. A zip of more than four iterables now ticks.

   Held: ``' '.join(map(''.join, zip(*xs)))``, ``dict(zip(*xs))``, ``sum(zip(x, x), ())``
   (stops at the deadline), ``sorted(*[x], key=str)``, ``max(*x, key=str)``,
   ``str(*[x], **{})``, ``print(**{'sep': ...})`` within the cap.
6. Star-unpacking in calls and displays (not today's change; met on the way). BROKEN, fixed:
   ``[*r, *r, *r, *r, *r, *r, *r, *r, *r, *r]`` with ``r = range(10**7)`` built a hundred
   million items in one C call (4 s, returned ``100000000``, the memory cap never read);
   ``max(*r, ...)`` the same as arguments (13 s against a 5 s deadline). ``*x`` in a call or
   display now unpacks ``_star_(x)``: a list or tuple of at most 1 000 items as it is, an exact
   sized builtin while the attempt has unpacked fewer than ten million items so, anything else
   (and past the budget) through a ticking iterator. Assignment targets are untouched.
"""

from __future__ import annotations

import pytest

from recurgent._sandbox import SandboxLimits, compile_program
from recurgent.errors import InvalidCodeError
from specs.sandbox.support import FakeClock, error_of, execute, value_of

_PRIVATE = (
    "is not accessible: names starting with '_' are private in the sandbox; single-underscore "
    "names are readable on your own classes, their instances and your functions"
)


def _execution(message: str) -> tuple[str, str]:
    return ("execution", f"Execution error in tester.run: {message}")


def _not_serializable(message: str) -> tuple[str, str]:
    return ("non_serializable_result", message)


# ----------------------------------------------------------------------- 1. attribute work


class TestLibraryAttributeWork:
    """Library functions that read attributes for the program meet the attribute policy."""

    @pytest.mark.parametrize(
        ("source", "name"),
        [
            ("import operator\nresult = operator.attrgetter('__self__')(print)", "__self__"),
            (
                "import operator\nresult = operator.methodcaller('__reduce_ex__', 2)(print)",
                "__reduce_ex__",
            ),
            (
                "import functools\nresult = functools.reduce(getattr, ['__globals__'], print)",
                "__globals__",
            ),
            ("result = list(map(getattr, [print], ['__self__']))", "__self__"),
            ("result = '{0.__self__}'.format(print)", "__self__"),
        ],
    )
    def test_private_names_are_refused(self, source: str, name: str) -> None:
        """``attrgetter``, ``methodcaller``, ``reduce(getattr)``, ``map(getattr)`` and a
        format field read ``print``'s private names through the policy."""
        assert error_of(source) == _execution(f"AttributeError: '{name}' {_PRIVATE}")

    def test_names_read_are_the_programs(self) -> None:
        """``print``, ``getattr`` and a generator read as the program wrote them."""
        source = (
            "import operator\n"
            "def g():\n"
            "    yield 1\n"
            "x = g()\n"
            "result = [\n"
            "    operator.attrgetter('__name__')(getattr),\n"
            "    '{0.__qualname__}|{1.__name__}'.format(print, getattr),\n"
            "    (x.__name__, x.__qualname__, x.send.__name__),\n"
            "]\n"
        )
        assert value_of(source) == ["getattr", "print|getattr", ("g", "g", "send")]

    @pytest.mark.parametrize(
        ("source", "kind"),
        [
            ("import copy\nresult = copy.copy(getattr)", "SealedCallable"),
            ("import copy\nresult = copy.deepcopy([print])", "SealedCallable"),
            ("import copy\nresult = list(copy.copy(zip(*[[1, 2]] * 20)))", "TickingIterator"),
            (
                "import copy\nresult = list(copy.deepcopy(zip(*[[1, 2]] * 20)))",
                "TickingIterator",
            ),
        ],
    )
    def test_runtime_objects_are_not_copied(self, source: str, kind: str) -> None:
        """``copy`` refuses the runtime's callables and a wide zip's ticking iterator."""
        assert error_of(source) == _execution(
            f"TypeError: copy cannot copy {kind} objects in the sandbox; it copies plain data "
            "(containers, numbers, strings) and objects your code defined"
        )

    def test_a_ticking_iterator_is_not_made_by_the_program(self) -> None:
        """``type(zip(*wide))(iter(...), print)`` cannot build an iterator with a fake tick."""
        source = "T = type(zip(*[[1, 2]] * 20))\nresult = list(T(iter([1]), print))"
        assert error_of(source) == _execution(
            "TypeError: TickingIterator objects cannot be created by generated code"
        )

    def test_json_default_reads_the_programs_names(self) -> None:
        """``json.dumps(default=...)`` over ``getattr`` answers its program name only."""
        source = "import json\nresult = json.dumps([getattr], default=lambda o: o.__qualname__)"
        assert value_of(source) == '["getattr"]'


# ------------------------------------------------------------- 2. named() and the rewrite

_WRONG_CALLS = (
    "out = []\n"
    "for n in {names!r}:\n"
    "    try:\n"
    "        getattr({target}, n)(1, 2, 3, x=1)\n"
    "    except TypeError as e:\n"
    "        out.append(str(e))\n"
    "result = out\n"
)
_NAMES = ["center", "ljust", "zfill", "replace", "translate", "format_map", "join"]


class TestRenamedBindingErrors:
    """``named()`` renames a fresh closure per bound method: nothing shared is mutated."""

    def test_user_string_then_str_then_user_string(self) -> None:
        """Three sandboxes in turn: each wrong call names the method called."""
        expected = [f"{n}() got an unexpected keyword argument 'x'" for n in _NAMES]
        user = "from collections import UserString\n" + _WRONG_CALLS.format(
            names=_NAMES, target="UserString('ab')"
        )
        plain = _WRONG_CALLS.format(names=_NAMES, target="'ab'")
        assert [value_of(user), value_of(plain), value_of(user)] == [expected] * 3

    def test_a_star_call_error_names_the_builtin(self) -> None:
        """``getattr(*['a'], **{'b': 1})`` names ``getattr``, and the caught error's args
        are the same plain text."""
        source = (
            "try:\n"
            "    getattr(*['a'], **{'b': 1})\n"
            "except TypeError as e:\n"
            "    result = (e.args, type(e.args[0]).__name__)\n"
        )
        assert value_of(source) == (("getattr() got an unexpected keyword argument 'b'",), "str")


# ------------------------------------------------------------------ 3. back to the host

_ITERATOR = "holds an iterator; only plain data (dicts, lists, strings, numbers, booleans, None, Outcomes) can leave the sandbox"
_FUNCTION = "holds a function; only plain data (dicts, lists, strings, numbers, booleans, None, Outcomes) can leave the sandbox"
_MEMORY = "memory may hold only plain data, so a function, class or handle defined in one attempt cannot leak into later calls"


class TestObjectsBackToTheHost:
    """The boundary refuses today's runtime objects wherever they leave."""

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            ("result = zip([1], [2])", f"the result {_ITERATOR}"),
            ("result = zip(*[[1]] * 20)", f"the result {_ITERATOR}"),
            ("def g():\n    yield 1\nresult = g()", f"the result {_ITERATOR}"),
            ("result = print", f"the result {_FUNCTION}"),
            ("result = {'a': [getattr]}", f"the result['a'][0] {_FUNCTION}"),
            (
                "memory['x'] = zip(*[[1]] * 20)\nresult = 1",
                f"context['x'] holds an iterator; {_MEMORY}",
            ),
            ("memory['x'] = print\nresult = 1", f"context['x'] holds a function; {_MEMORY}"),
            ("remember(x=zip([1]))\nresult = 1", f"remember()['x'] {_ITERATOR}"),
            (
                "result = delegate(*['x'], **{'opts': zip([1])})",
                f"delegate options['opts'] {_ITERATOR}",
            ),
            (
                "result = delegate(*['x'], **{'purpose': print})",
                f"delegate options['purpose'] {_FUNCTION}",
            ),
        ],
    )
    def test_refused_at_the_boundary(self, source: str, message: str) -> None:
        """As the result, in memory, through ``remember`` and in a child's star options."""
        assert error_of(source) == _not_serializable(message)


# -------------------------------------------------------------------- 4. zip(strict=...)


class TestZipStrict:
    """``strict`` through ``**`` answers as Python's, narrow or wide."""

    def test_strict_forms(self) -> None:
        """A wide strict zip of equal lengths, and a short one through ``**``."""
        assert value_of("result = list(zip(*[[1]] * 6, **{'strict': True}))") == [(1,) * 6]
        assert error_of("result = list(zip(*[[1], [1, 2]] * 3, **{'strict': 1}))") == (
            _execution("ValueError: zip() argument 2 is longer than argument 1")
        )


# ---------------------------------------------------------------- 5. huge single C calls


class TestPrintOptionsAreText:
    """``print``'s ``sep`` and ``end`` must be text, as Python's (fixed in R24)."""

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "x = [[1] * 1000] * 100000\nprint('a', 'b', sep=x)\nresult = 1",
                "sep must be None or a string, not list",
            ),
            (
                "x = [[1] * 1000] * 100000\nprint('a', **{'end': x})\nresult = 1",
                "end must be None or a string, not list",
            ),
            ("print('a', sep=1)\nresult = 1", "sep must be None or a string, not int"),
        ],
    )
    def test_refused_before_any_text_is_built(self, source: str, message: str) -> None:
        """Before the fix ``str(sep)`` built the list's 300 MB text in one C call."""
        assert error_of(source) == _execution(f"TypeError: {message}")

    def test_text_options_still_print(self) -> None:
        """A text ``sep``/``end`` through ``**`` and ``None`` work as in Python."""
        source = (
            "print(*['a', 'b'], **{'sep': '-', 'end': '!'})\n"
            "print('c', sep=None, end=None)\n"
            "result = 1\n"
        )
        assert execute(source).stdout == "a-b!c\n"


class TestZipWidth:
    """A zip of more than four iterables ticks per item (sixteen before R24)."""

    def test_five_iterables_stop_at_the_deadline(self) -> None:
        """Five iterables of 200 000 items end as ``timeout`` (before the fix: 200000)."""
        result = execute(
            "xs = [0] * 200000\nresult = len(list(zip(*[xs] * 5)))",
            limits=SandboxLimits(timeout_seconds=1.0),
            clock=FakeClock(step=0.05),
        )
        assert result.error is not None
        assert result.error.error_type == "timeout"

    def test_sixteen_iterables_answer_as_pythons(self) -> None:
        """A wide zip's items are Python's."""
        assert value_of("result = list(zip(*[[1, 2]] * 16))") == [(1,) * 16, (2,) * 16]


class TestHugeSingleCalls:
    """Calls that hold with today's changes."""

    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            (
                "x = ['a' * 10**6] * 10\nresult = len(' '.join(map(''.join, zip(*x))))",
                (
                    "resource_limit",
                    "Resource limit in tester.run: str.join would create 10999999 items; "
                    "the sandbox limit is 10000000",
                ),
            ),
            (
                "result = str(*[[[1] * 1000] * 100000], **{})",
                (
                    "resource_limit",
                    "Resource limit in tester.run: str() would create 10000517 items; "
                    "the sandbox limit is 10000000",
                ),
            ),
            (
                "x = ['a' * 10**6] * 16\nresult = len(dict(zip(*x)))",
                _execution(
                    "ValueError: dictionary update sequence element #0 has length 16; 2 is required"
                ),
            ),
        ],
    )
    def test_refused(self, source: str, expected: tuple[str, str]) -> None:
        """A join over a transposed zip, ``str`` spread, ``dict`` of a wide zip."""
        assert error_of(source) == expected

    def test_sorted_and_max_with_a_text_key(self) -> None:
        """``sorted(*[x], key=str)`` and ``max(*x, key=str)`` over 1 000 shared rows."""
        source = (
            "x = [[1] * 1000] * 1000\n"
            "result = [len(sorted(*[x], key=str)), len(max(*x, key=str))]\n"
        )
        assert value_of(source) == [1000, 1000]


class TestStarUnpackingTicks:
    """``*x`` in a call or display unpacks through ``_star_`` (fixed in R24): before,
    ``[*r, *r, ...]`` and ``max(*r, *r, ...)`` of ten ranges of ten million built a hundred
    million items in one C call (4 s returning ``100000000``; 13 s against a 5 s deadline)."""

    @pytest.mark.parametrize(
        "source",
        [
            "xs = [0] * 200000\nresult = len([*iter(xs)])",
            "xs = [0] * 200000\nresult = max(*iter(xs))",
            "xs = [0] * 200000\nresult = len({*map(abs, xs)})",
        ],
    )
    def test_an_iterator_ticks(self, source: str) -> None:
        """An iterator that does not tick itself is unpacked item by item under the clock:
        the attempt ends as ``timeout`` (before the fix it answered)."""
        result = execute(
            source, limits=SandboxLimits(timeout_seconds=1.0), clock=FakeClock(step=0.05)
        )
        assert result.error is not None
        assert result.error.error_type == "timeout"

    def test_a_sized_builtin_ticks_past_the_attempts_budget(self) -> None:
        """Ten million items of lists and ranges unpack natively in one attempt; the next
        million ticks (before the fix: 11000000)."""
        result = execute(
            "r = range(10**6)\nresult = len([*r, *r, *r, *r, *r, *r, *r, *r, *r, *r, *r])",
            limits=SandboxLimits(timeout_seconds=1.0),
            clock=FakeClock(step=0.05),
        )
        assert result.error is not None
        assert result.error.error_type == "timeout"

    def test_a_short_sized_star_stays_native(self) -> None:
        """Ten million items, within the budget, under the same clock."""
        result = execute(
            "r = range(10**6)\nresult = len([*r, *r, *r, *r, *r, *r, *r, *r, *r, *r])",
            limits=SandboxLimits(timeout_seconds=1.0),
            clock=FakeClock(step=0.05),
        )
        assert (result.error, result.value) == (None, 10**7)

    def test_unpacking_answers_as_pythons(self) -> None:
        """Targets are untouched; displays, calls and dicts unpack as in Python."""
        source = (
            "a, *b = [1, 2, 3]\n"
            "d = {'k': 1}\n"
            "result = [a, b, [*'ab'], sorted({*'ba'}), (*[1],), [*d], max(*[3, 9], *(4,)),\n"
            "          [*(i for i in range(3))], {**d, 'j': 2}]\n"
        )
        assert value_of(source) == [
            1,
            [2, 3],
            ["a", "b"],
            ["a", "b"],
            (1,),
            ["k"],
            9,
            [0, 1, 2],
            {"k": 1, "j": 2},
        ]

    def test_not_iterable_keeps_pythons_message(self) -> None:
        """``max(*5)`` is worded by Python."""
        assert error_of("result = max(*5)") == _execution(
            "TypeError: max() argument after * must be an iterable, not int"
        )

    @pytest.mark.parametrize(
        "unpacking", ["[*A()]", "f(*A())", "(*A(),)", "{*A()}", "max(*A(), *[1])"]
    )
    def test_a_failing_iter_of_the_programs_class_runs_once(self, unpacking: str) -> None:
        """A program class whose ``__iter__`` raises ``TypeError`` has it called once, and its
        own message is the error, as in Python (the helper called it twice: ADR 0150's
        caveat, closed)."""
        source = (
            "calls = []\n"
            "class A:\n"
            "    def __iter__(self):\n"
            "        calls.append(1)\n"
            "        raise TypeError('no items today')\n"
            "def f(*a):\n"
            "    return a\n"
            "try:\n"
            f"    {unpacking}\n"
            "except TypeError as error:\n"
            "    result = [str(error), len(calls)]\n"
        )
        assert value_of(source) == ["no items today", 1]

    def test_a_not_iterable_program_object_keeps_pythons_message(self) -> None:
        """An instance of a program class with neither ``__iter__`` nor ``__getitem__`` is
        worded by Python where it is unpacked."""
        assert error_of("class A:\n    pass\nresult = [*A()]") == _execution(
            "TypeError: Value after * must be an iterable, not A"
        )

    def test_the_helper_is_not_a_program_name(self) -> None:
        """``_star_`` is refused in a program's text, as every underscore name is."""
        with pytest.raises(InvalidCodeError):
            compile_program("result = _star_([1])")
