"""Importable modules: the allow-list of pure standard-library modules, served through facades.

Generated code never holds a real module object. ``import json`` binds a :class:`ModuleFacade`
whose attribute lookups refuse private names, per-module denied names (anything that touches
files, process-wide state or host stdout), and submodules outside the allow-list. Functions that
can build huge values in one C call, or iterate forever in C, are replaced by checked or ticking
versions (ADR 0011).
"""

from __future__ import annotations

import copy
import importlib
import itertools
import random
import types
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recurgent._sandbox._limits import TickingIterator
from recurgent._sandbox._numbers import CheckedDecimal, CheckedFraction
from recurgent._sandbox._stdlib import (
    DIFFLIB_NAMES,
    HASHLIB_NAMES,
    CheckedTemplate,
    SandboxRandom,
    checked_element_indent,
    difflib_overrides,
    hashlib_overrides,
    itertools_overrides,
    json_overrides,
    math_overrides,
    operator_overrides,
    pprint_overrides,
    re_overrides,
    secrets_overrides,
    statistics_overrides,
    textwrap_overrides,
    unicodedata_overrides,
)

__all__ = ["ModuleFacade", "make_importer"]


@dataclass(frozen=True)
class _Spec:
    """How one module is exposed: names withheld, names replaced, or an explicit allow-list."""

    denied: frozenset[str] = frozenset()
    only: frozenset[str] | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)


def _ticking(function: Callable[..., Any], tick: Callable[[], bool]) -> Callable[..., Any]:
    def ticking(*args: Any, **kwargs: Any) -> TickingIterator:
        return TickingIterator(iter(function(*args, **kwargs)), tick)

    ticking.__name__ = getattr(function, "__name__", "iterator")
    return ticking


def _element_tree_parse(source: Any, parser: Any = None) -> Any:
    if isinstance(source, str | bytes):
        raise PermissionError(
            "xml.etree.ElementTree.parse() cannot open files in the sandbox; use "
            "ElementTree.fromstring(text) or pass an io.StringIO"
        )
    return ElementTree.parse(source, parser)


def _element_tree(element: Any = None) -> Any:
    return ElementTree.ElementTree(element)


_OPERATOR_DENIED = frozenset({"attrgetter", "methodcaller"})
_TYPING_NAMES = frozenset(
    {
        "Any",
        "Optional",
        "Union",
        "List",
        "Dict",
        "Tuple",
        "Set",
        "FrozenSet",
        "Iterable",
        "Iterator",
        "Generator",
        "Sequence",
        "Mapping",
        "MutableMapping",
        "Callable",
        "Literal",
        "Type",
        "cast",
        "TYPE_CHECKING",
        "DefaultDict",
        "Counter",
        "Deque",
    }
)
_TIME_NAMES = frozenset(
    {
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "perf_counter",
        "perf_counter_ns",
        "process_time",
        "sleep",
        "strftime",
        "strptime",
        "gmtime",
        "localtime",
        "mktime",
        "asctime",
        "ctime",
        "struct_time",
        "timezone",
        "altzone",
        "daylight",
        "tzname",
    }
)
_RANDOM_FUNCTIONS = (
    "random",
    "randint",
    "randrange",
    "choice",
    "choices",
    "sample",
    "shuffle",
    "uniform",
    "gauss",
    "normalvariate",
    "triangular",
    "betavariate",
    "expovariate",
    "lognormvariate",
    "vonmisesvariate",
    "paretovariate",
    "weibullvariate",
    "seed",
    "randbytes",
)

# Module name -> spec. Parent packages (xml, xml.etree, urllib, collections, html) are
# importable so dotted imports work, but expose only their allowed submodules.
_STATIC_SPECS: dict[str, _Spec] = {
    "math": _Spec(overrides=math_overrides()),
    "cmath": _Spec(),
    "json": _Spec(denied=frozenset({"JSONEncoder"}), overrides=json_overrides()),
    "re": _Spec(overrides=re_overrides()),
    "datetime": _Spec(),
    "statistics": _Spec(overrides=statistics_overrides()),
    "collections": _Spec(),
    "collections.abc": _Spec(),
    "functools": _Spec(
        only=frozenset(
            {"reduce", "partial", "lru_cache", "cache", "cmp_to_key", "wraps", "total_ordering"}
        )
    ),
    "operator": _Spec(denied=_OPERATOR_DENIED, overrides=operator_overrides()),
    "string": _Spec(denied=frozenset({"Formatter"}), overrides={"Template": CheckedTemplate}),
    "textwrap": _Spec(
        only=frozenset({"dedent", "indent", "wrap", "fill", "shorten"}),
        overrides=textwrap_overrides(),
    ),
    "decimal": _Spec(
        denied=frozenset(
            {
                "Context",
                "getcontext",
                "setcontext",
                "localcontext",
                "DefaultContext",
                "BasicContext",
                "ExtendedContext",
            }
        ),
        overrides={"Decimal": CheckedDecimal},
    ),
    "fractions": _Spec(overrides={"Fraction": CheckedFraction, "Decimal": CheckedDecimal}),
    "html": _Spec(only=frozenset({"escape", "unescape", "parser"})),
    "html.parser": _Spec(only=frozenset({"HTMLParser"})),
    "csv": _Spec(denied=frozenset({"field_size_limit", "register_dialect", "unregister_dialect"})),
    "io": _Spec(only=frozenset({"StringIO", "BytesIO"})),
    "xml": _Spec(only=frozenset({"etree"})),
    "xml.etree": _Spec(only=frozenset({"ElementTree"})),
    "xml.etree.ElementTree": _Spec(
        denied=frozenset(
            {"iterparse", "dump", "register_namespace", "canonicalize", "XMLPullParser"}
        ),
        overrides={
            "parse": _element_tree_parse,
            "ElementTree": _element_tree,
            "indent": checked_element_indent,
        },
    ),
    "urllib": _Spec(only=frozenset({"parse", "request", "error"})),
    "urllib.parse": _Spec(),
    "base64": _Spec(),
    "hashlib": _Spec(only=HASHLIB_NAMES, overrides=hashlib_overrides()),
    "uuid": _Spec(denied=frozenset({"uuid1", "getnode"})),
    "unicodedata": _Spec(overrides=unicodedata_overrides()),
    "heapq": _Spec(),
    "bisect": _Spec(),
    "copy": _Spec(),
    "typing": _Spec(only=_TYPING_NAMES),
    "difflib": _Spec(only=DIFFLIB_NAMES, overrides=difflib_overrides()),
    "secrets": _Spec(
        only=frozenset(
            {"token_bytes", "token_hex", "token_urlsafe", "choice", "randbelow", "randbits"}
            | {"compare_digest"}
        ),
        overrides=secrets_overrides(),
    ),
    "numbers": _Spec(),
    "pprint": _Spec(only=frozenset({"pformat", "saferepr"}), overrides=pprint_overrides()),
}

#: Names generated code may import (the prompt lists them; ADR 0011).
ALLOWED_MODULES: tuple[str, ...] = tuple(
    sorted({*_STATIC_SPECS, "itertools", "random", "time", "urllib.request", "urllib.error"})
)


_MISSING: Any = object()


class ModuleFacade:
    """What ``import name`` binds in generated code: a filtered view of one module.

    A name that resolves to a value other than a module or a container is cached in the
    instance ``__dict__``: later reads of it, native or through the attribute policy, return
    the same object without running the lookup again. Nothing else is ever stored there
    (``__setattr__`` refuses every write), and generated code cannot reach ``__dict__``.
    """

    __slots__ = (
        "__dict__",
        "_facade_module",
        "_facade_name",
        "_facade_resolve",
        "_facade_spec",
    )

    def __init__(
        self, name: str, module: Any, spec: _Spec, resolve: Callable[[str], ModuleFacade]
    ) -> None:
        object.__setattr__(self, "_facade_name", name)
        object.__setattr__(self, "_facade_module", module)
        object.__setattr__(self, "_facade_spec", spec)
        object.__setattr__(self, "_facade_resolve", resolve)

    def _facade_lookup(self, name: str) -> Any:
        """``module.name`` under the module's spec (the attribute policy calls this directly)."""
        cache = self.__dict__
        cached = cache.get(name, _MISSING)
        if cached is not _MISSING:
            return cached
        label = f"{self._facade_name}.{name}"
        if name.startswith("_"):
            raise AttributeError(f"{label} is private")
        spec = self._facade_spec
        if name in spec.overrides:
            value = spec.overrides[name]
        elif name in spec.denied or (spec.only is not None and name not in spec.only):
            raise AttributeError(f"{label} is not available in the sandbox")
        else:
            value = getattr(self._facade_module, name, _MISSING)
        if value is _MISSING:
            # A fresh error: the one getattr raises carries the real module as its .obj.
            raise AttributeError(f"module {self._facade_name!r} has no attribute {name!r}")
        if isinstance(value, types.ModuleType):
            return self._facade_resolve(label)
        if isinstance(value, dict | list | set | bytearray):
            # Module-level containers are shared with the host; hand out a copy each time.
            return copy.deepcopy(value)
        cache[name] = value
        return value

    def __getattr__(self, name: str) -> Any:
        return self._facade_lookup(name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self._facade_name} is read-only in the sandbox")

    def __repr__(self) -> str:
        return f"<module {self._facade_name!r} (sandbox)>"


def make_importer(
    *,
    tick: Callable[[], bool],
    extra_modules: Mapping[str, Any],
) -> Callable[..., Any]:
    """Build the ``__import__`` of one attempt.

    Args:
        tick: The attempt's cheap tick, used by ticking iterators.
        extra_modules: Modules built per attempt (``urllib.request``, ``urllib.error``) as
            ``name -> (module-like object, spec)`` pairs.

    Returns:
        The ``__import__`` generated code's import statements call.
    """
    rng = SandboxRandom()
    specs: dict[str, tuple[Any, _Spec]] = {}
    for name, spec in _STATIC_SPECS.items():
        specs[name] = (None, spec)
    specs["random"] = (
        random,
        _Spec(
            denied=frozenset({"setstate", "getstate", "SystemRandom"}),
            overrides={
                "Random": SandboxRandom,
                "getrandbits": rng.getrandbits,
                **{name: getattr(rng, name) for name in _RANDOM_FUNCTIONS},
            },
        ),
    )
    specs["time"] = (
        None,
        _Spec(only=_TIME_NAMES, overrides=extra_modules.get("time_overrides", {})),
    )
    iterator_overrides = {
        name: _ticking(getattr(itertools, name), tick)
        for name in dir(itertools)
        if not name.startswith("_") and callable(getattr(itertools, name))
    }
    iterator_overrides.update(itertools_overrides(tick))
    specs["itertools"] = (itertools, _Spec(overrides=iterator_overrides))
    for name, (module, spec) in extra_modules.get("modules", {}).items():
        specs[name] = (module, spec)

    facades: dict[str, ModuleFacade] = {}

    def resolve(name: str) -> ModuleFacade:
        if name in facades:
            return facades[name]
        if name not in specs:
            raise ImportError(_refusal(name))
        module, spec = specs[name]
        if module is None:
            module = importlib.import_module(name)
        facade = ModuleFacade(name, module, spec, resolve)
        facades[name] = facade
        return facade

    def importer(
        name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> Any:
        if level != 0:
            raise ImportError("relative imports are not available in the sandbox")
        if type(fromlist) is list:
            # C code of an allowed module importing its helper lazily (datetime.strptime
            # imports _strptime) through PyImport_Import, which passes a list, looks the
            # module up in sys.modules itself and drops what this returns. Import statements
            # in generated code pass None or a tuple.
            importlib.import_module(name)
            return None
        facade = resolve(name)
        if fromlist:
            return facade
        # `import a.b.c` binds `a`; every parent on the way must be allowed too.
        top = name.split(".")[0]
        return resolve(top)

    return importer


def _refusal(name: str) -> str:
    return (
        f"import of {name!r} is not allowed in the sandbox; allowed modules: "
        f"{', '.join(ALLOWED_MODULES)}"
    )
