"""The name-level allow-list: every public name of every importable module, classified once.

Each name an allowed module defines is ``pure`` (safe on plain data, served as it is),
``replaced`` (served through a checked stand-in, sealed so it exposes nothing of the runtime),
``attempt`` (a stand-in built per attempt: ticking iterators, the attempt's random generator,
``time.sleep``, the network facade) or ``denied``. The module facades serve exactly the
``pure``, ``replaced`` and ``attempt`` rows; a name in no row is never served, and
``specs/sandbox/test_catalog.py`` fails on any public name that is in no row, so a Python
upgrade that adds a name is classified by a person before generated code can reach it
(ADR 0019). The rows themselves are in ``_catalog_rows``; this module binds each replaced name
to its sealed stand-in and serves the result.
"""

from __future__ import annotations

import types
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from typing import Any

from recurgent._sandbox._catalog_rows import TABLE, ModuleRows
from recurgent._sandbox._class_bases import is_typeddict, runtime_checkable
from recurgent._sandbox._dataclass import dataclass_overrides
from recurgent._sandbox._enum import auto, unique
from recurgent._sandbox._gate import ZONE_INFO, gate
from recurgent._sandbox._idioms import decimal_overrides
from recurgent._sandbox._native import abstractmethod, calendar_overrides
from recurgent._sandbox._numbers import CheckedDecimal, CheckedFraction
from recurgent._sandbox._reflection import reflection_overrides, seal
from recurgent._sandbox._rehost import HTML_PARSER, SNIFFER, strptime_time
from recurgent._sandbox._stdlib import (
    SandboxRandom,
    hashlib_overrides,
    math_overrides,
    operator_overrides,
    secrets_overrides,
    statistics_overrides,
)
from recurgent._sandbox._stdlib_idioms import (
    SandboxJSONDecoder,
    SandboxJSONEncoder,
    email_utils_overrides,
    html_escape,
    shlex_overrides,
    suppress,
    urllib_parse_overrides,
)
from recurgent._sandbox._stdlib_text import (
    CheckedQName,
    CheckedTemplate,
    checked_element_indent,
    checked_tostring,
    checked_tostringlist,
    difflib_overrides,
    json_overrides,
    pprint_overrides,
    re_overrides,
    textwrap_overrides,
    unicodedata_overrides,
)
from recurgent._sandbox._stepped_text import time_strftime
from recurgent._sandbox._user_wrappers import USER_STRING

__all__ = ["ALLOWED_MODULES", "CATALOG", "ModuleRows", "classify"]


def _element_tree_parse(source: Any, parser: Any = None) -> Any:
    if isinstance(source, str | bytes):
        raise PermissionError(
            "xml.etree.ElementTree.parse() cannot open files in the sandbox; use "
            "ElementTree.fromstring(text) or pass an io.StringIO"
        )
    return ElementTree.parse(source, parser)


def _element_tree(element: Any = None) -> Any:
    return ElementTree.ElementTree(element)


_STAND_INS: dict[str, dict[str, Any]] = {
    "math": math_overrides(),
    "json": {
        **json_overrides(),
        "JSONEncoder": SandboxJSONEncoder,
        "JSONDecoder": SandboxJSONDecoder,  # its default parse_int is the checked int
    },
    # Scanner and template compile with the standard engine and purge clears a process-wide
    # cache: _regex refuses them, and the catalog denies them outright.
    "re": {
        name: value
        for name, value in re_overrides().items()
        if name not in ("Scanner", "template", "purge")
    },
    "operator": operator_overrides(),
    "textwrap": textwrap_overrides(),
    "hashlib": hashlib_overrides(),
    "unicodedata": unicodedata_overrides(),
    "difflib": difflib_overrides(),
    "secrets": secrets_overrides(),
    "pprint": pprint_overrides(),
    "string": {"Template": CheckedTemplate},
    "collections": {"UserString": USER_STRING},  # str(seq) checked first (ADR 0155)
    "decimal": {"Decimal": CheckedDecimal, **decimal_overrides()},
    "fractions": {"Fraction": CheckedFraction, "Decimal": CheckedDecimal},
    "statistics": statistics_overrides(),
    "random": {"Random": SandboxRandom},
    "xml.etree.ElementTree": {
        "parse": _element_tree_parse,
        "ElementTree": _element_tree,
        "indent": checked_element_indent,
        "tostring": checked_tostring,
        "tostringlist": checked_tostringlist,
        "QName": CheckedQName,
    },
    "abc": {"abstractmethod": abstractmethod},
    "typing": {
        "abstractmethod": abstractmethod,
        "is_typeddict": is_typeddict,
        "runtime_checkable": runtime_checkable,
    },
    # ADR 0105: the stdlib idioms of generated programs, each with one thing taken away.
    "contextlib": {"suppress": suppress},
    "shlex": shlex_overrides(),
    "urllib.parse": urllib_parse_overrides(),
    "email.utils": email_utils_overrides(),
    "calendar": calendar_overrides(),
    "dataclasses": dataclass_overrides(),
    "enum": {"auto": auto, "unique": unique},
    # Its constructor keeps the key in a process-wide cache: the key goes in exact (ADR 0091).
    "zoneinfo": {"ZoneInfo": ZONE_INFO},
    # Library code that matches program text, on the sandbox's regex engine (ADR 0090).
    "csv": {"Sniffer": SNIFFER},
    "html": {"escape": html_escape},
    "html.parser": {"HTMLParser": HTML_PARSER},
    "time": {"strptime": strptime_time, "strftime": time_strftime},
    **reflection_overrides(),
}


# Stand-ins made to act on the program's own objects (its functions, classes, instances): they
# take them as they are. Every other stand-in hands its arguments to library code, through the
# gate (exact built-in types, ADR 0091).
_TAKE_PROGRAM_OBJECTS = frozenset(
    {
        ("copy", "copy"),
        ("copy", "deepcopy"),
        ("functools", "wraps"),
        ("functools", "total_ordering"),
        ("functools", "lru_cache"),
        ("functools", "cache"),
        ("abc", "abstractmethod"),
        ("typing", "abstractmethod"),
        ("typing", "is_typeddict"),
        ("typing", "runtime_checkable"),
        ("enum", "auto"),
        ("enum", "unique"),
        *(("dataclasses", name) for name in dataclass_overrides()),
    }
)


def _bind_stand_ins(table: dict[str, ModuleRows]) -> dict[str, ModuleRows]:
    """Attach each replaced name's sealed stand-in; a row without one fails at import."""
    bound: dict[str, ModuleRows] = {}
    for module, rows in table.items():
        stand_ins = _STAND_INS.get(module, {})
        missing = sorted(set(rows.replaced) - set(stand_ins))
        unlisted = sorted(set(stand_ins) - set(rows.replaced))
        if missing or unlisted:
            raise RuntimeError(
                f"catalog row {module}: replaced names without a stand-in {missing}, "
                f"stand-ins not listed as replaced {unlisted}"
            )
        overlap = (
            (rows.pure & set(rows.replaced))
            | (rows.pure & rows.attempt)
            | (rows.served & rows.denied)
        )
        if overlap:
            raise RuntimeError(f"catalog row {module}: {sorted(overlap)} classified twice")
        replaced = {
            name: seal(stand_ins[name], name)
            if (module, name) in _TAKE_PROGRAM_OBJECTS
            else gate(stand_ins[name], name)
            for name in rows.replaced
        }
        bound[module] = ModuleRows(
            rows.pure, types.MappingProxyType(replaced), rows.attempt, rows.denied
        )
    return bound


#: Module name -> its classified names.
CATALOG: Mapping[str, ModuleRows] = types.MappingProxyType(_bind_stand_ins(TABLE))

#: Names generated code may import (the prompt lists them; ADR 0011).
ALLOWED_MODULES: tuple[str, ...] = tuple(sorted(CATALOG))


def classify(module: str, name: str) -> str:
    """``"pure"``, ``"replaced"``, ``"attempt"``, ``"denied"`` or ``"unclassified"``."""
    rows = CATALOG[module]
    if name in rows.pure:
        return "pure"
    if name in rows.replaced:
        return "replaced"
    if name in rows.attempt:
        return "attempt"
    if name in rows.denied:
        return "denied"
    return "unclassified"
