"""Runtime guards compiled code calls: the default-deny attribute policy and the write guard.

Attribute access is default-deny (ADR 0011). It is allowed on plain value types, on objects
generated code made itself (classes with the :class:`SandboxType` metaclass, their instances,
its functions, namedtuples), on module facades, on ``Outcome`` and agent handles through
explicit tables, and on instances of vetted standard-library types (the type tables and the
sealed ``type()`` are in ``_types``, re-exported here for the sandbox). Everything else raises
``AttributeError`` with a message the model can act on.
"""

from __future__ import annotations

import abc
import collections
import copy
import functools
import os
import types
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from typing import Any

from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from recurgent._journal import REDIRECTED_DICT_METHODS, redirect_unbound
from recurgent._journal._shared import HostClass, needs_guard, unwrap_class
from recurgent._sandbox._checked_methods import (
    ITEM_WRITTEN_TYPES,
    USER_STRING_CHECKED,
    ElementWriter,
    ItemWriter,
    SafeFormatter,
    special_methods,
    user_string_binder,
)
from recurgent._sandbox._gate import (
    TEXT_METHODS,
    GatedCall,
    TextGatedCall,
    exact_name,
    gate,
    is_library_callable,
)
from recurgent._sandbox._integers import checked_from_bytes, plain_int_class
from recurgent._sandbox._made import (
    GENERATED_FILENAME,
    SandboxType,
    is_namedtuple_class,
    is_sandbox_made,
)
from recurgent._sandbox._modules import ModuleFacade
from recurgent._sandbox._names import (
    ALLOWED_DUNDER_METHODS,
    NAMEDTUPLE_ATTRIBUTES,
    READABLE_DUNDER_ATTRIBUTES,
    is_private_name,
)
from recurgent._sandbox._numbers import number_class
from recurgent._sandbox._reflection import SealedCallable
from recurgent._sandbox._rehost import CLASS_BOUND
from recurgent._sandbox._sizes import SIZED_DUNDERS, sized_dunder
from recurgent._sandbox._types import (
    DENIED_BY_TYPE,
    DENIED_EXCEPTION_ATTRIBUTES,
    MUTABLE_TYPES,
    OPEN_TYPES,
    SEALED_TYPE_OF,
    SealedType,
    guarded_host_code,
    trusted_class,
    type_of,
)
from recurgent._sandbox._user_wrappers import (
    CHECKED_WRAPPERS,
    library_text_method,
    real_class,
    served_mro,
)
from recurgent.outcome import Outcome, OutcomeFlag

__all__ = [
    "GENERATED_FILENAME",
    "INSPECTION_NAMES",
    "MUTABLE_TYPES",
    "NOT_HANDLED",
    "OPEN_TYPES",
    "SEALED_TYPE_OF",
    "AttributePolicy",
    "SandboxType",
    "SealedType",
    "is_namedtuple_class",
    "is_sandbox_made",
    "type_of",
]

#: Attribute names of frames, generators and code the sandbox never serves (RestrictedPython's
#: list): the worker's parent holds a handle request to them too (red team R28).
INSPECTION_NAMES: frozenset[str] = frozenset(INSPECT_ATTRIBUTES)


def _owned(obj: object) -> bool:
    """The program made ``obj`` (or it is ``super()`` of an object the program made)."""
    if isinstance(obj, super):
        return is_sandbox_made(obj.__self__)  # type: ignore[attr-defined]
    return is_sandbox_made(obj)


_RUNTIME_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _runtime_sealed(value: Any) -> Any:
    """``value``, sealed if it is a function (or bound method) the runtime itself defined.

    Host classes served to generated code (``Outcome``, the checked stand-ins) define methods
    in the runtime; read through the guard they come back sealed, so their globals and
    ``__self__`` stay out of reach (ADR 0021).
    """
    function = value.__func__ if type(value) is types.MethodType else value
    if type(function) is types.FunctionType and function.__code__.co_filename.startswith(
        _RUNTIME_ROOT
    ):
        return SealedCallable(value, function.__name__)
    return value


def _call_bound(binder: Callable[[Any], Any], obj: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``Class.method(obj, ...)`` for a checked method: bind to ``obj``, then call."""
    return binder(obj)(*args, **kwargs)


def _past_no_wrapper(proxy: super, name: str) -> Any:
    """``proxy.name``, refused when the ``super()`` starts past a checked wrapper class (red team
    R29): ``super(U.mro()[1], u).__repr__()`` ran the library's ``repr(self.data)``, and the
    other methods the checked class replaces, unchecked (100 000 400 characters)."""
    start: type = proxy.__thisclass__  # type: ignore[attr-defined]
    if start in CHECKED_WRAPPERS:
        raise AttributeError(
            f"super() past {start.__name__} is not available in the sandbox: its "
            "methods are the checked ones; call super() from your own class"
        )
    return getattr(proxy, name)


def _as_the_builtin(receiver: Any, name: str) -> Any:
    """``receiver`` (a program's subclass instance) as its builtin's exact value, for a checked
    method super() reached; ``from_bytes`` keeps the receiver (it builds ``type(receiver)``)."""
    if name == "from_bytes":
        return receiver
    if isinstance(receiver, str):
        return str.__str__(receiver)
    if isinstance(receiver, bytes):
        return bytes.__getitem__(receiver, slice(None))
    if isinstance(receiver, bytearray):
        return bytearray(receiver)
    if isinstance(receiver, int):
        return int.__int__(receiver)
    if isinstance(receiver, collections.Counter):
        return collections.Counter(dict.copy(receiver))
    raise AttributeError(f"super().{name} of {type(receiver).__name__} is not available")


def _bind_as_the_builtin(
    binder: Callable[[Any], Any], kinds: tuple[type, ...], name: str, obj: Any
) -> Any:
    # ``super(S, S).center(s, n)``: the builtin's unbound method, checked.
    if not isinstance(obj, kinds):
        raise TypeError(f"descriptor {name!r} for {kinds[0].__name__!r} objects doesn't apply")
    return binder(_as_the_builtin(obj, name))


def _lands_on_the_library(proxy: super, name: str) -> bool:
    """True when ``proxy.name`` resolves to a class the program did not make (a builtin's or
    the library's method), not to the program's own override further up."""
    receiver = proxy.__self__  # type: ignore[attr-defined]
    start: type = proxy.__thisclass__  # type: ignore[attr-defined]
    kind = receiver if isinstance(receiver, type) else type(receiver)
    order = type.__getattribute__(kind, "__mro__")
    for klass in order[order.index(start) + 1 :]:
        if name in type.__getattribute__(klass, "__dict__"):
            return not is_sandbox_made(klass)
    return False


def _unshared(value: Any) -> Any:
    """A copy of a mutable container a host class shares with the whole process."""
    if isinstance(value, dict | list | set | bytearray):
        return copy.deepcopy(value)
    return value


class AttributePolicy:
    """Default-deny attribute reads and writes for one attempt.

    Args:
        handle_attribute: Resolves ``handle.name`` for agent handles (and agents, which are
            turned into handles first); returns ``NOT_HANDLED`` for other objects.
        handle_writer: Returns a write proxy for a handle or agent, or ``None``.
        on_violation: Records a guardrail violation (host mutation) and returns the error
            to raise.
        tick: The attempt's tick, for checked methods that return endless iterators.
    """

    def __init__(
        self,
        *,
        handle_attribute: Callable[[Any, str], Any],
        handle_writer: Callable[[Any], Any],
        on_violation: Callable[[str], BaseException],
        tick: Callable[[], bool],
    ) -> None:
        self._handle_attribute = handle_attribute
        self._handle_writer = handle_writer
        self._on_violation = on_violation
        self._special = special_methods(SafeFormatter(self.getattr), tick)
        self._tick = tick

    def getattr(self, obj: Any, name: str) -> Any:
        """``obj.name`` under the sandbox policy (also the ``_getattr_`` hook)."""
        if type(name) is not str:
            # A program's str subclass would answer the checks below with its own methods.
            name = exact_name(name)
        if name.startswith("_"):
            return self._private(obj, name)
        if name in INSPECTION_NAMES:
            raise AttributeError(f"{name!r} is not accessible in the sandbox")
        special = self._special.get(name)
        if special is not None and isinstance(obj, special[0]):
            # Sealed: the checked method closes over the formatter, the policy and the tick.
            return SealedCallable(special[1](obj), name)
        if (
            special is not None
            and name in USER_STRING_CHECKED
            and isinstance(obj, collections.UserString)
        ):
            # str's checks, on its data (R3, H9).
            return SealedCallable(user_string_binder(name, special[1])(obj), name)
        kind = type(obj)
        bound = CLASS_BOUND.get(name)
        if bound is not None and isinstance(obj, bound[0]):
            # A re-hosted class method read on an instance (ADR 0090).
            return GatedCall(bound[1](kind), name)
        if name == "args" and isinstance(obj, BaseException):
            # A host function may raise with host code in its args (R3, H7).
            return _guarded_args(obj.args)
        if kind in OPEN_TYPES or isinstance(kind, SandboxType):
            return getattr(obj, name)
        if kind is ModuleFacade:
            return obj._facade_lookup(name)
        handled = self._handle_attribute(obj, name)
        if handled is not NOT_HANDLED:
            # A handle's methods are closures over the sandbox: sealed like every runtime callable.
            return _runtime_sealed(handled)
        if isinstance(obj, Outcome):
            if name in _OUTCOME_FLAGS:
                # ``out.ok`` and ``out.ok()`` alike: models write both (ADR 0098).
                return OutcomeFlag(obj.status == name)
            if name in _OUTCOME_INSTANCE_ATTRIBUTES:
                return _runtime_sealed(getattr(obj, name))
            raise AttributeError(
                f"'Outcome' object has no attribute {name!r}; use .ok, .value, .error_type, "
                ".error_message, .retriable, .metadata or .value_or(default)"
            )
        if isinstance(obj, type):
            return self._class_attribute(obj, name)
        if kind is HostClass:
            # A host class from memory: the class's own rules, host code guarded (ADR 0068).
            return obj.guarded(self._class_attribute(unwrap_class(obj), name))
        if is_sandbox_made(obj) or is_namedtuple_class(kind):
            return getattr(obj, name)
        if isinstance(obj, super):
            if is_sandbox_made(obj.__self__):  # type: ignore[attr-defined]
                return self._super_attribute(obj, name)
        elif isinstance(obj, BaseException) and name in DENIED_EXCEPTION_ATTRIBUTES:
            raise AttributeError(f"{kind.__name__}.{name} is not accessible in the sandbox")
        elif self._trusted_instance(kind, name):
            return self._instance_attribute(obj, name)
        raise AttributeError(
            f"attribute {name!r} of {kind.__name__} objects is not accessible in the sandbox; "
            "attributes are readable on plain values (str, list, dict, numbers, ...), on "
            "objects your code created, on imported modules, on Outcomes and on agent handles"
        )

    def _private(self, obj: Any, name: str) -> Any:
        """The few underscore names generated code may read: see ``_policy`` and ADR 0044."""
        if name in READABLE_DUNDER_ATTRIBUTES:
            return self._readable_dunder(obj, name)
        if name in NAMEDTUPLE_ATTRIBUTES and (
            is_namedtuple_class(obj) or is_namedtuple_class(type(obj))
        ):
            return getattr(obj, name)
        if is_private_name(name) and _owned(obj) and not name.startswith(_ABC_STATE):
            return getattr(obj, name)
        if (
            name in ALLOWED_DUNDER_METHODS
            and isinstance(obj, super)
            and is_sandbox_made(obj.__self__)  # type: ignore[attr-defined]
        ):
            # super().__mul__ of a str or list subclass is the builtin operator: cap it too.
            method = _past_no_wrapper(obj, name)
            return sized_dunder(method, name) if name in SIZED_DUNDERS else method
        if is_private_name(name) and name.startswith(_ABC_STATE) and _owned(obj):
            raise AttributeError(
                f"{name!r} is not accessible: it is the abc module's own state, private in the "
                "sandbox even on your classes"
            )
        # Which objects the single-underscore exception covers, said so a model that called
        # map() or a host method does not take their results for its own.
        raise AttributeError(
            f"{name!r} is not accessible: names starting with '_' are private in the sandbox; "
            "single-underscore names are readable on your own classes, their instances and your "
            "functions"
        )

    @staticmethod
    def _readable_dunder(obj: Any, name: str) -> Any:
        named = isinstance(
            obj,
            type
            | types.FunctionType
            | types.BuiltinFunctionType
            | SealedType
            | SealedCallable
            | HostClass,
        )
        if name == "__class__":
            return type_of(obj)
        if name in ("__name__", "__qualname__") and (named or _named_by_function(obj)):
            return getattr(obj, name)
        if name == "__doc__" and (named or is_sandbox_made(obj)):
            doc = getattr(obj, "__doc__", None)
            return doc if isinstance(doc, str) else None
        made = is_sandbox_made(obj)
        if name == "__dict__" and made and hasattr(obj, "__dict__"):
            # A copy: reading the program's own state is harmless, writing through it is not
            # needed, and a class's own dunder entries (descriptors) stay out of reach, as does
            # the abc module's state an ABC-derived class holds (red team R29: ``_abc_impl`` of a
            # UserString subclass handed out a host ``_abc_data`` object and its class).
            return {
                key: value
                for key, value in vars(obj).items()
                if not (isinstance(obj, type) and key.startswith(("__", _ABC_STATE)))
            }
        kind = type(obj).__name__
        if name == "__dict__" and made:
            # The program's own object without one (a generator): as Python says (ADR 0147).
            raise AttributeError(f"{kind!r} object has no attribute '__dict__'")
        raise AttributeError(
            f"{name!r} of {kind} objects is not accessible: names starting with '_' are "
            f"private in the sandbox; {_READABLE_ON[name]}"
        )

    def _class_attribute(self, cls: type, name: str) -> Any:
        cls = plain_int_class(cls)  # the int stand-in's attributes are int's (ADR 0123)
        cls = real_class(cls)  # and UserString's stand-in's the real class's (ADR 0155)
        if name == "mro":
            # The real UserString in the list would construct unchecked (ADR 0155).
            order = served_mro(cls)
            if order is not None:
                return SealedCallable(functools.partial(list, order), name)
        if name in _INT_GUARDED:
            checked = _int_class_attribute(cls, name)
            if checked is not None:
                return checked
        if cls is Outcome:
            if name in ("ok", "error", "call"):
                return _runtime_sealed(getattr(Outcome, name))
            raise AttributeError(
                f"Outcome has no accessible attribute {name!r}; use Outcome.ok(...) or "
                "Outcome.error(...)"
            )
        if isinstance(cls, SandboxType) or is_namedtuple_class(cls):
            return self._checked_text_method(getattr(cls, name), name)
        trusted = cls in OPEN_TYPES or trusted_class(cls)
        if not trusted:
            public: frozenset[str] = getattr(cls, "_sandbox_public_", frozenset())
            if name not in public:
                raise AttributeError(
                    f"attributes of the class {cls.__name__} are not accessible in the sandbox"
                )
        bound = CLASS_BOUND.get(name)
        if bound is not None and issubclass(cls, bound[0]):
            return GatedCall(bound[1](cls), name)  # re-hosted (ADR 0090)
        if name == "register" and isinstance(cls, abc.ABCMeta):
            raise AttributeError(
                f"{cls.__name__}.register() would change a host class; it is not available"
            )
        special = self._special.get(name)
        if special is not None and issubclass(cls, special[0]):
            return SealedCallable(functools.partial(_call_bound, special[1]), name)
        if (
            special is not None
            and name in USER_STRING_CHECKED
            and issubclass(cls, collections.UserString)
        ):
            # The library's class or its checked subclass (``U.mro()[1]``, red team R29).
            checked = user_string_binder(name, special[1])
            return SealedCallable(functools.partial(_call_bound, checked), name)
        if name in DENIED_BY_TYPE.get(cls, frozenset()):
            raise AttributeError(f"{cls.__name__}.{name} is not available in the sandbox")
        value = getattr(cls, name)
        if name in REDIRECTED_DICT_METHODS and value is getattr(dict, name):
            # dict.get(context, k) would read the journal view's storage directly.
            return SealedCallable(redirect_unbound(name, value), name)
        value = _runtime_sealed(_unshared(value))
        if cls.__module__ != "builtins" and is_library_callable(value):
            return gate(value, name)  # library code: exact arguments in (ADR 0091)
        return value

    def _super_attribute(self, proxy: super, name: str) -> Any:
        """``super().name`` of a program's object: a checked method when the lookup lands on the
        builtin's or the library's own (red team R29: ``super().center(10**8)`` of a str
        subclass and UserString's text methods ran unchecked, 100 million characters)."""
        value = _past_no_wrapper(proxy, name)
        special = self._special.get(name)
        receiver = proxy.__self__  # type: ignore[attr-defined]
        if special is not None and _lands_on_the_library(proxy, name):
            kinds, binder = special
            # The checked binder calls ``obj.name``, which would find the program's override
            # again: it gets the receiver's value as the builtin's exact type, whose method
            # is the one super() reached and answers alike.
            if isinstance(receiver, kinds):
                return SealedCallable(binder(_as_the_builtin(receiver, name)), name)
            if isinstance(receiver, type) and issubclass(receiver, kinds):
                unbound = functools.partial(_bind_as_the_builtin, binder, kinds, name)
                return SealedCallable(functools.partial(_call_bound, unbound), name)
        return self._checked_text_method(value, name)

    def _checked_text_method(self, value: Any, name: str) -> Any:
        """``value``, or the checked method when it is ``UserString``'s own text method read
        through a program's class or a ``super()`` (red team R29: ``U.center(u, 10**8)`` and
        ``super().ljust(10**8)`` ran ``str``'s method on ``data`` unchecked)."""
        special = self._special.get(name)
        if special is None or name not in USER_STRING_CHECKED:
            return value
        if not library_text_method(value, name):
            return value
        binder = user_string_binder(name, special[1])
        if type(value) is types.MethodType:
            return SealedCallable(binder(value.__self__), name)
        return SealedCallable(functools.partial(_call_bound, binder), name)

    def _trusted_instance(self, kind: type, name: str) -> bool:
        if name in DENIED_BY_TYPE.get(kind, frozenset()):
            raise AttributeError(f"{kind.__name__}.{name} is not available in the sandbox")
        if not trusted_class(kind):
            public: frozenset[str] = getattr(kind, "_sandbox_public_", frozenset())
            return name in public
        return True

    @staticmethod
    def _instance_attribute(obj: Any, name: str) -> Any:
        value = _runtime_sealed(getattr(obj, name))
        if value is int:
            return number_class(int)  # a decoder's parse_int: the checked int (ADR 0123)
        if not trusted_class(type(obj)):
            # An opened host instance's methods and classes are host code (R3, H5).
            value = guarded_host_code(value)
        elif is_library_callable(value):
            if name in TEXT_METHODS:
                return TextGatedCall(value, name)  # a CSV row's text (H10, ADR 0092)
            return gate(value, name)  # library code: exact arguments in (ADR 0091)
        for klass in type(obj).__mro__:
            raw = vars(klass).get(name, _ABSENT)
            if raw is not _ABSENT:
                # A container stored on the class is shared by the whole process.
                return _unshared(value) if raw is value else value
        return value

    def write(self, obj: Any) -> Any:
        """The ``_write_`` hook: what a store through ``obj.x = v`` or ``obj[k] = v`` targets."""
        kind = type(obj)
        if kind is ElementTree.Element:
            return ElementWriter(obj, self._tick)  # item stores checked for cycles (F19)
        if kind in ITEM_WRITTEN_TYPES:
            return ItemWriter(obj)  # items as update() writes them; attributes refused (G4)
        writable = kind in MUTABLE_TYPES or kind in OPEN_TYPES or is_sandbox_made(obj)
        if writable and kind is not types.MappingProxyType:
            return obj
        writer = self._handle_writer(obj)
        if writer is not None:
            return writer
        if isinstance(obj, Outcome):
            raise AttributeError(
                "Outcome objects are immutable; build a new one with Outcome.ok(...) or "
                "Outcome.error(...)"
            )
        described = obj.__name__ if isinstance(obj, type) else f"{kind.__name__} object"
        raise self._on_violation(
            f"Generated code may not modify {described}: mutating agents, modules or host "
            "classes is not supported; keep state in context or in objects your code creates"
        )

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        """The sandbox's ``setattr`` builtin."""
        if isinstance(name, str):
            name = exact_name(name)
        own_private = isinstance(name, str) and is_private_name(name) and _owned(obj)
        if not isinstance(name, str) or (name.startswith("_") and not own_private):
            raise AttributeError(f"cannot set {name!r}: names starting with '_' are private")
        setattr(self.write(obj), name, value)

    def delattr(self, obj: Any, name: str) -> None:
        """The sandbox's ``delattr`` builtin."""
        if isinstance(name, str):
            name = exact_name(name)
        if not isinstance(name, str) or name.startswith("_"):
            raise AttributeError(f"cannot delete {name!r}: names starting with '_' are private")
        delattr(self.write(obj), name)


_ABSENT: Any = object()

# Where each readable dunder is served, for the refusal (ADR 0147): the message names what the
# program can use, and claims no exception that does not hold for the object refused.
_READABLE_ON = {
    "__name__": (
        "'__name__' and '__qualname__' are readable on classes, functions, methods and "
        "generators (type(x).__name__ names the class of any object)"
    ),
    "__doc__": (
        "'__doc__' is readable on classes and functions, and on the instances, methods and "
        "generators of your own classes and functions"
    ),
    "__dict__": (
        "'__dict__' (and vars()) is readable on your own classes, their instances and your "
        "functions"
    ),
}
_READABLE_ON["__qualname__"] = _READABLE_ON["__name__"]


def _named_by_function(obj: Any) -> bool:
    """A generator, or a method of a plain function: its names are its function's (ADR 0147).

    Both are ``str`` by construction (their setters refuse anything else), and reading them
    runs no code: a generator keeps its own copy, a method forwards to its function's.
    """
    kind = type(obj)
    if kind is types.GeneratorType:
        return True
    return kind is types.MethodType and type(obj.__func__) is types.FunctionType


# Attributes of a class that build an int from bytes or hand out a class's bases (ADR 0123).
_INT_GUARDED = frozenset({"from_bytes", "mro"})


def _int_class_attribute(cls: type, name: str) -> Any:
    """``cls.from_bytes`` of an int class, checked; ``cls.mro()`` naming the stand-ins; else
    ``None`` (the attribute is read as any other)."""
    if name == "from_bytes" and issubclass(cls, int) and not isinstance(cls, SandboxType):
        return SealedCallable(functools.partial(checked_from_bytes, cls), name)
    if name == "mro" and not any("mro" in vars(klass) for klass in type.mro(cls)[:-2]):
        return SealedCallable(functools.partial(_served_mro, cls), name)
    return None


def _served_mro(cls: type) -> list[Any]:
    # The real int (or Decimal) in a class's MRO would construct without the checks.
    return [number_class(klass) for klass in type.mro(cls)]


# ABCMeta's state on a program class deriving from UserDict & co. (ADR 0104): the runtime's.
_ABC_STATE = "_abc_"


def _guarded_args(args: Any) -> Any:
    # A new tuple: the exception is the host's, which may raise the same object again.
    if not isinstance(args, tuple) or not any(needs_guard(item) for item in args):
        return args
    return tuple(item if is_sandbox_made(item) else guarded_host_code(item) for item in args)


class _NotHandled:
    __slots__ = ()


NOT_HANDLED: Any = _NotHandled()

# Every field but the provenance (a child's program text and call id are the host's), plus the
# flags and readers generated code uses; never pydantic's model_* API.
_OUTCOME_FLAGS = frozenset({"ok", "error"})
_OUTCOME_INSTANCE_ATTRIBUTES = (frozenset(Outcome.model_fields) - {"code", "call_id"}) | {
    "is_ok",
    "is_error",
    "value_or",
    "get",
}
