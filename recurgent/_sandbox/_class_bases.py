"""What a program's ``class`` statement may derive from: typing's bases and the collections ABCs.

Every class a program defines is made by :func:`make_program_class` (RestrictedPython's
``__metaclass__``). Plain bases go to :class:`SandboxType` as before. typing's bases are never
handed to typing's own machinery, which runs library hooks on the program's class
(``__init_subclass__``, ``__class_getitem__``, the ``_tp_cache``) and keeps state about it
(ADR 0104):

* ``typing.NamedTuple``: the fields and defaults are read from the class body and a
  ``collections.namedtuple`` is built for them (through the gate, as a program's own call of
  ``namedtuple`` is); the program's class derives from it, with the sandbox's metaclass.
* ``typing.TypedDict``: a class of :class:`TypedDictType`, whose call builds a plain ``dict`` and
  which refuses ``isinstance``, as typing's does.
* ``typing.Generic`` and ``typing.Protocol``: dropped from the bases; the class's metaclass is
  :class:`TypingClassType`, whose subscription (``Box[int]``) returns the class itself (the
  parameters are erased), which refuses to instantiate a protocol and answers ``isinstance``
  for a ``runtime_checkable`` one by looking members up statically (no code of the instance
  runs; private names only on the program's own objects).
* ``collections.UserDict``/``UserList``/``UserString`` (whose metaclass is ``ABCMeta``): made by
  :class:`SandboxABCType`, the sandbox's metaclass joined with ``ABCMeta``, deriving from their
  checked subclasses (``_user_wrappers``: ``data`` read once, ADR 0155).

The markers of which classes are protocols live here, runtime-side, never on the class: a
program may write its own classes' attributes.
"""

from __future__ import annotations

import abc
import collections
import typing
import weakref
from typing import Any

# Imported for what it registers: the wrappers' checked subclasses as bases (ADR 0155).
from recurgent._sandbox import _user_wrappers  # noqa: F401
from recurgent._sandbox._gate import gate
from recurgent._sandbox._made import SandboxType, allow_subclassing, is_sandbox_made
from recurgent._sandbox._names import ALLOWED_DUNDER_METHODS

__all__ = [
    "SandboxABCType",
    "TypedDictType",
    "TypingClassType",
    "is_typeddict",
    "make_program_class",
    "runtime_checkable",
]

_NAMED_TUPLE = typing.NamedTuple.__mro_entries__((typing.NamedTuple,))[0]  # type: ignore[attr-defined]
_TYPED_DICT = typing.TypedDict.__mro_entries__((typing.TypedDict,))[0]  # type: ignore[attr-defined]
_ERASED = (typing.Generic, typing.Protocol)

# The library classes a program may derive from besides the builtins (ADR 0104).
# UserDict/UserList/UserString are substituted by their checked subclasses (_user_wrappers).
for _base in (collections.Counter, collections.OrderedDict, collections.defaultdict):
    allow_subclassing(_base)

# namedtuple's underscore API and what typing's NamedTuple refuses to see overwritten.
_NAMED_TUPLE_RESERVED = frozenset(
    {"_fields", "_field_defaults", "_make", "_replace", "_asdict", "_source", "__init__"}
)
_NAMEDTUPLE = gate(collections.namedtuple, "namedtuple")
# Body entries that are bookkeeping, never protocol members.
_NOT_MEMBERS = frozenset(
    {"__module__", "__qualname__", "__doc__", "__annotations__", "__slots__", "__init__"}
)

_PROTOCOLS: weakref.WeakKeyDictionary[type, frozenset[str]] = weakref.WeakKeyDictionary()
_RUNTIME_CHECKABLE: weakref.WeakSet[type] = weakref.WeakSet()


class SandboxABCType(SandboxType, abc.ABCMeta):
    """The sandbox's metaclass for a program class deriving from an ``ABCMeta`` library class
    (``UserDict``, ``UserList``, ``UserString``)."""


class TypingClassType(SandboxType):
    """Metaclass of the program's generic classes and protocols."""

    def __getitem__(cls, parameters: Any) -> Any:
        # Box[int] is Box: the parameters are annotations, erased at run time.
        return cls

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if cls in _PROTOCOLS:
            raise TypeError(
                f"Protocols cannot be instantiated: {cls.__name__} is a protocol; define a "
                f"class that has its methods (or derives from {cls.__name__}) and create that"
            )
        return super().__call__(*args, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        members = _PROTOCOLS.get(cls)
        if members is None:
            return bool(super().__instancecheck__(instance))
        _require_runtime_checkable(cls)
        if super().__instancecheck__(instance):
            return True
        return all(_has_member(instance, name) for name in members)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        members = _PROTOCOLS.get(cls)
        if members is None:
            return bool(super().__subclasscheck__(subclass))
        _require_runtime_checkable(cls)
        if not isinstance(subclass, type):
            raise TypeError("issubclass() arg 1 must be a class")
        if super().__subclasscheck__(subclass):
            return True
        return all(_class_has(subclass, name, is_sandbox_made(subclass)) for name in members)


class TypingABCType(TypingClassType, SandboxABCType):
    """A generic program class deriving from an ``ABCMeta`` library class."""


class TypedDictType(SandboxType):
    """Metaclass of the program's ``TypedDict`` classes: calling one builds a plain dict."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return dict(*args, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        raise TypeError("TypedDict does not support instance and class checks")

    def __subclasscheck__(cls, subclass: Any) -> bool:
        raise TypeError("TypedDict does not support instance and class checks")


def make_program_class(
    name: str, bases: tuple[Any, ...], body: dict[str, Any], **keywords: Any
) -> type:
    """The class a program's ``class`` statement defines (see the module docstring)."""
    # typing's original bases (Generic[T], the NamedTuple function) stay out of the class.
    namespace = {key: value for key, value in body.items() if key != "__orig_bases__"}
    if _NAMED_TUPLE in bases:
        return _named_tuple(name, bases, namespace, keywords)
    if _TYPED_DICT in bases or any(isinstance(base, TypedDictType) for base in bases):
        return _typed_dict(name, bases, namespace, keywords)
    protocol = typing.Protocol in bases
    kept = tuple(base for base in bases if base not in _ERASED)
    generic = len(kept) < len(bases) or any(isinstance(base, TypingClassType) for base in kept)
    abstract = any(isinstance(base, abc.ABCMeta) for base in kept)
    if generic:
        metaclass: type = TypingABCType if abstract else TypingClassType
    else:
        metaclass = SandboxABCType if abstract else SandboxType
    cls: type = metaclass(name, kept or (object,), namespace, **keywords)
    if protocol:
        _PROTOCOLS[cls] = _protocol_members(namespace, kept)
    return cls


def runtime_checkable(cls: Any) -> Any:
    """``typing.runtime_checkable`` for the program's own protocols."""
    if not (isinstance(cls, TypingClassType) and cls in _PROTOCOLS):
        raise TypeError(
            "@runtime_checkable can be only applied to protocol classes your code defines, "
            f"got {type(cls).__name__}"
        )
    _RUNTIME_CHECKABLE.add(cls)
    return cls


def is_typeddict(tp: Any) -> bool:
    """``typing.is_typeddict``, which also knows the program's TypedDict classes."""
    return isinstance(tp, TypedDictType) or typing.is_typeddict(tp)


# ----------------------------------------------------------------------------- NamedTuple


def _named_tuple(
    name: str, bases: tuple[Any, ...], body: dict[str, Any], keywords: dict[str, Any]
) -> type:
    if keywords or any(base is not _NAMED_TUPLE and base is not typing.Generic for base in bases):
        raise TypeError("a NamedTuple class can only derive from NamedTuple (and Generic)")
    annotations = body.get("__annotations__", {})
    fields = list(annotations)
    defaults: list[Any] = []
    for field in fields:
        if field in body:
            defaults.append(body[field])
        elif defaults:
            raise TypeError(
                f"Non-default namedtuple field {field} cannot follow default field "
                f"{fields[fields.index(field) - 1]}; give {field} a default or move it up"
            )
    reserved = sorted(_NAMED_TUPLE_RESERVED & set(body))
    if reserved:
        raise AttributeError(f"Cannot overwrite NamedTuple attribute {reserved[0]}")
    module = body.get("__module__")
    base = _NAMEDTUPLE(name, fields, defaults=defaults, module=module)
    namespace = {key: value for key, value in body.items() if key not in annotations}
    namespace["__slots__"] = ()  # instances stay tuples, with no attribute dict
    return SandboxType(name, (base,), namespace)


# ----------------------------------------------------------------------------- TypedDict


def _typed_dict(
    name: str, bases: tuple[Any, ...], body: dict[str, Any], keywords: dict[str, Any]
) -> type:
    unknown = sorted(set(keywords) - {"total"})
    if unknown:
        raise TypeError(f"TypedDict takes only the keyword total, not {unknown[0]}")
    annotations: dict[str, Any] = {}
    for base in bases:
        if isinstance(base, TypedDictType):
            annotations.update(vars(base).get("__annotations__", {}))
        elif base is not _TYPED_DICT and base is not typing.Generic:
            raise TypeError(
                "cannot inherit from both a TypedDict type and a non-TypedDict base class"
            )
    annotations.update(body.get("__annotations__", {}))
    namespace = {**body, "__annotations__": annotations}
    return TypedDictType(name, (dict,), namespace)


# ----------------------------------------------------------------------------- Protocol


def _protocol_members(body: dict[str, Any], bases: tuple[Any, ...]) -> frozenset[str]:
    members = {key for key in body if key not in _NOT_MEMBERS}
    members.update(body.get("__annotations__", {}))
    for base in bases:
        members.update(_PROTOCOLS.get(base, frozenset()))
    return frozenset(members)


def _require_runtime_checkable(cls: type) -> None:
    if cls not in _RUNTIME_CHECKABLE:
        raise TypeError(
            "Instance and class checks can only be used with @runtime_checkable protocols; "
            f"decorate {cls.__name__} with @typing.runtime_checkable"
        )


def _visible(name: str, own: bool) -> bool:
    """Whether a member named ``name`` may be looked for: private names only on the
    program's own objects (a host object's private names are none of its business)."""
    return own or not name.startswith("_") or name in ALLOWED_DUNDER_METHODS


def _class_has(kind: type, name: str, own: bool) -> bool:
    if not _visible(name, own):
        return False
    # Static lookups in the classes' own dicts: no descriptor, property or hook runs.
    return any(name in vars(klass) for klass in type.__getattribute__(kind, "__mro__"))


def _has_member(instance: Any, name: str) -> bool:
    own = is_sandbox_made(instance)
    if own and not isinstance(instance, type):
        state = getattr(instance, "__dict__", None)
        if type(state) is dict and name in state:
            return True
    return _class_has(type(instance), name, own)
