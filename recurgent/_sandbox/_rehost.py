"""Library code that runs regular expressions over program text, re-hosted onto the sandbox's engine.

The program's ``re`` is the ``regex`` engine under the attempt's deadline (ADR 0023), but some
served library code matches with the standard engine, whose matching is one C call no stop
interrupts: ``csv.Sniffer`` scans its sample with patterns that backtrack quadratically,
``html.parser.HTMLParser.set_cdata_mode`` compiles the program's text as a pattern (and hands the
compiled pattern out as ``interesting``), ``string.Template`` compiles its class's ``pattern``
and serves it as a class attribute, and ``time.strptime``/``datetime.strptime`` compile a pattern
from the program's format.

These are served as copies of the library's own code whose module globals are the library
module's with ``re`` replaced by :data:`RE`, the sandbox's engine as a module: every pattern they
compile (module-level ones included) is a sandbox ``Pattern`` with its caps, and every match runs
under the attempt's deadline. The code that runs is the standard library's, function by function;
only the globals it reads differ (ADR 0090). Classes are copied with their methods (``super()``
cells point at the copy), so a program's subclass of ``HTMLParser`` works as before.
"""

from __future__ import annotations

import _markupbase
import _strptime  # type: ignore[import-not-found]
import csv
import datetime
import functools
import html.parser
import re
import string
import time
import types
from collections.abc import Callable, Mapping
from typing import Any

from recurgent._forksafe import fork_safe_lock
from recurgent._sandbox._made import allow_subclassing
from recurgent._sandbox._regex import module_names as regex_module_names

__all__ = [
    "CLASS_BOUND",
    "HTML_PARSER",
    "RE",
    "REGEX_VERDICTS",
    "SNIFFER",
    "TEMPLATE",
    "strptime_datetime",
    "strptime_time",
]

_FLAG_NAMES = [
    "A",
    "ASCII",
    "DOTALL",
    "I",
    "IGNORECASE",
    "L",
    "LOCALE",
    "M",
    "MULTILINE",
    "NOFLAG",
    "S",
    "U",
    "UNICODE",
    "VERBOSE",
    "X",
]

#: The sandbox's ``re`` as library code imports it: the ``regex`` engine under the deadline.
RE = types.SimpleNamespace(
    **{name: getattr(re, name) for name in _FLAG_NAMES if hasattr(re, name)},
    escape=re.escape,
    **regex_module_names(),
)
RE.__name__ = "re"

#: How each served module that reads the standard ``re`` is served (pinned by
#: ``specs/sandbox/test_one_regex_engine.py``, which walks the catalog for such modules).
REGEX_VERDICTS: Mapping[str, str] = types.MappingProxyType(
    {
        "re": "the regex engine under the deadline (ADR 0023)",
        "csv": "re-hosted: Sniffer",
        "html.parser": "re-hosted: HTMLParser (and _markupbase.ParserBase)",
        "string": "re-hosted: Template",
        "_strptime": "re-hosted: time.strptime, datetime.strptime",
        "base64": "fixed pattern: b16decode's [^0-9A-F]",
        "dataclasses": "not served: the sandbox's own dataclasses",
        "fractions": "fixed pattern: Fraction's number syntax, one anchored match",
        "html": "fixed pattern: unescape's character references, bounded repeats",
        "json.decoder": "fixed patterns: whitespace and string chunks",
        "pprint": "not served: pformat is the sandbox's, saferepr matches nothing",
        "textwrap": "fixed patterns: dedent's margins, shorten's word separators",
        "typing": "not served: stdlib_re is denied",
        "urllib.parse": "fixed patterns: URL parts, one anchored match each",
        "urllib.request": "not served: the sandbox's network facade",
        "xml.etree": "not served: its ElementPath submodule is denied",
        "xml.etree.ElementTree": "fixed patterns: ElementPath's path tokens",
        "xml.etree.ElementPath": "fixed patterns: path tokens and index predicates",
        "difflib": "fixed pattern: IS_LINE_JUNK's blank line",
        # ADR 0105: single-character classes, each searched once over the text.
        "email.utils": "fixed patterns: formataddr's specials and escapes (one character class "
        "each); rfc2231_continuation serves only the denied decode_params",
        "shlex": "fixed pattern: quote's unsafe-character class, one search (split reads no re)",
    }
)


def _sandbox_pattern(pattern: re.Pattern[Any]) -> Any:
    return RE.compile(pattern.pattern, pattern.flags)


def _module_globals(module: types.ModuleType, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``module``'s globals: its standard patterns compiled by the sandbox's engine."""
    namespace = dict(vars(module))
    for key, value in vars(module).items():
        if isinstance(value, re.Pattern):
            namespace[key] = _sandbox_pattern(value)
        elif isinstance(value, types.BuiltinMethodType) and isinstance(value.__self__, re.Pattern):
            namespace[key] = getattr(_sandbox_pattern(value.__self__), value.__name__)
    namespace.update(overrides)
    return namespace


def _copy_function(
    function: types.FunctionType, namespace: dict[str, Any], cell: Any = None
) -> types.FunctionType:
    closure = function.__closure__
    if closure is not None and cell is not None:
        names = function.__code__.co_freevars
        closure = tuple(
            cell if name == "__class__" else held for name, held in zip(names, closure, strict=True)
        )
    copy = types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__, closure
    )
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    copy.__doc__ = function.__doc__
    copy.__module__ = function.__module__
    return copy


def _copy_member(value: Any, namespace: dict[str, Any], cell: Any) -> Any:
    if isinstance(value, types.FunctionType):
        return _copy_function(value, namespace, cell)
    if isinstance(value, classmethod | staticmethod):
        inner = value.__func__
        if isinstance(inner, types.FunctionType):
            return type(value)(_copy_function(inner, namespace, cell))
        return value
    if isinstance(value, property):
        parts: list[Any] = [
            _copy_function(part, namespace, cell) if isinstance(part, types.FunctionType) else part
            for part in (value.fget, value.fset, value.fdel)
        ]
        return property(parts[0], parts[1], parts[2], value.__doc__)
    if isinstance(value, re.Pattern):
        return _sandbox_pattern(value)
    return value


def _copy_class(
    cls: type, namespace: dict[str, Any], bases: tuple[type, ...], skip: tuple[str, ...] = ()
) -> type:
    """``cls`` made again over ``namespace`` as its globals, deriving from ``bases``."""
    cell = types.CellType()
    body = {
        key: _copy_member(value, namespace, cell)
        for key, value in vars(cls).items()
        if key not in ("__dict__", "__weakref__", *skip)
    }
    copy = type(cls)(cls.__name__, bases, body)
    cell.cell_contents = copy
    copy.__qualname__ = cls.__qualname__
    copy.__module__ = cls.__module__
    return copy


# ----------------------------------------------------------------------------- html.parser

_markup_globals = _module_globals(_markupbase, {"re": RE})
_PARSER_BASE = _copy_class(_markupbase.ParserBase, _markup_globals, (object,))
_markup_globals["ParserBase"] = _PARSER_BASE

_html_globals = _module_globals(
    html.parser, {"re": RE, "_markupbase": types.SimpleNamespace(ParserBase=_PARSER_BASE)}
)
#: ``html.parser.HTMLParser`` over the sandbox's engine.
HTML_PARSER = _copy_class(html.parser.HTMLParser, _html_globals, (_PARSER_BASE,))
_html_globals["HTMLParser"] = HTML_PARSER
allow_subclassing(HTML_PARSER)  # programs derive their parsers from it

# ----------------------------------------------------------------------------- csv

_csv_globals = _module_globals(csv, {"re": RE})
#: ``csv.Sniffer`` over the sandbox's engine.
SNIFFER = _copy_class(csv.Sniffer, _csv_globals, (object,))
_csv_globals["Sniffer"] = SNIFFER

# ----------------------------------------------------------------------------- string

_string_globals = _module_globals(string, {"_re": RE})
#: ``string.Template`` over the sandbox's engine (its default ``pattern`` compiled by it).
# Its pattern is compiled again, as the string module compiles its own Template's.
TEMPLATE = _copy_class(string.Template, _string_globals, (object,), skip=("pattern",))
_string_globals["Template"] = TEMPLATE
TEMPLATE.__init_subclass__()

# ----------------------------------------------------------------------------- _strptime


class _TimeWithoutTzset:
    """``time`` as the re-hosted ``_strptime`` reads it: ``tzset`` (which re-reads the time
    zone for the whole process, and is denied to programs) does nothing."""

    @staticmethod
    def tzset() -> None:
        """The process's time zone is the host's to reset."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


_strptime_globals = _module_globals(
    _strptime,
    {
        "re_compile": RE.compile,
        "_cache_lock": fork_safe_lock(),
        "_regex_cache": {},
        "time": _TimeWithoutTzset(),
    },
)
for _name, _value in vars(_strptime).items():
    if isinstance(_value, types.FunctionType) and _value.__module__ == "_strptime":
        _strptime_globals[_name] = _copy_function(_value, _strptime_globals)
for _class in (_strptime.LocaleTime, _strptime.TimeRE):
    _strptime_globals[_class.__name__] = _copy_class(
        _class,
        _strptime_globals,
        tuple(_strptime_globals.get(b.__name__, b) for b in _class.__bases__),
    )
_strptime_ready = fork_safe_lock()


def _strptime_function(name: str) -> Callable[..., Any]:
    function = _strptime_globals[name]

    def call(*args: Any) -> Any:
        if not isinstance(_strptime_globals.get("_TimeRE_cache"), _strptime_globals["TimeRE"]):
            with _strptime_ready:
                if not isinstance(
                    _strptime_globals.get("_TimeRE_cache"), _strptime_globals["TimeRE"]
                ):
                    _strptime_globals["_TimeRE_cache"] = _strptime_globals["TimeRE"]()
        return function(*args)

    return call


_strptime_time = _strptime_function("_strptime_time")
_strptime_datetime = _strptime_function("_strptime_datetime")


def strptime_time(data_string: Any, format: Any = "%a %b %d %H:%M:%S %Y") -> Any:
    """``time.strptime`` over the sandbox's engine."""
    return _strptime_time(data_string, format)


strptime_time.__name__ = strptime_time.__qualname__ = "strptime"


def strptime_datetime(cls: type) -> Callable[..., Any]:
    """``cls.strptime`` (a ``datetime`` class method) over the sandbox's engine."""
    return functools.partial(_strptime_datetime, cls)


#: Class methods served re-hosted, by name: (the class, the method bound to a class). The
#: policy serves them on the class and on its instances (``d.strptime`` is the class's).
CLASS_BOUND: Mapping[str, tuple[type, Callable[[type], Callable[..., Any]]]] = (
    types.MappingProxyType({"strptime": (datetime.datetime, strptime_datetime)})
)
