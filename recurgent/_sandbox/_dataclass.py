"""A sandbox-native ``dataclasses``: the decorator and helpers, built without generated source.

The real module writes Python source for ``__init__``/``__repr__``/``__eq__`` and ``exec``s it
with globals of its own, and reads and writes class attributes by names taken from the class;
neither may run on a class generated code controls. This version builds the same methods as
plain closures over a field list, applies them only to classes the program defined (the
sandbox's metaclass), and keeps the field list in a runtime-side registry, so nothing new is
reachable from the program's objects (ADR 0049).
"""

from __future__ import annotations

import dataclasses
import typing
import weakref
from collections.abc import Callable
from typing import Any

from recurgent._sandbox._made import SandboxType
from recurgent._sandbox._measure import check_items
from recurgent._sandbox._text_size import repr_length

__all__ = ["dataclass_overrides"]


# The real sentinel: a plain marker object, so programs comparing with it see the same one.
MISSING: Any = dataclasses.MISSING
_FIELD_ATTRIBUTES = (
    "name",
    "type",
    "default",
    "default_factory",
    "init",
    "repr",
    "hash",
    "compare",
    "metadata",
    "kw_only",
)


class Field:
    """What ``field()`` returns and ``fields()`` lists (the public attributes of the real one)."""

    __slots__ = _FIELD_ATTRIBUTES
    _sandbox_public_ = frozenset(_FIELD_ATTRIBUTES)

    def __init__(
        self,
        default: Any,
        default_factory: Any,
        init: bool,
        repr: bool,
        hash: Any,
        compare: bool,
        metadata: Any,
        kw_only: Any,
    ) -> None:
        self.name: Any = None
        self.type: Any = None
        self.default = default
        self.default_factory = default_factory
        self.init = init
        self.repr = repr
        self.hash = hash
        self.compare = compare
        self.metadata = dict(metadata or {})
        self.kw_only = kw_only

    def __repr__(self) -> str:
        # Each value read once and counted before the one call that writes them (red team
        # R29: a default sharing a million-character string a hundred times wrote 100 000 620).
        shown = (
            self.name,
            self.type,
            self.default,
            self.default_factory,
            self.init,
            self.repr,
            self.hash,
            self.compare,
            self.metadata,
            self.kw_only,
        )
        check_items(_FIELD_REPR + sum(repr_length(value) for value in shown), "repr()")
        name, kind, default, factory, init, shows, hashed, compare, metadata, kw_only = shown
        return (
            f"Field(name={name!r},type={kind!r},default={default!r},"
            f"default_factory={factory!r},init={init!r},repr={shows!r},"
            f"hash={hashed!r},compare={compare!r},metadata={metadata!r},"
            f"kw_only={kw_only!r})"
        )


# What ``Field``'s repr writes around its values: "Field(name=" ... "kw_only=" and ")".
_FIELD_REPR = 100
Field.__module__ = "dataclasses"


def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    init: bool = True,
    repr: bool = True,
    hash: Any = None,
    compare: bool = True,
    metadata: Any = None,
    kw_only: Any = MISSING,
) -> Field:
    """``dataclasses.field``."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, init, repr, hash, compare, metadata, kw_only)


# Field lists of the program's dataclasses; weak so that an attempt's classes can go.
_FIELDS: weakref.WeakKeyDictionary[type, tuple[Field, ...]] = weakref.WeakKeyDictionary()


def _is_class_var(annotation: Any) -> bool:
    if annotation is typing.ClassVar or typing.get_origin(annotation) is typing.ClassVar:
        return True
    return isinstance(annotation, str) and annotation.startswith(("ClassVar", "typing.ClassVar"))


def _collect(cls: type, kw_only: bool) -> tuple[Field, ...]:
    collected: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for inherited in _FIELDS.get(base, ()):
            collected[inherited.name] = inherited
    keyword_only = kw_only
    annotations = dict(vars(cls).get("__annotations__", {}))
    for name, annotation in annotations.items():
        if annotation is dataclasses.KW_ONLY:
            keyword_only = True
            continue
        if _is_class_var(annotation):
            continue
        value = vars(cls).get(name, MISSING)
        made = value if isinstance(value, Field) else field(default=value)
        made.name, made.type = name, annotation
        if made.kw_only is MISSING:
            made.kw_only = keyword_only
        if isinstance(made.default, list | dict | set):
            raise ValueError(
                f"mutable default {type(made.default)} for field {name} is not allowed: "
                "use default_factory"
            )
        if isinstance(value, Field):
            if made.default is MISSING:
                type.__delattr__(cls, name)
            else:
                type.__setattr__(cls, name, made.default)
        collected[name] = made
    fields = tuple(collected.values())
    seen_default = False
    for item in fields:
        if not item.init or item.kw_only:
            continue
        has_default = item.default is not MISSING or item.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {item.name!r} follows default argument")
        seen_default = seen_default or has_default
    return fields


def _missing_message(names: list[str]) -> str:
    quoted = [repr(name) for name in names]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
    plural = "s" if len(names) > 1 else ""
    return f"__init__() missing {len(names)} required argument{plural}: {listed}"


def _make_init(fields: tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    positional = [item for item in fields if item.init and not item.kw_only]
    accepted = {item.name for item in fields if item.init}

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(positional):
            raise TypeError(
                f"__init__() takes {len(positional) + 1} positional arguments but "
                f"{len(args) + 1} were given"
            )
        values = {item.name: value for item, value in zip(positional, args, strict=False)}
        for name, value in kwargs.items():
            if name not in accepted:
                raise TypeError(f"__init__() got an unexpected keyword argument {name!r}")
            if name in values:
                raise TypeError(f"__init__() got multiple values for argument {name!r}")
            values[name] = value
        missing = []
        store = object.__setattr__ if frozen else setattr
        for item in fields:
            if item.init and item.name in values:
                value = values[item.name]
            elif item.default is not MISSING:
                value = item.default
            elif item.default_factory is not MISSING:
                value = item.default_factory()
            elif item.init:
                missing.append(item.name)
                continue
            else:
                continue
            store(self, item.name, value)
        if missing:
            raise TypeError(_missing_message(missing))
        post_init = getattr(type(self), "__post_init__", None)
        if post_init is not None:
            post_init(self)

    return __init__


def _values(obj: Any, fields: tuple[Field, ...]) -> tuple[Any, ...]:
    return tuple(getattr(obj, item.name) for item in fields)


def _make_methods(cls: type, fields: tuple[Field, ...], options: dict[str, Any]) -> dict[str, Any]:
    shown = tuple(item for item in fields if item.repr)
    compared = tuple(item for item in fields if item.compare)
    methods: dict[str, Any] = {}
    if options["init"]:
        methods["__init__"] = _make_init(fields, options["frozen"])
    if options["repr"]:

        def __repr__(self: Any) -> str:
            # Each field read once, and what its repr writes counted before the one call that
            # writes it (red team R29: a list field sharing a million-character string a
            # hundred times wrote 100 000 406 characters, formatted here past the checks).
            values = [(item.name, getattr(self, item.name)) for item in shown]
            # "Name(" and ")", and each field's "name=" and ", ".
            frame = len(type(self).__name__) + 2
            check_items(frame + sum(len(name) + 3 + repr_length(v) for name, v in values), "repr()")
            inner = ", ".join(f"{name}={value!r}" for name, value in values)
            # __name__: the program's classes live inside the runtime's main function.
            return f"{type(self).__name__}({inner})"

        methods["__repr__"] = __repr__
    if options["eq"]:

        def __eq__(self: Any, other: Any) -> Any:
            if type(other) is not type(self):
                return NotImplemented
            return _values(self, compared) == _values(other, compared)

        methods["__eq__"] = __eq__
    if options["order"]:
        for name, test in (
            ("__lt__", lambda a, b: a < b),
            ("__le__", lambda a, b: a <= b),
            ("__gt__", lambda a, b: a > b),
            ("__ge__", lambda a, b: a >= b),
        ):
            if name in vars(cls):
                raise TypeError(
                    f"Cannot overwrite attribute {name} in class {cls.__name__}. "
                    "Consider using functools.total_ordering"
                )
            methods[name] = _comparison(name, test, compared)
    if options["frozen"]:

        def __setattr__(self: Any, name: str, value: Any) -> None:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self: Any, name: str) -> None:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

        methods["__setattr__"], methods["__delattr__"] = __setattr__, __delattr__
    hashed = tuple(item for item in fields if (item.compare if item.hash is None else item.hash))
    if options["unsafe_hash"] or (options["eq"] and options["frozen"]):

        def __hash__(self: Any) -> int:
            return hash(_values(self, hashed))

        methods["__hash__"] = __hash__
    elif options["eq"] and "__hash__" not in vars(cls):
        methods["__hash__"] = None
    return methods


def _comparison(name: str, test: Callable[[Any, Any], bool], compared: tuple[Field, ...]) -> Any:
    def compare(self: Any, other: Any) -> Any:
        if type(other) is not type(self):
            return NotImplemented
        return test(_values(self, compared), _values(other, compared))

    compare.__name__ = name
    return compare


def _process(cls: Any, options: dict[str, Any]) -> Any:
    if not isinstance(cls, SandboxType):
        raise TypeError("dataclass() can only decorate classes your code defined")
    if options["order"] and not options["eq"]:
        raise ValueError("eq must be true if order is true")
    fields = _collect(cls, options["kw_only"])
    own = vars(cls)
    for name, method in _make_methods(cls, fields, options).items():
        # As the real decorator: a method the class body defines itself is kept.
        if (
            name in ("__lt__", "__le__", "__gt__", "__ge__", "__setattr__", "__delattr__")
            or name == "__hash__"
            or name not in own
        ):
            type.__setattr__(cls, name, method)
    type.__setattr__(
        cls, "__match_args__", tuple(item.name for item in fields if item.init and not item.kw_only)
    )
    _FIELDS[cls] = fields
    return cls


def dataclass(
    cls: Any = None,
    /,
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    frozen: bool = False,
    match_args: bool = True,
    kw_only: bool = False,
    slots: bool = False,
    weakref_slot: bool = False,
) -> Any:
    """``dataclasses.dataclass`` for the program's own classes (``slots`` is accepted, unused)."""
    options = {
        "init": init,
        "repr": repr,
        "eq": eq,
        "order": order,
        "unsafe_hash": unsafe_hash,
        "frozen": frozen,
        "kw_only": kw_only,
    }
    if cls is None:
        return lambda target: _process(target, options)
    return _process(cls, options)


def _fields_of(value: Any) -> tuple[Field, ...]:
    cls = value if isinstance(value, type) else type(value)
    found = _FIELDS.get(cls) if isinstance(cls, SandboxType) else None
    if found is None:
        raise TypeError("must be called with a dataclass type or instance")
    return found


def fields(class_or_instance: Any) -> tuple[Field, ...]:
    """``dataclasses.fields``."""
    return _fields_of(class_or_instance)


def is_dataclass(obj: Any) -> bool:
    """``dataclasses.is_dataclass``."""
    cls = obj if isinstance(obj, type) else type(obj)
    return isinstance(cls, SandboxType) and cls in _FIELDS


def _is_instance(value: Any) -> bool:
    return not isinstance(value, type) and is_dataclass(value)


def _convert(value: Any, factory: Callable[[Any], Any], as_tuple: bool) -> Any:
    if _is_instance(value):
        parts = [
            (item.name, _convert(getattr(value, item.name), factory, as_tuple))
            for item in _fields_of(value)
        ]
        return factory([part[1] for part in parts]) if as_tuple else factory(parts)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)(*[_convert(item, factory, as_tuple) for item in value])
    if isinstance(value, list | tuple):
        return type(value)(_convert(item, factory, as_tuple) for item in value)
    if isinstance(value, dict):
        return type(value)(
            (_convert(key, factory, as_tuple), _convert(item, factory, as_tuple))
            for key, item in value.items()
        )
    return value


def asdict(obj: Any, *, dict_factory: Callable[[Any], Any] = dict) -> Any:
    """``dataclasses.asdict`` (values other than containers and dataclasses are not copied)."""
    if not _is_instance(obj):
        raise TypeError("asdict() should be called on dataclass instances")
    return _convert(obj, dict_factory, as_tuple=False)


def astuple(obj: Any, *, tuple_factory: Callable[[Any], Any] = tuple) -> Any:
    """``dataclasses.astuple``."""
    if not _is_instance(obj):
        raise TypeError("astuple() should be called on dataclass instances")
    return _convert(obj, tuple_factory, as_tuple=True)


def replace(obj: Any, /, **changes: Any) -> Any:
    """``dataclasses.replace``."""
    if not _is_instance(obj):
        raise TypeError("replace() should be called on dataclass instances")
    known = _fields_of(obj)
    for name in changes:
        item = next((f for f in known if f.name == name), None)
        if item is None:
            raise TypeError(f"__init__() got an unexpected keyword argument {name!r}")
        if not item.init:
            raise ValueError(
                f"field {name} is declared with init=False, it cannot be specified with replace()"
            )
    arguments = {item.name: getattr(obj, item.name) for item in known if item.init}
    arguments.update(changes)
    return type(obj)(**arguments)


def dataclass_overrides() -> dict[str, Any]:
    """The served ``dataclasses`` names."""
    return {
        "dataclass": dataclass,
        "field": field,
        "fields": fields,
        "asdict": asdict,
        "astuple": astuple,
        "replace": replace,
        "is_dataclass": is_dataclass,
        "Field": Field,
    }
