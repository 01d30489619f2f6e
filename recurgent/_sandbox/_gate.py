"""The gate between generated code and library code: exact built-in types in (ADR 0091).

Library code keeps some of its arguments process-wide: ``_strptime`` its formats, ``zoneinfo``
its keys, ``urllib.parse.urlsplit`` (an ``lru_cache``) its URLs, ``ElementPath`` its paths. An
argument that is an instance of a program's subclass of ``str`` (or of ``bytes``, ``int``,
``float``, ``complex``, ``tuple``, ``frozenset``) brings the program's ``__eq__`` and ``__hash__``
along: kept in such a cache, it answers the host's later lookups with program code, after the
attempt, where every tick raises the attempt's stop. Runtime code is no different: a name whose
``startswith`` the program overrides answered the attribute policy's private-name check.

So every served library callable, and every runtime entry point that reads a program's text,
receives exact built-in values: :func:`exact` converts a subclass instance to its base type
(read through the base class, so none of the program's methods runs) and rebuilds tuples and
frozensets whose members need it; a namedtuple keeps its class (its methods are the
``collections`` module's). Containers the library may change in place (lists, dicts, sets) and
other objects pass as they are: they are the program's own, and a cache cannot key on them.

:class:`GatedCall` is how library functions and methods are served: a sealed callable whose
arguments pass :func:`exact` first. ``math``, ``cmath``, ``operator``, ``bisect`` and ``heapq``
are served ungated (:data:`UNGATED_MODULES`): C functions over numbers and sequences that keep
nothing. Classes are called as they are, except those whose constructor keeps its argument
process-wide: ``zoneinfo.ZoneInfo`` is served as :class:`ZoneInfoGate`.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import fractions
import functools
import pprint
import types
import typing
import urllib.parse
import zoneinfo
from collections.abc import Mapping
from typing import Any

from recurgent._sandbox._decimal_operands import SandboxDecimal
from recurgent._sandbox._made import SandboxType, is_namedtuple_class
from recurgent._sandbox._reflection import SealedCallable, SealedWithHelpers
from recurgent._sandbox._text_size import check_texts

__all__ = [
    "TEXT_METHODS",
    "UNGATED_MODULES",
    "GatedCall",
    "MappingGatedCall",
    "TextGatedCall",
    "ZoneInfoGate",
    "exact",
    "exact_args",
    "exact_name",
    "gate",
    "is_library_callable",
    "served_class",
]

#: Modules whose functions are served ungated: C code over numbers and sequences, nothing kept.
UNGATED_MODULES = frozenset({"math", "cmath", "operator", "bisect", "heapq"})

_SCALARS = frozenset({str, bytes, int, float, complex, bool, type(None)})
_IMMUTABLE_BASES = (str, bytes, int, float, complex, tuple, frozenset)
# Arguments exact as they are: scalars, and types that subclass none of the immutable bases.
_AS_THEY_ARE = _SCALARS | frozenset(
    {
        list,
        dict,
        set,
        bytearray,
        range,
        slice,
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
        SandboxDecimal,  # the checked Decimal (ADR 0129): immutable, no program code
        fractions.Fraction,
        types.FunctionType,
        types.BuiltinFunctionType,
    }
)
#: Library callables a policy read hands out through the gate.
_LIBRARY_CALLABLES = frozenset(
    {
        types.FunctionType,
        types.MethodType,
        types.BuiltinFunctionType,
        types.MethodWrapperType,
        types.MethodDescriptorType,
        types.WrapperDescriptorType,
        types.ClassMethodDescriptorType,
        functools.partial,
    }
)


def exact_name(name: Any) -> str:
    """An attribute name as runtime code may read it: an exact ``str`` (or ``TypeError``)."""
    if type(name) is str:
        return name
    if isinstance(name, str):
        return str.__str__(name)
    raise TypeError(f"attribute name must be a str, not {type(name).__name__}")


def exact(value: Any) -> Any:
    """``value`` with every program subclass of an immutable built-in made its base type (and
    a typing form the facade wrapped, the form itself)."""
    kind = type(value)
    if kind in _AS_THEY_ARE:
        return value
    if kind is tuple or kind is frozenset:
        return _members(value, kind, {})
    if not isinstance(value, _IMMUTABLE_BASES):
        form = getattr(kind, "__typing_form__", None)
        return value if form is None else form(value)
    return _to_base(value, {})


def _to_base(value: Any, memo: dict[int, Any]) -> Any:
    kind = type(value)
    if isinstance(value, enum.Enum) and not isinstance(kind, SandboxType):
        return value  # a host enum's member: its methods are the host's, not a program's
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bytes):
        return bytes.__getitem__(value, slice(None))
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, complex):
        return complex.__complex__(value)
    if isinstance(value, frozenset):
        return _members(frozenset.copy(value), frozenset, memo)
    items = tuple.__getitem__(value, slice(None))
    converted = _members(items, tuple, memo)
    if isinstance(kind, SandboxType):
        return converted  # the program's tuple class: its methods are the program's
    if converted is items:
        return value  # a namedtuple or struct_time holding exact values, as it is
    if is_namedtuple_class(kind):
        return tuple.__new__(kind, converted)
    return converted


def _members(container: Any, kind: type, memo: dict[int, Any]) -> Any:
    """``container`` (an exact tuple or frozenset), rebuilt if a member needs converting."""
    if _SCALARS.issuperset(map(type, container)):
        return container
    known = memo.get(id(container))
    if known is not None:
        return known[1]
    changed = False
    items = []
    for item in container:
        item_kind = type(item)
        if item_kind in _AS_THEY_ARE:
            new = item
        elif item_kind is tuple or item_kind is frozenset:
            new = _members(item, item_kind, memo)
        elif isinstance(item, _IMMUTABLE_BASES):
            new = _to_base(item, memo)
        else:
            new = item
        changed = changed or new is not item
        items.append(new)
    result = kind(items) if changed else container
    # The container is kept alive by the argument it came from for the whole call.
    memo[id(container)] = (container, result)
    return result


def exact_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Positional and keyword arguments through :func:`exact` (keyword names too)."""
    if not _AS_THEY_ARE.issuperset(map(type, args)):
        args = tuple(map(exact, args))
    if kwargs and not (
        _AS_THEY_ARE.issuperset(map(type, kwargs.values())) and {str}.issuperset(map(type, kwargs))
    ):
        kwargs = {exact_name(key): exact(value) for key, value in kwargs.items()}
    return args, kwargs


class GatedCall(SealedCallable):
    """A library function or method as generated code gets it: sealed, exact arguments in."""

    __slots__ = ()

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        if not _AS_THEY_ARE.issuperset(map(type, args)) or kwargs:
            args, kwargs = exact_args(args, kwargs)
        return self._sealed_call(*args, **kwargs)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> Any:
        # class P(typing.NamedTuple) / class D(typing.TypedDict): the functions name the
        # class to derive from, as they do unwrapped.
        entries = getattr(self._sealed_call, "__mro_entries__", None)
        if entries is None:
            raise TypeError(f"cannot derive a class from the function {self.__name__}")
        return entries(tuple(self._sealed_call if base is self else base for base in bases))


class MappingGatedCall(GatedCall):
    """A gated call whose dict arguments are also copied with exact keys and values: for
    library code that keys a cache on a mapping's items (``ElementPath``'s namespaces)."""

    __slots__ = ()

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = exact_args(
            tuple(_exact_items(arg) for arg in args),
            {key: _exact_items(value) for key, value in kwargs.items()},
        )
        return self._sealed_call(*args, **kwargs)


def _exact_items(value: Any) -> Any:
    if type(value) is dict:
        return {exact(key): exact(item) for key, item in value.items()}
    return value


class TextGatedCall(GatedCall):
    """A gated call to library code that converts its arguments to text in one C call
    (``namedtuple``'s names, a CSV row): the text of a container argument is estimated first
    and refused past the item cap, as ``str()`` of it is (red-team H10, ADR 0092)."""

    __slots__ = ()

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        check_texts(args, self.__name__)
        check_texts(kwargs.values(), self.__name__)
        return super().__call__(*args, **kwargs)


#: Library functions that convert their arguments to text in one C call.
_TEXT_CONVERTERS = frozenset(
    {collections.namedtuple, typing.NamedTuple, urllib.parse.urlencode, pprint.saferepr}
)
#: Methods that do, by the name a policy read finds them under, on these receivers.
TEXT_METHODS = frozenset({"writerow", "writerows"})


# One gate per library function, shared by every attempt (a gate holds nothing of one).
_GATES: dict[int, tuple[Any, GatedCall]] = {}
_GATES_KEPT = 4096


def gate(function: Any, name: str | None = None) -> Any:
    """``function`` behind the gate; classes and sealed runtime callables as they are.

    Functions are compared by identity (a set lookup hashes a function by its identity).
    """
    if isinstance(function, type | SealedCallable) or not callable(function):
        return function
    known = _GATES.get(id(function))
    if known is not None and known[0] is function:
        return known[1]
    maker = TextGatedCall if function in _TEXT_CONVERTERS else GatedCall
    gated = maker(function, name)
    if len(_GATES) >= _GATES_KEPT:
        _GATES.clear()
    _GATES[id(function)] = (function, gated)
    return gated


def is_library_callable(value: Any) -> bool:
    """Whether ``value`` (read from a library class or instance) is code to serve gated."""
    return type(value) in _LIBRARY_CALLABLES


# ----------------------------------------------------------------------------- zoneinfo


class ZoneInfoGate(SealedWithHelpers):
    """``zoneinfo.ZoneInfo`` as generated code gets it: its key exact, so the process-wide tz
    cache keeps no program object; ``isinstance`` and ``no_cache``/``from_file`` still work,
    and ``type(zone)`` is this stand-in again (``clear_cache`` stays denied)."""

    __slots__ = ()
    _sandbox_public_ = frozenset({"no_cache", "from_file"})

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, zoneinfo.ZoneInfo)

    def __subclasscheck__(self, subclass: Any) -> bool:
        return isinstance(subclass, type) and issubclass(subclass, zoneinfo.ZoneInfo)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[type, ...]:
        raise TypeError("zoneinfo.ZoneInfo cannot be subclassed in the sandbox")


ZoneInfoGate.__name__ = ZoneInfoGate.__qualname__ = "ZoneInfo"  # as messages name it
ZONE_INFO = ZoneInfoGate(
    GatedCall(zoneinfo.ZoneInfo, "ZoneInfo"),
    "ZoneInfo",
    {
        "no_cache": GatedCall(zoneinfo.ZoneInfo.no_cache, "no_cache"),
        "from_file": GatedCall(zoneinfo.ZoneInfo.from_file, "from_file"),
    },
)
ZONE_INFO.__qualname__ = "ZoneInfo"

# Raw classes whose stand-in ``type()`` hands out instead.
_SERVED_CLASSES: Mapping[type, Any] = types.MappingProxyType({zoneinfo.ZoneInfo: ZONE_INFO})


def served_class(cls: type) -> Any:
    """What ``type()`` hands out for ``cls``: its gated stand-in, or ``cls`` itself."""
    return _SERVED_CLASSES.get(cls, cls)
