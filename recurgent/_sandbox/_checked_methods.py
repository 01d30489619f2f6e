"""Checked methods of plain types: the few that build a huge value from small arguments (ADR 0012).

The attribute policy hands out these versions of ``str.format``/``format_map`` (through
:class:`SafeFormatter`, which also resolves ``{0.attr}`` through the attribute policy),
``ljust``/``rjust``/``center``/``zfill``, ``expandtabs``, ``replace``, ``join``, ``translate``,
``str.encode`` and ``bytes.decode`` (``_encodings``),
``int.to_bytes``, ``re.Pattern.sub``/``subn``, ``re.Match.expand``, ``Counter.elements``, the
sized methods of ``random.Random`` (a host's generator in memory, red-team F16) and its
``shuffle``, ``sample`` and ``choices``, which tick (``_draws``, G5, H3), ``seek`` of
``StringIO``/``BytesIO`` (a write past the end pads up to the position, F17), and the methods
that add children to an XML element (a cycle makes ElementTree's own loops endless, F19). Each
checks the size of what it would build first and raises :class:`SizeLimitExceeded`; sizes come
from ``_measure``, never from methods generated code can override.
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # the helper string.Formatter uses
import collections
import datetime
import functools
import io
import random
import re
import string
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable
from typing import Any

from recurgent._sandbox._draws import ticking_draws
from recurgent._sandbox._encodings import bind_decode, bind_encode
from recurgent._sandbox._gate import MappingGatedCall
from recurgent._sandbox._integers import checked_from_bytes
from recurgent._sandbox._limits import TickingIterator
from recurgent._sandbox._made import SandboxType
from recurgent._sandbox._measure import MAX_ITEMS, check_items, true_length
from recurgent._sandbox._reflection import named
from recurgent._sandbox._sizes import check_format_spec
from recurgent._sandbox._stepped_text import check_strftime, formatted, text_of

__all__ = [
    "ITEM_WRITTEN_TYPES",
    "USER_STRING_CHECKED",
    "ElementWriter",
    "ItemWriter",
    "SafeFormatter",
    "checked_expand",
    "checked_sub",
    "refuse_element_cycle",
    "special_methods",
    "user_string_binder",
]

_EXACT_STR = frozenset({str})
_GROUP_REFERENCE = re.compile(r"\\(?:[1-9]|g<)")
_GROUP_REFERENCE_BYTES = re.compile(rb"\\(?:[1-9]|g<)")

Binder = Callable[[Any], Callable[..., Any]]


_CONVERSIONS = {"s": "str", "r": "repr", "a": "ascii"}


class SafeFormatter(string.Formatter):
    """``str.format`` that resolves ``{0.attr}`` through the sandbox attribute policy.

    It also counts what it produces, so a template repeating one large argument many times
    stops at the size cap instead of exhausting memory.
    """

    def __init__(self, getattr_guard: Callable[[Any, str], Any]) -> None:
        self._getattr_guard = getattr_guard
        self._produced = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self._produced = len(format_string)
        return super().vformat(format_string, args, kwargs)

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attribute, key in rest:
            obj = self._getattr_guard(obj, key) if is_attribute else obj[key]
        return obj, first

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        mode = _CONVERSIONS.get(conversion or "")
        if mode is not None:
            # Counted before it is written: a string's escapes too (ADR 0151); a container
            # with the program's code in it written in steps (ADR 0162).
            return text_of(value, mode, "str.format")
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        check_format_spec(format_spec)
        text = formatted(value, format_spec, "str.format")  # a shared structure's text (H10)
        self._produced += len(text)
        check_items(self._produced, "str.format")
        return text


def _padding(method: str) -> Binder:
    def bind(obj: Any) -> Callable[..., Any]:
        def padded(width: int, *args: Any) -> Any:
            check_items(int(width), f"str.{method}")
            return getattr(obj, method)(width, *args)

        return padded

    return bind


def _bind_strftime(obj: Any) -> Callable[..., Any]:
    def strftime(template: Any) -> Any:
        check_strftime(obj, template, "strftime")
        return obj.strftime(template)

    return strftime


def _bind_expandtabs(obj: Any) -> Callable[..., Any]:
    def expandtabs(tabsize: int = 8) -> Any:
        check_items(true_length(obj) * max(int(tabsize), 1), "str.expandtabs")
        return obj.expandtabs(tabsize)

    return expandtabs


def _text_base(obj: Any) -> Any:
    return next(base for base in _TEXT if isinstance(obj, base))


def _bind_replace(obj: Any) -> Callable[..., Any]:
    def replace(old: Any, new: Any, count: int = -1) -> Any:
        old_length, new_length = true_length(old), true_length(new)
        if new_length > old_length:
            length = true_length(obj)
            occurrences = length + 1 if not old_length else _text_base(obj).count(obj, old)
            if int(count) >= 0:
                occurrences = min(occurrences, int(count))
            check_items(length + occurrences * (new_length - old_length), "str.replace")
        return obj.replace(old, new, count)

    return replace


def _joined_length(separator: Any, items: list[Any]) -> int:
    total = true_length(separator) * (len(items) - 1)
    if isinstance(separator, str) and {*map(type, items)} <= _EXACT_STR:
        # The common case at C speed: len() of an exact str is its real length.
        return total + sum(map(len, items))
    if isinstance(separator, str):
        return total + sum(true_length(item) for item in items if isinstance(item, str))
    # bytes.join takes any buffer; nbytes is its real size (len() of a cast memoryview is not).
    return total + sum(memoryview(item).nbytes for item in items if _is_buffer(item))


def _is_buffer(item: Any) -> bool:
    try:
        memoryview(item).release()
    except TypeError:  # join refuses it
        return False
    return True


def _bind_join(obj: Any) -> Callable[..., Any]:
    def join(iterable: Iterable[Any]) -> Any:
        # A list is joined as it is: no generated code runs between the check and the join
        # (lengths are read through the builtin types), so it cannot change in between.
        items = iterable if type(iterable) is list else list(iterable)
        if items:
            check_items(_joined_length(obj, items), "str.join")
        return obj.join(items)

    return join


def _resolved_table(text: str, table: Any) -> dict[int, Any]:
    """The entries of a translation table ``text`` uses, read once into a plain dict."""
    resolved: dict[int, Any] = {}
    for char in set(str.__str__(text)):
        try:
            resolved[ord(char)] = table[ord(char)]
        except LookupError:  # str.translate leaves such a character as it is
            pass
    return resolved


def _bind_translate(obj: Any) -> Callable[..., Any]:
    def translate(table: Any) -> Any:
        if isinstance(obj, str):
            # A mapping that is not a plain dict could answer the check and translate()
            # differently; translate() gets the entries the check measured.
            if type(table) is not dict:
                table = _resolved_table(obj, table)
            longest = max((true_length(v) for v in table.values() if isinstance(v, str)), default=1)
            check_items(true_length(obj) * longest, "str.translate")
        return obj.translate(table)

    return translate


def _bind_to_bytes(obj: Any) -> Callable[..., Any]:
    def to_bytes(length: int = 1, byteorder: str = "big", *, signed: bool = False) -> bytes:
        check_items(int(length), "int.to_bytes")
        return int.to_bytes(obj, length, byteorder, signed=signed)  # type: ignore[arg-type]

    return to_bytes


def _bind_hex(obj: Any) -> Callable[..., str]:
    def hex(*args: Any, **kwargs: Any) -> str:
        # Two digits a byte, and a one-character separator between bytes when one is given:
        # nine million bytes made 26 999 999 characters in one call (red team R26).
        per_byte = 3 if args or kwargs else 2
        check_items(true_length(obj) * per_byte, "bytes.hex")
        return type(obj).hex(obj, *args, **kwargs)  # type: ignore[no-any-return]

    return hex


def _expansion_bound(template: Any, string_length: int) -> int:
    pattern = _GROUP_REFERENCE if isinstance(template, str) else _GROUP_REFERENCE_BYTES
    return len(template) + len(pattern.findall(template)) * string_length


def checked_expand(match: Any, template: Any) -> Any:
    """``Match.expand`` with the expansion's size checked first."""
    check_items(_expansion_bound(template, len(match.string)), "re.Match.expand")
    return match.expand(template)


def checked_sub(
    pattern: Any,
    repl: Any,
    text: Any,
    count: int = 0,
    *,
    with_count: bool = False,
    timeout: float | None = None,
) -> Any:
    """``Pattern.sub``/``subn`` that stops once the result would pass the size cap.

    ``pattern`` is an ``re`` or ``regex`` pattern; ``timeout`` is passed on to a ``regex`` one.
    """
    options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    if isinstance(repl, str | bytes):
        matches = len(text) + 1 if count <= 0 else min(count, len(text) + 1)
        if len(text) + matches * _expansion_bound(repl, len(text)) <= MAX_ITEMS:
            return (
                pattern.subn(repl, text, count, **options)
                if with_count
                else pattern.sub(repl, text, count, **options)
            )
    budget = MAX_ITEMS - len(text)
    backslash = "\\" if isinstance(repl, str) else b"\\"
    literal = isinstance(repl, str | bytes) and backslash not in repl  # type: ignore[operator]

    def expand(match: re.Match[Any]) -> Any:
        if literal:
            return repl
        return repl(match) if callable(repl) else checked_expand(match, repl)

    def replacement(match: re.Match[Any]) -> Any:
        nonlocal budget
        piece = expand(match)
        budget -= len(piece)
        if budget < 0:
            check_items(MAX_ITEMS - budget, "re.sub")
        return piece

    return (
        pattern.subn(replacement, text, count, **options)
        if with_count
        else pattern.sub(replacement, text, count, **options)
    )


def _on_the_sandbox_engine(name: str) -> Binder:
    """``name`` of a standard-engine pattern (one from the host's memory): served by the same
    pattern compiled on the sandbox's engine, under the deadline (ADR 0090)."""

    def bind(obj: Any) -> Callable[..., Any]:
        # Imported here: _regex imports this module's checked_sub.
        from recurgent._sandbox._regex import on_the_sandbox_engine

        return getattr(on_the_sandbox_engine(obj), name)  # type: ignore[no-any-return]

    return bind


#: What an XML element or tree finds by path: ``ElementPath`` keeps each path, with the
#: namespaces' items, in a process-wide cache, so both go in exact (ADR 0091).
PATH_SEARCHES = ("find", "findall", "findtext", "iterfind")


def _bind_path_search(name: str) -> Binder:
    def bind(obj: Any) -> Callable[..., Any]:
        return MappingGatedCall(getattr(obj, name), name)

    return bind


#: What a standard-engine pattern matches with: every method that runs the engine.
STANDARD_PATTERN_MATCHING = (
    "match",
    "search",
    "fullmatch",
    "findall",
    "finditer",
    "split",
    "sub",
    "subn",
)


def _bind_expand(obj: Any) -> Callable[..., Any]:
    return lambda template: checked_expand(obj, template)


def _bind_seek(obj: Any) -> Callable[..., Any]:
    def seek(offset: int, whence: int = 0, /) -> int:
        # Seeking allocates nothing, but the next write pads the stream up to the position.
        before = obj.tell()
        position: int = obj.seek(offset, whence)
        if position > MAX_ITEMS:
            obj.seek(before)
            check_items(position, f"{type(obj).__name__}.seek()")
        return position

    return seek


def refuse_element_cycle(parent: Any, children: Iterable[Any], tick: Callable[[], bool]) -> None:
    """Raise ``ValueError`` if adding ``children`` under ``parent`` would make it its own descendant.

    ElementTree assumes a tree: ``iter()`` of a cycle grows memory in one C call and
    ``tostring()`` loops in library code that never ticks. Each child's subtree is walked once
    (shared subtrees are fine), ticking, so a huge one still ends at the deadline.
    """
    seen: set[int] = set()
    stack = [child for child in children if type(child) is ElementTree.Element]
    walked = 0
    while stack:
        element = stack.pop()
        if element is parent:
            raise ValueError("an XML element cannot contain itself (ElementTree builds trees)")
        if id(element) in seen:
            continue
        seen.add(id(element))
        stack.extend(child for child in list(element) if type(child) is ElementTree.Element)
        walked += 1
        if walked % 1024 == 0:
            tick()


class ElementWriter:
    """What ``e[i] = child``, ``e[a:b] = children`` and ``e.tag = ...`` write through for an XML
    element (the policy's ``_write_`` hook): item stores are checked for cycles first."""

    __slots__ = ("_element", "_tick")
    _element: Any
    _tick: Callable[[], bool]

    def __init__(self, element: Any, tick: Callable[[], bool]) -> None:
        object.__setattr__(self, "_element", element)
        object.__setattr__(self, "_tick", tick)

    def __setitem__(self, index: Any, value: Any) -> None:
        children = list(value) if isinstance(index, slice) else [value]
        refuse_element_cycle(self._element, children, self._tick)
        self._element[index] = children if isinstance(index, slice) else value

    def __delitem__(self, index: Any) -> None:
        del self._element[index]

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._element, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._element, name)


#: Wrappers whose items generated code writes through :class:`ItemWriter` (ADR 0069).
ITEM_WRITTEN_TYPES = frozenset({collections.ChainMap, collections.UserDict, collections.UserList})


class ItemWriter:
    """What ``c[k] = v`` and ``del c[k]`` write through for a ``ChainMap``, ``UserDict`` or
    ``UserList`` (the policy's ``_write_`` hook): the wrapper's own item methods, as its
    ``update``/``append`` do; its attributes (``c.maps``, ``u.data``) stay unwritable."""

    __slots__ = ("_target",)
    _target: Any

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "_target", target)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._target[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._target[key]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(self._refusal(name))

    def __delattr__(self, name: str) -> None:
        raise AttributeError(self._refusal(name))

    def _refusal(self, name: str) -> str:
        kind = str.__str__(type(self._target).__name__)
        return (
            f"cannot change {kind}.{name}: generated code writes a {kind}'s items "
            "(x[key] = value), not its attributes"
        )


def _element_adders(tick: Callable[[], bool]) -> dict[str, Binder]:
    def bind_append(obj: Any) -> Callable[..., Any]:
        def append(child: Any, /) -> None:
            refuse_element_cycle(obj, (child,), tick)
            obj.append(child)

        return append

    def bind_extend(obj: Any) -> Callable[..., Any]:
        def extend(children: Any, /) -> None:
            items = list(children)
            refuse_element_cycle(obj, items, tick)
            obj.extend(items)

        return extend

    def bind_insert(obj: Any) -> Callable[..., Any]:
        def insert(index: int, child: Any, /) -> None:
            refuse_element_cycle(obj, (child,), tick)
            obj.insert(index, child)

        return insert

    return {"append": bind_append, "extend": bind_extend, "insert": bind_insert}


# UserString's text methods that return a UserString; format, format_map and join return a str,
# encode bytes.
_USER_STRING_WRAPPED = frozenset(
    {"center", "ljust", "rjust", "zfill", "expandtabs", "replace", "translate"}
)
#: The UserString methods served as str's checked ones over the wrapper's ``data``.
USER_STRING_CHECKED = _USER_STRING_WRAPPED | {"format", "format_map", "join", "encode"}


def user_string_binder(name: str, binder: Binder) -> Binder:
    """``UserString.name`` checked as ``str.name`` is, on the wrapper's ``data`` (red-team R3,
    H9). UserString's methods call the str's own on ``data``, past every check the policy
    makes on a str: ``UserString('ab').center(10**9)`` built a gigabyte. Results are wrapped
    as UserString's are."""

    def bind(obj: Any) -> Callable[..., Any]:
        # Named as the method: a wrong call's message names it, not the binder (red team R23).
        checked = named(binder(obj.data), name)
        # As UserString's own methods do (``self.__class__(...)``): a program's subclass gets
        # its class back (red team R29; the library's class before). A host's subclass, which
        # only reaches a program as an inert stand-in, is never built here.
        kind = type(obj)
        wrapper = kind if isinstance(kind, SandboxType) else collections.UserString

        def method(*args: Any, **kwargs: Any) -> Any:
            if name == "replace":
                # As UserString.replace does: a UserString old or new is its data.
                args = tuple(
                    arg.data if isinstance(arg, collections.UserString) else arg for arg in args
                )
            result = checked(*args, **kwargs)
            return wrapper(result) if name in _USER_STRING_WRAPPED else result

        return method

    return bind


def _bind_random(method: Callable[..., Any]) -> Binder:
    return lambda obj: functools.partial(method, obj)


_TEXT = (str, bytes, bytearray)


def _either(
    first: tuple[tuple[type, ...], Binder], second: tuple[tuple[type, ...], Binder]
) -> tuple[tuple[type, ...], Binder]:
    """One table entry for a name two kinds of receiver check differently (``findall`` of an
    element and of a pattern)."""

    def bind(obj: Any) -> Callable[..., Any]:
        return first[1](obj) if isinstance(obj, first[0]) else second[1](obj)

    return (first[0] + second[0], bind)


@functools.cache
def _stateless_methods() -> dict[str, tuple[tuple[type, ...], Binder]]:
    """The checked methods whose binders hold no state of an attempt: built once per process
    (each attempt used to build all of them again, about a sixth of a bare sandbox run)."""
    # Imported here: _stdlib imports _regex, which imports this module's checked_sub.
    from recurgent._sandbox._stdlib import SandboxRandom

    return {
        "ljust": (_TEXT, _padding("ljust")),
        "rjust": (_TEXT, _padding("rjust")),
        "center": (_TEXT, _padding("center")),
        "zfill": (_TEXT, _padding("zfill")),
        "expandtabs": (_TEXT, _bind_expandtabs),
        "replace": (_TEXT, _bind_replace),
        "join": (_TEXT, _bind_join),
        "translate": (_TEXT, _bind_translate),
        "encode": ((str,), bind_encode),
        "decode": ((bytes, bytearray), bind_decode),
        "hex": ((bytes, bytearray), _bind_hex),
        "to_bytes": ((int,), _bind_to_bytes),
        # (0).from_bytes is int.from_bytes: a number past the bit cap from bytes (ADR 0123).
        "from_bytes": ((int,), lambda obj: functools.partial(checked_from_bytes, type(obj))),
        **{
            name: ((re.Pattern,), _on_the_sandbox_engine(name))
            for name in STANDARD_PATTERN_MATCHING
        },
        **{
            name: _either(
                ((ElementTree.Element, ElementTree.ElementTree), _bind_path_search(name)),
                ((re.Pattern,), _on_the_sandbox_engine(name)),
            )
            for name in PATH_SEARCHES
        },
        "expand": ((re.Match,), _bind_expand),
        "strftime": ((datetime.date, datetime.time), _bind_strftime),
        "seek": ((io.StringIO, io.BytesIO), _bind_seek),
        "getrandbits": ((random.Random,), _bind_random(SandboxRandom.getrandbits)),
        "randbytes": ((random.Random,), _bind_random(SandboxRandom.randbytes)),
    }


def special_methods(
    formatter: SafeFormatter, tick: Callable[[], bool]
) -> dict[str, tuple[tuple[type, ...], Binder]]:
    """Checked methods by name: ``name -> (receiver types, binder)``.

    A binder takes the receiver and returns the callable generated code gets for
    ``receiver.name``. The ones that format, tick or draw are bound to this attempt's
    formatter and deadline; the rest are shared by every attempt.
    """

    def bind_format(obj: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: formatter.vformat(obj, args, kwargs)

    def bind_format_map(obj: Any) -> Callable[..., Any]:
        return lambda mapping: formatter.vformat(obj, (), mapping)

    def bind_elements(obj: Any) -> Callable[..., Any]:
        return lambda: TickingIterator(obj.elements(), tick)

    def bind_draws(name: str) -> Binder:
        return lambda obj: ticking_draws(obj, tick)[name]

    return {
        "format": ((str,), bind_format),
        "format_map": ((str,), bind_format_map),
        **_stateless_methods(),
        "elements": ((collections.Counter,), bind_elements),
        "choices": ((random.Random,), bind_draws("choices")),
        "sample": ((random.Random,), bind_draws("sample")),
        "shuffle": ((random.Random,), bind_draws("shuffle")),
        **{
            name: ((ElementTree.Element,), binder) for name, binder in _element_adders(tick).items()
        },
    }
