"""The main-function wrapper: hoisted globals, the inferred result, the forgotten-result refusal."""

from __future__ import annotations

import pytest

from recurgent._sandbox import compile_program
from recurgent.errors import InvalidCodeError
from specs.sandbox.support import value_of


class TestGlobalsInHelpers:
    """``global`` in a helper reaches the program's top-level name, as in a module."""

    def test_helper_increments_a_top_level_counter(self) -> None:
        """Two calls of a helper declaring ``global counter`` leave it at 2."""
        source = (
            "counter = 0\n"
            "def bump():\n"
            "    global counter\n"
            "    counter += 1\n"
            "bump()\nbump()\n"
            "result = counter"
        )
        assert value_of(source) == 2

    def test_nested_helper_declares_global(self) -> None:
        """A function inside a function may also declare the top-level name global."""
        source = (
            "total = []\n"
            "def outer():\n"
            "    def inner(x):\n"
            "        global total\n"
            "        total = total + [x]\n"
            "    inner(1)\n"
            "    inner(2)\n"
            "outer()\n"
            "result = total"
        )
        assert value_of(source) == [1, 2]

    def test_global_result_in_a_helper_sets_the_result(self) -> None:
        """A helper may assign the program's result through ``global result``."""
        source = "def finish():\n    global result\n    result = 'done'\nfinish()"
        assert value_of(source) == "done"


class TestClassBodiesReadTopLevelNames:
    """A class body reads a name it also binds from its own namespace, then the globals, never
    from the enclosing function's locals. Run as the main function's body, such a read of a
    top-level name failed with ``NameError`` (or found the builtin of that name) where a script
    reads the module's global; the wrapper makes those names globals of the main function
    (compile fuzzing, 2026-12-04)."""

    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            ("size = 3\nclass Grid:\n    size = size * 2\nresult = Grid.size", 6),
            (
                "def helper():\n    return 1\nclass A:\n    helper = staticmethod(helper)\n"
                "result = A.helper()",
                1,
            ),
            ("x = 1\nclass A:\n    x += 1\nresult = A.x", 2),
            ("x = 1\nclass A:\n    y = x\n    x = 2\nresult = [A.x, A.y]", [2, 1]),
            ("x = 1\nclass O:\n    class I:\n        x = x + 1\nresult = O.I.x", 2),
            (
                "import re\nclass P:\n    re = re\n    pat = re.compile('a')\nresult = P.pat.pattern",
                "a",
            ),
            ("for k in range(2):\n    class A:\n        k = k\nresult = A.k", 1),
            ("result = 0\nclass A:\n    result = result + 1\nresult = A.result", 1),
            (
                "if __name__ == '__main__':\n    n = 4\n    class A:\n        n = n\n    result = A.n",
                4,
            ),
        ],
    )
    def test_the_class_reads_the_top_level_name(self, source: str, expected: object) -> None:
        assert value_of(source) == expected

    def test_a_builtins_name_bound_at_the_top_is_read_from_there(self) -> None:
        """``max = 5`` then ``max = max`` in a class: 5, not the builtin ``max``."""
        assert value_of("max = 5\nclass A:\n    max = max\nresult = A.max") == 5

    def test_the_hoisted_name_still_works_in_helpers(self) -> None:
        """Helpers read and ``global``-write the hoisted name as in a script."""
        source = (
            "total = 1\nclass A:\n    total = total + 1\n"
            "def add():\n    global total\n    total += 10\n"
            "def read():\n    return total\nadd()\nresult = [A.total, read()]"
        )
        assert value_of(source) == [2, 11]

    def test_a_name_a_scope_declares_nonlocal_stays_a_local(self) -> None:
        """``nonlocal`` of a top-level name (the main function makes it legal) needs the main
        function's local: such a name is not hoisted, so the program still compiles."""
        source = (
            "x = 1\ndef bump():\n    nonlocal x\n    x += 1\nbump()\n"
            "class A:\n    y = x\nresult = A.y"
        )
        assert value_of(source) == 2

    def test_a_function_defined_in_a_function_reads_as_python_does(self) -> None:
        """Inside a function of the program, the class body misses the function's local in
        plain Python too: the wrapper changes only the main function."""
        source = (
            "def f():\n    x = 1\n    class A:\n        x = x\n    return A.x\n"
            "try:\n    result = f()\nexcept NameError as error:\n    result = str(error)"
        )
        assert value_of(source) == "name 'x' is not defined"


class TestInferredResult:
    """A program without ``result`` or ``return`` ending in an expression returns its value."""

    def test_last_call_is_the_result(self) -> None:
        """``def main(): return 42`` then ``main()`` gives 42 and marks the result inferred."""
        source = "def main():\n    return 42\nmain()"
        assert value_of(source) == 42
        assert compile_program(source).result_inferred is True

    def test_last_expression_is_the_result(self) -> None:
        """A trailing arithmetic expression is the result."""
        assert value_of("x = 3\nx * 2") == 6

    def test_assigned_result_wins_over_a_trailing_expression(self) -> None:
        """When the program assigns result, a trailing expression does not replace it."""
        assert value_of("result = 7\n8") == 7
        assert compile_program("result = 7\n8").result_inferred is False

    def test_a_return_anywhere_disables_inference(self) -> None:
        """A top-level return inside a branch keeps the old rule: the trailing value is unused."""
        source = "if len(args) > 5:\n    return 'many'\n'few'"
        assert value_of(source) is None
        assert compile_program(source).result_inferred is False

    def test_memory_only_program_is_an_ok_none(self) -> None:
        """A program that only writes memory meant no value: ok None, nothing inferred."""
        assert value_of("context['x'] = 5") is None
        assert compile_program("context['x'] = 5").result_inferred is False


class TestForgottenResult:
    """A program made only of definitions that it never calls is refused with a concrete fix."""

    def test_uncalled_main_is_invalid_code(self) -> None:
        """The message names the function and tells the model how to produce the result."""
        with pytest.raises(InvalidCodeError) as raised:
            compile_program("import math\ndef main():\n    return math.pi")
        assert raised.value.message == (
            "Generated code produces no result: the program defines main but never calls it "
            "and never sets result (it ends at line 3); end with `result = main(...)`"
        )

    def test_definitions_with_a_runtime_statement_are_not_refused(self) -> None:
        """Any statement besides definitions means the program may have meant to return None."""
        source = "def helper():\n    return 1\nx = 2"
        assert compile_program(source).result_inferred is False
