"""``collections``' ``UserString``, ``UserList`` and ``UserDict`` with their data read once (ADR 0155).

The wrappers' library methods read ``self.data`` and build text or a repetition from it in one
C call: ``repr(self.data)``, ``str(self.data)``, ``self.data * n``, ``self.data % args``, and
``UserString(seq)`` runs ``str(seq)``. The sandbox's checks measure the data before such a call;
they cannot when a program's class makes ``data`` its own code (a property can answer small to
the check and large to the library, or be estimated as a small object: nine million NULs wrote
36 000 002 characters from ``repr``; red team R26), and nothing checked ``str(seq)``
(``UserString(['a' * 10**6] * 100)`` built 100 000 400 characters).

* :data:`USER_STRING` is served as ``collections.UserString``: its call checks the text of a
  ``seq`` that is not text before the library's ``str(seq)`` and builds a real ``UserString``;
  ``isinstance``, ``issubclass``, ``type()`` and the class's attributes are the real class's.
* A program's class deriving from a wrapper (or from :data:`USER_STRING`) derives from its
  checked subclass instead (:func:`recurgent._sandbox._made.SandboxType` substitutes it): each
  method above reads ``data`` once, checks what it builds from that one read, and builds it
  from that read. The checked subclass sits between the program's class and the library's, so
  a program's override calling ``super()`` reaches the checked method too.
"""

from __future__ import annotations

import abc
import collections
import collections.abc
import types
from typing import Any

from recurgent._sandbox._made import allow_subclassing, substitute_base
from recurgent._sandbox._sizes import size_hooks
from recurgent._sandbox._stepped_text import WRAPPER_REPRS, text_of
from recurgent._sandbox._text_size import check_text

__all__ = [
    "CHECKED_WRAPPERS",
    "USER_STRING",
    "CheckedUserDict",
    "CheckedUserList",
    "CheckedUserString",
    "library_text_method",
    "real_class",
    "served_mro",
]

_HOOKS = size_hooks()
_MUL = _HOOKS["_mul_"]  # data * n, the repetition checked first
_MOD = _HOOKS["_mod_"]  # data % args, the formatting checked first
_INPLACE = _HOOKS["_inplace_"]  # data *= n, checked as data * n


def _check_seq(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """``UserString(seq)``'s arguments with ``seq`` other than a text written as ``str(seq)``
    by :func:`text_of` (in steps when the program's code is in it), refused past the item cap:
    ``UserString``'s own ``str(seq)`` is one C call (red team R33, ADR 0167)."""
    if args and not isinstance(args[0], str | collections.UserString):
        return (text_of(args[0], "str", "UserString()"), *args[1:])
    seq = kwargs.get("seq")
    if not args and seq is not None and not isinstance(seq, str | collections.UserString):
        kwargs["seq"] = text_of(seq, "str", "UserString()")
    return args


def _check_operand(other: Any) -> None:
    if not isinstance(other, str | collections.UserString):
        check_text(other, "UserString concatenation")


def _repr(self: Any) -> str:
    data = self.data  # read once: a program's property may answer differently when read again
    return text_of(data, "repr", "repr()")  # in steps when the program's code is in it


WRAPPER_REPRS.add(_repr)


class CheckedUserString(collections.UserString):
    """``UserString`` for a program's class to derive from: construction, ``repr``, ``str``,
    ``*`` and ``%`` read ``data`` once and check what they build from it; ``+`` checks the
    text of an operand that is not text."""

    def __init__(self, seq: Any) -> None:
        (seq,) = _check_seq((seq,), {})
        super().__init__(seq)

    __repr__ = _repr

    def __str__(self) -> str:
        return text_of(self.data, "str", "str()")

    def __mul__(self, n: Any) -> Any:
        return self.__class__(_MUL(self.data, n))

    __rmul__ = __mul__

    def __mod__(self, args: Any) -> Any:
        return self.__class__(_MOD(self.data, args))

    # UserString's + writes str(other) of anything but text, in library code.
    def __add__(self, other: Any) -> Any:
        _check_operand(other)
        return super().__add__(other)

    def __radd__(self, other: Any) -> Any:
        _check_operand(other)
        return super().__radd__(other)


class CheckedUserList(collections.UserList):  # type: ignore[type-arg]
    """``UserList`` for a program's class to derive from: ``repr`` and ``*`` read ``data``
    once and check what they build from it."""

    __repr__ = _repr

    def __mul__(self, n: Any) -> Any:
        return self.__class__(_MUL(self.data, n))

    __rmul__ = __mul__

    def __imul__(self, n: Any) -> Any:
        self.data = _INPLACE("*=", self.data, n)
        return self


class CheckedUserDict(collections.UserDict):  # type: ignore[type-arg]
    """``UserDict`` for a program's class to derive from: ``repr`` reads ``data`` once and
    checks it."""

    __repr__ = _repr


class _ServedUserStringType(abc.ABCMeta):
    """The stand-in's metaclass: a checked call, and the real class for everything else."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        args = _check_seq(args, kwargs)
        return collections.UserString(*args, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, collections.UserString)

    def __subclasscheck__(cls, subclass: Any) -> bool:
        return issubclass(subclass, collections.UserString)

    def __getattr__(cls, name: str) -> Any:
        return getattr(collections.UserString, name)


class USER_STRING(metaclass=_ServedUserStringType):
    """``collections.UserString`` as generated code gets it (see the module docstring)."""


# UserString is a Sequence by its base; the stand-in, by registration (a base would put
# Sequence's count and index before the real class's in the stand-in's attribute lookup).
collections.abc.Sequence.register(USER_STRING)


_CHECKED: dict[type, type] = {
    collections.UserString: CheckedUserString,
    USER_STRING: CheckedUserString,
    collections.UserList: CheckedUserList,
    collections.UserDict: CheckedUserDict,
}

for _wrapped, _checked in _CHECKED.items():
    if _wrapped is not USER_STRING:
        # Named as the library's, as messages and reprs of the program's classes name them.
        _checked.__module__ = _wrapped.__module__
        _checked.__name__ = _checked.__qualname__ = _wrapped.__name__
        for _method in vars(_checked).values():
            if isinstance(_method, types.FunctionType) and _method is not _repr:
                # A wrong call's message names the library's method, as in Python (red team
                # R29: "CheckedUserString.__init__() missing 1 required positional argument").
                _method.__qualname__ = f"{_wrapped.__name__}.{_method.__name__}"
    allow_subclassing(_checked)
    substitute_base(_wrapped, _checked)
#: The checked subclasses: a ``super()`` past one of them reaches the library's unchecked methods.
CHECKED_WRAPPERS = frozenset({CheckedUserString, CheckedUserList, CheckedUserDict})
USER_STRING.__module__ = "collections"
USER_STRING.__name__ = USER_STRING.__qualname__ = "UserString"


def real_class(cls: Any) -> Any:
    """``collections.UserString`` for the stand-in, ``cls`` for anything else (whose attributes
    the policy reads)."""
    return collections.UserString if cls is USER_STRING else cls


def served_mro(cls: type) -> list[Any] | None:
    """What ``cls.mro()`` answers generated code for a class deriving from ``UserString``: the
    library's class in it as the stand-in, whose call is checked (the real one's is not);
    ``None`` for any other class, or one defining its own ``mro``."""
    order = type.__getattribute__(cls, "__mro__")
    if collections.UserString not in order or any("mro" in vars(klass) for klass in order):
        return None
    return [USER_STRING if klass is collections.UserString else klass for klass in order]


def library_text_method(value: Any, name: str) -> bool:
    """True when ``value`` (read through a class or a ``super()``, red team R29) is
    ``UserString``'s own ``name``, plain or bound: it calls ``str``'s method on ``data`` in
    library code, past the checks the sandbox makes on a str (``super().ljust(10**8)`` of a
    program's subclass built 100 million characters)."""
    real = vars(collections.UserString).get(name)
    if type(value) is types.MethodType:
        value = value.__func__
    return real is not None and value is real
