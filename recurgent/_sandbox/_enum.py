"""A sandbox-native ``enum``: ``Enum``, ``IntEnum``, ``StrEnum``, ``auto`` and ``unique``.

The real module's metaclass (``EnumType``) would build the program's classes outside the
sandbox's metaclass and runs library code with attribute work on the class body. Here the
metaclass is a subclass of the sandbox's own, so enum classes are program classes like any
other; members live in a runtime-side registry (nothing new is reachable from the program's
objects), and the base classes are built per attempt because the program may write to classes
it holds (ADR 0049).
"""

from __future__ import annotations

import types
import weakref
from typing import Any, cast

from recurgent._sandbox._integers import new_int
from recurgent._sandbox._made import SandboxType

__all__ = ["make_enum"]


class auto:
    """``enum.auto``: the member's value is chosen when the class is made."""

    __slots__ = ()
    _sandbox_public_: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        return "auto()"


auto.__module__ = "enum"

# Enum class -> its members by name, in definition order (aliases included).
_MEMBERS: weakref.WeakKeyDictionary[type, dict[str, Any]] = weakref.WeakKeyDictionary()
# Enum class -> its canonical members (no aliases), in definition order.
_CANONICAL: weakref.WeakKeyDictionary[type, tuple[Any, ...]] = weakref.WeakKeyDictionary()
_SKIPPED = (types.FunctionType, classmethod, staticmethod, property, type)


def _is_member_value(name: str, value: Any) -> bool:
    return not name.startswith("_") and not isinstance(value, _SKIPPED) and not callable(value)


def _next_value(cls: type, name: str, previous: list[Any]) -> Any:
    if issubclass(cls, str):
        return name.lower()
    numbers = [value for value in previous if isinstance(value, int)]
    return numbers[-1] + 1 if numbers else 1


class SandboxEnumType(SandboxType):
    """Metaclass of the sandbox's enum classes: iteration, lookup by value and by name."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> SandboxEnumType:
        cls = cast(SandboxEnumType, super().__new__(mcls, name, bases, namespace, **kwargs))
        if not any(base in _MEMBERS for base in cls.__mro__[1:]):
            return cls  # Enum, IntEnum, StrEnum themselves
        for base in cls.__mro__[1:]:
            if _CANONICAL.get(base):
                raise TypeError(f"{name!r} cannot extend {base.__name__!r}, which has members")
        members: dict[str, Any] = {}
        canonical: list[Any] = []
        values: list[Any] = []
        for key, value in list(namespace.items()):
            if not _is_member_value(key, value):
                continue
            if isinstance(value, auto):
                value = _next_value(cls, key, values)
            existing = next((m for m in canonical if m._value_ == value), None)
            if existing is not None:
                members[key] = existing  # an alias, as in the real module
            else:
                member = _make_member(cls, key, value)
                members[key] = member
                canonical.append(member)
                values.append(value)
            type.__setattr__(cls, key, members[key])
        _MEMBERS[cls] = members
        _CANONICAL[cls] = tuple(canonical)
        return cls

    def __call__(cls, value: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            raise TypeError("the functional Enum API is not available in the sandbox")
        klass: Any = cls
        if isinstance(value, klass):
            return value
        for member in _CANONICAL.get(cls, ()):
            if member._value_ == value:
                return member
        raise ValueError(f"{value!r} is not a valid {cls.__name__}")

    def __getitem__(cls, name: Any) -> Any:
        return _MEMBERS.get(cls, {})[name]

    def __iter__(cls) -> Any:
        return iter(_CANONICAL.get(cls, ()))

    def __reversed__(cls) -> Any:
        return reversed(_CANONICAL.get(cls, ()))

    def __len__(cls) -> int:
        return len(_CANONICAL.get(cls, ()))

    def __contains__(cls, value: Any) -> bool:
        canonical = _CANONICAL.get(cls, ())
        return value in canonical or any(member._value_ == value for member in canonical)

    def __bool__(cls) -> bool:
        return True

    def __setattr__(cls, name: str, value: Any) -> None:
        if name in _MEMBERS.get(cls, {}):
            raise AttributeError(f"cannot reassign member {name!r}")
        super().__setattr__(name, value)

    def __delattr__(cls, name: str) -> None:
        if name in _MEMBERS.get(cls, {}):
            raise AttributeError(f"cannot delete member {name!r}")
        super().__delattr__(name)

    def __repr__(cls) -> str:
        return f"<enum {cls.__name__!r}>"


def _make_member(cls: type, name: str, value: Any) -> Any:
    arguments = value if isinstance(value, tuple) else (value,)
    member: Any
    if issubclass(cls, int):
        member = new_int(cls, *arguments)  # checked like int() (ADR 0123)
    elif issubclass(cls, str):
        member = str.__new__(cls, *arguments)
    else:
        member = object.__new__(cls)
    object.__setattr__(member, "_name_", name)
    object.__setattr__(member, "_value_", value)
    object.__setattr__(member, "name", name)
    object.__setattr__(member, "value", value)
    init = vars(cls).get("__init__")
    if init is not None:
        init(member, *arguments)
    return member


_READ_ONLY = frozenset({"name", "value", "_name_", "_value_"})


def _member_setattr(self: Any, name: str, value: Any) -> None:
    if name in _READ_ONLY:
        raise AttributeError(f"cannot set attribute {name!r} of an enum member")
    object.__setattr__(self, name, value)


def _member_repr(self: Any) -> str:
    return f"<{type(self).__name__}.{self._name_}: {self._value_!r}>"


def _member_str(self: Any) -> str:
    return f"{type(self).__name__}.{self._name_}"


def _member_hash(self: Any) -> int:
    return hash(self._name_)


def _member_reduce(self: Any, protocol: Any) -> Any:
    raise TypeError("enum members cannot be pickled in the sandbox")


def _same(self: Any, memo: Any = None) -> Any:
    return self


def unique(enumeration: Any) -> Any:
    """``enum.unique``: refuse aliases."""
    members = _MEMBERS.get(enumeration) if isinstance(enumeration, SandboxEnumType) else None
    if members is None:
        raise TypeError("unique() can only check enumerations your code defined")
    aliases = [(name, member._name_) for name, member in members.items() if name != member._name_]
    if aliases:
        listed = ", ".join(f"{alias} -> {name}" for alias, name in aliases)
        raise ValueError(f"duplicate values found in {enumeration!r}: {listed}")
    return enumeration


def make_enum() -> dict[str, Any]:
    """The ``enum`` names of one attempt (fresh base classes: programs may write to classes)."""
    common = {
        "__setattr__": _member_setattr,
        "__repr__": _member_repr,
        "__reduce_ex__": _member_reduce,
        "__copy__": _same,
        "__deepcopy__": _same,
        "__module__": "enum",
    }
    enum_base = SandboxEnumType(
        "Enum", (object,), {**common, "__str__": _member_str, "__hash__": _member_hash}
    )
    # As in Python 3.11, str() and format() of IntEnum/StrEnum members are their values'.
    int_enum = SandboxEnumType(
        "IntEnum",
        (int, enum_base),
        {**common, "__str__": int.__repr__, "__format__": int.__format__, "__hash__": int.__hash__},
    )
    str_enum = SandboxEnumType(
        "StrEnum",
        (str, enum_base),
        {**common, "__str__": str.__str__, "__format__": str.__format__, "__hash__": str.__hash__},
    )
    for base in (enum_base, int_enum, str_enum):
        _MEMBERS[base] = {}
        _CANONICAL[base] = ()
    return {"Enum": enum_base, "IntEnum": int_enum, "StrEnum": str_enum}
