"""Red team R22: a program's qualified names (ADR 0145, ``_sandbox/_qualnames.py``).

After compiling, ``module_qualnames`` takes ``__recurgent_main__.<locals>.`` off every nested
code object's ``co_qualname`` and off the constant a class body stores to ``__qualname__``.
Tried:

1. Posing as a host or builtin object. Held. Nothing in the runtime trusts a qualified name:
   guards and fast paths test types and ``co_filename == "<generated>"``; ``__qualname__`` is
   read only from host classes and functions (``HostCall``/``HostClass``/``SealedType`` reprs,
   a test double's script digest). A program ``class int`` / ``class Outcome`` (qualname
   ``int``, ``Outcome``) and a def dressed as ``len`` by ``functools.wraps(len)`` are refused at
   the boundary as a program's class, instance and function; memory refuses the class; a
   program cannot write ``__qualname__`` (a name, a class-body binding or an attribute) nor
   ``__module__``. Nothing the program made crosses by name: no pickle (the worker and
   ``map``'s runners speak JSON), the content store keeps rebuilt plain data.
2. Crashing or changing the meaning of compile. BROKEN, fixed: CPython merges equal
   constants of one code object, so a string in a class body whose text is that class's old
   name (``x = '__recurgent_main__.<locals>.A'``, a docstring, or the same text folded from
   ``'__recurgent_main__' + '.<locals>.A'``) *was* the name's constant and read ``'A'``
   (the ADR called it out and accepted it). Now a body that loads that constant again keeps
   the class's name, and the program's string keeps its text; its methods are still ``A.m``.
   Held: nested classes in functions in classes, decorators, comprehensions and lambdas in
   class bodies and in defaults, generators, ``global`` defs: the names equal plain Python's
   for the same source run as a module. At the caps (96 nested defs or classes, 97 nested
   lambdas) the rename compiles, and at every stack depth a compile either succeeds or is an
   ``InvalidCodeError``: the policy's own recursion fails first, the rename's never does.
   Cost (measured on the shared 2-core machine, not pinned), once per source (the compile is
   cached): at the 6 000-node cap, 461 classes with a method each (924 code objects) rename
   in 13 ms (8 ms before the fix, which reads each class body to its end) of a 210-240 ms
   compile; 666 defs in 0.8 ms of 130 ms; one class body of 1 498 assignments in 10 ms (2.5 ms
   before) of 85 ms. Each code object is read once, linearly. Left: a crash inside
   the rename would reach the user as a ``provider`` error (``Provider error in tester.run:
   ...``), as any exception out of compiling does; no input found raises one.
3. The wrapper or the host in what a user or model reads. BROKEN, fixed: a call with ``*`` or
   ``**`` ran through RestrictedPython's ``_apply_`` trampoline, a host lambda, so Python
   named *it*: ``f(a=1, **x)`` with ``'a'`` in ``x`` failed with ``TypeError: recurgent.
   _sandbox._namespace.AttemptNamespace._build_namespace.<locals>.<lambda>() got multiple
   values for keyword argument 'a'`` in the Outcome, the retry prompt, the history and the
   log (also ``f(**1)``). ``_apply_`` guarded nothing; the policy now keeps such a call native,
   and the messages are plain Python's (``__main__.f() got multiple values ...``). Held:
   missing, extra and duplicate arguments of defs, methods, nested defs and lambdas, reprs of
   functions, classes, instances, bound methods, partials, generators, dataclasses,
   NamedTuples and enums, in process and in a worker, and a debug call log, name no wrapper.
4. The compile cache. Held. Entries are keyed by the exact source and the rename is a pure
   function of the compiled code: one source gives one ``CompiledProgram``, renaming its code
   again changes nothing, and two sources whose definitions end up with equal names
   (a top-level ``def f`` and a ``global f`` defined in a helper) keep apart entries and code.

Found out of scope and fixed after the round: ``str(*[x])`` of a shared structure skipped
``_str_``'s estimate; every form of ``str`` called by its name is now checked (ADR 0092
amended, ``specs/sandbox/test_text_size.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

import recurgent
from recurgent import Agent
from recurgent._sandbox import compile_program
from recurgent._sandbox._qualnames import module_qualnames
from recurgent._worker._executor import ProcessExecutor
from recurgent.errors import InvalidCodeError
from recurgent.outcome import Outcome
from recurgent.program import MAX_SYNTAX_DEPTH
from recurgent.testing import ScriptedProvider
from specs.sandbox.support import (
    error_of,
    names_as_a_module,
    reprs_without_addresses,
    value_of,
)
from specs.worker.support import run, supervisor

_OLD = "__recurgent_main__.<locals>.A"
_ONLY_PLAIN = (
    "only plain data (dicts, lists, strings, numbers, booleans, None, Outcomes) can leave "
    "the sandbox"
)


def _plain_error(source: str) -> str:
    """``Type: message`` of ``source`` run as a module in plain Python."""
    try:
        exec(compile(source, "<module>", "exec"), {"__name__": "__main__"})
    except Exception as error:  # the spec reads any error's text
        return f"{type(error).__name__}: {error}"
    raise AssertionError("expected a failure")


def _names(code: types.CodeType) -> Iterator[str]:
    yield code.co_qualname
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _names(constant)


@pytest.fixture(scope="module")
def executor() -> Iterator[ProcessExecutor]:
    """A worker on this interpreter, shared by the module's worker specs.

    The worker starts with ``python -I -m recurgent._worker``: it imports the installed
    package, which in a second git worktree is another checkout's code (an editable install of
    the first); the specs would then read that code, so they skip.
    """
    imported = subprocess.run(
        [sys.executable, "-I", "-c", "import recurgent; print(recurgent.__file__)"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if imported != recurgent.__file__:
        pytest.skip(f"a worker would import {imported or 'no recurgent'}, not this checkout")
    worker = supervisor()
    yield ProcessExecutor(worker)
    worker.shutdown()


# ----------------------------------------------------------------------------- 1. posing


class TestPosingAsHostObjects:
    """A name is all the rename gives a program's definitions, and no check reads a name."""

    def test_a_class_named_int_is_still_the_programs_class(self) -> None:
        """``class int`` has the builtin's qualified name; its instance is refused at the
        boundary as one of the program's."""
        assert value_of("class int:\n    pass\nresult = [int.__qualname__, repr(int)]") == [
            "int",
            "<class '__main__.int'>",
        ]
        assert error_of("class int:\n    pass\nresult = int()") == (
            "non_serializable_result",
            f"the result holds an instance of int; {_ONLY_PLAIN}",
        )

    def test_a_class_named_outcome_does_not_leave(self) -> None:
        assert error_of("class Outcome:\n    pass\nresult = Outcome") == (
            "non_serializable_result",
            f"the result holds the class Outcome; {_ONLY_PLAIN}",
        )

    def test_a_def_dressed_as_len_is_still_a_function_of_the_program(self) -> None:
        """``functools.wraps(len)`` copies ``len``'s names; the boundary refuses it as a
        function all the same."""
        source = "import functools\n@functools.wraps(len)\ndef f(x):\n    return 1\n"
        assert value_of(source + "result = [f.__qualname__, f.__name__]") == ["len", "len"]
        assert error_of(source + "result = f") == (
            "non_serializable_result",
            f"the result holds a function; {_ONLY_PLAIN}",
        )

    def test_memory_refuses_a_renamed_class(self) -> None:
        assert error_of("class A:\n    pass\nmemory['k'] = A\nresult = 1") == (
            "non_serializable_result",
            "context['k'] holds the class A; memory may hold only plain data, so a function, "
            "class or handle defined in one attempt cannot leak into later calls",
        )

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "__qualname__ = 'int'\nresult = 1",
                'Line 1: "__qualname__" is an invalid variable name because it starts with "_"',
            ),
            (
                "class A:\n    __qualname__ = 'int'\nresult = 1",
                'Line 2: "__qualname__" is an invalid variable name because it starts with "_"',
            ),
            (
                "def f():\n    pass\nf.__qualname__ = 'len'\nresult = 1",
                'Line 3: "__qualname__" is an invalid attribute name because it starts with "_".',
            ),
            (
                "def f():\n    pass\nf.__module__ = 'builtins'\nresult = 1",
                'Line 3: "__module__" is an invalid attribute name because it starts with "_".',
            ),
        ],
    )
    def test_a_program_cannot_write_its_names(self, source: str, message: str) -> None:
        with pytest.raises(InvalidCodeError) as raised:
            compile_program(source)
        assert str(raised.value) == f"Generated code breaks the sandbox policy: {message}"


# ----------------------------------------------------------------------------- 2. compile


class TestTheProgramsStringsKeepTheirText:
    """BROKEN, fixed: a class body's string equal to its old name was that name's constant."""

    def test_a_class_attribute_with_the_old_name(self) -> None:
        """Before the fix ``A.x`` was ``'A'``."""
        source = f"class A:\n    x = {_OLD!r}\n    def m(self):\n        return 1\n"
        assert value_of(source + "result = [A.x, A.__qualname__, A.m.__qualname__]") == [
            _OLD,
            _OLD,
            "A.m",
        ]

    def test_a_docstring_with_the_old_name(self) -> None:
        """Before the fix ``A.__doc__`` was ``'A'``."""
        assert value_of(f"class A:\n    {_OLD!r}\nresult = A.__doc__") == _OLD

    def test_the_old_name_folded_from_two_strings(self) -> None:
        """CPython folds ``'a' + 'b'`` into one constant before merging: a check of the
        source's text would miss it. Before the fix the value was ``'B.A'``."""
        source = (
            "class B:\n"
            "    class A:\n"
            "        x = '__recurgent_main__' + '.<locals>.B.A'\n"
            "result = B.A.x"
        )
        assert value_of(source) == "__recurgent_main__.<locals>.B.A"

    def test_a_nested_class_in_a_method(self) -> None:
        """Before the fix ``y`` read ``'A.m.<locals>.C'``."""
        text = "__recurgent_main__.<locals>.A.m.<locals>.C"
        source = (
            "class A:\n"
            "    def m(self):\n"
            "        class C:\n"
            f"            y = {text!r}\n"
            "        return C\n"
            "C = A().m()\n"
            "result = [C.y, C.__qualname__]"
        )
        assert value_of(source) == [text, text]

    def test_another_classs_old_name_is_only_a_string(self) -> None:
        """``B``'s body holds ``A``'s old name: a constant of its own, left alone, and ``B``
        is renamed."""
        source = f"class A:\n    pass\nclass B:\n    x = {_OLD!r}\nresult = [B.x, B.__qualname__]"
        assert value_of(source) == [_OLD, "B"]

    def test_a_default_with_the_old_name(self) -> None:
        """A method's default is a tuple constant of the body: the class is renamed and the
        default keeps its text."""
        source = f"class A:\n    def m(self, d={_OLD!r}):\n        return d\n"
        assert value_of(source + "result = [A().m(), A.__qualname__]") == [_OLD, "A"]


class TestNamesAsInAModule:
    """Held: the sandbox's names equal plain Python's for the same source run as a module."""

    _SOURCE = (
        "def deco(fn):\n"
        "    return fn\n"
        "@deco\n"
        "class A:\n"
        "    ys = [lambda: 0 for _ in range(1)]\n"
        "    zs = {k: (lambda: 1) for k in range(1)}\n"
        "    @deco\n"
        "    def m(self, k=lambda: 0):\n"
        "        class B:\n"
        "            def n(self):\n"
        "                return (x for x in range(1))\n"
        "        return B, k\n"
        "    @staticmethod\n"
        "    def s():\n"
        "        def inner():\n"
        "            yield 1\n"
        "        return inner\n"
        "B, k = A().m()\n"
        "def setup():\n"
        "    global late\n"
        "    class late:\n"
        "        pass\n"
        "setup()\n"
    )
    _NAMES = (
        "[A.__qualname__, A.ys[0].__qualname__, A.zs[0].__qualname__, A.m.__qualname__, "
        "k.__qualname__, B.__qualname__, B.n.__qualname__, repr(B().n()).split(' at ')[0], "
        "A.s.__qualname__, A.s().__qualname__, repr(A.s()()).split(' at ')[0], "
        "late.__qualname__]"
    )
    _EXPECTED = [
        "A",
        "A.<listcomp>.<lambda>",
        "A.<dictcomp>.<lambda>",
        "A.m",
        "A.<lambda>",
        "A.m.<locals>.B",
        "A.m.<locals>.B.n",
        "<generator object A.m.<locals>.B.n.<locals>.<genexpr>",
        "A.s",
        "A.s.<locals>.inner",
        "<generator object A.s.<locals>.inner",
        "late",
    ]

    def test_the_names(self) -> None:
        assert value_of(self._SOURCE + f"result = {self._NAMES}") == self._EXPECTED

    def test_plain_python_agrees(self) -> None:
        assert names_as_a_module(self._SOURCE + f"names = {self._NAMES}") == self._EXPECTED

    def test_no_code_object_keeps_the_wrapper(self) -> None:
        code = compile_program(self._SOURCE + "result = 1").code
        assert [name for name in _names(code) if "<locals>" in name and "main" in name] == []


def _nested_defs(depth: int) -> str:
    lines = [f"{'    ' * i}def f{i}():" for i in range(depth)]
    lines.append(f"{'    ' * depth}return 1")
    lines += [f"{'    ' * i}return f{i}()" for i in reversed(range(1, depth))]
    return "\n".join([*lines, "result = f0()"])


def _nested_classes(depth: int) -> str:
    lines = [f"{'    ' * i}class C{i}:" for i in range(depth)]
    lines.append(f"{'    ' * depth}x = 1")
    return "\n".join([*lines, "result = 1"])


def _nested_lambdas(depth: int) -> str:
    return "f = " + "lambda: " * depth + "1\nresult = 1"


_DEEPEST = {
    "defs": _nested_defs(96),
    "classes": _nested_classes(96),
    "lambdas": _nested_lambdas(97),
}


class TestDeepNesting:
    """Held: the rename of the deepest programs the caps let through."""

    def test_one_level_more_is_refused_by_the_caps(self) -> None:
        for source in (_nested_defs(97), _nested_classes(97), _nested_lambdas(98)):
            with pytest.raises(InvalidCodeError) as raised:
                compile_program(source)
            assert str(raised.value) == (
                f"Generated code is nested too deeply: more than {MAX_SYNTAX_DEPTH} levels; "
                "split long expressions into statements"
            )

    def test_the_deepest_are_renamed(self) -> None:
        names = list(_names(compile_program(_DEEPEST["classes"]).code))
        assert names[-1] == ".".join(f"C{i}" for i in range(96))
        deepest_def = list(_names(compile_program(_DEEPEST["defs"]).code))[-1]
        assert deepest_def == ".<locals>.".join(f"f{i}" for i in range(96))
        assert value_of(_DEEPEST["defs"]) == 1

    @pytest.mark.parametrize("kind", sorted(_DEEPEST))
    def test_at_any_stack_depth_a_compile_succeeds_or_is_invalid_code(self, kind: str) -> None:
        """A caller deep in nested delegations compiles the deepest program: every outcome is
        a program or an ``InvalidCodeError`` (the policy's recursion runs out first; the
        rename, outside the compile's ``RecursionError`` handler, never does)."""
        source = _DEEPEST[kind]
        seen: set[str] = set()

        def at_depth(frames: int) -> str:
            if frames > 0:
                return at_depth(frames - 1)
            compile_program.cache_clear()
            try:
                compile_program(source)
            except InvalidCodeError:
                return "invalid"
            return "compiled"

        here = 0
        frame: types.FrameType | None = sys._getframe()
        while frame is not None:
            here, frame = here + 1, frame.f_back
        # Down to 40 free frames: with fewer, parsing alone (before any rename) runs out.
        free = sys.getrecursionlimit() - here
        for frames in range(free - 700, free - 40, 9):
            seen.add(at_depth(frames))
        compile_program.cache_clear()
        assert seen == {"compiled", "invalid"}


# ----------------------------------------------------------------------------- 3. messages

_DUPLICATE = "def f(*a, **k):\n    return 1\nx = {'a': 1}\nresult = f(a=1, **x)"
_DUPLICATE_TEXT = "__main__.f() got multiple values for keyword argument 'a'"


class TestStarredCallsNameTheProgramsFunction:
    """BROKEN, fixed: ``*``/``**`` calls went through a host lambda Python then named."""

    @pytest.mark.parametrize(
        ("call", "message"),
        [
            ("f(a=1, **x)", _DUPLICATE_TEXT),
            ("f(**x, **x)", _DUPLICATE_TEXT),
            ("f(**1)", "__main__.f() argument after ** must be a mapping, not int"),
            ("f(1, **1)", "__main__.f() argument after ** must be a mapping, not int"),
            ("f(*1)", "__main__.f() argument after * must be an iterable, not int"),
            ("f(**{1: 2})", "keywords must be strings"),
        ],
    )
    def test_the_message_is_plain_pythons(self, call: str, message: str) -> None:
        """Before the fix the ``**`` messages began ``recurgent._sandbox._namespace.
        AttemptNamespace._build_namespace.<locals>.<lambda>()`` and ``*`` read ``Value after
        * must be an iterable``."""
        source = f"def f(*a, **k):\n    return 1\nx = {{'a': 1}}\nresult = {call}"
        assert error_of(source) == (
            "execution",
            f"Execution error in tester.run: TypeError: {message}",
        )
        assert _plain_error(source) == f"TypeError: {message}"

    def test_a_method_and_a_class(self) -> None:
        source = "class A:\n    def m(self, a):\n        return a\nresult = A().m(1, **{'a': 2})"
        assert error_of(source) == (
            "execution",
            "Execution error in tester.run: TypeError: A.m() got multiple values for argument 'a'",
        )

    def test_starred_calls_still_run(self) -> None:
        """Functions, builtins, ``str``, a method's fast path and a class, called natively."""
        source = (
            "def f(*a, **k):\n"
            "    return [list(a), k]\n"
            "class A:\n"
            "    def __init__(self, *a, **k):\n"
            "        self.a = list(a)\n"
            "gen = (i for i in range(2))\n"
            "result = [f(*[1, 2], **{'b': 3}), f(*gen), str(*['x']), '-'.join(*[['a', 'b']]), "
            "max(*[1, 5, 2]), A(*[1], **{}).a, sorted(*[[3, 1]], **{'reverse': True})]"
        )
        assert value_of(source) == [
            [[1, 2], {"b": 3}],
            [[0, 1], {}],
            "x",
            "a-b",
            5,
            [1],
            [3, 1],
        ]

    @pytest.mark.parametrize(
        "call",
        [
            "'{0.__globals__}'.format(*[f])",
            "'{f.__globals__}'.format(**{'f': f})",
            "('{0.__globals__}'.format)(*[f])",
        ],
    )
    def test_a_starred_format_is_still_guarded(self, call: str) -> None:
        """The method is read through the attribute policy as without ``*``: ``format``'s
        fields cannot reach a private attribute."""
        assert error_of(f"def f():\n    pass\nresult = {call}") == (
            "execution",
            "Execution error in tester.run: AttributeError: '__globals__' is not accessible: "
            "names starting with '_' are private in the sandbox; single-underscore names are "
            "readable on your own classes, their instances and your functions",
        )

    @pytest.mark.parametrize(
        ("call", "what"),
        [("'x'.center(*[10**9])", "str.center"), ("'x'.ljust(**{'width': 10**9})", "str.ljust")],
    )
    def test_a_starred_call_is_still_capped(self, call: str, what: str) -> None:
        assert error_of(f"result = {call}") == (
            "resource_limit",
            f"Resource limit in tester.run: {what} would create 1000000000 items; the sandbox "
            "limit is 10000000",
        )

    def test_a_starred_call_of_a_private_method_is_still_refused(self) -> None:
        with pytest.raises(InvalidCodeError) as raised:
            compile_program("result = 'abc'.__len__(*[])")
        assert str(raised.value) == (
            'Generated code breaks the sandbox policy: Line 1: "__len__" is an invalid '
            'attribute name because it starts with "_".'
        )

    def test_no_trampoline_is_compiled(self) -> None:
        code = compile_program("def f(*a, **k):\n    return 1\nresult = f(*[1], **{})").code
        names: set[str] = set()

        def collect(code: types.CodeType) -> None:
            names.update(code.co_names)
            for constant in code.co_consts:
                if isinstance(constant, types.CodeType):
                    collect(constant)

        collect(code)
        assert "_apply_" not in names

    def test_the_retry_prompt_and_the_history(self) -> None:
        """Before the fix the model read the host's lambda in ``<root_error_message>``."""
        provider = ScriptedProvider({"run": [_DUPLICATE, "result = 1"]})
        agent = Agent("tester", provider=provider, toolstore_root=None, log=False)
        answer = agent.run()
        assert isinstance(answer, Outcome)
        assert (answer.is_ok, answer.value) == (True, 1)
        prompt = provider.requests[1].user_prompt
        assert f"<root_error_message>{_DUPLICATE_TEXT}</root_error_message>" in prompt
        assert "_build_namespace" not in prompt
        assert "__recurgent_main__" not in prompt

    def test_in_a_worker(self, executor: ProcessExecutor) -> None:
        result = run(executor, _DUPLICATE)
        assert str(result.error) == f"Execution error in tester.run: TypeError: {_DUPLICATE_TEXT}"


class TestNothingNamesTheWrapper:
    """Held: what a user or model reads about a program's own definitions."""

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "class A:\n    def m(self):\n        return 1\nresult = A().m(2)",
                "A.m() takes 1 positional argument but 2 were given",
            ),
            (
                "class A:\n    def m(self, a):\n        return a\nresult = A.m()",
                "A.m() missing 2 required positional arguments: 'self' and 'a'",
            ),
            (
                "def f(a):\n    return a\nresult = f(1, a=2)",
                "f() got multiple values for argument 'a'",
            ),
            (
                "def f(a):\n    return a\nresult = list(map(f, [1], [2]))",
                "f() takes 1 positional argument but 2 were given",
            ),
            (
                "def outer():\n    class L:\n        def m(self):\n            pass\n"
                "    return L\nresult = outer()().m(1)",
                "outer.<locals>.L.m() takes 1 positional argument but 2 were given",
            ),
        ],
    )
    def test_call_errors(self, source: str, message: str) -> None:
        assert error_of(source) == (
            "execution",
            f"Execution error in tester.run: TypeError: {message}",
        )

    def test_reprs(self) -> None:
        source = (
            "import functools\n"
            "from typing import NamedTuple\n"
            "import enum\n"
            "class A:\n"
            "    def m(self):\n"
            "        return 1\n"
            "class P(NamedTuple):\n"
            "    x: int\n"
            "class C(enum.Enum):\n"
            "    R = 1\n"
            "def f(a, b):\n"
            "    return a\n"
            "result = [repr(A().m), repr(functools.partial(f, 1)), repr(P), repr(P(1)), "
            "repr(C), repr(C.R)]"
        )
        shown = reprs_without_addresses(source)
        assert shown == [
            "<bound method A.m of <__main__.A object>>",
            "functools.partial(<function f>, 1)",
            "<class '__main__.P'>",
            "P(x=1)",
            "<enum 'C'>",
            "<C.R: 1>",
        ]

    def test_a_worker_names_them_as_in_process(self, executor: ProcessExecutor) -> None:
        source = (
            "class A:\n"
            f"    x = {_OLD!r}\n"
            "    def m(self, a):\n"
            "        return a\n"
            "class B:\n"
            "    pass\n"
            "result = [A.x, A.__qualname__, B.__qualname__, repr(B).split(' at ')[0]]"
        )
        assert run(executor, source).value == [_OLD, _OLD, "B", "<class '__main__.B'>"]
        failed = run(executor, "class A:\n    def m(self, a):\n        return a\nresult = A().m()")
        assert str(failed.error) == (
            "Execution error in tester.run: TypeError: A.m() missing 1 required positional "
            "argument: 'a'"
        )

    def test_a_debug_call_log_and_the_history(self, tmp_path: Path) -> None:
        """A failing call with nested definitions, logged with ``debug=True``: no line of the
        log and no history record names the wrapper or the host's trampoline."""
        log = tmp_path / "calls.jsonl"
        program = "def g():\n    def h(a):\n        return a\n    return h()\nresult = g()"
        agent = Agent(
            "tester",
            provider=ScriptedProvider({"one": program, "two": _DUPLICATE}),
            toolstore_root=None,
            log=log,
            debug=True,
            guardrail_recovery_budget=0,
        )
        first = agent.one()
        second = agent.two()
        assert isinstance(first, Outcome) and isinstance(second, Outcome)
        assert first.error_message == (
            "Execution error in tester.one: TypeError: g.<locals>.h() missing 1 required "
            "positional argument: 'a'"
        )
        assert (
            second.error_message == f"Execution error in tester.two: TypeError: {_DUPLICATE_TEXT}"
        )
        lines = log.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 2
        for line in lines:
            json.loads(line)
            assert "__recurgent_main__" not in line
            assert "_build_namespace" not in line


# ----------------------------------------------------------------------------- 4. the cache


class TestTheCompileCache:
    """Held: one entry per source text; the rename is a function of the code alone."""

    def test_one_source_one_program(self) -> None:
        source = "class A:\n    def m(self):\n        return 1\nresult = A.m.__qualname__"
        first = compile_program(source)
        assert compile_program(source) is first
        assert module_qualnames(first.code) is first.code

    def test_equal_names_keep_apart_entries(self) -> None:
        """A top-level ``def f`` and a ``global f`` made in a helper are both named ``f``;
        their programs and answers stay apart."""
        top = "def f():\n    return 1\nresult = [f.__qualname__, f()]"
        helper = (
            "def setup():\n"
            "    global f\n"
            "    def f():\n"
            "        return 2\n"
            "setup()\n"
            "result = [f.__qualname__, f()]"
        )
        assert compile_program(top) is not compile_program(helper)
        assert compile_program(top).code != compile_program(helper).code
        assert [value_of(top), value_of(helper)] == [["f", 1], ["f", 2]]

    def test_the_literal_and_the_plain_class_keep_apart_entries(self) -> None:
        """The class whose body holds its old name, and the same class without it."""
        holding = f"class A:\n    x = {_OLD!r}\nresult = [A.x, A.__qualname__]"
        plain = "class A:\n    x = 'A'\nresult = [A.x, A.__qualname__]"
        assert [value_of(holding), value_of(plain)] == [[_OLD, _OLD], ["A", "A"]]
        assert compile_program(holding).code != compile_program(plain).code
