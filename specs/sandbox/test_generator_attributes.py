"""The names of a program's generators and methods, and the refusals around them (ADR 0147).

``__name__`` and ``__qualname__`` are readable on what Python names after a function: a
generator (a ``def`` with ``yield``, a generator expression) and a method (bound to an instance
or, for a classmethod, to the class), as they are on functions and classes (ADR 0044). They
read as in a module (ADR 0145): ``gen``, ``f.<locals>.gen``, ``A.gen``, ``<genexpr>``, ``A.m``.
A generator's frame and code (``gi_frame``, ``gi_code``, ``gi_yieldfrom``, and ``f_globals``
behind them) and a method's ``__func__``/``__self__`` stay refused.

Where a readable dunder is refused, the message says where that name is served, and claims
no exception that would cover the object refused: the old text, "except on objects your code
created", was given for the program's own generator. A ``map``, ``filter``, ``zip`` or
``partial`` object and an instance have no ``__name__`` in Python either; the program's
generator has no ``__dict__`` and is told so as Python tells it. The same text reaches the
Outcome and the model's retry prompt.
"""

from __future__ import annotations

import pytest

from recurgent import Agent
from recurgent.errors import InvalidCodeError
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

from .support import error_of, value_of

_ERROR = "Execution error in tester.run: AttributeError: "
_NAMES_ARE_READABLE = (
    "'__name__' and '__qualname__' are readable on classes, functions, methods and generators "
    "(type(x).__name__ names the class of any object)"
)
_GEN = "def gen():\n    yield 1\n"


def _name_refusal(name: str, kind: str) -> str:
    return (
        f"{_ERROR}{name!r} of {kind} objects is not accessible: names starting with '_' are "
        f"private in the sandbox; {_NAMES_ARE_READABLE}"
    )


class TestGeneratorNames:
    """A generator the program made is named after its function, as in a module."""

    def test_the_reported_program(self) -> None:
        """``g = gen(); return g.__name__``: refused before, ``'gen'`` now."""
        assert value_of(_GEN + "g = gen()\nreturn g.__name__") == "gen"

    def test_names_where_the_generator_function_is_defined(self) -> None:
        source = (
            _GEN + "def f():\n"
            "    def inner():\n"
            "        yield 2\n"
            "    return inner()\n"
            "class A:\n"
            "    def gen(self):\n"
            "        yield 3\n"
            "g = gen()\n"
            "result = [g.__name__, g.__qualname__, f().__name__, f().__qualname__, "
            "A().gen().__name__, A().gen().__qualname__]"
        )
        assert value_of(source) == ["gen", "gen", "inner", "f.<locals>.inner", "gen", "A.gen"]

    def test_generator_expressions(self) -> None:
        source = (
            "def f():\n"
            "    return (i for i in [1])\n"
            "g = (i for i in range(3))\n"
            "result = [g.__name__, g.__qualname__, f().__qualname__]"
        )
        assert value_of(source) == ["<genexpr>", "<genexpr>", "f.<locals>.<genexpr>"]

    def test_an_exhausted_generator_keeps_its_name(self) -> None:
        assert value_of(_GEN + "g = gen()\nlist(g)\nresult = g.__qualname__") == "gen"

    def test_getattr_and_attrgetter_read_the_same(self) -> None:
        source = (
            "import operator\n" + _GEN + "g = gen()\n"
            "result = [getattr(g, '__name__'), operator.attrgetter('__qualname__')(g)]"
        )
        assert value_of(source) == ["gen", "gen"]

    def test_its_docstring_is_none_as_in_python(self) -> None:
        assert value_of("def gen():\n    '''Doc.'''\n    yield 1\nresult = gen().__doc__") is None


class TestMethodNames:
    """A method is named after its function, as the function read on the class is."""

    def test_bound_methods_classmethods_and_staticmethods(self) -> None:
        source = (
            "class A:\n"
            "    def m(self):\n"
            "        return 1\n"
            "    @classmethod\n"
            "    def c(cls):\n"
            "        return 2\n"
            "    @staticmethod\n"
            "    def s():\n"
            "        return 3\n"
            "a = A()\n"
            "result = [a.m.__name__, a.m.__qualname__, A.c.__name__, A.c.__qualname__, "
            "a.s.__qualname__, A.m.__qualname__]"
        )
        assert value_of(source) == ["m", "A.m", "c", "A.c", "A.s", "A.m"]

    def test_a_method_a_library_base_defines_reads_as_on_the_class(self) -> None:
        source = (
            "from collections import UserDict\n"
            "class S(UserDict):\n"
            "    pass\n"
            "result = [S.update.__qualname__, S().update.__qualname__]"
        )
        assert value_of(source) == ["MutableMapping.update", "MutableMapping.update"]


class TestInternalsStayRefused:
    """Only the names: frames, code and what a method binds stay out of reach."""

    @pytest.mark.parametrize("name", ["gi_frame", "gi_code", "gi_yieldfrom"])
    def test_a_generators_frame_and_code_at_compile_time(self, name: str) -> None:
        with pytest.raises(InvalidCodeError) as refused:
            value_of(_GEN + f"result = gen().{name}")
        assert str(refused.value) == (
            f'Generated code breaks the sandbox policy: Line 3: "{name}" is a restricted '
            "name, that is forbidden to access in RestrictedPython."
        )

    @pytest.mark.parametrize("name", ["gi_frame", "gi_code", "gi_yieldfrom"])
    def test_a_generators_frame_and_code_through_getattr(self, name: str) -> None:
        assert error_of(_GEN + f"result = getattr(gen(), {name!r})") == (
            "execution",
            f"{_ERROR}{name!r} is not accessible in the sandbox",
        )

    def test_f_globals_behind_the_frame(self) -> None:
        source = _GEN + "result = getattr(getattr(gen(), 'gi_frame'), 'f_globals')"
        assert error_of(source) == (
            "execution",
            f"{_ERROR}'gi_frame' is not accessible in the sandbox",
        )

    @pytest.mark.parametrize("name", ["__func__", "__self__"])
    def test_what_a_method_binds(self, name: str) -> None:
        source = f"class A:\n    def m(self):\n        return 1\nresult = getattr(A().m, {name!r})"
        assert error_of(source) == (
            "execution",
            f"{_ERROR}{name!r} is not accessible: names starting with '_' are private in the "
            "sandbox; single-underscore names are readable on your own classes, their instances "
            "and your functions",
        )

    def test_a_generators_name_cannot_be_set(self) -> None:
        source = _GEN + "g = gen()\nsetattr(g, '__name__', 'x')\nresult = 1"
        assert error_of(source) == (
            "execution",
            f"{_ERROR}cannot set '__name__': names starting with '_' are private",
        )


class TestRefusalMessages:
    """A refusal names where the dunder is served; it never claims a missing exception."""

    @pytest.mark.parametrize(
        ("expression", "kind"),
        [
            ("map(str, [1])", "map"),
            ("filter(None, [1])", "filter"),
            ("zip([1])", "zip"),
            ("iter([1])", "list_iterator"),
            ("functools.partial(int, '1')", "partial"),
            ("A()", "A"),
            ("'text'", "str"),
        ],
    )
    @pytest.mark.parametrize("name", ["__name__", "__qualname__"])
    def test_names_of_what_python_does_not_name(
        self, expression: str, kind: str, name: str
    ) -> None:
        source = f"import functools\nclass A:\n    pass\nresult = {expression}.{name}"
        assert error_of(source) == ("execution", _name_refusal(name, kind))

    def test_the_programs_generator_has_no_dict(self) -> None:
        assert error_of(_GEN + "result = gen().__dict__") == (
            "execution",
            f"{_ERROR}'generator' object has no attribute '__dict__'",
        )

    def test_a_docstring_of_a_library_object(self) -> None:
        assert error_of("result = map(str, []).__doc__") == (
            "execution",
            f"{_ERROR}'__doc__' of map objects is not accessible: names starting with '_' are "
            "private in the sandbox; '__doc__' is readable on classes and functions, and on the "
            "instances, methods and generators of your own classes and functions",
        )

    def test_the_dict_of_a_sealed_builtin(self) -> None:
        assert error_of("result = getattr(range, '__dict__')") == (
            "execution",
            f"{_ERROR}'__dict__' of SealedCallable objects is not accessible: names starting "
            "with '_' are private in the sandbox; '__dict__' (and vars()) is readable on your "
            "own classes, their instances and your functions",
        )


class TestThroughAnAgent:
    """What a user and the model read."""

    def test_the_outcome_of_the_reported_program(self) -> None:
        agent = Agent(
            "tester",
            provider=ScriptedProvider(
                {"run": _GEN + "g = gen()\nresult = [g.__name__, g.__qualname__]"}
            ),
            toolstore_root=None,
            log=False,
        )
        outcome = agent.run()
        assert isinstance(outcome, Outcome)
        assert (outcome.status, outcome.value, outcome.error_message) == (
            "ok",
            ["gen", "gen"],
            None,
        )

    def test_the_retry_prompt_of_a_refused_name(self) -> None:
        provider = ScriptedProvider({"run": ["result = map(str, [1]).__name__", "result = 1"]})
        agent = Agent("tester", provider=provider, toolstore_root=None, log=False)
        answer = agent.run()
        assert isinstance(answer, Outcome)
        assert (answer.status, answer.value) == ("ok", 1)
        prompt = provider.requests[1].user_prompt
        refusal = _name_refusal("__name__", "map").removeprefix(_ERROR)
        assert f"<root_error_message>{refusal}</root_error_message>" in prompt
        assert "except on objects your code created" not in prompt
