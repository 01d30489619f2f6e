"""A program's functions and classes are named as the same source names them as a module (ADR 0145).

A program runs as the body of ``def __recurgent_main__()`` (ADR 0043); these specs pin that its
own definitions never show that wrapper: ``f.__qualname__`` is ``f``, a class ``A``, its method
``A.m``, a nested def ``g.<locals>.h``, a lambda ``<lambda>``, a comprehension in a def
``f.<locals>.<listcomp>``; Python's own messages (a missing argument) and reprs name them so;
the Outcome's ``error_message`` and the retry prompt the model reads say ``f()``, not
``__recurgent_main__.<locals>.f()``. Only names change: a string the program writes keeps
its text, and a program with nothing to rename keeps its code object.
"""

from __future__ import annotations

import re
import types

import pytest

from recurgent import Agent
from recurgent._sandbox import compile_program
from recurgent._sandbox._qualnames import module_qualnames
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

from .support import execute, names_as_a_module, reprs_without_addresses, value_of

_WRAPPER = "__recurgent_main__.<locals>"
_MISSING = "def f(a):\n    return a\nreturn f()"
_MISSING_TEXT = "f() missing 1 required positional argument: 'a'"

_DEFINITIONS = (
    "class A:\n"
    "    xs = [i for i in range(2)]\n"
    "    def m(self):\n"
    "        return 1\n"
    "    class B:\n"
    "        def n(self):\n"
    "            return 2\n"
    "def g():\n"
    "    def h():\n"
    "        return 3\n"
    "    return h\n"
    "def f():\n"
    "    return [lambda: 0 for _ in range(1)][0]\n"
    "def gen():\n"
    "    yield 1\n"
)
_NAMES = (
    "[A.__qualname__, A.m.__qualname__, A.B.__qualname__, A.B.n.__qualname__, "
    "g.__qualname__, g().__qualname__, (lambda: 0).__qualname__, f().__qualname__, "
    "gen.__qualname__]"
)


def _error_text(source: str) -> str:
    result = execute(source)
    assert result.error is not None, f"expected a failure, got {result.value!r}"
    return str(result.error)


def _qualnames(code: types.CodeType) -> list[str]:
    """Every code object's ``co_qualname`` and every text constant, through nested code."""
    names = [code.co_qualname]
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names.extend(_qualnames(constant))
        elif isinstance(constant, str):
            names.append(constant)
    return names


class TestQualifiedNames:
    """``__qualname__`` of what a program defines."""

    def test_each_kind_is_named_as_in_a_module(self) -> None:
        """A class, its method, a nested class and its method, a def and the def it makes, a
        lambda, a lambda made in a comprehension, a generator function."""
        assert value_of(_DEFINITIONS + f"result = {_NAMES}") == [
            "A",
            "A.m",
            "A.B",
            "A.B.n",
            "g",
            "g.<locals>.h",
            "<lambda>",
            "f.<locals>.<listcomp>.<lambda>",
            "gen",
        ]

    def test_the_names_equal_the_same_source_runnames_as_a_module(self) -> None:
        """Read in the sandbox and by plain Python, the list is the same."""
        assert value_of(_DEFINITIONS + f"result = {_NAMES}") == names_as_a_module(
            _DEFINITIONS + f"names = {_NAMES}"
        )

    def test_a_top_level_function(self) -> None:
        assert value_of("def f():\n    return 1\nresult = f.__qualname__") == "f"

    def test_a_comprehension_inside_a_def(self) -> None:
        """A generator expression's repr names it ``f.<locals>.<genexpr>``."""
        text = value_of("def f():\n    return repr(x for x in range(2))\nresult = f()")
        assert re.fullmatch(r"<generator object f\.<locals>\.<genexpr> at 0x[0-9a-f]+>", text)

    def test_a_function_declared_global_keeps_its_name(self) -> None:
        """A def a helper declares ``global`` is named ``bump`` by CPython, as in a module, and
        its inner def ``bump.<locals>.inside``."""
        source = (
            "def setup():\n"
            "    global bump\n"
            "    def bump():\n"
            "        def inside():\n"
            "            return 0\n"
            "        return inside\n"
            "setup()\n"
            "result = [bump.__qualname__, bump().__qualname__]"
        )
        assert value_of(source) == ["bump", "bump.<locals>.inside"]

    def test_reprs_name_the_module_names(self) -> None:
        """A function, a class, an instance and a generator, as ``repr`` shows them."""
        source = (
            "class A:\n"
            "    pass\n"
            "def f():\n"
            "    yield 1\n"
            "result = [repr(f), repr(A), repr(A()), repr(f())]"
        )
        shown = reprs_without_addresses(source)
        assert shown == [
            "<function f>",
            "<class '__main__.A'>",
            "<__main__.A object>",
            "<generator object f>",
        ]

    def test_a_string_the_program_writes_keeps_its_text(self) -> None:
        """Only names change: a constant equal to the old name, in a function, is untouched."""
        assert value_of("def f():\n    return '__recurgent_main__.<locals>.f'\nresult = f()") == (
            "__recurgent_main__.<locals>.f"
        )


class TestMessages:
    """Python's messages about a program's own definitions."""

    def test_a_missing_argument(self) -> None:
        assert _error_text(_MISSING) == f"Execution error in tester.run: TypeError: {_MISSING_TEXT}"

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "class A:\n    def m(self, x):\n        return x\nreturn A().m()",
                "A.m() missing 1 required positional argument: 'x'",
            ),
            (
                "class A:\n    def __init__(self, x):\n        self.x = x\nreturn A()",
                "A.__init__() missing 1 required positional argument: 'x'",
            ),
            (
                "def g():\n    def h(a):\n        return a\n    return h()\nreturn g()",
                "g.<locals>.h() missing 1 required positional argument: 'a'",
            ),
            (
                "def f(a):\n    return a\nreturn f(1, b=2)",
                "f() got an unexpected keyword argument 'b'",
            ),
            (
                "def f():\n    return [(lambda q: q)() for _ in range(1)]\nreturn f()",
                "f.<locals>.<listcomp>.<lambda>() missing 1 required positional argument: 'q'",
            ),
        ],
    )
    def test_other_call_errors(self, source: str, message: str) -> None:
        assert _error_text(source) == f"Execution error in tester.run: TypeError: {message}"


class TestCompiled:
    """The rename is made once, when the program is compiled."""

    def test_no_code_object_is_named_under_the_wrapper(self) -> None:
        """Every nested code object of the compiled program, and each class body's stored
        ``__qualname__``."""
        code = compile_program(_DEFINITIONS + "result = 1").code
        assert [name for name in _qualnames(code) if _WRAPPER in name] == []
        assert "__recurgent_main__" in _qualnames(code)  # the wrapper itself keeps its name

    def test_a_program_with_nothing_to_rename_keeps_its_code(self) -> None:
        code = compile_program("result = 1").code
        assert module_qualnames(code) is code


class TestThroughAnAgent:
    """What a user and the model read."""

    def test_the_outcomes_error_message(self) -> None:
        agent = Agent(
            "tester",
            provider=ScriptedProvider({"run": _MISSING}),
            toolstore_root=None,
            log=False,
            guardrail_recovery_budget=0,
        )
        outcome = agent.run()
        assert isinstance(outcome, Outcome)
        assert outcome.error_message == (
            f"Execution error in tester.run: TypeError: {_MISSING_TEXT}"
        )

    def test_the_retry_prompt(self) -> None:
        """The failure the model is asked to repair names ``f()``."""
        provider = ScriptedProvider({"run": [_MISSING, "result = 1"]})
        agent = Agent("tester", provider=provider, toolstore_root=None, log=False)
        answer = agent.run()
        assert isinstance(answer, Outcome)
        assert (answer.is_ok, answer.value) == (True, 1)
        prompt = provider.requests[1].user_prompt
        assert f"<root_error_message>{_MISSING_TEXT}</root_error_message>" in prompt
        assert "__recurgent_main__" not in prompt
