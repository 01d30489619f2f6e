"""Red team R23: native star-argument calls, ``_str_spread_``, compile failures, method names.

Tried against today's changes (a hostile program, written by an attacker who read hostile text):

1. Calls with ``*`` or ``**`` compiled to native calls (``SandboxPolicy.visit_Call``) and
   method calls with star-arguments on the method fast path. Held: every runtime check sits
   in the callee, so ``'a'.ljust(*[10**10])``, ``s.center(*[...])``, ``getattr(*['a',
   'ljust'])(*[10**10])``, ``bytes(*[10**10])``, ``bytearray``, ``int(*['9' * 10**6])``,
   ``pow(*[10, 10**10])``, ``range(*[10**30])``, ``repr``/``ascii``/``format(*[shared])``,
   ``'{:>{}}'.format(*[1, 10**10])`` (also bound to a name first), ``' '.join(*[gen])``,
   ``s.join(*[['ab'] * 10**7])``, ``setattr``/``delattr``/``getattr`` with star-arguments,
   three-argument ``type``, ``sorted(**{'key': ...})``, ``max``, ``sum``, ``dict(**...)``,
   ``map``/``filter``/``enumerate`` refuse or answer as ``f(x)`` does; ``eval(*[...])`` and
   ``exec(*[...])`` are refused at compile time; ``f(a=1, **{'a': 2})`` names ``__main__.f``.
   BROKEN, fixed (three):

   - ``print(*[s] * 1000)`` (each text within the cap) and ``print(*[''] * 10**6,
     sep='y' * 10**4)`` joined the line in one C call: 1 GB to 10 GB for a 64 KiB output, past
     the deadline, stopped by the memory cap only after the call (if the machine survived).
     ``print`` now counts the whole line (texts, separators, end) before joining.
   - ``list(zip(*[xs] * 10**6))`` built a tuple as wide as the call per item in one C loop
     (about 8 GB for ``xs`` of 1 000 items; ``itertools.zip_longest`` already ticked).
     A ``zip`` of more than 16 iterables now ticks per item. ``zip`` is served as a function,
     as ``range`` already is: ``isinstance(x, zip)`` is a ``TypeError``.
   - A wrong call of a runtime builtin named the host function in Python's message, which
     reaches the model and the log (the R22 finding, elsewhere):
     ``make_builtins.<locals>.guarded_getattr() takes from 2 to 3 positional arguments``,
     ``_checked_sum.<locals>.sum()``, ``_checked_pow()``, ``checked_format()``,
     ``OutputCollector._call_print()``, ``AttemptNamespace._sleep()``, ``checked_from_bytes()``,
     ``_padding.<locals>.bind.<locals>.padded()`` (UserString). Star-arguments make these
     common (``getattr(*parts)``). A sealed runtime function's argument-binding errors
     (raised by the call itself, before any frame of the callee runs) now name it as the
     program calls it, at no cost to a call that succeeds; a UserString's checked method is
     named so; ``print`` is named ``print``.

2. ``_str_spread_``: ``str(*[x], *[])``, ``str(*gen)``, ``str(object=x)``, ``str(**kw)``, a
   parameter named ``str`` bound to the builtin, ``str(x, *[], **{})`` are capped. Held.
   Bytes decoding with ``backslashreplace`` makes up to four characters per byte (40 000 000
   from the 10 000 000-byte cap, about 1.3 s), not one as the docstring said; ``b.decode``
   does the same; bounded, noted. Left, as ADR 0092 documents: ``s = str; s(x)`` and a ``str``
   subclass convert natively. A program ``__str__`` that loops is the program's own code and
   ticks.

3. ``compile_program``'s internal-error path. Held: no input found makes a compile step raise
   anything but ``InvalidCodeError``; 1 900 ``*a`` in one call, 1 300 ``str(*a)`` arguments,
   5 900 keywords and 30 nested star-calls compile in at most 0.25 s or are refused by the
   6 000-node and 100-level caps first.

4. ``__name__``/``__qualname__`` of methods and generators (ADR 0147). Held: host methods read
   as plain Python's (``list.append``, ``generator.send``); a handle's method reads
   ``dynamic_call``, a stdlib generator its stdlib name (``_make_iterencode.<locals>.
   _iterencode``): names only, no path, object or value. ``print`` is a sealed function
   (``<function print>``, after the round: it was a bound method of the output collector,
   whose repr showed its class and address); ``__self__`` and ``__func__`` stay refused.
"""

from __future__ import annotations

import pytest

from recurgent._sandbox import SandboxLimits, compile_program
from recurgent.errors import InvalidCodeError
from specs.sandbox.support import FakeClock, Host, error_of, execute, value_of

_LIMIT = "the sandbox limit is 10000000"


def _resource(what: str, count: int) -> tuple[str, str]:
    return (
        "resource_limit",
        f"Resource limit in tester.run: {what} would create {count} items; {_LIMIT}",
    )


def _type_error(message: str) -> tuple[str, str]:
    return ("execution", f"Execution error in tester.run: TypeError: {message}")


# ----------------------------------------------------------------------------- 1. star calls


class TestStarArgumentsKeepEveryCheck:
    """The checks live in the callee, so a native ``f(*a, **k)`` meets them as ``f(x)`` does."""

    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            ("result = 'a'.ljust(*[10**10])", _resource("str.ljust", 10**10)),
            ("s = 'a'\nresult = s.center(*[10**10])", _resource("str.center", 10**10)),
            (
                "result = getattr(*['a', 'ljust'])(*[10**10])",
                _resource("str.ljust", 10**10),
            ),
            ("result = bytes(*[10**10])", _resource("bytes()", 10**10)),
            ("result = bytearray(*[10**10])", _resource("bytearray()", 10**10)),
            ("result = len(range(*[10**30]))", _resource("range()", 10**30)),
            (
                "result = ' '.join(*[(str(i) for i in range(10**8))])",
                _resource("range()", 10**8),
            ),
            (
                "x = [[1] * 1000] * 100000\nresult = repr(*[x])",
                _resource("repr()", 10000517),
            ),
            (
                "x = [[1] * 1000] * 100000\nresult = ascii(*[x])",
                _resource("ascii()", 10000517),
            ),
            (
                "x = [[1] * 1000] * 100000\nresult = format(*[x])",
                _resource("format()", 10000517),
            ),
        ],
    )
    def test_size_caps_hold(self, source: str, expected: tuple[str, str]) -> None:
        """Star-arguments reach the checked builtin or method with the same values."""
        assert error_of(source) == expected

    def test_int_of_long_text_is_refused(self) -> None:
        """``int(*['9' * 10**6])`` counts its digits first."""
        assert error_of("result = int(*['9' * 10**6])") == (
            "resource_limit",
            "Resource limit in tester.run: int() of text would create a number of about "
            "3321925 bits; the sandbox limit is 1000000 bits",
        )

    def test_pow_is_refused(self) -> None:
        """``pow(*[10, 10**10])`` meets the exponent's bit bound."""
        assert error_of("result = pow(*[10, 10**10])") == (
            "resource_limit",
            "Resource limit in tester.run: exponentiation would create a number of about "
            "40000000000 bits; the sandbox limit is 1000000 bits",
        )

    @pytest.mark.parametrize(
        "source",
        [
            "result = '{:>{}}'.format(*[1, 10**10])",
            "f = '{:>{}}'.format\nresult = f(*[1, 10**10])",
        ],
    )
    def test_format_width_is_refused(self, source: str) -> None:
        """``str.format`` with its width from star-arguments, called at once or later."""
        assert error_of(source) == (
            "resource_limit",
            "Resource limit in tester.run: format width 10000000000 exceeds the sandbox "
            "limit of 10000000",
        )

    def test_a_huge_join_is_refused(self) -> None:
        """``s.join(*[['ab'] * 10**7])``: the checked join counts its result."""
        assert error_of("s = ' '\nresult = s.join(*[['ab'] * 10**7])") == _resource(
            "str.join", 29999999
        )

    def test_setattr_and_delattr_keep_their_guards(self) -> None:
        """``setattr(*[B, '__class__', int])`` and ``delattr(*[int, 'x'])`` are refused."""
        assert error_of("class B:\n    pass\nsetattr(*[B, '__class__', int])\nresult = 1") == (
            "execution",
            "Execution error in tester.run: AttributeError: cannot set '__class__': names "
            "starting with '_' are private",
        )
        assert error_of("delattr(*[int, 'x'])\nresult = 1") == (
            "tool_registry_violation",
            "Generated code may not modify int: mutating agents, modules or host classes is "
            "not supported; keep state in context or in objects your code creates",
        )

    def test_type_with_three_arguments_stays_refused(self) -> None:
        """``type(*['A', (), {}])`` is the one-argument ``type`` the sandbox serves."""
        assert error_of("A = type(*['A', (), {}])\nresult = 1") == _type_error(
            "type() takes 1 positional argument but 3 were given"
        )

    @pytest.mark.parametrize("name", ["eval", "exec"])
    def test_eval_and_exec_are_refused_at_compile_time(self, name: str) -> None:
        """``eval(*['1'])``: RestrictedPython's check reads the called name, not the arguments."""
        with pytest.raises(InvalidCodeError) as caught:
            compile_program(f"result = {name}(*['1'])")
        assert str(caught.value) == (
            "Generated code breaks the sandbox policy: Line 1: "
            f"{name.capitalize()} calls are not allowed."
        )

    def test_ordinary_star_calls_answer_as_python_does(self) -> None:
        """Builtins, program functions and methods with ``*``/``**`` give Python's values."""
        source = (
            "def f(*a, **k):\n"
            "    return [list(a), k]\n"
            "class A:\n"
            "    def m(self, *a, **k):\n"
            "        return [list(a), k]\n"
            "x = A()\n"
            "result = [\n"
            "    sorted(*[[3, 1, 2]], **{'key': lambda v: -v}),\n"
            "    max(*[[1, 5, 3]]),\n"
            "    sum(*[[10**10] * 3]),\n"
            "    dict(**{'a': 1}, b=2),\n"
            "    list(map(*[str, [1, 2]])),\n"
            "    list(filter(*[None, [0, 1]])),\n"
            "    list(enumerate(*[['a']], **{'start': 5})),\n"
            "    f(*[1, 2], *(3,), **{'x': 1}, **{'y': 2}),\n"
            "    x.m(*[1], **{'k': 2}),\n"
            "    getattr(*[[], 'append']).__qualname__,\n"
            "]\n"
        )
        assert value_of(source) == [
            [3, 2, 1],
            5,
            30000000000,
            {"a": 1, "b": 2},
            ["1", "2"],
            [1],
            [(5, "a")],
            [[1, 2, 3], {"x": 1, "y": 2}],
            [[1], {"k": 2}],
            "list.append",
        ]

    def test_a_duplicate_keyword_names_the_programs_function(self) -> None:
        """``f(a=1, **{'a': 2})`` fails as plain Python does, naming ``__main__.f``."""
        assert error_of("def f(a):\n    return a\nresult = f(a=1, **{'a': 2})") == _type_error(
            "__main__.f() got multiple values for keyword argument 'a'"
        )


class TestPrintCountsTheWholeLine:
    """Fixed: ``print`` joined many texts, each within the cap, past it in one C call."""

    def test_one_text_repeated_is_refused(self) -> None:
        """``print(*[s] * 1000)`` with ``s`` of a million characters: a gigabyte joined for a
        64 KiB output before the fix."""
        assert error_of("s = 'x' * 10**6\nprint(*[s] * 1000)\nresult = 1") == _resource(
            "print()", 1000001000
        )

    def test_a_repeated_separator_is_refused(self) -> None:
        """``print(*[''] * 10**6, sep='y' * 10**4)``: ten gigabytes of separators."""
        assert error_of("print(*[''] * 10**6, sep='y' * 10**4)\nresult = 1") == _resource(
            "print()", 9999990001
        )

    def test_a_str_subclass_cannot_hide_its_length(self) -> None:
        """A ``__str__`` returning a ``str`` subclass whose ``__len__`` says 0 is still
        counted by its real length (as the texts are built: refused at the eleventh, red team
        R32)."""
        source = (
            "class S(str):\n"
            "    def __len__(self):\n"
            "        return 0\n"
            "class A:\n"
            "    def __str__(self):\n"
            "        return S('x' * 10**6)\n"
            "print(*[A()] * 100)\n"
            "result = 1\n"
        )
        assert error_of(source) == _resource("print()", 11000000)

    def test_ordinary_printing_is_unchanged(self) -> None:
        """Separators, ``end``, ``None`` for either, and several calls print as Python does."""
        result = execute(
            "print(*['ab'] * 3, sep='-', end='!')\nprint(1, 2, sep=None, end=None)\n"
            "print()\nresult = 1"
        )
        assert (result.error, result.value, result.stdout) == (None, 1, "ab-ab-ab!1 2\n\n")


class TestAWideZipTicks:
    """Fixed: ``zip(*parts)`` of many iterables built wide tuples in one uninterruptible loop."""

    def test_a_wide_zip_stops_at_the_deadline(self) -> None:
        """Seventeen iterables of 200 000 items: the attempt's clock is read while ``list``
        consumes the zip, so it ends as ``timeout`` (before the fix it returned 200000)."""
        result = execute(
            "xs = [0] * 200000\nresult = len(list(zip(*[xs] * 17)))",
            limits=SandboxLimits(timeout_seconds=1.0),
            clock=FakeClock(step=0.05),
        )
        assert result.error is not None
        assert result.error.error_type == "timeout"

    def test_a_narrow_zip_stays_native(self) -> None:
        """Four iterables (sixteen before red team R24), under the same clock, complete in
        one C call."""
        result = execute(
            "xs = [0] * 200000\nresult = len(list(zip(*[xs] * 4)))",
            limits=SandboxLimits(timeout_seconds=1.0),
            clock=FakeClock(step=0.05),
        )
        assert (result.error, result.value) == (None, 200000)

    def test_zip_answers_as_pythons_does(self) -> None:
        """Transposing, ``strict=``, a wide zip's items and an error from ``strict``."""
        source = (
            "result = [\n"
            "    list(zip(*[[1, 2], [3, 4]])),\n"
            "    list(zip([1], 'a', strict=True)),\n"
            "    list(zip(*[[1]] * 20)),\n"
            "    list(zip()),\n"
            "]\n"
        )
        assert value_of(source) == [[(1, 3), (2, 4)], [(1, "a")], [(1,) * 20], []]
        assert error_of("result = list(zip([1], [], strict=True))") == (
            "execution",
            "Execution error in tester.run: ValueError: zip() argument 2 is shorter than "
            "argument 1",
        )


class TestMessagesNameWhatTheProgramCalled:
    """Fixed: a wrong call of a runtime function named the host function (R22's finding)."""

    @pytest.mark.parametrize(
        ("call", "message"),
        [
            (
                "getattr(*[1] * 9)",
                "getattr() takes from 2 to 3 positional arguments but 9 were given",
            ),
            ("setattr(bogus=1)", "setattr() got an unexpected keyword argument 'bogus'"),
            ("hasattr(*[1] * 9)", "hasattr() takes 2 positional arguments but 9 were given"),
            ("vars(bogus=1)", "vars() got an unexpected keyword argument 'bogus'"),
            ("iter(*[1] * 9)", "iter() takes from 1 to 2 positional arguments but 9 were given"),
            ("sum(*[1] * 9)", "sum() takes from 1 to 2 positional arguments but 9 were given"),
            ("pow(bogus=1)", "pow() got an unexpected keyword argument 'bogus'"),
            ("divmod(*[1] * 9)", "divmod() takes 2 positional arguments but 9 were given"),
            ("format(bogus=1)", "format() got an unexpected keyword argument 'bogus'"),
            ("round(bogus=1)", "round() got an unexpected keyword argument 'bogus'"),
            ("repr(*[1] * 9)", "repr() takes 1 positional argument but 9 were given"),
            ("bytes(bogus=1)", "bytes() got an unexpected keyword argument 'bogus'"),
            ("range(bogus=1)", "range() got an unexpected keyword argument 'bogus'"),
            ("print(bogus=1)", "print() got an unexpected keyword argument 'bogus'"),
            ("zip(*[[1]] * 20, bogus=1)", "zip() got an unexpected keyword argument 'bogus'"),
        ],
    )
    def test_builtins(self, call: str, message: str) -> None:
        """Each message names the builtin, as plain Python's do."""
        assert error_of(f"result = {call}") == _type_error(message)

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "import time\nresult = time.sleep(bogus=1)",
                "sleep() got an unexpected keyword argument 'bogus'",
            ),
            (
                "result = int.from_bytes(bogus=1)",
                "from_bytes() got an unexpected keyword argument 'bogus'",
            ),
            (
                "import collections\nx = collections.UserString('a')\nresult = x.center(bogus=1)",
                "center() got an unexpected keyword argument 'bogus'",
            ),
            (
                "import collections\nx = collections.UserString('a')\nresult = x.join(*[[]] * 7)",
                "join() takes 1 positional argument but 7 were given",
            ),
        ],
    )
    def test_served_functions_and_methods(self, source: str, message: str) -> None:
        """A module function, a checked class method and a UserString's checked method."""
        assert error_of(source) == _type_error(message)

    def test_print_reads_as_print(self) -> None:
        """``print.__name__`` and ``__qualname__`` were ``_call_print`` and
        ``OutputCollector._call_print``; its repr showed the collector's class and address."""
        assert value_of("result = [print.__name__, print.__qualname__, repr(print)]") == [
            "print",
            "print",
            "<function print>",
        ]

    def test_renamed_functions_still_check(self) -> None:
        """Only messages change: ``getattr`` still guards, ``sum`` still counts."""
        assert error_of("result = getattr(*[1, '__class__'])") == (
            "non_serializable_result",
            "the result holds the class int; only plain data (dicts, lists, strings, numbers, "
            "booleans, None, Outcomes) can leave the sandbox",
        )
        assert value_of("result = [sum([[1]] * 2, []), getattr(1, 'real')]") == [[1, 1], 1]


# ----------------------------------------------------------------------------- 2. str spread


class TestStrSpread:
    """Every form of ``str`` called by its name is capped once its arguments are known."""

    _SHARED = "x = [[1] * 1000] * 100000\n"

    @pytest.mark.parametrize(
        "call",
        [
            "str(*[x], *[])",
            "str(*(y for y in [x]))",
            "str(object=x)",
            "str(**{'object': x})",
            "str(x, *[], **{})",
            "str(*[], object=x)",
        ],
    )
    def test_every_form_is_capped(self, call: str) -> None:
        """The text of a shared structure passes the cap in each form."""
        assert error_of(f"{self._SHARED}result = len({call})") == _resource("str()", 10000517)

    def test_a_parameter_named_str_holding_the_builtin_is_capped(self) -> None:
        """``def f(str): return str(*[x])`` passes whatever ``str`` names to the check."""
        source = self._SHARED + "def f(str):\n    return str(*[x])\nresult = len(f(str))"
        assert error_of(source) == _resource("str()", 10000517)

    def test_a_rebound_str_is_called(self) -> None:
        """A global ``str`` rebound by a function is what ``str(*[1])`` calls."""
        source = "def f():\n    global str\n    str = len\nf()\nresult = str(*[[1, 2]])"
        assert value_of(source) == 2

    def test_decoding_answers_as_python_does(self) -> None:
        """``str(b, *['ascii'], **{'errors': 'strict'})`` and ``str(*[b, 'ascii'])``."""
        source = "result = [str(*[b'ab', 'ascii']), str(b'ab', *['ascii'], **{'errors': 'strict'})]"
        assert value_of(source) == ["ab", "ab"]

    def test_an_encoding_with_a_structure_is_refused_by_python(self) -> None:
        """``str(object=x, errors='strict')`` decodes, so a structure is a ``TypeError``."""
        assert error_of(f"{self._SHARED}result = str(object=x, errors='strict')") == (
            _type_error("decoding to str: need a bytes-like object, list found")
        )

    def test_a_looping_str_method_stops_at_the_deadline(self) -> None:
        """``str(*[L()])`` with ``__str__`` looping forever is the program's own loop."""
        result = execute(
            "class L:\n    def __str__(self):\n        while True:\n            pass\n"
            "result = str(*[L()])",
            limits=SandboxLimits(timeout_seconds=1.0),
            clock=FakeClock(step=0.05),
        )
        assert result.error is not None
        assert result.error.error_type == "timeout"


# ----------------------------------------------------------------------------- 3. compile


class TestCompileOfStarCalls:
    """Star-heavy programs compile, or are refused by the size caps, as ``InvalidCodeError``."""

    @pytest.mark.parametrize(
        "source",
        [
            "class A(*[object], **{}):\n    pass\nresult = 1",
            "@print(*[1])\ndef f():\n    pass\nresult = 1",
            "f = lambda a=str(*[1]): a\nresult = f()",
            "result = f'{str(*[1])}'",
            "match [1]:\n    case [x]:\n        result = str(*[x])",
            "x = 's'\nresult = x.split(*[str(*[x])])",
            "class A:\n    str = 1\n    y = str(*[1])\nresult = 1",
            "x = 's'\ny = x.m(" + ", ".join("*[]" for _ in range(1400)) + ")\nresult = 1",
            "x = 's'\nresult = " + "x.m(*[" * 30 + "1" + "])" * 30,
            "result = " + "str(" * 90 + "1" + ")" * 90,
        ],
    )
    def test_compiles(self, source: str) -> None:
        """Each compiles (the attribute and call errors come only when it runs)."""
        assert compile_program(source).source == source

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "def f(*a):\n    return 1\nresult = " + "f(*[" * 40 + "1" + "])" * 40,
                "Generated code is nested too deeply: more than 100 levels; split long "
                "expressions into statements",
            ),
            (
                "result = [" + ", ".join(f"str(*[{i}])" for i in range(1500)) + "]",
                "Generated code is too large: more than 6,000 syntax nodes; write a shorter "
                "program",
            ),
        ],
    )
    def test_the_caps_refuse_first(self, source: str, message: str) -> None:
        """Past the nesting and node caps the program is refused before the policy runs."""
        with pytest.raises(InvalidCodeError) as caught:
            compile_program(source)
        assert str(caught.value) == message


# ----------------------------------------------------------------------------- 4. names


class TestNamesOfMethodsAndGenerators:
    """Reading ``__name__``/``__qualname__`` on host methods and generators reveals names only."""

    def test_host_methods_read_as_plain_pythons(self) -> None:
        """Bound methods of plain values and a program generator's methods."""
        source = (
            "def g():\n    yield 1\nx = g()\n"
            "result = [[].append.__qualname__, 'a'.join.__qualname__, x.send.__qualname__,\n"
            "          x.__qualname__, getattr.__qualname__, zip.__qualname__]"
        )
        assert value_of(source) == [
            "list.append",
            "join",
            "generator.send",
            "g",
            "getattr",
            "zip",
        ]

    def test_a_handles_method_reads_its_forwarding_name(self) -> None:
        """``delegate('helper').run`` reads ``dynamic_call``: a name, nothing of the agent."""
        assert value_of(
            "h = delegate('helper')\nresult = [h.run.__name__, h.run.__qualname__]",
            host=Host(),
        ) == ["dynamic_call", "dynamic_call"]

    def test_a_stdlib_generator_reads_its_stdlib_name(self) -> None:
        """``json.JSONEncoder().iterencode(...)`` is the json module's own generator."""
        source = (
            "import json\ng = json.JSONEncoder().iterencode({'a': 1})\n"
            "result = [g.__name__, g.__qualname__]"
        )
        assert value_of(source) == ["_iterencode", "_make_iterencode.<locals>._iterencode"]

    @pytest.mark.parametrize("name", ["__self__", "__func__"])
    def test_prints_binding_stays_private(self, name: str) -> None:
        """``getattr(print, '__self__')`` would be the output collector: refused."""
        assert error_of(f"result = getattr(print, '{name}')") == (
            "execution",
            f"Execution error in tester.run: AttributeError: '{name}' is not accessible: names "
            "starting with '_' are private in the sandbox; single-underscore names are readable "
            "on your own classes, their instances and your functions",
        )
