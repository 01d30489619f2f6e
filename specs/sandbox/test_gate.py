"""The gate into library code: exact built-in values in (ADR 0091).

A program's subclass of ``str`` (or ``bytes``, ``int``, ``float``, ``tuple``, ``frozenset``)
brings its own ``__eq__``/``__hash__`` and methods into whatever receives it. These specs pin
that library code and the runtime's own checks receive exact built-in values, so no
process-wide cache keeps a program object and no check is answered by a program's method.
"""

from __future__ import annotations

import collections
import datetime
import time
import typing
import urllib.parse
import xml.etree.ElementTree as ElementTree
import zoneinfo
from typing import Any

import pytest

from recurgent._sandbox import SandboxLimits
from recurgent._sandbox._gate import GatedCall, exact, exact_args, exact_name, gate
from recurgent._sandbox._made import SandboxType
from recurgent._sandbox._typing_forms import TypingForm, as_form
from specs.sandbox.support import Host, error_of, execute, value_of

# A str subclass whose equality never answers: were it kept in a cache, every later lookup
# the host makes with a colliding hash would run it (and, after the attempt, raise its stop).
_HOSTILE = (
    "class S(str):\n"
    "    def __hash__(self):\n"
    "        return hash({key!r})\n"
    "    def __eq__(self, other):\n"
    "        while True:\n"
    "            pass\n"
)


def _hostile(key: str) -> str:
    return _HOSTILE.format(key=key)


class TestExact:
    """``exact`` makes program subclasses of immutable built-ins their base type."""

    def test_subclass_instances_become_their_base_type(self) -> None:
        """Each comes back as an exact built-in with the same value."""

        class S(str):
            def upper(self) -> str:
                return "program"

        class I(int):  # noqa: E742 - the name says what it stands for
            pass

        class F(float):
            pass

        class B(bytes):
            pass

        # The program's tuple classes are made by the sandbox's metaclass.
        T = SandboxType("T", (tuple,), {})

        class FS(frozenset):  # type: ignore[type-arg]
            pass

        values = [exact(S("a")), exact(I(3)), exact(F(1.5)), exact(B(b"x")), exact(T((1,)))]
        values.append(exact(FS({S("k")})))
        assert [type(value) for value in values] == [str, int, float, bytes, tuple, frozenset]
        assert values == ["a", 3, 1.5, b"x", (1,), frozenset({"k"})]
        assert [type(item) for item in values[5]] == [str]

    def test_members_of_tuples_are_converted_and_plain_values_kept(self) -> None:
        """A tuple holding a subclass instance is rebuilt; exact values keep their identity."""

        class S(str):
            pass

        plain = ("a", 1, None)
        nested = (1, ("x", S("y")))
        rows = [S("kept")]

        assert exact(plain) is plain
        assert exact(nested) == (1, ("x", "y")) and type(exact(nested)[1][1]) is str
        assert exact(rows) is rows and type(rows[0]) is S
        assert exact(True) is True

    def test_a_host_tuple_class_of_exact_values_is_kept(self) -> None:
        """A tuple subclass that is not the program's (``struct_time``) keeps its class."""
        moment = time.gmtime(0)
        assert exact(moment) is moment

    def test_a_namedtuple_keeps_its_class(self) -> None:
        """A namedtuple of exact values is kept; one holding a subclass is rebuilt as itself."""
        point = collections.namedtuple("point", "x y")

        class S(str):
            pass

        kept = point(1, 2)
        rebuilt = exact(point(S("a"), 2))

        assert exact(kept) is kept
        assert (type(rebuilt), rebuilt, type(rebuilt.x)) == (point, point("a", 2), str)

    def test_shared_tuples_are_walked_once(self) -> None:
        """Three levels of a shared tuple (10**9 members) convert at once."""
        # Declared as tuples of any length: mypy multiplies a tuple by a literal count into a
        # fixed-length tuple type, and 10**9 items took it minutes and gigabytes.
        row: tuple[int, ...] = (0,) * 1000
        level: tuple[tuple[int, ...], ...] = (row,) * 1000
        deep: tuple[tuple[tuple[int, ...], ...], ...] = (level,) * 1000
        started = time.monotonic()
        assert exact(deep) is deep
        assert time.monotonic() - started < 2.0

    def test_keyword_names_and_values(self) -> None:
        """Keyword names are exact strs; a name that is no str is refused."""

        class S(str):
            pass

        args, kwargs = exact_args((S("a"),), {S("k"): S("v")})
        assert (args, kwargs) == (("a",), {"k": "v"})
        assert [type(args[0]), *map(type, kwargs), *map(type, kwargs.values())] == [str] * 3
        with pytest.raises(TypeError, match="attribute name must be a str, not int"):
            exact_name(5)

    def test_gated_functions_are_shared_and_sealed(self) -> None:
        """One gate per function; classes and sealed callables pass as they are."""
        gated = gate(urllib.parse.urlsplit, "urlsplit")
        assert isinstance(gated, GatedCall) and gate(urllib.parse.urlsplit) is gated
        assert gate(collections.deque) is collections.deque
        assert gate(gated) is gated


class TestNoCacheKeepsAProgramObject:
    """Process-wide caches of the standard library get exact keys (the class 3 of issue 21)."""

    @pytest.mark.parametrize(
        ("key", "call", "expected"),
        [
            ("%Y-%m-%d", "time.strptime('2026-12-02', S('%Y-%m-%d'))[:3]", [2026, 12, 2]),
            (
                "%Y-%m-%d",
                "str(datetime.datetime.strptime('2026-12-02', S('%Y-%m-%d')))",
                "2026-12-02 00:00:00",
            ),
            (
                "%Y-%m-%d",
                "str(datetime.datetime(2020, 1, 1).strptime('2026-12-02', S('%Y-%m-%d')))",
                "2026-12-02 00:00:00",
            ),
            ("UTC", "str(zoneinfo.ZoneInfo(S('UTC')))", "UTC"),
            (
                "http://example.com/x",
                "urllib.parse.urlsplit(S('http://example.com/x'))[1]",
                "example.com",
            ),
            (".//item", "len(ElementTree.fromstring('<a><item/></a>').findall(S('.//item')))", 1),
            ("a", "repr(typing.Literal[S('a')])", "typing.Literal['a']"),
            ("int", "repr(typing.Optional[S('int')])", "typing.Optional[ForwardRef('int')]"),
        ],
    )
    def test_the_hosts_lookups_run_no_program_code(
        self, key: str, call: str, expected: Any
    ) -> None:
        """The program's call works; afterwards the host's own calls with the colliding key
        return their usual values (with the program's key cached, they would loop, then raise
        the attempt's stop)."""
        source = (
            "import time, datetime, zoneinfo, urllib.parse, typing\n"
            "import xml.etree.ElementTree as ElementTree\n" + _hostile(key) + f"value = {call}\n"
            "result = list(value) if isinstance(value, tuple) else value\n"
        )

        result = execute(source, limits=SandboxLimits(timeout_seconds=2.0))

        assert (result.error, result.value) == (None, expected)
        assert time.strptime("2026-12-02", "%Y-%m-%d")[:3] == (2026, 12, 2)
        assert datetime.datetime.strptime("2026-12-02", "%Y-%m-%d").day == 2
        assert str(zoneinfo.ZoneInfo("UTC")) == "UTC"
        assert urllib.parse.urlsplit("http://example.com/x").netloc == "example.com"
        assert len(ElementTree.fromstring("<a><item/></a>").findall(".//item")) == 1
        assert repr(typing.Literal["a"]) == "typing.Literal['a']"
        assert repr(typing.Optional["int"]) == "typing.Optional[ForwardRef('int')]"


class TestTheRuntimeReadsExactNames:
    """The runtime's own checks read an exact name, never a program's str methods."""

    @pytest.mark.parametrize(
        "read",
        ["getattr(f, S('__globals__'))", "hasattr(f, S('__globals__')) or fail()"],
    )
    def test_a_private_name_stays_private(self, read: str) -> None:
        """A name whose ``startswith`` answers False is still refused as private."""
        source = (
            "class S(str):\n"
            "    def startswith(self, *args):\n"
            "        return False\n"
            "def f():\n"
            "    return 1\n"
            "def fail():\n"
            "    raise ValueError('hidden')\n"
            f"result = {read}\n"
        )

        error_type, message = error_of(source)

        assert error_type == "execution"
        assert "private" in message or "hidden" in message

    def test_setattr_names_are_exact(self) -> None:
        """``setattr`` with a str subclass name writes the plain name on the program's object."""
        source = (
            "class S(str):\n"
            "    def startswith(self, *args):\n"
            "        return False\n"
            "class Box:\n"
            "    pass\n"
            "b = Box()\n"
            "setattr(b, S('size'), 3)\n"
            "result = b.size\n"
        )
        assert value_of(source) == 3

    def test_a_request_url_is_checked_as_it_is_sent(self) -> None:
        """A URL whose methods show the network policy another host is refused by its text."""
        source = (
            "import urllib.request\n"
            "class S(str):\n"
            "    def lstrip(self, *args):\n"
            "        return 'http://allowed.test/'\n"
            "    def strip(self, *args):\n"
            "        return 'http://allowed.test/'\n"
            "urllib.request.urlopen(S('http://127.0.0.1:9/'))\n"
        )

        result = execute(source, network=["allowed.test"])

        assert result.error is not None
        assert "not in this agent's network allow-list" in str(result.error)


class TestZoneInfo:
    """``zoneinfo.ZoneInfo`` is served gated and still behaves as the class."""

    def test_instances_types_and_class_methods(self) -> None:
        """``isinstance``, ``type()`` and ``no_cache`` answer as they do on the real class."""
        source = (
            "import zoneinfo\n"
            "z = zoneinfo.ZoneInfo('Europe/Paris')\n"
            "result = [str(z), isinstance(z, zoneinfo.ZoneInfo), type(z) is zoneinfo.ZoneInfo,\n"
            "          str(zoneinfo.ZoneInfo.no_cache('UTC')), z is zoneinfo.ZoneInfo('Europe/Paris')]\n"
        )
        assert value_of(source) == ["Europe/Paris", True, True, "UTC", True]

    def test_the_cache_stays_unreachable(self) -> None:
        """``clear_cache`` stays denied, on the stand-in as on an instance."""
        for read in ("zoneinfo.ZoneInfo.clear_cache", "zoneinfo.ZoneInfo('UTC').clear_cache"):
            error_type, message = error_of(f"import zoneinfo\nresult = {read}")
            assert (
                error_type,
                message.endswith("ZoneInfo.clear_cache is not available in the sandbox"),
            ) == (
                "execution",
                True,
            )


class TestTypingForms:
    """typing's subscriptable forms take exact parameters and work as before."""

    def test_annotations_and_aliases_work(self) -> None:
        """Subscriptions, unions, ``isinstance`` and ``get_args`` give typing's own answers."""
        source = (
            "import typing\n"
            "from typing import List, Dict, Optional, Tuple, Literal, Callable\n"
            "def f(x: List[int], y: Optional[Dict[str, int]] = None) -> Callable[[int], str]:\n"
            "    return str\n"
            "result = [repr(List[int]), repr(List[int] | None), isinstance([], List),\n"
            "          repr(typing.get_args(Tuple[int, str])), Literal['a'] == Literal['a'],\n"
            "          f([1])(2)]\n"
        )
        assert value_of(source) == [
            "typing.List[int]",
            "typing.Optional[typing.List[int]]",
            True,
            "(<class 'int'>, <class 'str'>)",
            True,
            "2",
        ]

    def test_an_instance_of_a_program_class_is_refused(self) -> None:
        """``Literal[obj]`` with the program's hashable object is a ``TypeError``."""
        source = (
            "import typing\n"
            "class K:\n"
            "    def __hash__(self):\n"
            "        return 1\n"
            "result = typing.Literal[K()]\n"
        )
        error_type, message = error_of(source)
        assert error_type == "execution"
        assert "typing parameters in the sandbox are types, strings" in message

    def test_forms_are_wrapped_and_aliases_unwrapped_for_library_code(self) -> None:
        """The facade's forms are ``TypingForm``s; what they stand for is typing's own."""
        form = as_form(typing.Optional)
        assert isinstance(form, TypingForm) and form == typing.Optional
        assert as_form(int) is int
        assert exact(form) is typing.Optional


def test_a_huge_list_argument_passes_through_unscanned() -> None:
    """Lists (mutable, the program's own) go to library code as they are: no copy, no walk."""
    host = Host(args=(list(range(1_000_000)),))
    result = execute("import statistics\nresult = statistics.median(args[0])", host=host)
    assert (result.error, result.value) == (None, 499999.5)


def test_exact_values_keep_their_identity_through_a_gated_call() -> None:
    """The gate hands exact arguments to the function unchanged (no copy)."""
    seen: list[Any] = []
    gated = gate(lambda *args, **kwargs: seen.append((args, kwargs)), "probe")
    rows, text = [1], "t"
    gated(rows, text, key=rows)
    assert seen[0][0][0] is rows and seen[0][0][1] is text and seen[0][1]["key"] is rows
