"""Side doors of issue 9: library code doing attribute work or graph walks for the program.

R1: helpers that read or write attributes by names the program picks (``functools.wraps``
with ``assigned``/``updated``, ``update_wrapper``, ``attrgetter``, ``abstractmethod``, ...).
R7: ``copy.deepcopy`` with a memo the program owns (its keep-alive list handed back the host
objects the copy walked) and ``copy`` running the reduce protocol on host objects. Each
payload ends in a typed error and leaves the host, every allowed module and the process-wide
settings exactly as they were (ADR 0020).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import types
from pathlib import Path

import pytest

from recurgent._sandbox import ExecutionSandbox, SandboxLimits

from .support import FakeClock, Host, error_of, execute, value_of
from .test_escapes import _host_fingerprint
from .test_fingerprint import process_fingerprint

_F = "def f(*a, **k):\n    return 'evil'\n"

WRAPS = [
    (
        "wraps-updated-globals",
        "import functools, itertools\n"
        + _F
        + "g = functools.wraps(itertools.count, assigned=(), updated=('__globals__',))(f)\n"
        "result = g()",
        "execution",
    ),
    (
        "wraps-rename-host",
        "import functools, json\n" + _F + "functools.wraps(f)(json.loads)",
        "execution",
    ),
    (
        "wraps-assigned-code",
        "import functools, json\n" + _F + "functools.wraps(f, assigned=('__code__',))(json.loads)",
        "execution",
    ),
    (
        "wraps-updated-dict",
        "import functools, json\n"
        + _F
        + "g = functools.wraps(json.loads, updated=('__dict__',))(f)",
        "execution",
    ),
    (
        "wraps-positional-names",
        "import functools, json\n"
        + _F
        + "g = functools.wraps(json.loads, ('__globals__',), ())(f)",
        "execution",
    ),
    ("wraps-builtin-target", "import functools\n" + _F + "functools.wraps(f)(range)", "execution"),
    (
        "wraps-facade-target",
        "import functools, json\n" + _F + "functools.wraps(f)(json)",
        "execution",
    ),
    (
        "wraps-handle-target",
        "import functools\n" + _F + "functools.wraps(f)(delegate('helper'))",
        "execution",
    ),
    (
        "update-wrapper",
        "import functools, json\n" + _F + "functools.update_wrapper(f, json.loads, ('__code__',))",
        "execution",
    ),
    (
        "total-ordering-host",
        "import functools, json\nfunctools.total_ordering(json.JSONDecoder)",
        "execution",
    ),
    ("cache-host-function", "import functools, json\ng = functools.cache(json.loads)", "execution"),
    (
        "lru-cache-host-function",
        "import functools, json\ng = functools.lru_cache(maxsize=None)(json.loads)",
        "execution",
    ),
    (
        "abstractmethod-host",
        "import numbers, json\nnumbers.abstractmethod(json.loads)",
        "execution",
    ),
    (
        "attrgetter-globals",
        "import operator\n" + _F + "operator.attrgetter('__globals__')(f)",
        "execution",
    ),
    (
        "methodcaller-reduce",
        "import operator\nresult = operator.methodcaller('__reduce_ex__', 4)(range)",
        "execution",
    ),
    (
        "reduce-getattr",
        "import functools\n" + _F + "functools.reduce(getattr, ['__globals__'], f)",
        "execution",
    ),
    ("map-getattr", _F + "result = list(map(getattr, [f], ['__globals__']))", "execution"),
    (
        "partial-func",
        "import functools, json\nresult = functools.partial(json.loads).func",
        "execution",
    ),
    ("import-copyreg", "import copyreg\nresult = copyreg.dispatch_table", "execution"),
    ("copy-dispatch-table", "import copy\nresult = copy.dispatch_table", "execution"),
]

COPIES = [
    (
        "deepcopy-memo",
        "import copy\nm = {}\ncopy.deepcopy([[1]], m)\nresult = list(m.values())",
        "execution",
    ),
    ("deepcopy-memo-keyword", "import copy\nm = {}\ncopy.deepcopy([1], memo=m)", "execution"),
    (
        "deepcopy-memo-prefilled",
        "import copy\nm = {1: 2}\nresult = copy.deepcopy([1], m)",
        "execution",
    ),
    ("deepcopy-host-memory", "import copy\nresult = copy.deepcopy(context)", "execution"),
    ("copy-host-partial", "import copy\nresult = copy.copy(context['formatter'])", "execution"),
    ("copy-facade", "import copy, json\nresult = copy.copy(json)", "execution"),
    (
        "copy-sealed-iterator-factory",
        "import copy, itertools\nresult = copy.copy(itertools.count)",
        "execution",
    ),
    (
        "copy-ticking-iterator",
        "import copy, itertools\nresult = copy.copy(itertools.count())",
        "execution",
    ),
    (
        "deepcopy-host-function",
        "import copy, json\nresult = copy.deepcopy({'f': json.loads})",
        "execution",
    ),
    ("deepcopy-outcome", "import copy\nresult = copy.deepcopy(Outcome.ok(1))", "execution"),
    ("copy-handle", "import copy\nresult = copy.copy(delegate('helper'))", "execution"),
    (
        "deepcopy-own-object-holding-module",
        "import copy, json\nclass A:\n    pass\na = A()\na.m = json\nresult = copy.deepcopy(a)",
        "execution",
    ),
    ("deepcopy-iterator", "import copy\nresult = copy.deepcopy(iter([1, 2]))", "execution"),
    (
        "copy-partial",
        "import copy, functools\nresult = copy.copy(functools.partial(print, 1))",
        "execution",
    ),
]

PROCESS_STATE = [
    ("csv-field-size-limit", "import csv\ncsv.field_size_limit(1)", "execution"),
    ("random-setstate", "import random\nrandom.setstate(random.getstate())", "execution"),
    (
        "decimal-localcontext",
        "import decimal\nwith decimal.localcontext() as c:\n    c.prec = 1",
        "none",  # a copy of the attempt's own context (ADR 0048); the host's is unchanged
    ),
    ("time-tzset", "import time\ntime.tzset()", "execution"),
    ("re-purge", "import re\nre.purge()", "execution"),
    ("urllib-clear-cache", "import urllib.parse\nurllib.parse.clear_cache()", "execution"),
]

SIDE_DOORS = WRAPS + COPIES + PROCESS_STATE


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Host:
    """A host whose memory holds a partial over a host function, as in the escape corpus."""
    monkeypatch.chdir(tmp_path)
    return Host(memory={"note": "kept", "formatter": functools.partial(os.getenv, "HOME")})


class TestSideDoorsAreClosed:
    """Every side-door payload fails with a typed error and changes nothing in the host."""

    def test_the_table_has_unique_ids_and_code(self) -> None:
        """Every payload has its own id and its own code."""
        ids = [name for name, _, _ in SIDE_DOORS]
        codes = [code for _, code, _ in SIDE_DOORS]
        assert (len(ids) >= 30, len(set(ids)), len(set(codes))) == (True, len(ids), len(codes))

    @pytest.mark.parametrize(
        ("code", "error_type"), [p[1:] for p in SIDE_DOORS], ids=[p[0] for p in SIDE_DOORS]
    )
    def test_payload_fails_typed_and_host_unchanged(
        self, host: Host, tmp_path: Path, code: str, error_type: str
    ) -> None:
        """The payload's error type is the expected one; host, modules and settings unchanged."""
        before = (_host_fingerprint(tmp_path), process_fingerprint(), dict(host.memory))
        result = execute(
            code,
            host=host,
            limits=SandboxLimits(timeout_seconds=2.0, max_forwarded_calls=50),
            clock=FakeClock(step=0.01),
        )
        observed = result.error.error_type if result.error else "none"
        after = (_host_fingerprint(tmp_path), process_fingerprint(), dict(host.memory))
        assert (observed, result.value, after) == (error_type, None, before), str(result.error)


class TestMessages:
    """The refusals say what the sandbox allows instead."""

    def test_wraps_with_custom_names_explains_itself(self) -> None:
        """``wraps(..., updated=...)`` is refused with the names it does copy."""
        assert error_of("import functools\n" + _F + "functools.wraps(f, updated=())(f)") == (
            "execution",
            "Execution error in tester.run: PermissionError: functools.wraps() takes no "
            "assigned= or updated= in the sandbox: it copies __name__, __qualname__, __doc__ "
            "and __module__ only",
        )

    def test_wraps_on_a_host_function_is_refused(self) -> None:
        """``wraps(f)(json.loads)`` is refused and ``json.loads`` keeps its name."""
        outcome = error_of("import functools, json\n" + _F + "functools.wraps(f)(json.loads)")
        assert (outcome, json.loads.__name__) == (
            (
                "execution",
                "Execution error in tester.run: TypeError: functools.wraps() can only update "
                "functions or objects your code defined",
            ),
            "loads",
        )

    def test_deepcopy_with_a_memo_is_refused(self) -> None:
        """A memo argument is refused before the copy starts."""
        assert error_of("import copy\ncopy.deepcopy([1], {})") == (
            "execution",
            "Execution error in tester.run: TypeError: copy.deepcopy() takes no memo in the "
            "sandbox: the memo would hand back the objects the copy walked",
        )


class TestWhatStillWorks:
    """The re-implemented helpers keep the behaviour programs rely on."""

    def test_wraps_between_own_functions_copies_name_doc_and_dict(self) -> None:
        """``@functools.wraps(inner)`` on an own wrapper copies name, doc and attributes."""
        source = """
            import functools
            def inner(x):
                "Doubles."
                return x * 2
            inner.tag = 'kept'
            def deco(fn):
                @functools.wraps(fn)
                def wrapper(*a):
                    return fn(*a) + 1
                return wrapper
            g = deco(inner)
            result = [g.__name__, g(3), g.tag]
        """
        assert value_of(source) == ["inner", 7, "kept"]

    def test_wraps_copies_the_name_of_a_served_function(self) -> None:
        """Wrapping a served function copies its plain-text name onto the own wrapper."""
        source = (
            "import functools, json\n"
            + _F
            + "g = functools.wraps(json.loads)(f)\nresult = g.__name__"
        )
        assert value_of(source) == "loads"

    def test_lru_cache_and_cache_on_own_functions(self) -> None:
        """Both decorator forms cache the program's own functions."""
        source = """
            import functools
            @functools.lru_cache(maxsize=None)
            def fib(n):
                return n if n < 2 else fib(n - 1) + fib(n - 2)
            @functools.cache
            def sq(n):
                return n * n
            @functools.lru_cache
            def cube(n):
                return n ** 3
            result = [fib(30), sq(4), cube(2), fib.cache_info().hits > 0]
        """
        assert value_of(source) == [832040, 16, 8, True]

    def test_total_ordering_on_an_own_class(self) -> None:
        """``total_ordering`` fills in the comparisons of a class the program defined."""
        source = """
            import functools
            @functools.total_ordering
            class V:
                def __init__(self, n):
                    self.n = n
                def __eq__(self, other):
                    return self.n == other.n
                def __lt__(self, other):
                    return self.n < other.n
            result = [V(1) <= V(2), V(3) >= V(2), V(1) > V(2)]
        """
        assert value_of(source) == [True, True, False]

    def test_copies_of_plain_data_and_own_objects(self) -> None:
        """copy and deepcopy still copy containers, numbers and the program's objects."""
        source = """
            import copy, decimal, collections
            class P:
                def __init__(self):
                    self.items = [1, [2]]
            p = P()
            q = copy.deepcopy(p)
            q.items[1].append(3)
            s = copy.copy(p)
            data = {'a': [1, {2}], 'd': decimal.Decimal('1.5'), 'c': collections.Counter('aab')}
            deep = copy.deepcopy(data)
            deep['a'][0] = 9
            result = [p.items, q.items, s.items is p.items, data['a'][0], deep['c']['a']]
        """
        assert value_of(source) == [[1, [2]], [1, [2, 3]], True, 1, 2]


def _host_function() -> None:
    """A host function carrying a public attribute."""


_host_function.secret = "host"  # type: ignore[attr-defined]


class TestExplicitTrust:
    """The guard trusts explicit types only: runtime internals never pass (issue 9)."""

    @pytest.mark.parametrize(
        ("obj", "name"),
        [
            pytest.param(types.ModuleType("m", "doc"), "x", id="module"),
            pytest.param(json, "loads", id="real-json-module"),
            pytest.param(_host_function, "secret", id="host-function"),
            pytest.param(types.CellType("inside"), "cell_contents", id="cell"),
            pytest.param(sys._getframe(), "f_globals", id="frame"),
            pytest.param(_host_function.__code__, "co_consts", id="code"),
            pytest.param(Host().child, "x", id="bound-method"),
        ],
    )
    def test_runtime_internals_never_pass_the_guard(self, obj: object, name: str) -> None:
        """Reading a public attribute of a module, host function, cell, frame or code fails."""
        sandbox = ExecutionSandbox(Host().bridge(), limits=SandboxLimits(timeout_seconds=5.0))
        read = sandbox._namespace["_getattr_"]
        if isinstance(obj, types.ModuleType) and obj is not json:
            # Only the throwaway module gets the attribute: the real json must stay untouched
            # (it leaked into the catalog completeness spec when this ran first).
            obj.x = 1  # type: ignore[attr-defined]
        with pytest.raises(AttributeError, match="is not accessible in the sandbox") as caught:
            read(obj, name)
        assert type(caught.value) is AttributeError

    def test_builtin_exceptions_and_properties_stay_readable(self) -> None:
        """The explicitly trusted builtin types keep their public attributes."""
        source = """
            class P:
                def __init__(self):
                    self.raw = 1
                @property
                def v(self):
                    return self.raw
                @v.setter
                def v(self, value):
                    self.raw = value
            p = P()
            p.v = 5
            try:
                int('x')
            except ValueError as e:
                args = e.args
            result = [p.v, args[0][:7]]
        """
        assert value_of(source) == [5, "invalid"]
