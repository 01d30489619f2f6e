"""Opaque runtime callables, and reflection helpers re-implemented so they do no attribute work for the program.

Generated code never receives a runtime function object: every callable the runtime serves is
a :class:`SealedCallable`, an object with ``__slots__`` and no ``__dict__``, ``__globals__``,
``__closure__``, ``__self__`` or ``__wrapped__``, that refuses the copy/pickle protocol. The
standard-library helpers that read or write attributes by names the caller picks, or walk
object graphs natively (``functools.wraps``, ``copy.deepcopy`` with a memo, ...), are replaced
here by versions that touch only fixed names and only objects the program made (ADR 0020).
"""

from __future__ import annotations

import collections
import copy
import datetime
import decimal
import fractions
import functools
import re
import types
from collections.abc import Callable
from typing import Any

from recurgent._sandbox._made import SandboxType, is_namedtuple_class, is_sandbox_made

__all__ = ["SealedCallable", "SealedWithHelpers", "named", "reflection_overrides", "seal"]

_MISSING: Any = object()


def _name_in_message(error: TypeError, call: Callable[..., Any], label: str) -> None:
    """Name ``label`` where ``error``'s message starts with ``call``'s qualified name (a host
    name the program never wrote)."""
    function = getattr(call, "func", call)  # a partial's function
    function = getattr(function, "__func__", function)  # a bound method's
    host = getattr(function, "__qualname__", None) if type(function) is types.FunctionType else None
    if host is None or host == label or len(error.args) != 1:
        return
    message = error.args[0]
    if type(message) is str and message.startswith(f"{host}()"):
        error.args = (label + message[len(host) :],)


def named(call: Callable[..., Any], label: str) -> Callable[..., Any]:
    """``call`` named ``label`` for Python's messages about a wrong call, which name a
    function's qualified name (``_padding.<locals>.bind.<locals>.padded() got an unexpected
    keyword argument``, red team R23), for a wrapper that calls it from its own frame (where
    :class:`SealedCallable` cannot tell a wrong call from an error inside). A closure is named
    in place, being made for this one wrapper; a module-level function is copied (the copy
    shares its code, globals and defaults); a bound method's or partial's function likewise."""
    if type(call) is types.FunctionType:
        if call.__qualname__ == label:
            return call
        if call.__closure__ is not None:
            call.__qualname__ = label
            return call
        renamed = types.FunctionType(call.__code__, call.__globals__, label, call.__defaults__)
        renamed.__kwdefaults__ = call.__kwdefaults__
        renamed.__qualname__ = label
        renamed.__dict__.update(call.__dict__)
        return renamed
    if isinstance(call, types.MethodType):
        return types.MethodType(named(call.__func__, label), call.__self__)
    if isinstance(call, functools.partial):
        return functools.partial(named(call.func, label), *call.args, **call.keywords)
    return call


class SealedCallable:
    """A runtime function as generated code holds it: callable, named, and nothing else.

    The wrapped callable sits in a private slot the attribute policy never reads; there is no
    ``__dict__`` for library code to merge or update, and copying or pickling is refused, so
    no native helper can hand the program what the callable closes over.
    """

    __slots__ = ("__name__", "__qualname__", "_sealed_call")

    def __init__(self, call: Callable[..., Any], name: str | None = None) -> None:
        label = name or getattr(call, "__name__", None) or "function"
        self.__name__ = label
        self.__qualname__ = label
        self._sealed_call = call

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._sealed_call(*args, **kwargs)
        except TypeError as error:
            traceback = error.__traceback__
            if traceback is not None and traceback.tb_next is None:
                # Raised by the call itself, binding the arguments (no frame of the callee
                # ran): Python named the runtime's function, ``make_builtins.<locals>.
                # guarded_getattr() takes ...``; the program called getattr (red team R23).
                _name_in_message(error, self._sealed_call, self.__name__)
            raise

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(f"{self.__name__} cannot be copied or pickled in the sandbox")

    def __repr__(self) -> str:
        return f"<function {self.__name__}>"


class SealedWithHelpers(SealedCallable):
    """A sealed callable that also carries the class-level helpers of what it stands for.

    ``itertools.chain`` is served as a ticking stand-in; ``chain.from_iterable`` must work as
    it does on the real class, so the stand-in carries it (itself sealed). Only the names in
    ``_sandbox_public_`` are readable through the attribute policy.
    """

    __slots__ = ("_sealed_helpers",)
    _sandbox_public_ = frozenset({"from_iterable"})

    def __init__(
        self, call: Callable[..., Any], name: str, helpers: dict[str, SealedCallable]
    ) -> None:
        super().__init__(call, name)
        self._sealed_helpers = helpers

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_"):
            helper = self._sealed_helpers.get(name)
            if helper is not None:
                return helper
        raise AttributeError(f"{self.__name__!r} has no attribute {name!r}")


def seal(value: Any, name: str | None = None) -> Any:
    """``value`` as generated code may hold it: classes and sealed callables as they are."""
    if isinstance(value, type | SealedCallable) or not callable(value):
        return value
    return SealedCallable(value, name)


# ----------------------------------------------------------------------------- functools

# The names functools.update_wrapper copies by default that are plain text; annotations and
# __dict__ may hold host objects and are copied only between objects the program made.
_TEXT_ATTRIBUTES = ("__module__", "__name__", "__qualname__", "__doc__")


def _own_target(wrapper: Any, what: str) -> None:
    # The same objects the sandbox's write guard lets generated code write to, minus classes
    # and containers: its own functions and instances.
    if isinstance(wrapper, type) or not is_sandbox_made(wrapper):
        raise TypeError(f"{what} can only update functions or objects your code defined")


# Objects whose text attributes are read natively: nothing with a custom __getattr__ (a host
# object stored in memory might do work when asked for a missing name).
_NAMED_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    type,
    SealedCallable,
    functools.partial,
)


def _update_wrapper(wrapper: Any, wrapped: Any) -> Any:
    _own_target(wrapper, "functools.wraps()")
    if not (isinstance(wrapped, _NAMED_TYPES) or is_sandbox_made(wrapped)):
        return wrapper
    for name in _TEXT_ATTRIBUTES:
        try:
            value = getattr(wrapped, name, _MISSING)
        except Exception:  # noqa: BLE001 - a failing read means there is nothing to copy
            continue
        if type(value) is str or (name == "__doc__" and value is None):
            setattr(wrapper, name, value)
    if is_sandbox_made(wrapped) and not isinstance(wrapped, type):
        # Between two objects the program made, the full default behaviour is safe.
        wrapper.__dict__.update(wrapped.__dict__)
        wrapper.__wrapped__ = wrapped
    return wrapper


def _checked_wraps(
    wrapped: Any,
    assigned: Any = functools.WRAPPER_ASSIGNMENTS,
    updated: Any = functools.WRAPPER_UPDATES,
) -> SealedCallable:
    if assigned is not functools.WRAPPER_ASSIGNMENTS or updated is not functools.WRAPPER_UPDATES:
        raise PermissionError(
            "functools.wraps() takes no assigned= or updated= in the sandbox: it copies "
            "__name__, __qualname__, __doc__ and __module__ only"
        )
    return SealedCallable(functools.partial(_apply_wraps, wrapped), "wraps")


def _apply_wraps(wrapped: Any, wrapper: Any) -> Any:
    return _update_wrapper(wrapper, wrapped)


def _checked_total_ordering(cls: Any) -> Any:
    if not isinstance(cls, SandboxType):
        raise TypeError("functools.total_ordering() applies only to classes your code defined")
    return functools.total_ordering(cls)


def _own_function(function: Any, what: str) -> None:
    if isinstance(function, type) or not (callable(function) and is_sandbox_made(function)):
        raise TypeError(f"{what} caches only functions your code defined")


def _checked_lru_cache(maxsize: Any = 128, typed: Any = False) -> Any:
    if callable(maxsize) and not isinstance(maxsize, bool):
        _own_function(maxsize, "functools.lru_cache()")
        return functools.lru_cache(maxsize=128, typed=bool(typed))(maxsize)
    decorator = functools.lru_cache(maxsize=maxsize, typed=typed)

    def decorate(function: Any) -> Any:
        _own_function(function, "functools.lru_cache()")
        return decorator(function)

    return SealedCallable(decorate, "lru_cache")


def _checked_cache(function: Any) -> Any:
    _own_function(function, "functools.cache()")
    return functools.cache(function)


# ----------------------------------------------------------------------------- copy

#: Values copy treats as atomic or rebuilds from their value alone: safe to pass through.
_VALUE_TYPES = (
    type(None),
    bool,
    int,
    float,
    complex,
    str,
    bytes,
    range,
    type(Ellipsis),
    type(NotImplemented),
    decimal.Decimal,
    fractions.Fraction,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.timezone,
    re.Pattern,
)
# Returned as they are by copy (never reduced): functions and classes.
_ATOMIC_TYPES = (types.FunctionType, types.BuiltinFunctionType, type)
_CONTAINER_TYPES = (
    list,
    tuple,
    dict,
    set,
    frozenset,
    bytearray,
    collections.deque,
    collections.OrderedDict,
    collections.Counter,
    collections.defaultdict,
)
# The library's wrappers, copied as plain Python copies them (red team R29: refused before, as
# a host object): their state is their ``__dict__`` (``data``), walked as a program object's.
_WRAPPER_TYPES = (collections.UserString, collections.UserList, collections.UserDict)


def _refuse_copy(value: Any) -> None:
    raise TypeError(
        f"copy cannot copy {type(value).__name__} objects in the sandbox; it copies plain data "
        "(containers, numbers, strings) and objects your code defined"
    )


def _copyable_children(value: Any) -> list[Any]:
    """The values copy would visit inside ``value``; raises if it would reduce a host object."""
    kind = type(value)
    children: list[Any] = []
    if (
        kind in _CONTAINER_TYPES
        or kind in _WRAPPER_TYPES
        or is_namedtuple_class(kind)
        or isinstance(kind, SandboxType)
    ):
        if isinstance(value, dict):
            children.extend(dict.keys(value))
            children.extend(dict.values(value))
        elif isinstance(value, list | tuple | set | frozenset | collections.deque):
            children.extend(value)
        if isinstance(value, collections.defaultdict):
            children.append(value.default_factory)
        if isinstance(kind, SandboxType) or kind in _WRAPPER_TYPES:
            children.extend(object.__getattribute__(value, "__dict__").values())
        return children
    if isinstance(value, _VALUE_TYPES):
        return children
    if isinstance(value, _ATOMIC_TYPES) and (
        type(value) is not types.FunctionType or is_sandbox_made(value)
    ):
        return children
    _refuse_copy(value)
    return children


def _check_copyable(value: Any, *, deep: bool) -> None:
    pending = [value]
    seen: set[int] = set()
    while pending:
        item = pending.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        children = _copyable_children(item)
        if not deep:
            return
        pending.extend(children)


def _checked_copy(value: Any, /) -> Any:
    _check_copyable(value, deep=False)
    return copy.copy(value)


def _checked_deepcopy(value: Any, memo: Any = None, /) -> Any:
    if memo is not None:
        raise TypeError(
            "copy.deepcopy() takes no memo in the sandbox: the memo would hand back the "
            "objects the copy walked"
        )
    _check_copyable(value, deep=True)
    # A private memo: its keep-alive list never leaves this call.
    return copy.deepcopy(value, {})


def reflection_overrides() -> dict[str, dict[str, Any]]:
    """The stand-ins of this module, by module and name (the catalog seals them)."""
    return {
        "functools": {
            "wraps": _checked_wraps,
            "total_ordering": _checked_total_ordering,
            "lru_cache": _checked_lru_cache,
            "cache": _checked_cache,
        },
        "copy": {"copy": _checked_copy, "deepcopy": _checked_deepcopy},
    }
