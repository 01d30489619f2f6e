"""Which runs leave their worker unfit for the next program, and why (ADR 0093).

A worker serves many programs of one agent. Most leave nothing behind: the sandbox builds a
fresh namespace per run. Some can: a run that timed out or hit a resource cap may have been
stopped half-way through library code, and a few served modules keep process-wide caches that
a program's call fills (``_strptime``'s format cache, ``zoneinfo``'s instances, the regex
caches, ``typing``'s generic aliases, ``urllib.parse``'s split cache, ``ElementPath``'s paths).
The in-process wall keeps program objects out of those caches (exact types into library
calls); this is the second wall, which does not rely on the first: after such a run the parent
kills the worker and starts a new one, so nothing that run left in its interpreter reaches the
next program.

The parent decides from what it knows without asking the worker: the result's error type, the
modules the program's source imports, and the values it sent into the run (a ``datetime`` has
``strptime``; a ``ZoneInfo`` builds more of its kind). Every module the sandbox serves is
classified here, and a spec fails when the catalog serves one that is not.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable

from recurgent._parsing import parse_python
from recurgent._worker._protocol import RunResult

__all__ = ["STATEFUL_MODULES", "STATELESS_MODULES", "imported_modules", "retire_reason"]

#: Served modules through which a program's call can change process-wide state, with that state.
STATEFUL_MODULES: dict[str, str] = {
    "re": "the compiled-pattern caches of the regex engine and of the sandbox's re",
    "csv": "the standard re's pattern cache (Sniffer builds patterns from the data)",
    "html": "reaches html.parser",
    "html.parser": "the standard re's pattern cache (set_cdata_mode compiles program text)",
    "string": "the standard re's pattern cache (a Template subclass compiles its pattern)",
    "datetime": "_strptime's format and regex caches (datetime.strptime)",
    # Its functions are pure (make_msgid and the charset registry are denied), but the
    # datetimes parsedate_to_datetime and localtime return reach datetime.strptime (R25).
    "email": "reaches email.utils",
    "email.utils": "returns datetimes, whose strptime fills _strptime's caches",
    "time": "_strptime's format and regex caches (time.strptime)",
    "zoneinfo": "ZoneInfo's cache of instances by key",
    "typing": "typing's cache of subscripted generics (Literal[...] holds any value)",
    "urllib": "reaches urllib.parse",
    "urllib.parse": "urlsplit's cache of split URLs",
    "urllib.request": "reaches urllib.parse",
    "urllib.error": "reaches urllib.parse",
    "xml": "reaches xml.etree.ElementTree",
    "xml.etree": "reaches xml.etree.ElementTree",
    "xml.etree.ElementTree": "ElementPath's cache of compiled paths (find, findall, iterfind)",
}

#: Served modules whose functions keep no process-wide state a program can change.
STATELESS_MODULES: dict[str, str] = {
    "abc": "the sandbox's own ABC, made per attempt",
    "base64": "pure functions",
    "bisect": "pure functions",
    "calendar": "text and date arithmetic; the shared calendar and locale switches are denied",
    "cmath": "pure functions",
    "collections": "containers; namedtuple interns exact strings only",
    "collections.abc": "ABC caches hold classes weakly and by identity: no program code runs",
    "copy": "the sandbox's own copy and deepcopy",
    "dataclasses": "the sandbox's own dataclass",
    "decimal": "each attempt has its own context; the process templates are denied",
    "difflib": "matchers are the program's objects; one constant pattern compiled",
    "enum": "the sandbox's own enum",
    "fractions": "patterns compiled at import only",
    "functools": "lru_cache and cache are re-implemented on the program's own objects",
    "hashlib": "hash objects are the program's",
    "heapq": "pure functions",
    "io": "in-memory streams are the program's",
    "itertools": "iterators made per attempt",
    "json": "no caches; the encoder's options are per call",
    "math": "pure functions",
    "numbers": "ABC caches hold classes weakly and by identity: no program code runs",
    "operator": "pure functions; attrgetter and methodcaller are per attempt",
    "pprint": "no caches",
    "random": "the module's functions draw from a generator made per attempt",
    "secrets": "draws from the operating system",
    "statistics": "pure functions",
    "textwrap": "patterns compiled at import only; TextWrapper is denied",
    "unicodedata": "the database is read-only",
    "uuid": "uuid1 and its clock state are denied",
    # ADR 0105.
    "contextlib": "context managers are the program's; redirect_* and chdir are denied",
    "graphlib": "sorters are the program's objects",
    "shlex": "split lexes a fresh lexer per call; quote's pattern is compiled at import only",
}

#: Values whose methods reach a stateful module without an import, by the module they reach.
_REACHING_TYPES: dict[str, str] = {
    "datetime.datetime": "datetime",
    "zoneinfo.ZoneInfo": "zoneinfo",
}
_RETIRING_ERRORS = ("timeout", "resource_limit")


@functools.lru_cache(maxsize=512)
def imported_modules(code: str) -> frozenset[str]:
    """Every module name ``code`` imports (``import a.b`` gives ``a.b``; unparsable: none)."""
    if "import" not in code:
        return frozenset()
    try:
        tree = parse_python(code, "<retire>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()  # the worker refuses to compile it: it imports nothing
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(names)


def _stateful(name: str) -> str | None:
    """The stateful module ``name`` reaches: itself, a package above it or a module below it."""
    for module in sorted(STATEFUL_MODULES):
        if name == module or name.startswith(f"{module}.") or module.startswith(f"{name}."):
            return module
    return None


def retire_reason(code: str, result: RunResult, received: Iterable[str] = ()) -> str | None:
    """Why the worker that ran ``code`` must not run the next program, or ``None``.

    Args:
        code: The program's source.
        result: What the worker answered.
        received: Qualified type names of the values the run was sent (memory, arguments and
            forwarded answers).
    """
    if result.error is not None and result.error.error_type in _RETIRING_ERRORS:
        return result.error.error_type
    reached = {module for module in map(_stateful, imported_modules(code)) if module}
    reached.update(_REACHING_TYPES[name] for name in received if name in _REACHING_TYPES)
    if reached:
        return "module:" + min(reached)
    return None
