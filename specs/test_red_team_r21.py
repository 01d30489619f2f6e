"""Red team R21: a def's header in the enclosing scope, class-read globals, ``str()`` locations,
and the shared scope walker feeding the store's input-flow walk.

Today's changes attacked: ``_policy._visit_header`` (decorators and defaults visited in the
enclosing scope, 29dbb31), ``_wrap`` hoisting a top-level name a class body binds and reads to a
global of the main function (17e0bdc), ``text_call`` placing ``_str_(str, x)`` at the call
(1910251), and ``_scopes.py`` feeding ``_store/_flow_syntax.py`` (63f3964). Tried:

1. Guards escaped through a header. Held. ``def f(x=().__class__)``, a kw-only default and a
   lambda default give the class, refused at the boundary (``non_serializable_result``), as at
   the top level; ``@(lambda f: f.__globals__)``, ``__builtins__``/``_getattr_`` as defaults,
   ``__bases__``/``__subclasses__`` in nested lambdas, defaults and annotations, ``gi_frame``
   and a walrus onto ``__builtins__`` are refused at compile time;
   ``getattr(f, '__globals__')`` in a decorator fails at run time. Size caps hold in defaults:
   ``'a'*10**10`` (10 000 000 000 items), ``[0]*10**9``, ``10**10**8`` (about 400 000 000
   bits), ``range(10**9)`` are refused; an endless comprehension in a default times out; a
   recursive decorator hits RecursionError. ``print`` in a default or a method's default
   goes to the enclosing scope's collector. A ``yield`` in a top-level def's default is
   refused; in a nested def's default it makes the outer function the generator, and
   ``is_generator`` reads the body only. ``async def`` stays refused. ``@functools.lru_cache
   (maxsize=None)``, ``@property``, ``@staticmethod`` run (fib(30) = 832040).
2. Class-read globals (hoisting). Held. ``str``, ``delegate``, ``content``, ``memory``,
   ``result`` bound at the top level and read in a class body are the attempt's own globals:
   the guards are ``_``-names the policy refuses, ``_str_`` calls the builtin's check only when
   the name is the builtin, and a batch item starts from ``dict(self._setup)`` (the per-item
   names made anew), so a rebinding dies with the item. ``result`` hoisted: ``result = 5``
   then ``class A: result = result + 1`` gives 6, and with a trailing expression still 5
   (no inferred result when ``result`` is bound).
3. ``str()`` and its locations. Held for the call: ``str(x)`` in a lambda, a default and a
   decorator argument compiles and is capped (``[list(range(1000))]*10000`` is refused at
   10 005 354 characters); ``__str__`` returning an int is a TypeError. Known and left as
   ADR 0092 documents (not covered: ``str`` as a value): ``f = str; f(x)``, ``map(str, [x])``,
   ``class S(str)`` then ``S(x)`` and ``collections.UserString(x)`` each build 48 920 000
   characters in one C call; a program ``__repr__`` of 10**6 characters in a list of 1 000
   gives 1 000 002 000 (its repr ticks; the memory cap is the bound).
4. Input flow (``input_flow``). Found, fixed (``_store/_dataflow.py``): seven programs whose
   answer is their input were judged ``ignored`` (so never reused, a missed reuse, the walk's
   safe side, but a wrong verdict): a decorator whose body returns a tainted global, one that
   appends the input to a list the answer is, a lambda default (``lambda v=args[0]: v``, by
   name too), a kw-only lambda default inside a function, a walrus in a lambda default or in a
   decorator's lambda default, and ``x = args[0]`` then ``class A: x = x``. The lambda's
   defaults are now walked as its parameters' taint, a decorator as a call of it with the
   definition, and a class body's rebinding of a tainted name taints the class. The constant
   twins (``lambda v=args[0]: 'bonjour'``, a decorator returning a constant, a class binding
   a constant over a tainted name) stay ``ignored``. Held before and after: class keywords,
   bases, defaults, kw-defaults, walrus in comprehensions, ``match`` captures and ``**rest``,
   ``global`` in a nested function, ``nonlocal``, ``except as``, ``with as``.
   Left open: a mutable default changed through a call's return (``f().append(args[0])``) is
   ``ignored`` (aliasing through a returned object is not followed), the missed-reuse side.
"""

from __future__ import annotations

import pytest

from recurgent._store._dataflow import input_flow
from recurgent.errors import InvalidCodeError
from specs.sandbox.support import error_of, execute, value_of


class TestHeaderGuards:
    @pytest.mark.parametrize(
        ("source", "word"),
        [
            ("@(lambda f: f.__globals__)\ndef g(): pass\nresult = 1", "__globals__"),
            ("def f(x=__builtins__):\n    return 1\nresult = f()", "__builtins__"),
            ("def f(x=_getattr_):\n    return 1\nresult = f()", "_getattr_"),
            (
                "def f(x=(lambda: ().__class__.__bases__)()):\n    return 1\nresult = f()",
                "__bases__",
            ),
            ("def f(x: ().__class__.__bases__ = 1):\n    return x\nresult = f()", "__bases__"),
            (
                "def g():\n    yield 1\ndef f(x=g().gi_frame):\n    return 1\nresult = f()",
                "gi_frame",
            ),
            ("def f(x=(__builtins__ := 3)):\n    return x\nresult = f()", "__builtins__"),
            (
                "class A:\n    @classmethod\n    def m(cls, x=().__class__.__subclasses__):\n"
                "        return 1\nresult = A.m()",
                "__subclasses__",
            ),
            ("def f(x=(yield)):\n    return 1\nresult = f()", "yield"),
        ],
    )
    def test_refused_at_compile_time(self, source: str, word: str) -> None:
        """A private name, a dunder attribute or a top-level yield in a header is refused."""
        with pytest.raises(InvalidCodeError, match=word):
            execute(source)

    @pytest.mark.parametrize(
        "source",
        [
            "def f(x=().__class__):\n    return x\nresult = f()",
            "def f(*, x=().__class__):\n    return x\nresult = f()",
            "f = lambda x=().__class__: x\nresult = f()",
        ],
    )
    def test_a_class_from_a_default_stays_inside(self, source: str) -> None:
        """``().__class__`` in a default is the class, which never leaves the sandbox."""
        assert error_of(source)[0] == "non_serializable_result"

    def test_getattr_in_a_decorator_is_guarded(self) -> None:
        """The dynamic attribute read in a decorator goes through the guard."""
        kind, message = error_of(
            "@(lambda f: getattr(f, '__globals__'))\ndef g(): pass\nresult = 1"
        )
        assert (kind, "'__globals__' is not accessible" in message) == ("execution", True)

    @pytest.mark.parametrize(
        ("source", "figure"),
        [
            ("def f(x='a'*10**10):\n    return 1\nresult = f()", "10000000000 items"),
            ("def f(x=[0]*10**9):\n    return 1\nresult = f()", "1000000000 items"),
            ("def f(x=10**10**8):\n    return 1\nresult = f()", "400000000 bits"),
            ("def f(x=[i for i in range(10**9)]):\n    return 1\nresult = f()", "1000000000"),
        ],
    )
    def test_size_caps_hold_in_defaults(self, source: str, figure: str) -> None:
        """A huge C call in a default is refused before it runs."""
        kind, message = error_of(source)
        assert (kind, figure in message) == ("resource_limit", True)

    def test_print_in_defaults_uses_the_enclosing_collector(self) -> None:
        """print in a def's and a method's default is the program's output."""
        result = execute(
            "def f(x=print('top')):\n    return 1\n"
            "class A:\n    def m(self, x=print('method')):\n        return 2\n"
            "result = f() + A().m()"
        )
        assert (result.error, result.value, result.stdout) == (None, 3, "top\nmethod\n")

    def test_yield_in_a_nested_default_belongs_to_the_outer_function(self) -> None:
        """The yield in the inner def's default makes the outer function the generator."""
        source = (
            "def outer():\n    def f(x=(yield 5)):\n        return x\n    yield f(7)\n"
            "result = list(outer())"
        )
        assert value_of(source) == [5, 7]

    def test_decorators_that_are_module_attributes_run(self) -> None:
        """lru_cache, property and staticmethod work as decorators."""
        source = (
            "import functools\n@functools.lru_cache(maxsize=None)\n"
            "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
            "class A:\n    @property\n    def p(self):\n        return 3\n"
            "    @staticmethod\n    def s(x=4):\n        return x\n"
            "result = (fib(30), A().p, A.s())"
        )
        assert value_of(source) == (832040, 3, 4)


class TestClassReadGlobals:
    @pytest.mark.parametrize(
        ("source", "value"),
        [
            ("result = 5\nclass A:\n    result = result + 1\nresult = A.result", 6),
            ("result = 5\nclass A:\n    result = result + 1\nA.result", 5),
            ("delegate = 7\nclass A:\n    delegate = delegate\nresult = A.delegate", 7),
            ("content = 1\nclass A:\n    content = content\nresult = content", 1),
            (
                "str = lambda x: 'mine'\nclass A:\n    str = str\n"
                "def h():\n    return str(5)\nresult = (h(), A.str(1))",
                ("mine", "mine"),
            ),
        ],
    )
    def test_hoisted_names_are_the_programs_own(self, source: str, value: object) -> None:
        """A hoisted runtime name is rebound in the attempt's globals only."""
        assert value_of(source) == value

    def test_a_hoisted_forwarder_does_not_outlive_the_attempt(self) -> None:
        """The next attempt's ``delegate`` is the sandbox's forwarder again."""
        value_of("delegate = 7\nclass A:\n    delegate = delegate\nresult = 1")
        assert value_of("result = callable(delegate)") is True


class TestTextCall:
    ROWS = "x = [list(range(1000))] * 10000\n"

    @pytest.mark.parametrize(
        "source",
        [
            "f = lambda: str([1, 2])\nresult = f()",
            "def f(x=str([1, 2])):\n    return x\nresult = f()",
            "def d(s):\n    return lambda f: s\n@d(str([1, 2]))\ndef g(): pass\nresult = g",
        ],
    )
    def test_str_in_a_lambda_default_or_decorator_compiles(self, source: str) -> None:
        """The checked call is placed where it was written."""
        assert value_of(source) == "[1, 2]"

    def test_str_of_a_shared_structure_is_capped(self) -> None:
        """10 005 354 characters estimated, refused before the C call."""
        kind, message = error_of(self.ROWS + "result = len(str(x))")
        assert (kind, "10005354 items" in message) == ("resource_limit", True)

    def test_str_returning_a_non_string_is_a_type_error(self) -> None:
        """``__str__`` returning an int fails as in Python."""
        kind, message = error_of(
            "class A:\n    def __str__(self):\n        return 5\nresult = str(A())"
        )
        assert (kind, "__str__ returned non-string" in message) == ("execution", True)

    @pytest.mark.parametrize(
        "call",
        ["f = str\nresult = len(f(x))", "class S(str): pass\nresult = len(S(x))"],
    )
    def test_str_as_a_value_is_not_covered(self, call: str) -> None:
        """ADR 0092's documented gap: ``str`` not called by name is bounded by memory only."""
        assert value_of(self.ROWS + call) == 48920000


class TestInputFlow:
    @pytest.mark.parametrize(
        "code",
        [
            "x = args[0]\ndef d(f):\n    return x\n@d\ndef g(): pass\nresult = g",
            "seen = []\ndef d(f):\n    seen.append(args[0])\n    return f\n@d\n"
            "def g(): pass\nresult = seen",
            "f = lambda v=args[0]: v\nresult = f()",
            "x = args[0]\nf = lambda v=x: v\nresult = f()",
            "def h():\n    return (lambda *, v=args[0]: v)()\nresult = h()",
            "f = lambda v=(y := args[0]): 1\nf()\nresult = y",
            "@(lambda f, y=(z := args[0]): f)\ndef g(): pass\nresult = z",
            "x = args[0]\nclass A:\n    x = x\nresult = A.x",
        ],
    )
    def test_input_through_a_header_is_used(self, code: str) -> None:
        """Fixed: each answer is the input; the walk said ``ignored``."""
        assert input_flow(code) == "used"

    @pytest.mark.parametrize(
        "code",
        [
            "f = lambda v=args[0]: 'bonjour'\nresult = f()",
            "def d(f):\n    return 'bonjour'\n_ = args\n@d\ndef g(): pass\nresult = g",
            "x = args[0]\nclass A:\n    x = 'bonjour'\nresult = A.x",
            "class A(metaclass=type, v=args[0]):\n    pass\nresult = 1",
        ],
    )
    def test_constant_answers_stay_ignored(self, code: str) -> None:
        """The constant twins are not reused for other inputs."""
        assert input_flow(code) == "ignored"

    @pytest.mark.parametrize(
        "code",
        [
            "class B:\n    def __init_subclass__(cls, v=0):\n        cls.v = v\n"
            "class A(B, v=args[0]):\n    pass\nresult = A.v",
            "def d(v):\n    return lambda f: v\n@d(args[0])\ndef g(): pass\nresult = g",
            "def f(*, v=args[0]):\n    return v\nresult = f()",
            "[y := args[0] for _ in range(1)]\nresult = y",
            "match args:\n    case [y, *rest]:\n        pass\nresult = y",
            "match kwargs:\n    case {**rest}:\n        pass\nresult = rest",
            "def f():\n    def g():\n        global y\n        y = args[0]\n    g()\nf()\nresult = y",
            "def h():\n    x = args[0]\n    class A:\n        y = x\n    return A.y\nresult = h()",
        ],
    )
    def test_other_headers_held(self, code: str) -> None:
        """Class keywords, decorator arguments, defaults, walrus, match, nested global."""
        assert input_flow(code) == "used"

    def test_a_mutable_default_changed_through_a_return_is_open(self) -> None:
        """Left open (missed reuse): aliasing through a returned default is not followed."""
        code = "def f(acc=[]):\n    return acc\nf().append(args[0])\nresult = f()"
        assert input_flow(code) == "ignored"
