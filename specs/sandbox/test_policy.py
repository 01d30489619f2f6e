"""The sandbox policy (``recurgent/_sandbox/_policy.py``) compiles valid programs to code that runs
as plain Python does: each class pins a rewrite that once compiled a valid program wrongly."""

from __future__ import annotations

import pytest

from recurgent._sandbox import compile_program
from recurgent.errors import InvalidCodeError

from .support import execute, value_of


class TestPrintInAFunctionsHeader:
    """A ``def``'s decorators, defaults and annotations run in the enclosing scope, so a
    ``print`` in them writes through the enclosing scope's collector. RestrictedPython visited
    them in the function's own print scope: the header read a ``_print`` the enclosing scope
    never defined, and the program failed with ``NameError: name '_print' is not defined``
    (compile fuzzing, 2026-12-04)."""

    @pytest.mark.parametrize(
        ("source", "expected", "stdout"),
        [
            ("def g(p=print(1)):\n    return p\nresult = g()", None, "1\n"),
            ("def g(*, p=print(2) or 2):\n    return p\nresult = g()", 2, "2\n"),
            (
                "@(lambda fn: (print(3), fn)[1])\ndef h():\n    return 4\nresult = h()",
                4,
                "3\n",
            ),
            (
                "def outer():\n    def inner(p=print(5) or 5):\n        return p\n"
                "    return inner()\nresult = outer()",
                5,
                "5\n",
            ),
            (
                "class C:\n    def m(self, p=print(6) or 6):\n        return p\nresult = C().m()",
                6,
                "6\n",
            ),
            (
                "def deco(v):\n    return lambda fn: fn\ndef outer():\n"
                "    @deco(print(7))\n    def g():\n        return 8\n    return g()\n"
                "result = outer()",
                8,
                "7\n",
            ),
        ],
    )
    def test_a_print_in_a_header_runs(self, source: str, expected: object, stdout: str) -> None:
        result = execute(source)
        assert (result.error, result.value, result.stdout) == (None, expected, stdout)

    def test_the_body_still_prints_through_its_own_collector(self) -> None:
        """The function's own prints, after its default's, in order."""
        source = "def f(k=print('d') or 1):\n    print('body', k)\n    return k\nresult = f()"
        result = execute(source)
        assert (result.error, result.value, result.stdout) == (None, 1, "d\nbody 1\n")

    def test_a_yield_in_a_nested_defs_header_belongs_to_the_enclosing_generator(self) -> None:
        """The default is evaluated by the enclosing function, which is a generator."""
        source = (
            "def gen():\n    def inner(p=(yield 1)):\n        return p\n    yield inner()\n"
            "g = gen()\nresult = [next(g), g.send(9)]"
        )
        assert value_of(source) == [1, 9]

    @pytest.mark.parametrize(
        "source",
        [
            "@(yield)\ndef f():\n    pass\nresult = 1",
            "def f(p=(yield)):\n    pass\nresult = 1",
        ],
    )
    def test_a_yield_in_a_top_level_defs_header_is_refused(self, source: str) -> None:
        """A top-level header runs in the main function: a ``yield`` there is refused as
        anywhere at the top level (it used to turn the whole program into a generator)."""
        with pytest.raises(InvalidCodeError) as raised:
            compile_program(source)
        assert str(raised.value) == (
            "Generated code breaks the sandbox policy: Line 1: yield is only allowed inside "
            "a function; return or assign result"
        )
