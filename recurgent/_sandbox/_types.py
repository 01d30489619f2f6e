"""Types as generated code meets them: which are open, writable or trusted, and what ``type()`` says.

The attribute policy (``_guards``) reads these tables: :data:`OPEN_TYPES` (every public attribute
safe), :data:`MUTABLE_TYPES` (items and attributes writable), the host types whose instances
expose their public attributes, and the attributes denied per type. ``type(x)`` never hands out
a metaclass or the constructor of a host class: those come back as :class:`SealedType`
(ADR 0011, 0021).
"""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import fractions
import functools
import io
import re
import types
import xml.etree.ElementTree as ElementTree
import zoneinfo
from typing import Any

from recurgent._journal import MemoryView
from recurgent._journal._running import guard_by_running_attempt, guard_within_by_running_attempt
from recurgent._journal._shared import HostClass, Withheld, needs_guard
from recurgent._sandbox._gate import ZoneInfoGate, served_class
from recurgent._sandbox._idioms import SandboxContext
from recurgent._sandbox._integers import CheckedInt
from recurgent._sandbox._made import SandboxType, is_namedtuple_class
from recurgent._sandbox._numbers import number_class
from recurgent._sandbox._reflection import SealedCallable
from recurgent._sandbox._user_wrappers import USER_STRING
from recurgent.outcome import Outcome

__all__ = [
    "DENIED_BY_TYPE",
    "DENIED_EXCEPTION_ATTRIBUTES",
    "MUTABLE_TYPES",
    "OPEN_TYPES",
    "SEALED_TYPE_OF",
    "SealedType",
    "guarded_host_code",
    "trusted_class",
    "type_of",
]

_ITERABLE_SAMPLES: tuple[object, ...] = (
    [],
    (),
    {},
    set(),
    "",
    b"",
    range(1),
    {}.keys(),
    {}.values(),
    {}.items(),
    bytearray(),
)
_ITERATOR_TYPES: set[type] = {type(iter(sample)) for sample in _ITERABLE_SAMPLES}  # type: ignore[call-overload]
_VIEW_TYPES = {type({}.keys()), type({}.values()), type({}.items())}

#: Types whose every public attribute is safe (checked methods aside, see ``_sizes``).
OPEN_TYPES: frozenset[type] = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        bytearray,
        list,
        tuple,
        dict,
        set,
        frozenset,
        range,
        slice,
        map,
        filter,
        zip,
        enumerate,
        reversed,
        types.GeneratorType,
        types.MappingProxyType,
        collections.deque,
        collections.Counter,
        collections.OrderedDict,
        collections.defaultdict,
        datetime.date,
        datetime.datetime,
        datetime.time,
        datetime.timedelta,
        datetime.timezone,
        decimal.Decimal,
        fractions.Fraction,
        re.Pattern,
        re.Match,
        ElementTree.Element,
        io.StringIO,
        io.BytesIO,
        *_ITERATOR_TYPES,
        *_VIEW_TYPES,
        MemoryView,  # context/memory: an attempt's journaled view (ADR 0027)
    }
)

#: Types generated code may write items or attributes into.
MUTABLE_TYPES: frozenset[type] = frozenset(
    {
        dict,
        list,
        set,
        bytearray,
        collections.deque,
        collections.Counter,
        collections.OrderedDict,
        collections.defaultdict,
        MemoryView,
        SandboxContext,  # the attempt's own decimal context (ADR 0048)
    }
)

# Modules (and their C accelerators) whose classes' instances expose public attributes.
# Never "builtins": module objects, functions, code objects, frames and cells all claim it;
# the few builtin types that are trusted are listed by type below.
_TRUSTED_TYPE_MODULES = frozenset(
    {
        "collections",
        "datetime",
        "decimal",
        "fractions",
        "re",
        "json",
        "json.decoder",
        "xml.etree.ElementTree",
        "io",
        "_io",
        "csv",
        "_csv",
        "hashlib",
        "_hashlib",
        "uuid",
        "statistics",
        "string",
        "textwrap",
        "difflib",
        "calendar",  # ADR 0048: text widths capped in the served TextCalendar
        "zoneinfo",
        "random",
        "functools",
        "html.parser",
        "time",
        "urllib.parse",
        "itertools",
        "heapq",
        "numbers",
        "contextlib",  # ADR 0105: context managers hold only what the program gave them
        "graphlib",
    }
)
# Builtin types (``__module__ == "builtins"``) whose instances expose their public attributes;
# builtin exceptions are trusted by a separate test.
_TRUSTED_BUILTIN_TYPES = frozenset({property, classmethod, staticmethod, memoryview})
DENIED_BY_TYPE: dict[type, frozenset[str]] = {
    ElementTree.ElementTree: frozenset({"write", "parse", "write_c14n"}),
    # A partial the host stored in memory may wrap anything; calling it is its purpose,
    # unwrapping it is not.
    functools.partial: frozenset({"func", "args", "keywords"}),
    # The tz cache is shared by the process (ADR 0048).
    zoneinfo.ZoneInfo: frozenset({"clear_cache"}),
    ZoneInfoGate: frozenset({"clear_cache"}),
    # A standard-engine pattern's scanner matches on that engine; its matching methods are
    # served on the sandbox's engine (ADR 0090).
    re.Pattern: frozenset({"scanner"}),
}
#: Exceptions raised by host code may point at host objects (AttributeError.obj is the object
# whose attribute was missing: a real module, when a facade looked it up).
DENIED_EXCEPTION_ATTRIBUTES = frozenset({"obj"})


class SealedType:
    """What ``type(x)`` returns for a host class: its name, and nothing that constructs one."""

    __slots__ = ("__name__", "__qualname__", "_sealed")

    def __init__(self, sealed: type) -> None:
        self.__name__ = sealed.__name__
        self.__qualname__ = sealed.__qualname__
        self._sealed = sealed

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.__name__} objects cannot be created by generated code")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SealedType):
            return self._sealed is other._sealed
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._sealed)

    def __repr__(self) -> str:
        return f"<class {self.__qualname__!r}>"


def _exposable_class(cls: type) -> bool:
    if cls in OPEN_TYPES or isinstance(cls, SandboxType) or is_namedtuple_class(cls):
        return True
    if cls is Outcome or (issubclass(cls, BaseException) and cls.__module__ == "builtins"):
        return True
    if hasattr(cls, "_sandbox_public_"):
        return True
    return cls.__module__ in _TRUSTED_TYPE_MODULES


def type_of(obj: Any) -> Any:
    """The sandbox's ``type()``: the one-argument form, with host classes sealed.

    Classes are made with ``class`` statements; a metaclass (the type of a class) would make
    them without the sandbox's checks, so ``type(SomeClass)`` is this function itself.
    """
    cls = number_class(type(obj))  # raw Decimal/Fraction -> checked stand-in (ADR 0022)
    served = served_class(cls)  # ZoneInfo -> its gated stand-in (ADR 0091)
    if cls is collections.UserString:
        return USER_STRING  # its construction checked (ADR 0155)
    if served is not cls:
        return served
    if issubclass(cls, type):
        return SEALED_TYPE_OF
    if cls is object or cls in OPEN_TYPES or cls is CheckedInt:
        return cls
    if isinstance(cls, enum.EnumMeta) and not isinstance(cls, SandboxType):
        # A host enum class formats a value it refuses with %r in one C call (ADR 0092):
        # its members are served, the class constructs nothing.
        return SealedType(cls)
    if cls is HostClass:
        return SEALED_TYPE_OF  # a host class from memory is a class (ADR 0068)
    if _exposable_class(cls):
        return _guarded_if_opened(cls)
    if cls is SealedCallable:
        return _SEALED_FUNCTION_TYPE
    return SealedType(cls)


type_of.__name__ = type_of.__qualname__ = "type"


def _guarded_if_opened(cls: type) -> Any:
    """A class the user opened with ``_sandbox_public_``, as ``type()`` hands it out.

    It is host code like a class in memory (ADR 0068): guarded by the running attempt, so a
    leaked generator cannot construct it after the attempt; with no attempt running, sealed.
    The runtime's own opened classes and the program's are handed out as they are.
    """
    module = cls.__module__
    if (
        not hasattr(cls, "_sandbox_public_")
        or isinstance(cls, SandboxType)
        or module in _TRUSTED_TYPE_MODULES
        or (isinstance(module, str) and module.startswith("recurgent."))
    ):
        return cls
    return guard_by_running_attempt(cls, SealedType)


def guarded_host_code(value: Any) -> Any:
    """``value`` read from an instance of a class the user opened (``_sandbox_public_``): host
    code (a bound method, a classmethod, a nested class), also inside a container the
    attribute holds, guarded by the running attempt, so a leaked generator cannot run it after
    the attempt (red-team R3, H5 and H6); with no attempt running, withheld. Anything else as
    it is."""
    if needs_guard(value):
        return guard_by_running_attempt(value, Withheld)
    return guard_within_by_running_attempt(value)


# What type() says of a runtime callable: a function, as it would of the original.
_SEALED_FUNCTION_TYPE = SealedType(SealedCallable)
_SEALED_FUNCTION_TYPE.__name__ = _SEALED_FUNCTION_TYPE.__qualname__ = "function"

#: ``type`` as generated code holds it (also what ``type(SomeClass)`` returns).
SEALED_TYPE_OF = SealedCallable(type_of, "type")


def trusted_class(cls: type) -> bool:
    """Whether instances of ``cls`` (a host class) expose their public attributes."""
    if cls.__module__ == "builtins":
        return cls in _TRUSTED_BUILTIN_TYPES or issubclass(cls, BaseException)
    return cls.__module__ in _TRUSTED_TYPE_MODULES
