"""What a program's class may derive from: typing's bases and the collections classes (ADR 0104).

Each base works as the model expects it to, with exact values, and none of them hands typing's
class machinery (``__init_subclass__``, ``__class_getitem__``, ``__orig_bases__``) the
program's class; private names stay refused.
"""

from __future__ import annotations

import pytest

from recurgent.errors import ExecutionError, InvalidCodeError

from .support import error_of, execute, value_of


class TestNamedTuple:
    """``class P(NamedTuple)`` is a namedtuple class with the program's methods."""

    RECORD = (
        "from typing import NamedTuple\n"
        "class Point(NamedTuple):\n"
        "    x: int\n"
        "    y: int = 0\n"
        "    def norm2(self):\n"
        "        return self.x ** 2 + self.y ** 2\n"
    )

    def test_fields_defaults_and_methods(self) -> None:
        """Construction with a default, a method, repr, indexing and unpacking."""
        source = self.RECORD + (
            "p = Point(3, 4)\nq = Point(5)\na, b = p\n"
            "result = [p.norm2(), q.y, repr(p), p[0], a + b, p == (3, 4)]"
        )
        assert value_of(source) == [25, 0, "Point(x=3, y=4)", 3, 7, True]

    def test_the_public_underscore_api(self) -> None:
        """``_replace``, ``_asdict``, ``_make``, ``_fields`` and ``_field_defaults`` work."""
        source = self.RECORD + (
            "p = Point(1, 2)\n"
            "result = [p._replace(y=9), p._asdict(), Point._make([7, 8]).norm2(),\n"
            "          Point._fields, Point._field_defaults, type(p._replace(x=0)).__name__]"
        )
        assert value_of(source) == [(1, 9), {"x": 1, "y": 2}, 113, ("x", "y"), {"y": 0}, "Point"]

    def test_instances_are_immutable_tuples(self) -> None:
        """Neither a field nor a new attribute can be written (``__slots__ = ()``)."""
        source = self.RECORD + (
            "p = Point(1, 2)\nerrors = []\n"
            "for attempt in ('x', 'z'):\n"
            "    try:\n"
            "        setattr(p, attempt, 5)\n"
            "    except AttributeError:\n"
            "        errors.append(attempt)\n"
            "result = [errors, isinstance(p, tuple), p]"
        )
        assert value_of(source) == [["x", "z"], True, (1, 2)]

    def test_a_subclass_of_a_namedtuple_class(self) -> None:
        """A class deriving from the program's NamedTuple class keeps its fields."""
        source = self.RECORD + (
            "class Labeled(Point):\n    def label(self):\n        return f'{self.x},{self.y}'\n"
            "result = Labeled(1, 2).label()"
        )
        assert value_of(source) == "1,2"

    def test_a_non_default_field_after_a_default_is_refused(self) -> None:
        """As typing refuses it, naming both fields."""
        source = "from typing import NamedTuple\nclass P(NamedTuple):\n    a: int = 1\n    b: int\n"
        assert error_of(source) == (
            "execution",
            "Execution error in tester.run: TypeError: Non-default namedtuple field b cannot "
            "follow default field a; give b a default or move it up",
        )

    def test_overwriting_the_namedtuple_api_is_refused(self) -> None:
        """``_make`` defined in the body would replace the library's: refused as typing does."""
        source = (
            "from typing import NamedTuple\nclass P(NamedTuple):\n    a: int\n"
            "    def _make(self):\n        return 1\n"
        )
        assert error_of(source) == (
            "execution",
            "Execution error in tester.run: AttributeError: Cannot overwrite NamedTuple "
            "attribute _make",
        )

    def test_another_base_is_refused(self) -> None:
        """NamedTuple mixes with Generic only."""
        source = "from typing import NamedTuple\nclass P(NamedTuple, dict):\n    a: int\n"
        assert error_of(source)[1].endswith(
            "TypeError: a NamedTuple class can only derive from NamedTuple (and Generic)"
        )

    def test_a_generic_namedtuple(self) -> None:
        """``class P(NamedTuple, Generic[T])`` as Python 3.11 allows."""
        source = (
            "from typing import NamedTuple, Generic, TypeVar\nT = TypeVar('T')\n"
            "class Pair(NamedTuple, Generic[T]):\n    a: T\n    b: T\n"
            "result = Pair[int](1, 2)._asdict()"
        )
        assert value_of(source) == {"a": 1, "b": 2}

    def test_typings_hook_names_stay_refused(self) -> None:
        """``__orig_bases__`` is a dunder name: refused when the program is compiled."""
        with pytest.raises(InvalidCodeError, match="__orig_bases__"):
            execute(self.RECORD + "result = Point.__orig_bases__")


class TestTypedDict:
    """``class M(TypedDict)``: calling the class builds a plain dict."""

    def test_a_typed_dict_builds_a_dict(self) -> None:
        """Keyword and mapping construction, ``total=False``, and the value is a dict."""
        source = (
            "from typing import TypedDict\n"
            "class Movie(TypedDict, total=False):\n    title: str\n    year: int\n"
            "m = Movie(title='Up', year=2009)\nn = Movie({'title': 'Heat'})\n"
            "result = [m, n, type(m) is dict]"
        )
        assert value_of(source) == [{"title": "Up", "year": 2009}, {"title": "Heat"}, True]

    def test_inheritance_between_typed_dicts(self) -> None:
        """A TypedDict deriving from another is one too."""
        source = (
            "from typing import TypedDict, is_typeddict\n"
            "class Base(TypedDict):\n    a: int\nclass More(Base):\n    b: int\n"
            "result = [More(a=1, b=2), is_typeddict(More)]"
        )
        assert value_of(source) == [{"a": 1, "b": 2}, True]

    def test_isinstance_is_refused_as_typing_does(self) -> None:
        """``isinstance(x, M)`` raises TypeError, as with typing's TypedDict."""
        source = "from typing import TypedDict\nclass M(TypedDict):\n    a: int\nisinstance({}, M)"
        assert error_of(source)[1].endswith(
            "TypeError: TypedDict does not support instance and class checks"
        )

    def test_a_non_typed_dict_base_is_refused(self) -> None:
        """Mixing with another base is refused with typing's words."""
        source = "from typing import TypedDict\nclass M(TypedDict, list):\n    a: int\n"
        assert error_of(source)[1].endswith(
            "TypeError: cannot inherit from both a TypedDict type and a non-TypedDict base class"
        )

    def test_an_unknown_keyword_is_refused(self) -> None:
        """Only ``total`` is accepted."""
        source = "from typing import TypedDict\nclass M(TypedDict, closed=True):\n    a: int\n"
        assert error_of(source)[1].endswith(
            "TypeError: TypedDict takes only the keyword total, not closed"
        )


class TestGeneric:
    """``class Box(Generic[T])``: subscription erases its parameters."""

    SOURCE = (
        "from typing import Generic, TypeVar\nT = TypeVar('T')\n"
        "class Box(Generic[T]):\n"
        "    def __init__(self, item: T) -> None:\n        self.item = item\n"
        "    def get(self) -> T:\n        return self.item\n"
    )

    def test_a_generic_container(self) -> None:
        """``Box[int](3)``, ``Box('s')`` and ``Box[int] is Box``."""
        source = self.SOURCE + (
            "result = [Box[int](3).get(), Box('s').get(), Box[int] is Box, isinstance(Box(1), Box)]"
        )
        assert value_of(source) == [3, "s", True, True]

    def test_a_subclass_of_a_parameterised_generic(self) -> None:
        """``class IntBox(Box[int])`` derives from ``Box``."""
        source = self.SOURCE + (
            "class IntBox(Box[int]):\n    def double(self):\n        return self.item * 2\n"
            "result = [IntBox(4).double(), isinstance(IntBox(1), Box)]"
        )
        assert value_of(source) == [8, True]

    def test_two_parameters_and_a_mapping_base(self) -> None:
        """``class Cache(UserDict, Generic[K, V])``: an ABCMeta base and Generic together."""
        source = (
            "from collections import UserDict\nfrom typing import Generic, TypeVar\n"
            "K = TypeVar('K')\nV = TypeVar('V')\n"
            "class Cache(UserDict, Generic[K, V]):\n"
            "    def put(self, key: K, value: V) -> None:\n        self[key] = value\n"
            "c = Cache[str, int]()\nc.put('a', 1)\nresult = [dict(c), len(c), 'a' in c]"
        )
        assert value_of(source) == [{"a": 1}, 1, True]

    @pytest.mark.parametrize("hook", ["__class_getitem__", "__init_subclass__"])
    def test_class_creation_hooks_stay_refused(self, hook: str) -> None:
        """Defining typing's hooks in a class body is refused when compiled."""
        source = self.SOURCE + f"class B(Box[int]):\n    def {hook}(cls):\n        pass\n"
        with pytest.raises(InvalidCodeError, match=hook):
            execute(source)


class TestProtocol:
    """``class Shape(Protocol)``: a type hint, a base, and with ``runtime_checkable`` a check."""

    SOURCE = (
        "from typing import Protocol, runtime_checkable\n"
        "class Shape(Protocol):\n"
        "    def area(self) -> float: ...\n"
        "    def describe(self) -> str:\n        return f'area {self.area()}'\n"
        "class Square(Shape):\n"
        "    def __init__(self, side):\n        self.side = side\n"
        "    def area(self):\n        return self.side ** 2\n"
        "class Circle:\n"
        "    def area(self):\n        return 3.0\n"
    )

    def test_structural_use_and_an_explicit_subclass(self) -> None:
        """A function typed with the protocol takes any class; a subclass inherits defaults."""
        source = self.SOURCE + (
            "def total(shapes: list[Shape]) -> float:\n"
            "    return sum(s.area() for s in shapes)\n"
            "result = [total([Square(2), Circle()]), Square(3).describe()]"
        )
        assert value_of(source) == [7.0, "area 9"]

    def test_a_protocol_cannot_be_instantiated(self) -> None:
        """As typing says, with the fix."""
        assert error_of(self.SOURCE + "Shape()")[1].endswith(
            "TypeError: Protocols cannot be instantiated: Shape is a protocol; define a class "
            "that has its methods (or derives from Shape) and create that"
        )

    def test_isinstance_needs_runtime_checkable(self) -> None:
        """Without the decorator, ``isinstance`` against a protocol names the fix."""
        assert error_of(self.SOURCE + "isinstance(Circle(), Shape)")[1].endswith(
            "TypeError: Instance and class checks can only be used with @runtime_checkable "
            "protocols; decorate Shape with @typing.runtime_checkable"
        )

    def test_runtime_checkable_checks_members_statically(self) -> None:
        """Methods and attributes, on the program's objects and plain values."""
        source = (
            "from typing import Protocol, runtime_checkable\n"
            "@runtime_checkable\nclass Sized2(Protocol):\n    def __len__(self) -> int: ...\n"
            "@runtime_checkable\nclass Named(Protocol):\n    name: str\n"
            "class Thing:\n    def __init__(self):\n        self.name = 't'\n"
            "class Ghost:\n    pass\n"
            "result = [isinstance([], Sized2), isinstance(3, Sized2), isinstance(Thing(), Named),\n"
            "          isinstance(Ghost(), Named), issubclass(list, Sized2), issubclass(int, Sized2)]"
        )
        assert value_of(source) == [True, False, True, False, True, False]

    def test_runtime_checkable_takes_only_the_programs_protocols(self) -> None:
        """A plain class, or a host class, is refused."""
        source = "from typing import runtime_checkable\nclass A:\n    pass\nruntime_checkable(A)"
        assert error_of(source)[1].endswith(
            "TypeError: @runtime_checkable can be only applied to protocol classes your code "
            "defines, got SandboxType"
        )
        assert error_of("from typing import runtime_checkable\nruntime_checkable(dict)")[
            1
        ].endswith("defines, got type")


class TestCollectionsBases:
    """``Counter``, ``OrderedDict``, ``defaultdict``, ``UserDict``, ``UserList``, ``UserString``."""

    def test_counter_subclass(self) -> None:
        """Methods of Counter, the program's own, and arithmetic."""
        source = (
            "from collections import Counter\n"
            "class Tally(Counter):\n    def top(self, n=1):\n        return self.most_common(n)\n"
            "t = Tally('abracadabra')\n"
            "result = [t.top(2), t['z'], sorted((t + Tally('zz')).items())[-1], t.total()]"
        )
        assert value_of(source) == [[("a", 5), ("b", 2)], 0, ("z", 2), 11]

    def test_userdict_subclass_overrides_setitem(self) -> None:
        """``UserDict`` routes ``update`` and the constructor through ``__setitem__``."""
        source = (
            "from collections import UserDict\n"
            "class Lower(UserDict):\n"
            "    def __setitem__(self, key, value):\n        super().__setitem__(key.lower(), value)\n"
            "d = Lower({'A': 1})\nd['B'] = 2\nd.update(C=3)\n"
            "result = [dict(d), d.data, 'a' in d, d.get('b'), list(d)]"
        )
        assert value_of(source) == [
            {"a": 1, "b": 2, "c": 3},
            {"a": 1, "b": 2, "c": 3},
            True,
            2,
            ["a", "b", "c"],
        ]

    def test_userlist_userstring_ordereddict_defaultdict(self) -> None:
        """The other collections bases."""
        source = (
            "from collections import UserList, UserString, OrderedDict, defaultdict\n"
            "class Stack(UserList):\n    def peek(self):\n        return self[-1]\n"
            "class Shout(UserString):\n    def loud(self):\n        return self.upper() + '!'\n"
            "class LRU(OrderedDict):\n    def touch(self, k):\n        self.move_to_end(k)\n"
            "class Groups(defaultdict):\n    pass\n"
            "s = Stack([1, 2])\nlru = LRU(a=1, b=2)\nlru.touch('a')\ng = Groups(list)\n"
            "g['x'].append(1)\n"
            "result = [s.peek(), str(Shout('hi').loud()), list(lru), dict(g)]"
        )
        assert value_of(source) == [2, "HI!", ["b", "a"], {"x": [1]}]

    def test_abcmetas_state_stays_private(self) -> None:
        """``_abc_impl``, which ABCMeta sets on the program's class, is the runtime's: the
        refusal says so, not that single-underscore names of the program's classes are
        readable (which holds for every other such name)."""
        source = "from collections import UserDict\nclass D(UserDict):\n    pass\nD._abc_impl"
        assert error_of(source)[1].endswith(
            "AttributeError: '_abc_impl' is not accessible: it is the abc module's own state, "
            "private in the sandbox even on your classes"
        )


class TestRefusedBases:
    """A base outside the list names it and the fix."""

    def test_the_refusal_lists_the_bases_and_the_fix(self) -> None:
        """``class X(csv.DictReader)``."""
        source = "import csv\nclass Rows(csv.DictReader):\n    pass\n"
        assert error_of(source) == (
            "execution",
            "Execution error in tester.run: TypeError: class Rows may not derive from "
            "DictReader; generated classes may derive from object, builtin containers and "
            "exceptions, namedtuples, typing's NamedTuple/TypedDict/Generic/Protocol, "
            "collections' Counter/OrderedDict/defaultdict/UserDict/UserList/UserString, json's "
            "JSONEncoder/JSONDecoder, HTMLParser or classes defined by the same code; hold a "
            "DictReader in an attribute instead (self.inner = ...)",
        )

    def test_the_refusal_names_the_class_statements_line(self) -> None:
        """The error's line is the ``class`` statement's, not line 1 (RestrictedPython's
        rebuilt statement had lost it)."""
        source = "import csv\n\nx = 1\nclass Rows(csv.DictReader):\n    pass\n"
        result = execute(source)
        assert isinstance(result.error, ExecutionError)
        assert result.error.line == 4

    @pytest.mark.parametrize(
        ("base", "shown"), [("bytes", "bytes"), ("bytearray", "bytearray"), ("len", "len")]
    )
    def test_a_checked_constructor_is_refused_by_name(self, base: str, shown: str) -> None:
        """``class B(bytes)``: the sandbox's ``bytes`` is a checked function, not the class;
        the refusal is the one every other base gets (it was Python's "issubclass() arg 1
        must be a class")."""
        source = f"class B({base}):\n    pass\n"
        assert error_of(source) == (
            "execution",
            f"Execution error in tester.run: TypeError: class B may not derive from {shown}; "
            "generated classes may derive from object, builtin containers and exceptions, "
            "namedtuples, typing's NamedTuple/TypedDict/Generic/Protocol, collections' "
            "Counter/OrderedDict/defaultdict/UserDict/UserList/UserString, json's "
            "JSONEncoder/JSONDecoder, HTMLParser or classes defined by the same code; hold a "
            f"{shown} in an attribute instead (self.inner = ...)",
        )

    def test_an_instance_as_a_base_is_named_as_an_object(self) -> None:
        """``class A(3)`` names what it was given."""
        assert error_of("class A(3):\n    pass\n")[1].startswith(
            "Execution error in tester.run: TypeError: class A may not derive from an object of type int;"
        )

    def test_an_unhashable_base_is_named_too(self) -> None:
        """``class A([])`` is refused as not a class before any table is asked about it."""
        assert error_of("class A([]):\n    pass\n")[1].startswith(
            "Execution error in tester.run: TypeError: class A may not derive from an object "
            "of type list;"
        )
