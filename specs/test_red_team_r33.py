"""Red team R33: library functions doing text or arithmetic work for the program, objects that
come back to the host, single C calls with huge arguments, and ADR 0161's patch levels through
``setdefault`` and ``|=``, attacked as a generated program would.

Broken, and fixed (ADR 0167):

- **``+`` in a C loop.** ``operator.add``, ``concat``, ``iadd`` and ``iconcat`` were the C
  functions, and ``itertools.accumulate``'s default step is C's ``+``: ``functools.reduce``
  or ``accumulate`` over them copied a growing total in one C call, with no Python frame for
  the deadline to stop and no count (``sum()`` counts the same total, ``_checked_sum``).
  ``functools.reduce(operator.add, [[0] * 10**6] * 100)`` ran 31.6 s under a 5 s deadline
  (a tuple's 29.2 s) and built a 100 000 000-item list; of a million-character string,
  100 000 000 characters in 3.4 s (bytes likewise); ``collections.deque(accumulate([S] *
  100), maxlen=1)`` 100 000 000 characters; ``operator.concat(x, x)`` seven times
  128 000 000. Now each is a Python frame that counts two exact sequences' items as ``sum()``
  does (``operator.add would create N items``).
- **``re.escape``** (the standard module's, served as is) writes a backslash before each
  special character: ``re.escape('.' * 9000000)`` wrote 18 000 000 characters (bytes
  likewise). Counted exactly first now.
- **``UserString(seq)``** wrote ``str(seq)`` in one C call of library code after an estimate
  counting a program object as small: ``str(collections.UserString([E()] * 100))``, ``E``'s
  ``__repr__`` a shared million-character string, 100 000 200 characters (a keyword ``seq``
  and a program subclass likewise). ``seq`` is written by ``text_of`` now, in steps.
- **``math.prod`` of a sequence** repeated it in one C call; only ints' bits were checked:
  ``math.prod([100] * 4, start='a')`` wrote 100 000 000 characters (a list ``start``, a str
  factor, bytes likewise). A product holding a sequence is multiplied a factor at a time by the
  checked ``*`` now.

Left: ADR 0162's ``ChainMap`` and ``functools.partial`` of program reprs (strict xfails,
``TestLeft``): ``repr(collections.ChainMap({'a': [E()] * 100}))`` 100 000 217 characters,
``repr(functools.partial(print, *[E()] * 100))`` 100 000 235. A program's own ``s + s`` stays
unchecked (as ADR 0165 records); only the library's C loops over ``+`` are counted. An
``io.StringIO`` written ``S`` a hundred times answers a 100 000 000-character ``getvalue()``
(linear in the program's steps, as ``s + s``; the memory cap bounds it).

Held (pinned here): an in-place patch through ``setdefault`` or ``|=`` on a nested dict of a
shared memory is counted at the deepest place memory holds it; a program ``dict`` subclass
lying in its ``keys``/``__getitem__``/``__repr__`` leaves as its own items, a plain dict, in
the result and in memory; ``json.dumps`` with a program ``default``, ``string.Template`` of
a program object, ``str.translate`` with a program mapping and ``textwrap.indent`` are
counted before they write.
"""

from __future__ import annotations

from typing import Any

import pytest

from recurgent._journal import Journal
from recurgent._levels import MemoryShape
from recurgent._sandbox import rebuild
from recurgent.errors import NonSerializableResultError
from specs.sandbox.support import error_of, probe_agent, result_in_python, value_of

_S = "S = 'a' * 10**6\n"
_E = (
    _S
    + "class E:\n    def __str__(self):\n        return S\n    def __repr__(self):\n        return S\n"
)


def _refusal(what: str, items: int) -> tuple[str, str]:
    return (
        "resource_limit",
        f"Resource limit in tester.run: {what} would create {items} items; the sandbox limit "
        "is 10000000",
    )


# --- 1. + in a C loop ----------------------------------------------------------------------


class TestAddInACLoop:
    """Fixed: the library's C loops over ``+`` copied a growing total unchecked, past the
    deadline."""

    @pytest.mark.parametrize(
        ("source", "items"),
        [
            ("x = functools.reduce(operator.add, [S] * 100)", 11000000),
            ("x = functools.reduce(operator.add, [b'a' * 10**6] * 100)", 11000000),
            ("x = functools.reduce(operator.add, [[0] * 10**6] * 100)", 11000000),
            ("x = functools.reduce(operator.add, [(0,) * 10**6] * 100)", 11000000),
            ("x = functools.reduce(operator.iadd, [[0] * 10**6] * 100, [])", 11000000),
            ("x = functools.reduce(operator.iconcat, [[0] * 10**6] * 100, [])", 11000000),
            (
                "x = collections.deque(itertools.accumulate([S] * 100), maxlen=1)",
                11000000,
            ),
            ("x = list(itertools.accumulate([S] * 20, operator.concat))", 11000000),
            ("x = S\nfor i in range(7):\n    x = operator.concat(x, x)", 16000000),
            ("x = list(itertools.starmap(operator.add, [(S * 9, S * 9)]))", 18000000),
        ],
        ids=[
            "reduce-str",
            "reduce-bytes",
            "reduce-list",
            "reduce-tuple",
            "reduce-iadd",
            "reduce-iconcat",
            "accumulate-default",
            "accumulate-concat",
            "concat-doubling",
            "starmap",
        ],
    )
    def test_a_growing_total_is_counted(self, source: str, items: int) -> None:
        """Payload: ``reduce`` or ``accumulate`` over ``+`` of a million items a hundred times
        (before: 100 000 000 items; a list's 31.6 s under a 5 s deadline)."""
        program = "import collections, functools, itertools, operator\n" + _S + source
        assert error_of(program) == _refusal("operator.add", items)

    def test_honest_additions_answer_as_python(self) -> None:
        source = (
            "import functools, itertools, operator\n"
            "L = [1]\n"
            "r = operator.iadd(L, [2])\n"
            "result = [list(itertools.accumulate([1, 2, 3])),\n"
            "  list(itertools.accumulate([1, 2], initial=5)),\n"
            "  list(itertools.accumulate([3, 1, 2], max)), operator.add('a', 'b'),\n"
            "  operator.concat([1], [2]), r is L, L, operator.iconcat([1], (2,)),\n"
            "  functools.reduce(operator.add, ['a', 'b', 'c']), operator.add(1, 2.5),\n"
            "  operator.iadd('x', 'y'), operator.add((1,), (2,)), len(operator.add(S, S))]\n"
        )
        assert value_of(_S + source) == result_in_python(_S + source)

    def test_concat_of_numbers_is_still_refused_as_python(self) -> None:
        assert error_of("import operator\nresult = operator.concat(1, 2)") == (
            "execution",
            "Execution error in tester.run: TypeError: 'int' object can't be concatenated",
        )


# --- 2. re.escape ----------------------------------------------------------------------------


class TestReEscapeCounted:
    """Fixed: ``re.escape`` (the standard module's, served as is) writes two characters for
    each special one, uncounted."""

    @pytest.mark.parametrize(
        ("source", "items"),
        [
            ("re.escape('.' * 9000000)", 18000000),
            ("re.escape(b'\\n' * 6000000)", 12000000),
            ("re.escape('a' * 5000000 + ' ' * 5000001)", 15000002),
        ],
        ids=["dots", "bytes", "spaces"],
    )
    def test_escapes_are_counted(self, source: str, items: int) -> None:
        """Payload: ``re.escape('.' * 9000000)`` (before: 18 000 000 characters)."""
        assert error_of(f"import re\nresult = len({source})") == _refusal("re.escape()", items)

    def test_honest_escapes_answer_as_python(self) -> None:
        source = (
            "import re\nresult = [re.escape('a.b*c'), re.escape(b'x+y\\n'),\n"
            "  re.escape('()[]{}?*+-|^$\\\\.&~# \\t\\n\\r\\v\\f'), len(re.escape('.' * 4999999))]"
        )
        assert value_of(source) == result_in_python(source)


# --- 3. UserString(seq) ----------------------------------------------------------------------


class TestUserStringOfProgramCode:
    """Fixed: ``UserString(seq)`` writes ``str(seq)`` in one C call of library code, checked by
    an estimate that counts a program object as small."""

    @pytest.mark.parametrize(
        "call",
        [
            "collections.UserString([E()] * 100)",
            "collections.UserString(seq=[E()] * 100)",
            "U([E()] * 100)",
        ],
        ids=["served", "keyword", "subclass"],
    )
    def test_program_text_is_written_in_steps(self, call: str) -> None:
        """Payload: ``str(collections.UserString([E()] * 100))``, ``E.__repr__`` returning a
        shared million-character string (before: 100 000 200 characters)."""
        source = _E + "import collections\nclass U(collections.UserString):\n    pass\n"
        assert error_of(source + f"result = len({call})") == _refusal("UserString()", 10000019)

    def test_honest_user_strings_answer_as_python(self) -> None:
        source = (
            "import collections\nclass U(collections.UserString):\n    pass\n"
            "class A:\n    def __str__(self):\n        return 'A!'\n"
            "result = [str(collections.UserString([1, 'x'])), str(collections.UserString(seq=3)),\n"
            "  str(U(A())), str(collections.UserString(A())), str(U(b'x')),\n"
            "  type(collections.UserString(collections.UserString('q')).data).__name__]\n"
        )
        assert value_of(source) == result_in_python(source)


# --- 4. math.prod of sequences ----------------------------------------------------------------


class TestProdOfSequences:
    """Fixed: ``math.prod`` checked its ints' bits, and a sequence among its factors (or its
    ``start``) was repeated in one C call, unchecked."""

    @pytest.mark.parametrize(
        "call",
        [
            "math.prod([100] * 4, start='a')",
            "math.prod([10] * 8, start=[0])",
            "math.prod(['a', 10**8])",
            "math.prod([10**8], start=b'a')",
        ],
        ids=["str-start", "list-start", "str-factor", "bytes-start"],
    )
    def test_repetition_is_counted(self, call: str) -> None:
        """Payload: ``math.prod([100] * 4, start='a')`` (before: 100 000 000 characters)."""
        assert error_of(f"import math\nresult = len({call})") == _refusal(
            "sequence repetition", 100000000
        )

    def test_honest_products_answer_as_python(self) -> None:
        source = (
            "import fractions, math\n"
            "result = [math.prod([2, 3], start='ab'), math.prod(['x', 3]), math.prod([3, (1,)]),\n"
            "  math.prod([]), math.prod([2, 3.5]), math.prod([fractions.Fraction(1, 3), 3]),\n"
            "  math.prod([2], start=[0]), math.prod(range(1, 20))]\n"
        )
        assert value_of(source) == result_in_python(source)


# --- 5. Left ---------------------------------------------------------------------------------


class TestLeft:
    @pytest.mark.xfail(
        strict=True,
        reason="ADR 0162's Left, still open: a ChainMap's and a functools.partial's repr "
        "(library code) write a program object's repr in one C call after an estimate that "
        "counts it as small. Proposed fix: shapes in _stepped_text (ChainMap: "
        "'Name(' + ', '.join of its maps' text_of + ')'; partial: its qualname, func, args "
        "and k=v reprs) and _COMPOSED containers answering speaks/iterates in the walk.",
    )
    @pytest.mark.parametrize(
        "call",
        [
            "collections.ChainMap({'a': [E()] * 100})",
            "functools.partial(print, *[E()] * 100)",
        ],
        ids=["chainmap", "partial"],
    )
    def test_composed_reprs_of_program_code(self, call: str) -> None:
        """Payload: ``repr(collections.ChainMap({'a': [E()] * 100}))`` wrote 100 000 217
        characters; ``repr(functools.partial(print, *[E()] * 100))`` 100 000 235 (3.1 s)."""
        source = _E + f"import collections, functools\nresult = len(repr({call}))"
        assert error_of(source)[0] == "resource_limit"


# --- 6. Held ---------------------------------------------------------------------------------


def _wrapped(part: Any, levels: int) -> list[Any]:
    top: list[Any] = [part]
    for _ in range(levels - 1):
        top = [top]
    return top


def _deepest(value: Any) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, list | dict):
            deepest = max(deepest, level + 1)
            stack.extend(
                (p, level + 1) for p in (node.values() if isinstance(node, dict) else node)
            )
    return deepest


def _setdefault_nested(view: Any) -> None:
    view["z"].setdefault("a", {}).setdefault("k", _wrapped([], 10))


def _ior_nested(view: Any) -> None:
    inner = view["z"].setdefault("a", {})
    inner |= {"k": _wrapped([], 10)}


def _ior_through_the_deep_place(view: Any) -> None:
    inner = view["b"]
    for _ in range(60):
        inner = inner[0]
    inner |= {"k": _wrapped([], 10)}


class TestHeld:
    @pytest.mark.parametrize(
        "patch",
        [_setdefault_nested, _ior_nested, _ior_through_the_deep_place],
        ids=["setdefault", "ior", "ior-deep"],
    )
    def test_dict_patches_count_at_the_deepest_place(self, patch: Any) -> None:
        """Memory: ``z`` a dict, ``b`` 60 lists around it (shared, marked). Payload: ten
        levels set into ``z`` (or a dict it gets) by ``setdefault`` or ``|=``: refused,
        memory unchanged."""
        z: dict[str, Any] = {}
        memory: dict[str, Any] = {"z": z, "b": _wrapped(z, 60)}
        shape = MemoryShape()
        shape.shared = True
        journal = Journal(memory, shape=shape)
        patch(journal.view)
        with pytest.raises(NonSerializableResultError):
            journal.prepare(rebuild).apply(memory)
        assert (z, _deepest(memory["b"])) == ({}, 61)

    def test_a_lying_dict_subclass_leaves_as_its_items(self) -> None:
        lying = (
            "class D(dict):\n    def __repr__(self):\n        return 'D!'\n"
            "    def keys(self):\n        return ['x']\n"
            "    def __getitem__(self, k):\n        return 'evil'\n"
        )
        agent = probe_agent(
            {
                "give": lying + "return [{'k': D(a=[1])}]",
                "keep": lying + "context['m'] = D(a=1)\ncontext.setdefault('n', D(b=2))\nreturn 1",
            }
        )
        given = agent.give().value
        assert agent.keep().is_ok
        memory = agent.runtime_context
        kinds = [type(given[0]["k"]), type(memory["m"]), type(memory["n"])]
        assert (given, memory["m"], memory["n"], kinds) == (
            [{"k": {"a": [1]}}],
            {"a": 1},
            {"b": 2},
            [dict, dict, dict],
        )

    @pytest.mark.parametrize(
        ("source", "refusal"),
        [
            (
                "import json\nresult = json.dumps([E()] * 100, default=str)",
                _refusal("json.dumps()", 10000039),
            ),
            (
                "import string\nresult = string.Template('$a' * 100).substitute(a=E())",
                _refusal("re.sub", 10000200),
            ),
            (
                "class M(dict):\n    def __getitem__(self, k):\n        return S\n"
                "result = ('a' * 100).translate(M())",
                _refusal("str.translate", 100000000),
            ),
            (
                "import textwrap\nresult = textwrap.indent('a\\n' * 100000, 'x' * 1000)",
                _refusal("textwrap.indent()", 100201000),
            ),
        ],
        ids=["json-default", "template", "translate", "textwrap-indent"],
    )
    def test_library_text_is_counted(self, source: str, refusal: tuple[str, str]) -> None:
        assert error_of(_E + source) == refusal
