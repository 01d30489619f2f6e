"""Runtime guards compiled code calls: attribute policy, writes, size caps, print capture (ADR 0011).

Attribute access is default-deny. It is allowed on plain value types, on objects generated code
made itself (classes with the :class:`SandboxType` metaclass, their instances, its functions),
on module facades, on ``Outcome`` and agent handles through explicit tables, and on instances of
vetted standard-library types. Everything else raises ``AttributeError`` with a message the
model can act on.
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]  # the helper string.Formatter uses
import collections
import datetime
import decimal
import fractions
import html.parser
import io
import operator
import re
import string
import types
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable
from typing import Any

from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from recurgent._sandbox._limits import SandboxLimits, SizeLimitExceeded
from recurgent._sandbox._policy import READABLE_DUNDER_ATTRIBUTES
from recurgent.outcome import Outcome

__all__ = [
    "GENERATED_FILENAME",
    "MUTABLE_TYPES",
    "OPEN_TYPES",
    "OutputCollector",
    "SandboxType",
    "is_sandbox_made",
    "size_hooks",
]

GENERATED_FILENAME = "<generated>"
_LIMITS = SandboxLimits()
MAX_ITEMS = _LIMITS.max_sequence_items
MAX_INT_BITS = _LIMITS.max_int_bits

_ITERABLE_SAMPLES: tuple[object, ...] = (
    [],
    (),
    {},
    set(),
    "",
    b"",
    range(1),
    {}.keys(),
    {}.values(),
    {}.items(),
    bytearray(),
)
_ITERATOR_TYPES: set[type] = {type(iter(sample)) for sample in _ITERABLE_SAMPLES}  # type: ignore[call-overload]
_VIEW_TYPES = {type({}.keys()), type({}.values()), type({}.items())}

#: Types whose every public attribute is safe, except the names in ``_SPECIAL``.
OPEN_TYPES: frozenset[type] = frozenset(
    {
        type(None),
        bool,
        int,
        float,
        complex,
        str,
        bytes,
        bytearray,
        list,
        tuple,
        dict,
        set,
        frozenset,
        range,
        slice,
        map,
        filter,
        zip,
        enumerate,
        reversed,
        types.GeneratorType,
        collections.deque,
        collections.Counter,
        collections.OrderedDict,
        collections.defaultdict,
        datetime.date,
        datetime.datetime,
        datetime.time,
        datetime.timedelta,
        datetime.timezone,
        decimal.Decimal,
        fractions.Fraction,
        re.Pattern,
        re.Match,
        ElementTree.Element,
        io.StringIO,
        io.BytesIO,
        *_ITERATOR_TYPES,
        *_VIEW_TYPES,
    }
)

#: Types generated code may write items or attributes into.
MUTABLE_TYPES: frozenset[type] = frozenset(
    {
        dict,
        list,
        set,
        bytearray,
        collections.deque,
        collections.Counter,
        collections.OrderedDict,
        collections.defaultdict,
    }
)

_SEQUENCES = (str, bytes, bytearray, list, tuple)
_ALLOWED_BASES = frozenset(
    {object, dict, list, set, str, int, float, tuple, html.parser.HTMLParser}
)

# Modules (and their C accelerators) whose classes' instances expose public attributes.
_TRUSTED_TYPE_MODULES = frozenset(
    {
        "builtins",
        "collections",
        "datetime",
        "decimal",
        "fractions",
        "re",
        "json",
        "json.decoder",
        "xml.etree.ElementTree",
        "io",
        "_io",
        "csv",
        "_csv",
        "hashlib",
        "_hashlib",
        "uuid",
        "statistics",
        "string",
        "textwrap",
        "difflib",
        "random",
        "functools",
        "html.parser",
        "time",
        "urllib.parse",
        "itertools",
        "heapq",
        "numbers",
    }
)
_DENIED_BY_TYPE: dict[type, frozenset[str]] = {
    ElementTree.ElementTree: frozenset({"write", "parse", "write_c14n"}),
}

_WIDTH = re.compile(r"(\d+)")
_PERCENT_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[a-zA-Z%]")


class SandboxType(type):
    """Metaclass of every class generated code defines (RestrictedPython's ``__metaclass__``)."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> SandboxType:
        for base in bases:
            allowed = (
                isinstance(base, SandboxType)
                or base in _ALLOWED_BASES
                or (issubclass(base, BaseException) and base.__module__ == "builtins")
            )
            if not allowed:
                raise TypeError(
                    f"class {name} may not derive from {base.__name__}; generated classes may "
                    "derive from object, builtin containers, builtin exceptions or classes "
                    "defined by the same code"
                )
        return super().__new__(mcls, name, bases, namespace, **kwargs)


def is_sandbox_made(value: object) -> bool:
    """True for classes, instances, functions and generators generated code created."""
    if isinstance(value, SandboxType) or isinstance(type(value), SandboxType):
        return True
    code = getattr(value, "__code__", None) or getattr(value, "gi_code", None)
    return isinstance(code, types.CodeType) and code.co_filename == GENERATED_FILENAME


def _check_items(count: int, what: str) -> None:
    if count > MAX_ITEMS:
        raise SizeLimitExceeded(
            f"{what} would create {count} items; the sandbox limit is {MAX_ITEMS}"
        )


def _int_bits(value: Any) -> int:
    if isinstance(value, int):
        return value.bit_length()
    if isinstance(value, fractions.Fraction):
        return max(value.numerator.bit_length(), value.denominator.bit_length())
    return 0


def _check_bits(bits: int, what: str) -> None:
    if bits > MAX_INT_BITS:
        raise SizeLimitExceeded(
            f"{what} would create a number of about {bits} bits; the sandbox limit is "
            f"{MAX_INT_BITS} bits"
        )


def _mul_(a: Any, b: Any) -> Any:
    ta = type(a)
    tb = type(b)
    if ta is float or tb is float:
        return a * b
    if ta is int and tb is int:
        if a.bit_length() + b.bit_length() > MAX_INT_BITS:
            _check_bits(a.bit_length() + b.bit_length(), "multiplication")
        return a * b
    if isinstance(a, _SEQUENCES) and isinstance(b, int):
        _check_items(len(a) * b, "sequence repetition")
    elif isinstance(b, _SEQUENCES) and isinstance(a, int):
        _check_items(len(b) * a, "sequence repetition")
    elif isinstance(a, int | fractions.Fraction) and isinstance(b, int | fractions.Fraction):
        _check_bits(_int_bits(a) + _int_bits(b), "multiplication")
    return a * b


def _pow_(a: Any, b: Any) -> Any:
    if (
        type(b) is int
        and b > 1
        and isinstance(a, int | fractions.Fraction)
        and not (isinstance(a, int) and -1 <= a <= 1)
    ):
        _check_bits(_int_bits(a) * b, "exponentiation")
    return a**b


def _lshift_(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and b > 0:
        _check_bits(a.bit_length() + b, "left shift")
    return a << b


def _check_spec(spec: str) -> None:
    for digits in _WIDTH.findall(spec):
        if len(digits) > 7 or int(digits) > MAX_ITEMS:
            raise SizeLimitExceeded(
                f"format width {digits} exceeds the sandbox limit of {MAX_ITEMS}"
            )


def _mod_(a: Any, b: Any) -> Any:
    if type(a) is int or type(a) is float:
        return a % b
    if isinstance(a, str | bytes):
        template = a if isinstance(a, str) else a.decode("latin-1")
        stars = 0
        for width, precision in _PERCENT_FIELD.findall(template):
            for part in (width, precision):
                if part == "*":
                    stars += 1
                elif part:
                    _check_spec(part)
        if stars:
            values = b if isinstance(b, tuple) else (b,)
            for value in values[: stars * 2]:
                if isinstance(value, int) and value > MAX_ITEMS:
                    _check_spec(str(value))
    return a % b


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "|=": operator.ior,
    "^=": operator.ixor,
    "&=": operator.iand,
    "@=": operator.imatmul,
}
_CHECKED_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "*=": _mul_,
    "**=": _pow_,
    "<<=": _lshift_,
    "%=": _mod_,
}


def _inplace_(op: str, a: Any, b: Any) -> Any:
    check = _CHECKED_INPLACE.get(op)
    if check is not None and not isinstance(a, list | bytearray):
        return check(a, b)
    if op == "*=" and isinstance(b, int):
        _check_items(len(a) * b, "sequence repetition")
    return _INPLACE[op](a, b)


def _format_(value: Any, conversion: int, spec: str) -> str:
    if conversion == ord("s"):
        value = str(value)
    elif conversion == ord("r"):
        value = repr(value)
    elif conversion == ord("a"):
        value = ascii(value)
    _check_spec(spec)
    return format(value, spec)


def checked_format(value: Any, spec: str = "") -> str:
    """The sandbox's ``format()`` builtin: widths are capped."""
    _check_spec(spec)
    return format(value, spec)


def size_hooks() -> dict[str, Any]:
    """The operator hooks compiled code calls, by the names the policy emits."""
    return {
        "_mul_": _mul_,
        "_pow_": _pow_,
        "_lshift_": _lshift_,
        "_mod_": _mod_,
        "_inplace_": _inplace_,
        "_format_": _format_,
    }


class _SafeFormatter(string.Formatter):
    """``str.format`` that resolves ``{0.attr}`` through the sandbox attribute policy."""

    def __init__(self, getattr_guard: Callable[[Any, str], Any]) -> None:
        self._getattr_guard = getattr_guard

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> tuple[Any, Any]:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attribute, key in rest:
            obj = self._getattr_guard(obj, key) if is_attribute else obj[key]
        return obj, first

    def format_field(self, value: Any, format_spec: str) -> Any:
        _check_spec(format_spec)
        return format(value, format_spec)


def _padding(method: str) -> Callable[[Any], Callable[..., Any]]:
    def bind(obj: Any) -> Callable[..., Any]:
        def padded(width: int, *args: Any) -> Any:
            _check_items(int(width), f"str.{method}")
            return getattr(obj, method)(width, *args)

        return padded

    return bind


def _bind_expandtabs(obj: Any) -> Callable[..., Any]:
    def expandtabs(tabsize: int = 8) -> Any:
        _check_items(len(obj) * max(int(tabsize), 1), "str.expandtabs")
        return obj.expandtabs(tabsize)

    return expandtabs


def _bind_replace(obj: Any) -> Callable[..., Any]:
    def replace(old: Any, new: Any, count: int = -1) -> Any:
        if len(new) > len(old):
            occurrences = len(obj) + 1 if not old else obj.count(old)
            if count >= 0:
                occurrences = min(occurrences, count)
            _check_items(len(obj) + occurrences * (len(new) - len(old)), "str.replace")
        return obj.replace(old, new, count)

    return replace


def _bind_join(obj: Any) -> Callable[..., Any]:
    def join(iterable: Iterable[Any]) -> Any:
        items = list(iterable)
        if obj and items:
            total = len(obj) * (len(items) - 1)
            total += sum(len(item) for item in items if isinstance(item, _SEQUENCES))
            _check_items(total, "str.join")
        return obj.join(items)

    return join


def _bind_translate(obj: Any) -> Callable[..., Any]:
    def translate(table: Any) -> Any:
        if isinstance(obj, str) and isinstance(table, dict):
            longest = max((len(v) for v in table.values() if isinstance(v, str)), default=1)
            _check_items(len(obj) * longest, "str.translate")
        return obj.translate(table)

    return translate


def _special_binders(formatter: _SafeFormatter) -> dict[str, Callable[[Any], Any]]:
    def bind_format(obj: Any) -> Callable[..., Any]:
        return lambda *args, **kwargs: formatter.vformat(obj, args, kwargs)

    def bind_format_map(obj: Any) -> Callable[..., Any]:
        return lambda mapping: formatter.vformat(obj, (), mapping)

    return {
        "format": bind_format,
        "format_map": bind_format_map,
        "ljust": _padding("ljust"),
        "rjust": _padding("rjust"),
        "center": _padding("center"),
        "zfill": _padding("zfill"),
        "expandtabs": _bind_expandtabs,
        "replace": _bind_replace,
        "join": _bind_join,
        "translate": _bind_translate,
    }


def _unbound(binder: Callable[[Any], Callable[..., Any]]) -> Callable[..., Any]:
    """``str.join(sep, items)``: the unbound form of a bound special method."""
    return lambda obj, *args, **kwargs: binder(obj)(*args, **kwargs)


class OutputCollector:
    """Captures ``print`` output of one attempt, capped with a truncation marker."""

    def __init__(self, limit_bytes: int) -> None:
        self._limit = limit_bytes
        self._parts: list[str] = []
        self._size = 0
        self.truncated = False

    def _call_print(
        self,
        *objects: Any,
        sep: str | None = " ",
        end: str | None = "\n",
        file: Any = None,
        flush: bool = False,
    ) -> None:
        if file is not None:
            raise TypeError("print(file=...) is not available in the sandbox; print to stdout")
        text = (" " if sep is None else sep).join(str(o) for o in objects)
        self.write(text + ("\n" if end is None else end))

    def write(self, text: str) -> None:
        """Append text, truncating once the cap is reached."""
        if self.truncated:
            return
        size = len(text.encode("utf-8", "replace"))
        if self._size + size > self._limit:
            room = max(0, self._limit - self._size)
            self._parts.append(text.encode("utf-8", "replace")[:room].decode("utf-8", "ignore"))
            self._parts.append(f"\n[output truncated at {self._limit // 1024} KiB]\n")
            self.truncated = True
            return
        self._parts.append(text)
        self._size += size

    def __call__(self) -> str:
        return "".join(self._parts)

    def text(self) -> str:
        """Everything printed so far."""
        return "".join(self._parts)


class AttributePolicy:
    """Default-deny attribute reads and writes for one attempt.

    Args:
        handle_attribute: Resolves ``handle.name`` for agent handles (and agents, which are
            turned into handles first); returns ``_NOT_HANDLED`` for other objects.
        handle_writer: Returns a write proxy for a handle or agent, or ``None``.
        is_facade: True for module facades, whose ``__getattr__`` applies their own policy.
        on_violation: Records a guardrail violation (host mutation) and returns the error
            to raise.
    """

    def __init__(
        self,
        *,
        handle_attribute: Callable[[Any, str], Any],
        handle_writer: Callable[[Any], Any],
        is_facade: Callable[[Any], bool],
        on_violation: Callable[[str], BaseException],
    ) -> None:
        self._handle_attribute = handle_attribute
        self._handle_writer = handle_writer
        self._is_facade = is_facade
        self._on_violation = on_violation
        self._binders = _special_binders(_SafeFormatter(self.getattr))
        self._unbound = {name: _unbound(binder) for name, binder in self._binders.items()}

    def getattr(self, obj: Any, name: str) -> Any:
        """``obj.name`` under the sandbox policy (also the ``_getattr_`` hook)."""
        if not isinstance(name, str):
            raise TypeError(f"attribute name must be a str, not {type(name).__name__}")
        if name.startswith("_"):
            if name in READABLE_DUNDER_ATTRIBUTES and (
                isinstance(obj, type | types.FunctionType | types.BuiltinFunctionType)
            ):
                return getattr(obj, name)
            raise AttributeError(
                f"{name!r} is not accessible: names starting with '_' are private in the sandbox"
            )
        if name in INSPECT_ATTRIBUTES:
            raise AttributeError(f"{name!r} is not accessible in the sandbox")
        kind = type(obj)
        if kind in OPEN_TYPES:
            binder = self._binders.get(name)
            if binder is not None and isinstance(obj, str | bytes | bytearray):
                return binder(obj)
            return getattr(obj, name)
        if isinstance(kind, SandboxType):
            binder = self._binders.get(name)
            if binder is not None and isinstance(obj, str):
                return binder(obj)
            return getattr(obj, name)
        handled = self._handle_attribute(obj, name)
        if handled is not _NOT_HANDLED:
            return handled
        if self._is_facade(obj):
            return getattr(obj, name)
        if isinstance(obj, Outcome):
            if name in _OUTCOME_INSTANCE_ATTRIBUTES:
                return getattr(obj, name)
            raise AttributeError(
                f"'Outcome' object has no attribute {name!r}; use .ok, .value, .error_type, "
                ".error_message, .retriable, .metadata or .value_or(default)"
            )
        if isinstance(obj, type):
            return self._class_attribute(obj, name)
        if is_sandbox_made(obj):
            return getattr(obj, name)
        if isinstance(obj, super):
            if is_sandbox_made(obj.__self__):  # type: ignore[attr-defined]
                return getattr(obj, name)
        elif self._trusted_instance(kind, name):
            return getattr(obj, name)
        raise AttributeError(
            f"attribute {name!r} of {kind.__name__} objects is not accessible in the sandbox; "
            "attributes are readable on plain values (str, list, dict, numbers, ...), on "
            "objects your code created, on imported modules, on Outcomes and on agent handles"
        )

    def _class_attribute(self, cls: type, name: str) -> Any:
        if cls is Outcome:
            if name in ("ok", "error", "call"):
                return getattr(Outcome, name)
            raise AttributeError(
                f"Outcome has no accessible attribute {name!r}; use Outcome.ok(...) or "
                "Outcome.error(...)"
            )
        trusted = (
            cls in OPEN_TYPES
            or isinstance(cls, SandboxType)
            or cls.__module__ in _TRUSTED_TYPE_MODULES
        )
        if not trusted:
            raise AttributeError(
                f"attributes of the class {cls.__name__} are not accessible in the sandbox"
            )
        if name in self._unbound and issubclass(cls, str | bytes | bytearray):
            return self._unbound[name]
        if name in _DENIED_BY_TYPE.get(cls, frozenset()):
            raise AttributeError(f"{cls.__name__}.{name} is not available in the sandbox")
        return getattr(cls, name)

    def _trusted_instance(self, kind: type, name: str) -> bool:
        if name in _DENIED_BY_TYPE.get(kind, frozenset()):
            raise AttributeError(f"{kind.__name__}.{name} is not available in the sandbox")
        if kind.__module__ not in _TRUSTED_TYPE_MODULES:
            public: frozenset[str] = getattr(kind, "_sandbox_public_", frozenset())
            return name in public
        return True

    def write(self, obj: Any) -> Any:
        """The ``_write_`` hook: what a store through ``obj.x = v`` or ``obj[k] = v`` targets."""
        kind = type(obj)
        if kind in MUTABLE_TYPES or kind in OPEN_TYPES or is_sandbox_made(obj):
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
        if not isinstance(name, str) or name.startswith("_"):
            raise AttributeError(f"cannot set {name!r}: names starting with '_' are private")
        setattr(self.write(obj), name, value)

    def delattr(self, obj: Any, name: str) -> None:
        """The sandbox's ``delattr`` builtin."""
        if not isinstance(name, str) or name.startswith("_"):
            raise AttributeError(f"cannot delete {name!r}: names starting with '_' are private")
        delattr(self.write(obj), name)


class _NotHandled:
    __slots__ = ()


_NOT_HANDLED: Any = _NotHandled()
NOT_HANDLED = _NOT_HANDLED

_OUTCOME_INSTANCE_ATTRIBUTES = frozenset(
    {
        "status",
        "value",
        "error_type",
        "error_message",
        "retriable",
        "tool_role",
        "method_name",
        "metadata",
        "ok",
        "error",
        "is_ok",
        "is_error",
        "value_or",
        "get",
    }
)
