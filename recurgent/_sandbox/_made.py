"""What generated code made: its metaclass, and the tests that tell its objects from the host's.

Kept apart from the attribute policy so that the stand-ins of the module catalog
(``_reflection``) can ask "did the program make this?" without importing the policy, which
itself imports the module facades built from the catalog.
"""

from __future__ import annotations

import types
from typing import Any

from recurgent._sandbox._integers import CheckedInt, SandboxInt

__all__ = [
    "GENERATED_FILENAME",
    "SandboxType",
    "allow_subclassing",
    "is_namedtuple_class",
    "is_sandbox_made",
    "substitute_base",
]

GENERATED_FILENAME = "<generated>"

# Library classes the served modules add (the re-hosted HTMLParser, ADR 0090) join these.
_ALLOWED_BASES = {object, dict, list, set, str, int, float, tuple, SandboxInt}
# int's constructor is C; a subclass gets the checked one in between (ADR 0123).
_INT_BASES = (int, CheckedInt)


# A library base a generated class gets a checked subclass of in between (the collections
# wrappers, ADR 0155); their module registers them, as served modules register allowed bases.
_SUBSTITUTED_BASES: dict[type, type] = {}


def allow_subclassing(cls: type) -> None:
    """Let generated classes derive from ``cls`` (a served library class made to be subclassed)."""
    _ALLOWED_BASES.add(cls)


def substitute_base(base: type, checked: type) -> None:
    """Make a generated class naming ``base`` among its bases derive from ``checked``."""
    _SUBSTITUTED_BASES[base] = checked


def is_namedtuple_class(value: object) -> bool:
    """True for a class ``collections.namedtuple`` made."""
    return (
        isinstance(value, type)
        and issubclass(value, tuple)
        and isinstance(getattr(value, "_fields", None), tuple)
        and callable(getattr(value, "_make", None))
    )


class SandboxType(type):
    """Metaclass of every class generated code defines (RestrictedPython's ``__metaclass__``)."""

    def __new__(
        mcls, name: str, bases: tuple[Any, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> SandboxType:
        for given in bases:
            if not isinstance(given, type):
                # The sandbox's checked constructors (bytes, bytearray, range, ...) are
                # functions: Python's own error then says issubclass() wants a class.
                named = getattr(given, "__name__", None)
                shown = named if type(named) is str else f"an object of type {type(given).__name__}"
                raise TypeError(_refusal(name, shown))
        bases = tuple(SandboxInt if base in _INT_BASES else base for base in bases)
        bases = tuple(_SUBSTITUTED_BASES.get(base, base) for base in bases)
        for base in bases:
            allowed = (
                isinstance(base, SandboxType)
                or base in _ALLOWED_BASES
                or is_namedtuple_class(base)
                or (issubclass(base, BaseException) and base.__module__ == "builtins")
            )
            if not allowed:
                raise TypeError(_refusal(name, base.__name__))
        return super().__new__(mcls, name, bases, namespace, **kwargs)


def _refusal(name: str, base: str) -> str:
    return (
        f"class {name} may not derive from {base}; generated classes may "
        "derive from object, builtin containers and exceptions, namedtuples, "
        "typing's NamedTuple/TypedDict/Generic/Protocol, collections' Counter/"
        "OrderedDict/defaultdict/UserDict/UserList/UserString, json's "
        "JSONEncoder/JSONDecoder, HTMLParser or classes defined by the same code; "
        f"hold a {base} in an attribute instead (self.inner = ...)"
    )


def is_sandbox_made(value: object) -> bool:
    """True for classes, instances, functions and generators generated code created."""
    if isinstance(value, SandboxType) or isinstance(type(value), SandboxType):
        return True
    code = getattr(value, "__code__", None) or getattr(value, "gi_code", None)
    return isinstance(code, types.CodeType) and code.co_filename == GENERATED_FILENAME
