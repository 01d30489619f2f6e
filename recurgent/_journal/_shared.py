"""What the journal hands out instead of a copy: shared values, guarded host code, stand-ins.

Values nobody can change (dates, numbers, patterns, UUIDs, enum members) are shared as they
are. Host code memory holds (functions, bound methods, partials, classes) is shared too, since
calling it is what the host stored it for (ADR 0057); given the attempt's guard it is handed
out as a :class:`HostCall` or :class:`HostClass`, which refuses to run once the attempt ended
(red-team F12, ADR 0068). Everything the journal can neither copy nor share is a
:class:`Withheld` stand-in. :data:`PLAIN_FACTORIES` are the default factories a defaultdict
may take out of an attempt (ADR 0069).
"""

from __future__ import annotations

import datetime
import decimal
import enum
import fractions
import functools
import re
import time
import types
import uuid
import zoneinfo
from collections.abc import Callable, Iterator
from typing import Any

from recurgent._async_stop import host_section

__all__ = [
    "FACTORY_STAND_INS",
    "HOST_CALLABLES",
    "PLAIN_FACTORIES",
    "HostCall",
    "HostClass",
    "Withheld",
    "guarded",
    "guarded_within",
    "is_plain_factory",
    "needs_guard",
    "plain_factory",
    "shareable",
    "unwrap_class",
]

#: The default factories a defaultdict that leaves an attempt may have (compared by identity,
#: so no ``__eq__`` or ``__hash__`` of a program's object runs).
PLAIN_FACTORIES = (None, list, dict, set, int, float, str, tuple, bool, bytes)


#: Stand-ins the sandbox serves for a plain factory, and the factory each stands for: its
#: checked ``int`` (ADR 0123), filled in by the sandbox, which this package never imports.
FACTORY_STAND_INS: list[tuple[Any, Any]] = []


def plain_factory(factory: Any) -> Any:
    """The plain factory a served stand-in stands for; ``factory`` itself otherwise."""
    for stand_in, plain in FACTORY_STAND_INS:
        if factory is stand_in:
            return plain
    return factory


def is_plain_factory(factory: Any) -> bool:
    """Whether ``factory`` is one of :data:`PLAIN_FACTORIES` (or a stand-in for one)."""
    factory = plain_factory(factory)
    return any(factory is plain for plain in PLAIN_FACTORIES)


class Withheld:
    """What generated code gets for a host object the journal can neither copy nor share.

    It has no public attributes and no operators, so nothing can be done to the original
    through it; the journal maps it back to the original when the attempt stores it in memory.
    """

    __slots__ = ("_described",)

    def __init__(self, original: Any) -> None:
        self._described = type(original).__name__

    def __repr__(self) -> str:
        return (
            f"<withheld {self._described} object: the runtime cannot undo changes to it, "
            "so generated code cannot use it>"
        )

    __str__ = __repr__


class HostCall:
    """A host function memory holds, as generated code gets it (red-team F12).

    Called while its attempt runs, it calls the function as it is (what the function does is
    the host's grant, ADR 0057). A generator the attempt leaked can run its cleanup at a later
    garbage collection; calling the function then raises the attempt's stop (``guard``), as
    forwarded calls do. Stored in memory, it resolves to the function itself.
    """

    __slots__ = ("_function", "_guard")

    def __init__(self, function: Any, guard: Callable[[], None]) -> None:
        self._function = function
        self._guard = guard

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._guard()
        # The host's code runs shielded from the attempt's stop (ADR 0089).
        with host_section():
            returned = self._function(*args, **kwargs)
        # Host code the call returns (a factory's class, a registry's handler), also inside a
        # container it returns, is guarded by the same attempt: raw, a leaked generator could
        # call it late (red-team R3, H1 and H6).
        return guarded_within(returned, self._guard)

    # Equal and hashed as the function it stands for (by identity, so no host __eq__ runs):
    # two reads of one function, each wrapped, still find each other as dict keys.
    def __eq__(self, other: object) -> bool:
        theirs = other._function if isinstance(other, HostCall) else other
        return self._function is theirs

    def __hash__(self) -> int:
        return object.__hash__(self._function)

    def __repr__(self) -> str:
        name = getattr(self._function, "__qualname__", None) or type(self._function).__name__
        return f"<host function {name}>"

    __str__ = __repr__


class HostClass(HostCall):
    """A host class memory holds, as generated code gets it (red-team R2, ADR 0068).

    Calling it constructs an instance while its attempt runs and raises the attempt's stop
    afterwards, as :class:`HostCall` does: a leaked generator's late cleanup cannot run the
    class's ``__init__``. ``isinstance``/``issubclass`` against it, ``==`` and hashing answer
    for the class itself, iteration and item reads go to the class (an enum's members), and
    the attribute policy reads its attributes by the class's own rules, guarding host code it
    returns. Subclassing it is refused: a subclass would construct the host class unguarded.
    Stored in memory, it resolves to the class.
    """

    __slots__ = ("__name__", "__qualname__")

    def __init__(self, cls: type, guard: Callable[[], None]) -> None:
        super().__init__(cls, guard)
        self.__name__ = str.__str__(cls.__name__)
        self.__qualname__ = str.__str__(cls.__qualname__)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, self._function)

    def __subclasscheck__(self, subclass: Any) -> bool:
        return issubclass(unwrap_class(subclass), self._function)

    def __eq__(self, other: object) -> bool:
        return self._function is unwrap_class(other)

    def __hash__(self) -> int:
        return hash(self._function)

    def __bool__(self) -> bool:
        return True  # a class is true; __len__ below would otherwise decide

    # An enum's members, by iteration and by name; any other class refuses these as a class
    # does (C[int] would hand out an alias that constructs the class unguarded).
    def __iter__(self) -> Iterator[Any]:
        return iter(self._enum())

    def __len__(self) -> int:
        return len(self._enum())

    def __contains__(self, item: Any) -> bool:
        return item in self._enum()

    def __getitem__(self, key: Any) -> Any:
        return self._enum()[key]

    def _enum(self) -> Any:
        if isinstance(self._function, enum.EnumMeta):
            return self._function
        raise TypeError(f"the host class {self.__name__} is neither iterable nor subscriptable")

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        raise TypeError(
            f"the host class {self.__name__} from memory cannot be subclassed by generated "
            "code; call it, or define a class of your own"
        )

    def __repr__(self) -> str:
        return f"<host class {self.__qualname__}>"

    __str__ = __repr__

    def guarded(self, value: Any) -> Any:
        """``value`` read from the class (a classmethod, a nested class, host code in a
        container it holds) under the same guard."""
        return guarded_within(value, self._guard)


def unwrap_class(value: Any) -> Any:
    """The class a :class:`HostClass` stands for, or ``value`` itself."""
    return value._function if type(value) is HostClass else value


# Immutable values: no method, operator or attribute write changes them.
_IMMUTABLE = frozenset(
    {
        datetime.date,
        datetime.datetime,
        datetime.time,
        datetime.timedelta,
        datetime.timezone,
        uuid.UUID,
        re.Pattern,
        re.Match,
        zoneinfo.ZoneInfo,
        time.struct_time,
        type(Ellipsis),
        type(NotImplemented),
        slice,
    }
)
# Host code: calling it is what the host stored it for (its effects are the host's, ADR 0057).
# Modules are not among it: generated code can read none of a raw module's attributes, so one
# is withheld (ADR 0068); a builtin bound to a module (math.sqrt) is still shared.
_CODE = frozenset(
    {
        types.FunctionType,
        types.MethodDescriptorType,
        types.WrapperDescriptorType,
        types.ClassMethodDescriptorType,
        types.GetSetDescriptorType,
        types.MemberDescriptorType,
        staticmethod,
        classmethod,
        property,
    }
)
_BOUND = frozenset({types.MethodType, types.BuiltinFunctionType, types.MethodWrapperType})
#: Shared host callables the journal hands out as a :class:`HostCall` when given a guard.
HOST_CALLABLES = frozenset({types.FunctionType, functools.partial, *_BOUND})


def shareable(value: Any) -> bool:
    """Whether ``value`` (neither an atom nor a kind the journal copies) may be handed out as is."""
    kind = type(value)
    if kind in _IMMUTABLE or kind in _CODE:
        return True
    if isinstance(value, type | decimal.Decimal | fractions.Fraction | enum.Enum):
        return True
    if getattr(kind, "__recurgent_agent__", False) is True:
        return True  # agents are called through handles, each call with its own journal
    if kind in _BOUND:
        # rows.append or buf.write would change memory past the journal: shared only when
        # bound to something shared itself (a module, a class, an agent).
        receiver = getattr(value, "__self__", None)
        return receiver is None or _plain_or_shared(receiver)
    if kind is functools.partial:
        held = (value.func, *value.args, *value.keywords.values())
        return all(_plain_or_shared(item) for item in held)
    return False


def _plain_or_shared(value: Any) -> bool:
    kind = type(value)
    return kind in (str, int, float, bool, bytes, type(None), types.ModuleType) or shareable(value)


def needs_guard(value: Any) -> bool:
    """Whether ``value`` (shared) is host code a leaked generator could run after its attempt:
    a host function, bound method or partial (F12), or a class that is not a builtin type
    (constructing it runs its ``__init__``, ADR 0068)."""
    if type(value) in HOST_CALLABLES:
        return True
    return isinstance(value, type) and value.__module__ != "builtins"


def guarded(value: Any, guard: Callable[[], None]) -> Any:
    """Shared host code as generated code gets it: a host function, bound method or partial
    in a :class:`HostCall` (red-team F12), a host class in a :class:`HostClass` (ADR 0068),
    anything else as it is."""
    if type(value) in HOST_CALLABLES:
        return HostCall(value, guard)
    if isinstance(value, type) and value.__module__ != "builtins":
        return HostClass(value, guard)
    return value


# Containers a walk looks into for host code (exact types: a subclass is the host's object).
_WALKED = frozenset({list, tuple, dict, set, frozenset})
_PLAIN_MEMBERS = frozenset({str, int, float, bool, bytes, type(None)})


def _holds_host_code(root: Any) -> bool:
    """Whether ``root`` (a walked container) holds host code at any depth."""
    seen: set[int] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        members = [*dict.keys(node), *dict.values(node)] if type(node) is dict else list(node)
        if _PLAIN_MEMBERS.issuperset(map(type, members)):
            continue
        for member in members:
            if needs_guard(member):
                return True
            if type(member) in _WALKED:
                pending.append(member)
    return False


def guarded_within(value: Any, guard: Callable[[], None] | None) -> Any:
    """:func:`guarded` of ``value`` and of host code inside the lists, tuples, dicts and sets
    it holds (red-team H6). A container holding none is handed out as it is (writes to it
    reach the host's object: what the host hands out is its grant, ADR 0057); one that holds
    host code is handed out as a copy with that code guarded (``guard`` ``None``: withheld).
    """
    if type(value) not in _WALKED:
        if guard is None:
            return Withheld(value) if needs_guard(value) else value
        return guarded(value, guard)
    if not _holds_host_code(value):
        return value
    return _copy_guarded(value, guard, {})


def _copy_guarded(value: Any, guard: Callable[[], None] | None, memo: dict[int, Any]) -> Any:
    kind = type(value)
    if kind not in _WALKED:
        if needs_guard(value):
            return guarded(value, guard) if guard is not None else Withheld(value)
        return value
    known = memo.get(id(value))
    if known is not None:
        return known[1]
    if kind is list:
        copy: Any = []
        memo[id(value)] = (value, copy)
        copy.extend(_copy_guarded(item, guard, memo) for item in value)
        return copy
    if kind is dict:
        mapping: dict[Any, Any] = {}
        memo[id(value)] = (value, mapping)
        for key, item in dict.items(value):
            mapping[_copy_guarded(key, guard, memo)] = _copy_guarded(item, guard, memo)
        return mapping
    built = kind(_copy_guarded(item, guard, memo) for item in value)
    memo[id(value)] = (value, built)
    return built
