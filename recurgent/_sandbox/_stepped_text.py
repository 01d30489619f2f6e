"""Text the program's code writes between the fields, written a field at a time (ADR 0162).

The text checks (``_text_size``) estimate a conversion before the one C call that writes it.
The estimate cannot know what the program's code answers inside that call: a program object's
``__repr__`` or ``__str__`` returns any text (a shared million-character string a hundred
times), and can grow the very container being written (red team R29: a list whose item's
``__repr__`` extends it wrote 100 000 403 characters); ``%``'s ``(key)`` fields call a
program mapping's ``__getitem__`` once a field (``('%(a)s' * 100) % M()``: 100 million).

So when the estimate's walk meets such code (``_text_size.speaks``), or ``%`` has a mapping
that is not an exact dict or a value of the program's, the text is written here in Python
instead, a piece at a time, with the running total checked after each piece:

* :func:`text_of` writes ``repr``/``ascii``/``str`` of a list, tuple, dict, set, frozenset,
  deque, ``UserList`` or ``UserDict`` (and a program subclass of one that keeps its library
  ``repr``) as CPython writes it (re-reading a list's length each item, ``[...]`` for a
  container already being written); each item without the program's code is one C call,
  checked by its estimate; each with it is its own call, counted once it returns.
* :func:`stepped_percent` writes ``str % args`` a field at a time: each field is formatted by
  CPython itself (``'%-*.3s' % (width, value)``, the field's key taken out), so flags, widths,
  precisions, conversions and their errors are CPython's; the keys, the arguments each field
  takes, and the errors that name the whole template are this module's, as CPython's
  ``PyUnicode_Format`` does them.

Data with no code of the program's keeps the single C call, checked as before.
"""

from __future__ import annotations

import collections
import datetime
import threading
import time
import types
from collections.abc import Callable
from typing import Any

from recurgent._sandbox._made import SandboxType
from recurgent._sandbox._measure import MAX_ITEMS, check_items
from recurgent._sandbox._text_size import (
    DICT_VIEWS,
    check_repr,
    check_text,
    estimate,
    is_text_container,
    iterates,
    repr_length,
    speaks,
)

__all__ = [
    "WRAPPER_REPRS",
    "check_strftime",
    "converted",
    "formatted",
    "objects_own",
    "percent_needs_steps",
    "runs_code",
    "stepped_percent",
    "text_of",
    "time_strftime",
]

#: The ``__repr__`` functions of the checked wrappers (``_user_wrappers`` adds its own): a
#: program subclass keeping one writes ``repr(data)``.
WRAPPER_REPRS: set[Any] = {collections.UserList.__repr__, collections.UserDict.__repr__}

_WRITERS: dict[str, Callable[[Any], str]] = {"repr": repr, "ascii": ascii, "str": str}


class _Writing(threading.local):
    """The containers this thread is writing in steps: one met again inside is ``[...]``."""

    def __init__(self) -> None:
        self.active: set[int] = set()


_WRITING = _Writing()


class _Budget:
    """The running total of one stepped conversion, and what its last walk found: for each
    container, whether the program's code is in it (valid until the program's code runs
    again, which can change any container)."""

    __slots__ = ("ascii_only", "flags", "total", "what")

    def __init__(self, what: str, ascii_only: bool) -> None:
        self.what = what
        self.ascii_only = ascii_only
        self.total = 0
        self.flags: dict[int, bool] = {}

    def room(self) -> int:
        return MAX_ITEMS - self.total

    def check(self, more: int) -> None:
        if self.total + more > MAX_ITEMS:
            check_items(self.total + more, self.what)

    def add(self, out: list[Any], text: Any) -> None:
        self.total += str.__len__(text) if isinstance(text, str) else bytes.__len__(text)
        if self.total > MAX_ITEMS:
            check_items(self.total, self.what)
        out.append(text)


def runs_code(value: Any) -> bool:
    """True when converting ``value`` to text or a number may run the program's code: an
    instance of a class of the program's."""
    return isinstance(type(value), SandboxType)


def objects_own(value: Any, name: str) -> bool:
    """True when ``value``'s class has ``object``'s ``name`` (``__str__``: its str is its repr;
    ``__format__``: ``format(value, '')`` is its str)."""
    kind: Any = type(value)
    return getattr(kind, name, None) is getattr(object, name)


def text_of(value: Any, mode: str, what: str) -> str:
    """``repr(value)``, ``ascii(value)`` or ``str(value)`` (``mode``), refused past the item cap:
    one C call when the text's estimate holds (no code of the program's in it), else written
    in steps (see the module docstring)."""
    ascii_only = mode == "ascii"
    if isinstance(value, BaseException):
        return _exception_text(value, mode, what)
    shape = _shape(value)
    if shape is None or (mode == "str" and not objects_own(value, "__str__")):
        if mode == "str":
            check_text(value, what)
        else:
            check_repr(value, what, ascii_only=ascii_only)
        return _WRITERS[mode](value)
    size, spoken = estimate(value, ascii_only=ascii_only, active=_WRITING.active)
    check_items(size, what)
    if not spoken:
        return _WRITERS[mode](value)
    budget = _Budget(what, ascii_only)  # its items walked again as they are reached
    out: list[str] = []
    _SHAPES[shape](value, out, budget)
    return "".join(out)


def _exception_text(value: BaseException, mode: str, what: str) -> str:
    """An exception's text, its ``args`` written in steps when the program's code is in them
    (``BaseException``'s own ``__repr__``/``__str__``, and ``KeyError``'s ``__str__``: its one
    argument's repr; a class's own is one call, checked)."""
    kind: Any = type(value)
    own = kind.__str__ if mode == "str" else kind.__repr__
    args = _EXCEPTION_ARGS.__get__(value)
    if own is OSError.__str__:
        return _oserror_text(value, args, what)
    # KeyError_str writes repr(args[0]) for one argument, else as BaseException_str (red team
    # R32: str(KeyError([E()] * 100)) was one C call, 100 000 200 characters).
    keyed = mode == "str" and own is KeyError.__str__
    if keyed or own is (BaseException.__str__ if mode == "str" else BaseException.__repr__):
        size, spoken = estimate(args, ascii_only=mode == "ascii", active=_WRITING.active)
        check_items(size, what)
        if spoken:
            if mode == "str":  # '' for no args, str(args[0]) for one, else the args' repr
                if len(args) == 1:
                    return text_of(args[0], "repr" if keyed else "str", what)
                return "" if not args else text_of(args, "repr", what)
            # "Name(arg)" for one, else "Name" and the args' repr (BaseException_repr)
            name = str.__str__(type.__getattribute__(kind, "__name__"))
            if mode == "ascii":
                name = str.encode(name, "ascii", "backslashreplace").decode("ascii")
            inner = text_of(args[0] if len(args) == 1 else args, mode, what)
            text = f"{name}({inner})" if len(args) == 1 else name + inner
            check_items(str.__len__(text), what)
            return text
        return _WRITERS[mode](value)
    if mode == "str":
        check_text(value, what)
    else:
        check_repr(value, what, ascii_only=mode == "ascii")
    return _WRITERS[mode](value)


_EXCEPTION_ARGS = BaseException.__dict__["args"]
_OSERROR_NAMES = ("errno", "strerror", "filename", "filename2")
# OSError_str's fields: "[Errno %S] %S: %R -> %R" of errno, strerror, filename, filename2.
_OSERROR_FIELDS = tuple(OSError.__dict__[name] for name in _OSERROR_NAMES)
_OSERROR_MODES = ("str", "str", "repr", "repr")


def _oserror_text(value: BaseException, args: Any, what: str) -> str:
    """``OSError``'s own ``str``: its fields (a file name is not in its args) estimated with
    its args, and written in steps when the program's code is in them (red team R32:
    ``str(OSError(1, 'x', [S] * 100))`` wrote 100 000 413 characters, the args estimated)."""
    fields = [field.__get__(value) for field in _OSERROR_FIELDS]
    size, spoken = estimate((*fields, args), active=_WRITING.active)
    check_items(size, what)
    if not spoken:
        return str(value)
    # Which of OSError_str's shapes the fields make (NULL or not, unreadable from Python) is
    # read from the C call itself, each field that is set and the args standing in as tokens
    # (no code of the program's runs in it), then written with the fields' text in steps.
    tokens = [f"R32T{index}K" for index in range(len(fields))]
    try:
        for field, token, held in zip(_OSERROR_FIELDS, tokens, fields, strict=True):
            if held is not None:
                field.__set__(value, token)
        _EXCEPTION_ARGS.__set__(value, ("R32TargsK",))
        template = OSError.__str__(value)
    finally:
        for field, held in zip(_OSERROR_FIELDS, fields, strict=True):
            if held is not None:
                field.__set__(value, held)
        _EXCEPTION_ARGS.__set__(value, args)
    if template == "R32TargsK":  # BaseException_str of the args
        if len(args) == 1:
            return text_of(args[0], "str", what)
        return "" if not args else text_of(args, "repr", what)
    pieces: list[str] = []
    for token, held, mode in zip(tokens, fields, _OSERROR_MODES, strict=True):
        shown = f"'{token}'" if mode == "repr" else token
        head, found, rest = template.partition(shown)
        if found:  # a field not set, or not in this shape, is no token in the text
            pieces += [head, text_of(held, mode, what)]
            template = rest
    pieces.append(template)
    text = "".join(pieces)
    check_items(str.__len__(text), what)
    return text


def formatted(value: Any, spec: str, what: str) -> str:
    """``format(value, spec)`` checked: a container's ``format(x, '')`` is its ``str``, written
    by :func:`text_of`."""
    if spec == "" and objects_own(value, "__format__") and converted(value):
        return text_of(value, "str", what)
    check_text(value, what)
    if isinstance(value, _DATES) and isinstance(spec, str):
        check_strftime(value, spec, what)  # a date's format spec is its strftime's
    return format(value, spec)


_DATES = (datetime.date, datetime.time)
# What one strftime directive writes past its own two characters, but %Z: %c writes 24 ("Wed
# Jan  1 00:00:00 2020").
_DIRECTIVE = 22


def check_strftime(value: Any, template: Any, what: str) -> None:
    """Refuse ``value.strftime(template)`` (a date, a time or a datetime) past the item cap:
    each ``%`` directive writes up to 24 characters, ``%Z`` its zone's name too (red team R32:
    ``format(datetime(2020, 1, 1), '%c' * 4000000)`` wrote 96 000 000 characters)."""
    if not isinstance(template, str) or "%" not in template:
        return
    zone = value.tzname() if isinstance(value, datetime.datetime | datetime.time) else None
    _check_directives(template, str.__len__(zone) if isinstance(zone, str) else 0, what)


def _check_directives(template: str, zone: int, what: str) -> None:
    directives = str.count(template, "%") * _DIRECTIVE + str.count(template, "Z") * zone
    check_items(str.__len__(template) + directives, what)


def time_strftime(format: Any, *moment: Any) -> Any:
    """``time.strftime``, checked as a date's ``strftime`` is (the local zone's name at most
    64 characters)."""
    if isinstance(format, str):
        _check_directives(format, _LOCAL_ZONE, "time.strftime")
    return time.strftime(format, *moment)


time_strftime.__name__ = time_strftime.__qualname__ = "strftime"
_LOCAL_ZONE = 64


def converted(value: Any) -> bool:
    """True for a value :func:`text_of` may write in steps: a container or an exception."""
    return is_text_container(value) or isinstance(value, BaseException)


# --- repr in steps ------------------------------------------------------------------------------


def _shape(value: Any) -> str | None:
    """Which writer writes ``value``'s repr as CPython does, or ``None`` (one C call)."""
    kind = type(value)
    if speaks(kind) or not is_text_container(value):
        return None
    written = getattr(kind, "__repr__", None)
    for shape, reprs in _REPRS:
        if written in reprs:
            return shape
    return None


def _escaped(text: str, budget: _Budget) -> str:
    """``text`` as ``ascii()`` writes what a ``repr`` returned: non-ASCII escaped, checked first."""
    if str.isascii(text):
        return text
    widest = ord(max(str.__str__(text)))
    budget.check(str.__len__(text) * (4 if widest < 0x100 else 6 if widest < 0x10000 else 10))
    return str.encode(text, "ascii", "backslashreplace").decode("ascii")


def _item(item: Any, out: list[str], budget: _Budget) -> None:
    """One item's repr: in steps if the program's code is in it, else one C call, checked."""
    if isinstance(type(item), SandboxType) and speaks(type(item)):
        budget.flags.clear()  # the program's code may change any container
        text = repr(item)  # the program's code: counted once it returns
        budget.add(out, _escaped(text, budget) if budget.ascii_only else text)
        return
    shape = _shape(item)
    if shape is not None:
        room = budget.room() + 1
        flag = budget.flags.get(id(item))
        if flag is None:
            # Not walked since the program's code last ran: walked now, its parts noted.
            size = estimate(
                item,
                room,
                ascii_only=budget.ascii_only,
                active=_WRITING.active,
                flags=budget.flags,
            )[0]
            flag = budget.flags.get(id(item), True)
        elif not flag:
            # Noted plain by a walk, but code of the program's the walk did not know of (a
            # library object's repr: an OrderedDict's item, an exception's argument) may have
            # run since and filled it: stepped when this walk finds the program's code (red
            # team R32).
            size, flag = estimate(item, room, ascii_only=budget.ascii_only, active=_WRITING.active)
        if flag:
            _SHAPES[shape](item, out, budget)
            return
        budget.check(size)
    else:
        budget.check(repr_length(item, ascii_only=budget.ascii_only))
    budget.add(out, ascii(item) if budget.ascii_only else repr(item))


def _entered(node: Any, out: list[str], budget: _Budget, busy: str) -> bool:
    """Mark ``node`` as being written (CPython's ``Py_ReprEnter``); ``False`` (and ``busy``
    written) when it already is."""
    if id(node) in _WRITING.active:
        budget.add(out, busy)
        return False
    _WRITING.active.add(id(node))
    return True


def _items(items: Any, out: list[str], budget: _Budget) -> None:
    """A tuple's or set's items, comma-separated (a list reads its length again each item)."""
    for index, item in enumerate(items):
        if index:
            budget.add(out, ", ")
        _item(item, out, budget)


def _list(node: Any, out: list[str], budget: _Budget) -> None:
    if not list.__len__(node):
        budget.add(out, "[]")
        return
    if not _entered(node, out, budget, "[...]"):
        return
    try:
        budget.add(out, "[")
        index = 0
        while index < list.__len__(node):  # read again each item, as CPython does
            if index:
                budget.add(out, ", ")
            _item(list.__getitem__(node, index), out, budget)
            index += 1
        budget.add(out, "]")
    finally:
        _WRITING.active.discard(id(node))


def _tuple(node: Any, out: list[str], budget: _Budget) -> None:
    items = tuple.__getitem__(node, slice(None))
    if not items:
        budget.add(out, "()")
        return
    if not _entered(node, out, budget, "(...)"):
        return
    try:
        budget.add(out, "(")
        _items(items, out, budget)
        budget.add(out, ",)" if len(items) == 1 else ")")
    finally:
        _WRITING.active.discard(id(node))


def _dict(node: Any, out: list[str], budget: _Budget) -> None:
    if not _entered(node, out, budget, "{...}"):
        return
    try:
        if not dict.__len__(node):
            budget.add(out, "{}")
            return
        budget.add(out, "{")
        # The items as they are when writing starts (CPython walks the table as it changes).
        for index, (key, value) in enumerate(list(dict.items(node))):
            if index:
                budget.add(out, ", ")
            _item(key, out, budget)
            budget.add(out, ": ")
            _item(value, out, budget)
        budget.add(out, "}")
    finally:
        _WRITING.active.discard(id(node))


def _set(node: Any, out: list[str], budget: _Budget) -> None:
    kind = type(node)
    name = str.__str__(type.__getattribute__(kind, "__name__"))
    if not _entered(node, out, budget, f"{name}(...)"):
        return
    try:
        items = list(node)
        if iterates(kind):
            budget.flags.clear()  # the program's __iter__ ran: it may change any container
        if not items:
            budget.add(out, f"{name}()")
            return
        named = kind is not set
        budget.add(out, f"{name}({{" if named else "{")
        _items(items, out, budget)
        budget.add(out, "})" if named else "}")
    finally:
        _WRITING.active.discard(id(node))


def _deque(node: Any, out: list[str], budget: _Budget) -> None:
    if not _entered(node, out, budget, "[...]"):
        return
    try:
        items = list(node)
        name = str.__str__(type.__getattribute__(type(node), "__name__"))
        budget.add(out, f"{name}(")
        _list(items, out, budget)
        maxlen = node.maxlen
        budget.add(out, ")" if maxlen is None else f", maxlen={maxlen})")
    finally:
        _WRITING.active.discard(id(node))


def _counter(node: Any, out: list[str], budget: _Budget) -> None:
    # Counter.__repr__ (library Python): "Name()" when empty, else "Name(" and the repr of
    # dict(self.most_common()) (dict(self) when the values do not sort) and ")". Its truth,
    # most_common's sort and items() may be the program's code: no walk's note is kept.
    name = str.__str__(type.__getattribute__(type(node), "__name__"))
    empty = not node
    budget.flags.clear()
    if empty:
        budget.add(out, f"{name}()")
        return
    try:
        pairs = dict(node.most_common())
    except TypeError:
        pairs = dict(node)
    budget.flags.clear()
    budget.add(out, f"{name}(")
    _item(pairs, out, budget)
    budget.add(out, ")")


def _ordered(node: Any, out: list[str], budget: _Budget) -> None:
    # odict_repr: "Name()" when empty, "..." met again, else "Name(" and the repr of the list
    # of its (key, value) pairs (a subclass's: list(self.items()), the program's code) and ")".
    name = str.__str__(type.__getattribute__(type(node), "__name__"))
    if not dict.__len__(node):
        budget.add(out, f"{name}()")
        return
    if not _entered(node, out, budget, "..."):
        return
    try:
        if type(node) is collections.OrderedDict:
            pieces = list(collections.OrderedDict.items(node))
        else:
            pieces = list(node.items())
            budget.flags.clear()
        budget.add(out, f"{name}(")
        _list(pieces, out, budget)
        budget.add(out, ")")
    finally:
        _WRITING.active.discard(id(node))


def _default(node: Any, out: list[str], budget: _Budget) -> None:
    # defdict_repr: the dict's repr first, then its factory's ("None"; "..." for a factory
    # being written), written as "Name(factory, dict)".
    written: list[str] = []
    _dict(node, written, budget)
    factory = _FACTORY.__get__(node)
    named: list[str] = []
    if factory is None:
        budget.add(named, "None")
    elif not _entered(factory, named, budget, "..."):
        pass
    else:
        try:
            _item(factory, named, budget)
        finally:
            _WRITING.active.discard(id(factory))
    budget.add(out, str.__str__(type.__getattribute__(type(node), "__name__")) + "(")
    out.extend(named)
    budget.add(out, ", ")
    out.extend(written)
    budget.add(out, ")")


_FACTORY = collections.defaultdict.__dict__["default_factory"]


def _named(name: Any, budget: _Budget) -> str:
    """A class's or function's name as the repr writes it (``ascii`` escapes it)."""
    text = str.__str__(name) if isinstance(name, str) else "?"
    if budget.ascii_only:
        return str.encode(text, "ascii", "backslashreplace").decode("ascii")
    return text


def _exception(node: Any, out: list[str], budget: _Budget) -> None:
    # BaseException_repr: "Name(arg)" for one argument, else "Name" and the args' repr.
    args = _EXCEPTION_ARGS.__get__(node)
    name = _named(type.__getattribute__(type(node), "__name__"), budget)
    if len(args) == 1:
        budget.add(out, name + "(")
        _item(args[0], out, budget)
        budget.add(out, ")")
        return
    budget.add(out, name)
    _item(args, out, budget)


def _slice(node: Any, out: list[str], budget: _Budget) -> None:
    # slice_repr: "slice(start, stop, step)".
    budget.add(out, "slice(")
    _item(node.start, out, budget)
    budget.add(out, ", ")
    _item(node.stop, out, budget)
    budget.add(out, ", ")
    _item(node.step, out, budget)
    budget.add(out, ")")


def _method(node: Any, out: list[str], budget: _Budget) -> None:
    # method_repr: "<bound method {__func__'s __qualname__ (or __name__)} of {self's repr}>".
    function = node.__func__
    name = getattr(function, "__qualname__", None)
    if not isinstance(name, str):
        name = getattr(function, "__name__", None)
    budget.add(out, "<bound method " + _named(name, budget) + " of ")
    _item(node.__self__, out, budget)
    budget.add(out, ">")


def _view(node: Any, out: list[str], budget: _Budget) -> None:
    # dictview_repr: "dict_values(" and the repr of list(view), "..." for a view met again.
    if not _entered(node, out, budget, "..."):
        return
    try:
        items = list(node)
        budget.add(out, str.__str__(type.__getattribute__(type(node), "__name__")) + "(")
        _list(items, out, budget)
        budget.add(out, ")")
    finally:
        _WRITING.active.discard(id(node))


def _wrapped(node: Any, out: list[str], budget: _Budget) -> None:
    # UserList/UserDict: repr(self.data), its one read as the library's repr reads it.
    _item(node.data, out, budget)


_SHAPES: dict[str, Callable[[Any, list[str], _Budget], None]] = {
    "list": _list,
    "tuple": _tuple,
    "dict": _dict,
    "set": _set,
    "deque": _deque,
    "counter": _counter,
    "exception": _exception,
    "slice": _slice,
    "method": _method,
    "default": _default,
    "ordered": _ordered,
    "view": _view,
    "wrapped": _wrapped,
}
_REPRS: tuple[tuple[str, Any], ...] = (
    ("list", {list.__repr__}),
    ("tuple", {tuple.__repr__}),
    ("dict", {dict.__repr__}),
    ("set", {set.__repr__, frozenset.__repr__}),
    ("deque", {collections.deque.__repr__}),
    ("counter", {collections.Counter.__repr__}),
    ("exception", {BaseException.__repr__}),
    ("slice", {slice.__repr__}),
    ("method", {types.MethodType.__repr__}),
    ("default", {collections.defaultdict.__repr__}),
    ("ordered", {collections.OrderedDict.__repr__}),
    ("view", {view.__repr__ for view in DICT_VIEWS}),
    ("wrapped", WRAPPER_REPRS),
)


# --- % in steps ---------------------------------------------------------------------------------

_FLAGS = frozenset("-+ #0")
_DIGITS = frozenset("0123456789")
_LENGTH_MODIFIERS = frozenset("hlL")
_TEXT_CONVERSIONS = {"s": "str", "r": "repr", "a": "ascii"}
_UNSUPPORTED = "unsupported format character "
_MISSING = object()


def percent_needs_steps(template: Any, args: Any, values: tuple[Any, ...], spoken: bool) -> bool:
    """True when ``template % args`` (``template`` a str or bytes) must be written in steps: a
    mapping other than an exact dict with ``(key)`` fields (its ``__getitem__`` runs once a
    field), a value of the program's, or a value whose text the program's code writes
    (``spoken``, from the values' estimates)."""
    if spoken:
        return isinstance(template, str | bytes)
    for value in values:
        if isinstance(type(value), SandboxType):  # runs_code
            return isinstance(template, str | bytes)
    if type(args) is tuple or type(args) is dict:
        return False
    if isinstance(template, str):
        keyed = "%(" in template
    elif isinstance(template, bytes):
        keyed = b"%(" in template
    else:
        return False
    return keyed and not isinstance(args, tuple | str) and hasattr(type(args), "__getitem__")


class _Arguments:
    """CPython's cursor over ``%``'s arguments (``unicode_format_getnextarg``): a tuple's items,
    or one value (the arguments themselves, or a ``(key)`` field's value) taken once."""

    __slots__ = ("count", "index", "source")

    def __init__(self, args: Any) -> None:
        if isinstance(args, tuple):
            self.source: Any = tuple.__getitem__(args, slice(None))
            self.count, self.index = len(self.source), 0
        else:
            self.take_one(args)

    def take_one(self, value: Any) -> None:
        self.source, self.count, self.index = value, -1, -2

    def next(self) -> Any:
        if self.index < self.count:
            self.index += 1
            return self.source if self.count < 0 else self.source[self.index - 1]
        return _MISSING

    def left_over(self) -> bool:
        return self.index < self.count


def stepped_percent(template: str | bytes, args: Any, what: str = "%-formatting") -> Any:
    """``template % args`` (a str, or bytes) written a field at a time, the running total
    checked (module docstring)."""
    is_bytes = isinstance(template, bytes)
    if isinstance(template, bytes):
        # Read as latin-1 text, one character a byte, and written back as bytes.
        text = bytes.decode(template, "latin-1")
    else:
        text = str.__str__(template)
    # CPython's PyMapping_Check, less the kinds each formatting takes as one value.
    single = (tuple, str, bytes, bytearray) if is_bytes else (tuple, str)
    is_mapping = not isinstance(args, single) and hasattr(type(args), "__getitem__")
    arguments = _Arguments(args)
    budget = _Budget(what, False)
    out: list[Any] = []
    end = len(text)
    position = 0
    while position < end:
        start = text.find("%", position)
        if start < 0:
            budget.add(out, _written(text[position:], is_bytes))
            break
        if start > position:
            budget.add(out, _written(text[position:start], is_bytes))
        position = _field(text, start, arguments, is_mapping, args, out, budget, is_bytes)
    if arguments.left_over() and not is_mapping:
        kind = "bytes" if is_bytes else "string"
        raise TypeError(f"not all arguments converted during {kind} formatting")
    return b"".join(out) if is_bytes else "".join(out)


def _written(text: str, is_bytes: bool) -> Any:
    return str.encode(text, "latin-1") if is_bytes else text


def _field(
    text: str,
    start: int,
    arguments: _Arguments,
    is_mapping: bool,
    mapping: Any,
    out: list[Any],
    budget: _Budget,
    is_bytes: bool,
) -> int:
    """Write the field at ``start`` (its ``%``); the position after it."""
    end = len(text)
    cursor = start + 1
    if text.startswith("%", cursor):
        # "%%" is a literal "%" (read before a field is parsed); "%5%" is a field, refused.
        budget.add(out, _written("%", is_bytes))
        return cursor + 1
    if cursor < end and text[cursor] == "(":
        if not is_mapping:
            raise TypeError("format requires a mapping")
        depth, cursor = 1, cursor + 1
        key_start = cursor
        while depth and cursor < end:
            depth += {")": -1, "(": 1}.get(text[cursor], 0)
            cursor += 1
        if depth:
            raise ValueError("incomplete format key")
        arguments.take_one(mapping[_written(text[key_start : cursor - 1], is_bytes)])
    spec_start = cursor
    stars = 0
    while cursor < end and text[cursor] in _FLAGS:
        cursor += 1
    cursor, stars = _number(text, cursor, stars)
    if cursor < end and text[cursor] == ".":
        cursor, stars = _number(text, cursor + 1, stars)
    if cursor < end and text[cursor] in _LENGTH_MODIFIERS:
        cursor += 1
    conversion = text[cursor] if cursor < end else ""
    cursor = min(cursor + 1, end)
    spec = "%" + text[spec_start:cursor]
    taken: list[Any] = []
    for _ in range(stars + 1):
        value = arguments.next()
        if value is _MISSING:
            break  # CPython's own call raises "not enough arguments" where it would
        taken.append(value)
    _check_widths(spec, taken[:stars])
    if conversion in _TEXT_CONVERSIONS and len(taken) > stars:
        value = taken[stars]
        # bytes' %r is its %a: ascii() of the value, written as ASCII bytes
        mode = "ascii" if is_bytes and conversion != "s" else _TEXT_CONVERSIONS[conversion]
        if converted(value) and not (is_bytes and conversion == "s"):
            # A container's text in steps; the field then pads or cuts that text.
            written_text = text_of(value, mode, what=budget.what)
            taken[stars] = str.encode(written_text, "ascii") if is_bytes else written_text
            spec = spec[:-1] + "s"
        elif conversion == "s":
            check_text(value, budget.what)
        elif not runs_code(value):
            check_repr(value, budget.what, ascii_only=mode == "ascii")
    try:
        written = _written(spec, is_bytes) % tuple(taken)
    except ValueError as error:
        raise _placed(error, spec_start - 1) from None
    budget.add(out, written)
    return cursor


def _number(text: str, cursor: int, stars: int) -> tuple[int, int]:
    """Skip a width or precision (``*`` or digits) at ``cursor``."""
    if cursor < len(text) and text[cursor] == "*":
        return cursor + 1, stars + 1
    while cursor < len(text) and text[cursor] in _DIGITS:
        cursor += 1
    return cursor, stars


def _check_widths(spec: str, stars: list[Any]) -> None:
    if not _FORMAT_SPEC_CHECK:
        # Imported on first use: _sizes imports this module.
        from recurgent._sandbox._sizes import check_format_spec as imported

        _FORMAT_SPEC_CHECK["check"] = imported
    check_format_spec = _FORMAT_SPEC_CHECK["check"]
    check_format_spec(spec)
    for value in stars:
        if isinstance(value, int):  # a negative * width pads to the left
            check_format_spec(str(abs(int(value))))


_FORMAT_SPEC_CHECK: dict[str, Callable[[str], None]] = {}


def _placed(error: ValueError, offset: int) -> ValueError:
    """CPython's error for the field, its index counted in the whole template."""
    message = str(error)
    if message.startswith(_UNSUPPORTED) and " at index " in message:
        head, _, index = message.rpartition(" at index ")
        return ValueError(f"{head} at index {int(index) + offset}")
    return error
