"""The modules issue 13 added work as the real ones do: calendar, zoneinfo, abc, typing, dataclasses, enum (ADR 0048, 0049)."""

from __future__ import annotations

import pytest

from recurgent.errors import InvalidCodeError

from .support import error_of, value_of


class TestModulesAModelReachesFor:
    """``calendar``, ``zoneinfo``, ``abc`` and ``typing`` import and work (issue 13's table)."""

    def test_calendar_functions_and_classes(self) -> None:
        """Month ranges, names, leap years and the calendar classes give the real values."""
        source = (
            "import calendar\n"
            "result = [calendar.monthrange(2024, 2), calendar.isleap(2024), "
            "calendar.month_name[3], calendar.Calendar().monthdayscalendar(2024, 2)[0], "
            "calendar.weekday(2026, 12, 1), calendar.day_name[1]]"
        )
        assert value_of(source) == [
            (3, 29),
            True,
            "March",
            [0, 0, 0, 1, 2, 3, 4],
            1,
            "Tuesday",
        ]

    @pytest.mark.parametrize(
        "source",
        [
            "import calendar\nresult = calendar.month(2024, 1, w=10**8)",
            "import calendar\nresult = calendar.TextCalendar().formatyear(2024, c=10**8)",
            "import calendar\nresult = calendar.weekheader(10**8)",
        ],
    )
    def test_calendar_text_widths_are_capped(self, source: str) -> None:
        """A width that would build a huge string in one call is a resource limit."""
        assert error_of(source)[0] == "resource_limit"

    @pytest.mark.parametrize("name", ["setfirstweekday", "prmonth", "c", "different_locale"])
    def test_calendar_process_state_is_denied(self, name: str) -> None:
        """The shared calendar, printing and locale switching are refused."""
        assert error_of(f"import calendar\nresult = calendar.{name}") == (
            "execution",
            f"Execution error in tester.run: AttributeError: calendar.{name} is not "
            "available in the sandbox",
        )

    def test_zoneinfo_converts_times(self) -> None:
        """``ZoneInfo`` from the system tz database gives the zone's offset and key."""
        source = (
            "from zoneinfo import ZoneInfo\n"
            "from datetime import datetime\n"
            "when = datetime(2024, 7, 1, 12, tzinfo=ZoneInfo('Europe/Paris'))\n"
            "result = [str(when.utcoffset()), when.tzinfo.key, "
            "when.astimezone(ZoneInfo('UTC')).hour]"
        )
        assert value_of(source) == ["2:00:00", "Europe/Paris", 10]

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "from zoneinfo import ZoneInfo\nZoneInfo.clear_cache()",
                "AttributeError: ZoneInfo.clear_cache is not available in the sandbox",
            ),
            (
                "from zoneinfo import reset_tzpath",
                "ImportError: cannot import name 'reset_tzpath' from 'zoneinfo': "
                "zoneinfo.reset_tzpath is not available in the sandbox",
            ),
            (
                "from zoneinfo import ZoneInfo\nZoneInfo('../../etc/passwd')",
                "ValueError: ZoneInfo keys must refer to subdirectories of TZPATH, got: "
                "../../etc/passwd",
            ),
        ],
    )
    def test_zoneinfo_is_read_only(self, source: str, message: str) -> None:
        """The shared cache and search path cannot be changed, and keys cannot be paths."""
        assert error_of(source) == ("execution", f"Execution error in tester.run: {message}")

    def test_abc_enforces_abstract_methods_on_the_programs_classes(self) -> None:
        """A concrete subclass works; the abstract base refuses instantiation."""
        source = (
            "from abc import ABC, abstractmethod\n"
            "class Shape(ABC):\n"
            "    @abstractmethod\n"
            "    def area(self):\n"
            "        pass\n"
            "    def describe(self):\n"
            "        return f'area {self.area()}'\n"
            "class Square(Shape):\n"
            "    def __init__(self, side):\n"
            "        self.side = side\n"
            "    def area(self):\n"
            "        return self.side ** 2\n"
            "try:\n"
            "    Shape()\n"
            "    refused = None\n"
            "except TypeError as error:\n"
            "    refused = str(error)\n"
            "result = [Square(3).describe(), isinstance(Square(1), Shape), refused]"
        )
        assert value_of(source) == [
            "area 9",
            True,
            "Can't instantiate abstract class Shape with abstract method area",
        ]

    @pytest.mark.parametrize(
        "source",
        [
            "from abc import abstractmethod\nabstractmethod(Outcome)",
            "from abc import abstractmethod\nabstractmethod(len)",
            "from typing import abstractmethod\nabstractmethod(Outcome.ok)",
        ],
    )
    def test_abstractmethod_marks_only_the_programs_functions(self, source: str) -> None:
        """Marking a host class or function is refused (it would write to a host object)."""
        assert error_of(source) == (
            "execution",
            "Execution error in tester.run: TypeError: abstractmethod() can only mark "
            "functions your code defined",
        )

    def test_abc_base_is_fresh_per_attempt(self) -> None:
        """A write to ``ABC`` in one attempt is not seen by the next."""
        value_of("from abc import ABC\nABC.marker = 1")
        assert value_of("from abc import ABC\nresult = hasattr(ABC, 'marker')") is False

    def test_typing_annotations_and_helpers(self) -> None:
        """Annotated helpers, ``NamedTuple``, ``TypedDict``, ``TypeVar`` and ``cast`` work."""
        source = (
            "from typing import Dict, List, NamedTuple, Optional, TypedDict, TypeVar, cast\n"
            "T = TypeVar('T')\n"
            "Point = NamedTuple('Point', [('x', int), ('y', int)])\n"
            "Movie = TypedDict('Movie', {'title': str})\n"
            "def count(items: List[int], extra: Optional[Dict[str, int]] = None) -> int:\n"
            "    return cast(int, len(items))\n"
            "result = [count([1, 2]), Point(1, 2).y, Movie(title='x')]"
        )
        assert value_of(source) == [2, 2, {"title": "x"}]

    @pytest.mark.parametrize("name", ["final", "get_type_hints", "overload", "reveal_type"])
    def test_typing_side_doors_are_denied(self, name: str) -> None:
        """Names that write to host objects, evaluate strings or print are refused."""
        assert error_of(f"from typing import {name}") == (
            "execution",
            f"Execution error in tester.run: ImportError: cannot import name {name!r} from "
            f"'typing': typing.{name} is not available in the sandbox",
        )


_RECORDS = (
    "from dataclasses import dataclass, field, asdict, replace, fields\n"
    "@dataclass\n"
    "class Item:\n"
    "    name: str\n"
    "    price: float = 0.0\n"
    "    tags: list = field(default_factory=list)\n"
    "@dataclass(frozen=True, order=True)\n"
    "class Version:\n"
    "    major: int\n"
    "    minor: int = 0\n"
)


class TestSandboxDataclasses:
    """The sandbox's ``dataclasses`` behaves as the real one for what models write (ADR 0049)."""

    def test_generated_methods(self) -> None:
        """``__init__`` with defaults and factories, ``__repr__``, ``__eq__``, ``asdict``."""
        source = _RECORDS + (
            "a = Item('pen', 1.5)\n"
            "a.tags.append('red')\n"
            "result = [repr(a), a == Item('pen', 1.5, ['red']), asdict(a), "
            "replace(a, price=2.0).price, [f.name for f in fields(Item)], "
            "Item('a').tags is not Item('b').tags]"
        )
        assert value_of(source) == [
            "Item(name='pen', price=1.5, tags=['red'])",
            True,
            {"name": "pen", "price": 1.5, "tags": ["red"]},
            2.0,
            ["name", "price", "tags"],
            True,
        ]

    def test_frozen_and_order(self) -> None:
        """Frozen instances refuse writes and hash by value; ``order`` sorts by fields."""
        source = _RECORDS + (
            "from dataclasses import FrozenInstanceError\n"
            "v = Version(1, 2)\n"
            "try:\n"
            "    v.major = 3\n"
            "    refused = None\n"
            "except FrozenInstanceError as error:\n"
            "    refused = str(error)\n"
            "result = [sorted([Version(2), Version(1, 5), v]) == [v, Version(1, 5), Version(2)], "
            "refused, hash(v) == hash(Version(1, 2)), len({v, Version(1, 2)})]"
        )
        assert value_of(source) == [True, "cannot assign to field 'major'", True, 1]

    def test_post_init_and_inheritance(self) -> None:
        """``__post_init__`` runs after the fields are set; subclass fields follow the base's."""
        source = (
            "from dataclasses import dataclass\n"
            "@dataclass\n"
            "class Base:\n"
            "    x: int\n"
            "    def __post_init__(self):\n"
            "        self.double = self.x * 2\n"
            "@dataclass\n"
            "class Child(Base):\n"
            "    z: int = 3\n"
            "c = Child(1)\n"
            "result = [c.x, c.double, c.z, repr(c)]"
        )
        assert value_of(source) == [1, 2, 3, "Child(x=1, z=3)"]

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nP()",
                "TypeError: __init__() missing 1 required argument: 'x'",
            ),
            (
                "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: list = []",
                "ValueError: mutable default <class 'list'> for field x is not allowed: use "
                "default_factory",
            ),
            (
                "from dataclasses import dataclass\ndataclass(Outcome)",
                "TypeError: dataclass() can only decorate classes your code defined",
            ),
        ],
    )
    def test_errors_match_the_real_module(self, source: str, message: str) -> None:
        """Missing arguments, mutable defaults and host classes are refused as in Python."""
        assert error_of(source) == ("execution", f"Execution error in tester.run: {message}")

    def test_annotations_stay_unreadable(self) -> None:
        """Keeping class-body annotations does not open ``__annotations__`` to the program."""
        with pytest.raises(InvalidCodeError) as refused:
            value_of("class P:\n    x: int = 1\nresult = P.__annotations__")
        assert "__annotations__" in str(refused.value)

    def test_plain_annotated_class_keeps_its_values(self) -> None:
        """An annotated class attribute is still a class attribute; a bare one declares none."""
        source = "class P:\n    x: int = 1\n    y: str\nresult = [P.x, hasattr(P, 'y')]"
        assert value_of(source) == [1, False]


_COLORS = (
    "from enum import Enum, IntEnum, StrEnum, auto\n"
    "class Color(Enum):\n"
    "    RED = 1\n"
    "    GREEN = 2\n"
    "    BLUE = 3\n"
    "    CRIMSON = 1\n"
    "    def describe(self):\n"
    "        return self.name.lower()\n"
    "class Level(IntEnum):\n"
    "    LOW = auto()\n"
    "    HIGH = auto()\n"
    "class Mode(StrEnum):\n"
    "    FAST = auto()\n"
)


class TestSandboxEnum:
    """The sandbox's ``enum`` behaves as the real one for what models write (ADR 0049)."""

    def test_members_iteration_and_lookup(self) -> None:
        """Iteration skips aliases; lookup by value and by name; repr and str as in 3.11."""
        source = _COLORS + (
            "result = [[c.name for c in Color], Color(2).name, Color['BLUE'].value, "
            "Color.CRIMSON is Color.RED, len(Color), Color.RED in Color, repr(Color.RED), "
            "str(Color.GREEN), Color.GREEN.describe(), isinstance(Color.RED, Color), "
            "{Color.RED: 'r'}[Color.RED]]"
        )
        assert value_of(source) == [
            ["RED", "GREEN", "BLUE"],
            "GREEN",
            3,
            True,
            3,
            True,
            "<Color.RED: 1>",
            "Color.GREEN",
            "green",
            True,
            "r",
        ]

    def test_int_and_str_enums_are_their_values(self) -> None:
        """``IntEnum`` compares and computes as int, ``StrEnum`` as str; ``auto`` numbers."""
        source = _COLORS + (
            "result = [Level.HIGH + 1, Level.LOW < Level.HIGH, str(Level.HIGH), "
            "Mode.FAST == 'fast', f'{Mode.FAST}', sorted(Level)[0].name]"
        )
        assert value_of(source) == [3, True, "2", True, "fast", "LOW"]

    def test_tuple_values_reach_the_members_init(self) -> None:
        """A class-defined ``__init__`` receives the unpacked value."""
        source = (
            "from enum import Enum\n"
            "class Planet(Enum):\n"
            "    EARTH = (5.97, 6.37)\n"
            "    def __init__(self, mass, radius):\n"
            "        self.mass = mass\n"
            "        self.radius = radius\n"
            "result = [Planet.EARTH.mass, Planet.EARTH.value]"
        )
        assert value_of(source) == [5.97, (5.97, 6.37)]

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (_COLORS + "Color(5)", "ValueError: 5 is not a valid Color"),
            (_COLORS + "Color.RED = 2", "AttributeError: cannot reassign member 'RED'"),
            (
                _COLORS + "Color.RED.value = 2",
                "AttributeError: cannot set attribute 'value' of an enum member",
            ),
            (
                "from enum import Enum, unique\n@unique\nclass C(Enum):\n    A = 1\n    B = 1",
                "ValueError: duplicate values found in <enum 'C'>: B -> A",
            ),
            (
                _COLORS + "class More(Color):\n    PINK = 4",
                "TypeError: 'More' cannot extend 'Color', which has members",
            ),
        ],
    )
    def test_errors_match_the_real_module(self, source: str, message: str) -> None:
        """Unknown values, reassignment, aliases under ``unique`` and extension are refused."""
        assert error_of(source) == ("execution", f"Execution error in tester.run: {message}")

    def test_enum_bases_are_fresh_per_attempt(self) -> None:
        """A write to ``Enum`` in one attempt is not seen by the next."""
        value_of("from enum import Enum\nEnum.marker = 1")
        assert value_of("from enum import Enum\nresult = hasattr(Enum, 'marker')") is False

    def test_the_metaclass_is_not_reachable(self) -> None:
        """``type()`` of an enum class is the sandbox's sealed ``type``, as for any class."""
        assert value_of(_COLORS + "result = type(Color) is type") is True
