"""The text a structure converts to, estimated before one C call builds it (red-team H10, ADR 0092).

``str``, ``repr``, f-strings, ``format``, ``%s`` and ``print`` of a container build its text in
one C call no stop interrupts. A container held many times counts once against the item cap
but prints once per reference: ``[[0] * 10**4] * 400`` is 12 million characters, and one level
more is gigabytes. Before such a conversion :func:`check_text` estimates the text by walking the
structure with a memo by ``id`` (a shared part's text is computed once and counted once per
reference, so the walk costs the distinct containers, not the text) and refuses past the item
cap, as any other value past it is refused.

The estimate is an upper bound for the kinds it knows (numbers by their digits, strings by
their length with quotes and escapes, containers by their items and separators) and a small
constant for other objects. A program object's ``__repr__`` is the program's code, which can
return any text and grow the container being written: the walk says when it met one
(:func:`estimate`), and such text is written in steps instead of one C call
(``_stepped_text``, ADR 0162).
"""

from __future__ import annotations

import collections
import decimal
import fractions
import functools
import types
from collections.abc import Callable, Iterable
from typing import Any

from recurgent._sandbox._made import SandboxType
from recurgent._sandbox._measure import MAX_ITEMS, check_items

__all__ = [
    "DICT_VIEWS",
    "TEXT_CONTAINERS",
    "calls_program",
    "check_repr",
    "check_text",
    "check_texts",
    "estimate",
    "estimated_text",
    "exception_args",
    "is_text_container",
    "iterates",
    "measured_length",
    "repr_length",
    "speaks",
    "text_hook",
    "texted",
]

#: Containers whose text is their items' text: the kinds a conversion expands.
TEXT_CONTAINERS = frozenset(
    {
        list,
        tuple,
        dict,
        set,
        frozenset,
        collections.deque,
        collections.OrderedDict,
        collections.Counter,
        collections.defaultdict,
    }
)
#: A dict's views: ``dict_values([...])``, their items' text (red team R32: ``str(d.values())``
#: of a dict holding a shared list wrote 100 000 415 characters, a view counted as small).
DICT_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
# Subclasses print their items the same way (a namedtuple adds its field names; an
# OrderedDict's views are the dict's).
_CONTAINER_BASES = (list, tuple, dict, set, frozenset, collections.deque, *DICT_VIEWS)
# Wrappers whose text is their data's repr, written by library code in one C call: walked as a
# container of one item (red team R26).
_WRAPPED = (collections.UserString, collections.UserList, collections.UserDict)
# Library objects whose repr writes their parts' reprs in one call of library code (red team
# R29: 100 million characters each, counted as a small object): a ChainMap its maps, a
# partial its function, arguments and keywords. A program cannot derive from either.
_COMPOSED = (collections.ChainMap, functools.partial)
# Library objects whose repr writes their parts' reprs (red team R32: a hundred
# ValueError([S]) wrote 100 001 800 characters, slices 100 002 500, each counted as small): an
# exception its args, a slice its start, stop and step, a bound method its __self__.
_PARTED = (BaseException, slice, types.MethodType)
_WALKED = _CONTAINER_BASES + _WRAPPED + _COMPOSED + _PARTED
# Digits per bit of an int, rounded up.
_DIGITS_PER_BIT = 0.30103
_OTHER = 16  # a value of another kind: a date, a function, a program object
_SEPARATOR = 2  # ", " between items (": " inside a dict item)
# What a container prints around its items: "[]", "(,)", "deque([])", "Counter({})", ...
_WRAPPERS: dict[type, int] = {
    list: 2,
    tuple: 3,
    dict: 2,
    set: 5,
    frozenset: 13,
    collections.deque: 9,
    collections.OrderedDict: 15,
    collections.Counter: 11,
    collections.ChainMap: 10,
    functools.partial: 80,  # "functools.partial()" and room for its function's repr
}
_WRAPPER = 80  # another kind of container ("defaultdict(<class ...>, {...})", a subclass)
_ESCAPED_CONTROLS = str.maketrans("\n\r\t", "   ")


def _str_text(value: str, ascii_only: bool = False) -> int:
    """``len(repr(value))`` (``ascii`` with ``ascii_only``), or more: quotes, backslashes and
    escaped characters counted."""
    length = str.__len__(value) + 2 + str.count(value, "\\") + str.count(value, "'")
    if ascii_only and not str.isascii(value):
        # ascii() escapes every character past ASCII, printable or not: \xe9, \u4e2d or
        # \U0001f600, by the widest character held (red team R26).
        widest = ord(max(str.__str__(value)))
        return length * (4 if widest < 0x100 else 6 if widest < 0x10000 else 10)
    if str.isprintable(value):
        return length
    controls = str.count(value, "\n") + str.count(value, "\r") + str.count(value, "\t")
    if str.isprintable(str.translate(value, _ESCAPED_CONTROLS)):
        return length + controls
    return length * 10  # other unprintables print as \xNN to \UNNNNNNNN


def _scalar_text(value: Any, ascii_only: bool = False) -> int:
    kind = type(value)
    if kind is int or kind is bool:
        return int(int.bit_length(value) * _DIGITS_PER_BIT) + 2
    if kind is str:
        return _str_text(value, ascii_only)
    if kind is float or kind is complex:
        return 50
    if kind is bytes or kind is bytearray:
        return len(value) * 4 + 14
    if isinstance(value, decimal.Decimal):
        digits = value.as_tuple().digits
        return len(digits) + 30 if isinstance(digits, tuple) else 30
    if isinstance(value, fractions.Fraction):
        bits = int.bit_length(value.numerator) + int.bit_length(value.denominator)
        return int(bits * _DIGITS_PER_BIT) + 30
    if isinstance(value, int | str):
        exact = int.__int__(value) if isinstance(value, int) else str.__str__(value)
        return _scalar_text(exact, ascii_only)
    return _OTHER + _names_length(value)


def _names_length(value: Any) -> int:
    """The names an object's default repr writes: its class's (``<__main__.Name object at
    0x...>``), a class's or a function's own (red team R32: a program class named by a
    thousand characters, ``repr([C()] * 100000)``, wrote 103 800 000 characters)."""
    kind: Any = type(value)
    length = _name_length(kind)
    if isinstance(value, type):
        length += _name_length(value)
    elif isinstance(value, types.FunctionType):
        length += _text_length(_FUNCTION_NAME.__get__(value))
    return length


def _name_length(kind: Any) -> int:
    return _text_length(_QUALNAME.__get__(kind)) + _text_length(_MODULE.__get__(kind))


_QUALNAME = type.__dict__["__qualname__"]
_MODULE = type.__dict__["__module__"]
_NAME = type.__dict__["__name__"]


def _text_length(value: Any) -> int:
    return str.__len__(value) if isinstance(value, str) else _OTHER


_FUNCTION_NAME = types.FunctionType.__dict__["__qualname__"]


def _wrapped_data(wrapper: Any) -> Any:
    """What a ``UserString``/``UserList``/``UserDict`` prints (the repr of its ``data``);
    ``None`` (a small object) for a class of the program's that defines ``data`` itself,
    which the estimate cannot read ahead of the real call: that class's ``repr``/``str`` read
    it once and check it when they run (``_user_wrappers``, ADR 0155)."""
    if any("data" in vars(kind) for kind in type(wrapper).__mro__):
        return None
    return object.__getattribute__(wrapper, "__dict__").get("data")


def speaks(kind: type) -> bool:
    """True when converting an object of ``kind`` to text runs the program's code: a class of
    the program's that defines ``__repr__``, ``__str__`` or ``data`` (which a checked
    wrapper's ``repr`` reads), itself or through another class of the program's (ADR 0162).
    A class of the program's that defines none of them converts as its library base does."""
    if not isinstance(kind, SandboxType):
        return False
    for klass in type.__getattribute__(kind, "__mro__"):
        if isinstance(klass, SandboxType):
            names = type.__getattribute__(klass, "__dict__")
            if "__repr__" in names or "__str__" in names or "data" in names:
                return True
    return False


# Library mappings whose repr is library code calling the instance's own methods (a Counter's
# __bool__ and most_common, which sorts its values and reads items(); an OrderedDict
# subclass's items()): a program subclass defining a method runs its code there.
_CALLING_REPRS = (collections.Counter, collections.OrderedDict)
# What a class body holds besides its methods.
_BOOKKEEPING = frozenset(
    {
        "__module__",
        "__qualname__",
        "__doc__",
        "__init__",
        "__annotations__",
        "__dict__",
        "__weakref__",
    }
)


def calls_program(kind: type) -> bool:
    """True for a class of the program's deriving from ``Counter`` or ``OrderedDict`` that
    defines anything but ``__init__``: their library repr calls the instance's methods (red
    team R32: ``items`` returning a hundred million-character values wrote 100 000 793)."""
    if not isinstance(kind, SandboxType) or not issubclass(kind, _CALLING_REPRS):
        return False
    for klass in type.__getattribute__(kind, "__mro__"):
        names = type.__getattribute__(klass, "__dict__")
        if isinstance(klass, SandboxType) and not _BOOKKEEPING.issuperset(names):
            return True
    return False


def _sorts_program(node: Any) -> bool:
    """True for a ``Counter`` holding a value of the program's: its repr sorts the values,
    running the program's comparisons (red team R32)."""
    return isinstance(node, collections.Counter) and any(
        isinstance(type(value), SandboxType) for value in dict.values(node)
    )


_FACTORY = collections.defaultdict.__dict__["default_factory"]


def _factory_speaks(node: Any) -> bool:
    """True for a ``defaultdict`` whose factory's repr is the program's code (its own, or a
    bound method's ``__self__``'s): ``defdict_repr`` writes it in its one call."""
    if not isinstance(node, collections.defaultdict):
        return False
    factory = _FACTORY.__get__(node)
    if isinstance(factory, types.MethodType):
        factory = factory.__self__
    return speaks(type(factory))


def iterates(kind: type) -> bool:
    """True for a class of the program's defining ``__iter__``: a set subclass's repr (and the
    walk's reading of its items) lists it through the program's code (ADR 0162)."""
    if not isinstance(kind, SandboxType):
        return False
    for klass in type.__getattribute__(kind, "__mro__"):
        if isinstance(klass, SandboxType) and "__iter__" in type.__getattribute__(
            klass, "__dict__"
        ):
            return True
    return False


def _flat_text(items: list[Any], ascii_only: bool) -> tuple[int | None, bool]:
    """Text of a container's items when none is a container (C-speed sums), else ``None``; and
    whether an item's text is the program's code (:func:`speaks`)."""
    kinds = set(map(type, items))
    if kinds <= {int, bool}:
        bits = sum(map(int.bit_length, items))
        return int(bits * _DIGITS_PER_BIT) + len(items) * (2 + _SEPARATOR), False
    if kinds <= {str}:
        if ascii_only:
            return sum(_str_text(item, True) for item in items) + len(items) * _SEPARATOR, False
        return sum(map(_str_text, items)) + len(items) * _SEPARATOR, False
    if kinds <= {float}:
        return len(items) * (50 + _SEPARATOR), False
    spoken = any(map(speaks, kinds))
    walked = [kind for kind in kinds if issubclass(kind, _WALKED)]
    if walked:
        if not all(issubclass(kind, _PARTED) for kind in walked):
            return None, spoken
        return _parted_text(items, ascii_only, spoken)
    return sum(_scalar_text(item, ascii_only) + _SEPARATOR for item in items), spoken


def _parted_text(items: list[Any], ascii_only: bool, spoken: bool) -> tuple[int | None, bool]:
    """:func:`_flat_text` of items among which exceptions, slices or bound methods whose own
    parts are no containers (a list of ``ValueError(i)``): counted here, not walked one by
    one; ``None`` when a part is a container."""
    total = 0
    for item in items:
        if not isinstance(item, _PARTED):
            total += _scalar_text(item, ascii_only) + _SEPARATOR
            continue
        for part in _items(item):
            if _is_container(part):
                return None, spoken
            spoken = spoken or speaks(type(part))
            total += _scalar_text(part, ascii_only) + _SEPARATOR
        total += _wrapper(item) + _SEPARATOR
    return total, spoken


# Exact kinds that are never walked: answered before isinstance, whose ABCs (UserList's,
# UserDict's) cost a Python call each for every scalar an estimate meets.
_FLAT_KINDS = frozenset({str, int, float, bool, complex, bytes, type(None)})


def _is_container(value: Any) -> bool:
    kind = type(value)
    if kind in TEXT_CONTAINERS:
        return True
    return kind not in _FLAT_KINDS and isinstance(value, _WALKED)


def is_text_container(value: Any) -> bool:
    """True for a value whose text is its items' text (the kinds the estimate walks)."""
    return _is_container(value)


def _texted(value: Any) -> Any:
    """What converting ``value`` prints the items of: an exception prints its ``args``, a
    ``UserString`` its data (red team R26)."""
    if isinstance(value, OSError):
        # Its str writes its errno, strerror and file names, which its args may not hold (a
        # file name is not in them): counted with them (red team R32).
        fields = (field.__get__(value) for field in _OSERROR_FIELDS)
        return (*fields, _EXCEPTION_ARGS.__get__(value))
    if isinstance(value, BaseException):
        return _EXCEPTION_ARGS.__get__(value)
    if isinstance(value, collections.UserString):
        data = _wrapped_data(value)
        return value if data is None else data
    return value


def texted(value: Any) -> Any:
    """What converting ``value`` to text writes the items of (:func:`_texted`)."""
    return _texted(value)


_EXCEPTION_ARGS = BaseException.__dict__["args"]
_OSERROR_FIELDS = tuple(
    OSError.__dict__[name] for name in ("errno", "strerror", "filename", "filename2")
)


def exception_args(value: BaseException) -> Any:
    """An exception's ``args`` as ``BaseException`` holds them (a property cannot answer)."""
    return _EXCEPTION_ARGS.__get__(value)


def _wrapper(container: Any) -> int:
    kind = type(container)
    known = _WRAPPERS.get(kind)
    if known is not None:
        return known
    if isinstance(container, types.MethodType):
        # "<bound method Name.f of ...>": the function's name too.
        return _WRAPPER + _text_length(getattr(container.__func__, "__qualname__", None))
    if isinstance(container, BaseException):
        return _WRAPPER + _text_length(_NAME.__get__(kind))  # "Name(...)"
    fields = getattr(kind, "_fields", None)
    if isinstance(container, tuple) and isinstance(fields, tuple):
        # A namedtuple prints its class and field names: Point(x=1, y=2).
        return _WRAPPER + sum(len(str(name)) + 1 for name in fields)
    return _WRAPPER


def _items(container: Any) -> list[Any]:
    if isinstance(container, BaseException):
        return list(_EXCEPTION_ARGS.__get__(container))
    if isinstance(container, slice):
        return [container.start, container.stop, container.step]
    if isinstance(container, types.MethodType):
        return [container.__self__]
    if isinstance(container, collections.ChainMap):
        return list(object.__getattribute__(container, "__dict__").get("maps", ()))
    if isinstance(container, functools.partial):
        keywords = dict(container.keywords)
        return [container.func, *container.args, *keywords.keys(), *keywords.values()]
    if isinstance(container, _WRAPPED):
        data = _wrapped_data(container)
        return [] if data is None else [data]
    if isinstance(container, dict):
        return [*dict.keys(container), *dict.values(container)]
    if isinstance(container, list):
        return list.copy(container)
    if isinstance(container, tuple):
        return list(tuple.__getitem__(container, slice(None)))
    return list(container)


def estimated_text(root: Any, limit: int = MAX_ITEMS, *, ascii_only: bool = False) -> int:
    """About ``len(str(root))`` for a container (``len(ascii(root))`` with ``ascii_only``; an
    upper bound for the kinds it knows), counting a shared part once per reference; stops
    counting once past ``limit``."""
    return estimate(root, limit, ascii_only=ascii_only)[0]


def estimate(
    root: Any,
    limit: int = MAX_ITEMS,
    *,
    ascii_only: bool = False,
    active: set[int] | frozenset[int] = frozenset(),
    flags: dict[int, bool] | None = None,
) -> tuple[int, bool]:
    """:func:`estimated_text` of ``root``, and whether the walk met an object whose text is the
    program's code (:func:`speaks`): then the one C call could write more than the estimate
    (the code returns any text, and can grow a container being written), and the text is
    written in steps instead (``_stepped_text``, ADR 0162); so does a container in ``active``
    (one being written in steps, which a C call would write again). Once past ``limit`` the
    walk stops, the flag then partial. ``flags``, when given, gets the same answer for each
    container walked (by ``id``), a container reaching one still being walked (a cycle)
    counted as speaking."""
    if not _is_container(root):
        return _scalar_text(root, ascii_only), speaks(type(root))
    spoken = False
    sizes: dict[int, int] = {}
    held: list[Any] = []  # keeps every walked container alive, so ids stay unique
    pending: list[tuple[Any, list[Any] | None]] = [(root, None)]
    own: dict[int, bool] = {}  # with flags: what a container's own kind and flat items say
    ran_code = False
    while pending:
        node, items = pending.pop()
        if items is None:
            key = id(node)
            if key in sizes:
                continue
            held.append(node)
            itself = key in active or speaks(type(node))
            if calls_program(type(node)) or _sorts_program(node) or _factory_speaks(node):
                itself = True  # its library repr runs the program's code (written in steps)
            if iterates(type(node)):
                # Its items are the program's code's answer, which may change any container
                # already walked: no container's finding is kept.
                itself = ran_code = True
            items = _items(node)
            flat, said = _flat_text(items, ascii_only)
            spoken = spoken or itself or said
            if flat is not None:
                sizes[key] = flat + _wrapper(node)
                if flags is not None:
                    flags[key] = itself or said
                continue
            if flags is not None:
                own[key] = itself or said
            sizes[key] = _WRAPPER  # while in progress: a cycle prints as [...]
            pending.append((node, items))
            pending.extend((item, None) for item in items if _is_container(item))
            continue
        total = _wrapper(node)
        for item in items:
            if _is_container(item):
                total += sizes[id(item)] + _SEPARATOR
            else:
                total += _scalar_text(item, ascii_only) + _SEPARATOR
            if total > limit:
                break
        sizes[id(node)] = total
        if flags is not None:
            flags[id(node)] = own[id(node)] or any(
                flags.get(id(item), True) for item in items if _is_container(item)
            )
        if id(node) == id(root) or total > limit:
            break
    else:
        total = sizes[id(root)]  # the root's items are flat: no container below it
    if ran_code and flags is not None:
        flags.clear()
    return total, spoken


def check_text(value: Any, what: str) -> None:
    """Refuse converting ``value`` (a container, an exception printing its ``args``, bytes
    written as their ``repr``) to text when its text would pass the item cap."""
    texted = _texted(value)
    if _is_container(texted):
        check_items(estimated_text(texted), what)
    elif isinstance(texted, bytes | bytearray):
        check_items(_written_length(texted, repr, _bytes_bound(texted)), what)


def check_repr(value: Any, what: str, *, ascii_only: bool = False) -> None:
    """Refuse ``repr(value)`` (``ascii(value)`` with ``ascii_only``) when its text would pass
    the item cap: a string's escapes write up to ten characters for one (``\\U0010ffff``)."""
    check_items(repr_length(value, ascii_only=ascii_only), what)


def repr_length(value: Any, *, ascii_only: bool = False) -> int:
    """About ``len(repr(value))`` (``ascii`` with ``ascii_only``), at or above it for the kinds
    :func:`estimated_text` knows, strings and bytes measured when their bound passes the cap."""
    texted = _texted(value)
    if _is_container(texted):
        return estimated_text(texted, ascii_only=ascii_only)
    if isinstance(texted, str):
        text = str.__str__(texted)
        escapes = not str.isprintable(text) or (ascii_only and not str.isascii(text))
        if escapes:
            bound = str.__len__(text) * 10 + 2  # \U0010ffff for a character
        else:
            bound = str.__len__(text) + 2 + str.count(text, "\\") + str.count(text, "'")
        return _written_length(text, ascii if ascii_only else repr, bound)
    if isinstance(texted, bytes | bytearray):
        return _written_length(texted, repr, _bytes_bound(texted))
    return _scalar_text(texted, ascii_only)


# Characters (or bytes) written per step when a text's written length is measured.
_MEASURE_STEP = 1 << 16


def _bytes_bound(data: bytes | bytearray) -> int:
    return len(data) * 4 + 14  # b'...' or bytearray(b'...'), \xNN for a byte


def _written_length(value: Any, write: Callable[[Any], str], bound: int) -> int:
    """The length of ``write(value)`` (``repr`` or ``ascii``), at most ``bound``: the bound
    when it is under the cap, else measured until past the cap."""
    return bound if bound <= MAX_ITEMS else measured_length(value, write, MAX_ITEMS)


def measured_length(value: Any, write: Callable[[Any], str], stop_past: int) -> int:
    """``len(write(value))`` of a string or bytes, or more, written a step at a time (so no
    more than a step's text is ever built to tell it) until the count passes ``stop_past``.
    Each step's quotes are its own: a quote counts once more, so the figure stays at or above
    the whole text's."""
    wrapper = len(write(value[:0]))
    quotes: int = value.count("'" if isinstance(value, str) else b"'")
    total = wrapper + quotes
    for start in range(0, len(value), _MEASURE_STEP):
        total += len(write(value[start : start + _MEASURE_STEP])) - wrapper
        if total > stop_past:
            break
    return total


def check_texts(values: Iterable[Any], what: str) -> None:
    """:func:`check_text` of each value."""
    for value in values:
        check_text(value, what)


def text_hook(value: Any) -> Any:
    """``value``, once its text is known to fit (the hook f-strings call)."""
    check_text(value, "converting a container to text")
    return value
