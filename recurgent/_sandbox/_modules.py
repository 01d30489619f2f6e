"""Importable modules: facades serving exactly the names the catalog lets generated code use.

Generated code never holds a real module object. ``import json`` binds a :class:`ModuleFacade`
that holds the values of the module's served names (``_catalog``) and nothing else: not the
module, not an importer. Private, denied and unclassified names are refused; module-level
containers are copied on every read; submodules outside the allow-list are refused. Functions
that can build huge values in one C call, iterate forever in C or do attribute work for the
caller are served as sealed stand-ins (ADR 0011, 0019, 0020).
"""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.util
import itertools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recurgent._async_stop import host_section
from recurgent._sandbox._catalog import ALLOWED_MODULES, CATALOG, classify
from recurgent._sandbox._draws import ticking_draws
from recurgent._sandbox._enum import make_enum
from recurgent._sandbox._gate import UNGATED_MODULES, gate, is_library_callable
from recurgent._sandbox._idioms import make_attrgetter, make_methodcaller
from recurgent._sandbox._integers import CheckedInt
from recurgent._sandbox._limits import TickingIterator
from recurgent._sandbox._native import make_abc
from recurgent._sandbox._reflection import SealedCallable, SealedWithHelpers, seal
from recurgent._sandbox._stdlib import SandboxRandom, itertools_overrides
from recurgent._sandbox._stdlib_idioms import make_closing
from recurgent._sandbox._typing_forms import as_form

__all__ = ["ALLOWED_MODULES", "ModuleFacade", "make_importer"]


@dataclass(frozen=True)
class _Spec:
    """Values an attempt supplies for a module's ``attempt`` rows (name -> value)."""

    overrides: Mapping[str, Any] = field(default_factory=dict)


_MISSING: Any = object()

#: Modules whose attempt rows are built when the attempt first imports them.
_BUILT_ON_IMPORT: Mapping[str, Callable[[], dict[str, Any]]] = {
    "abc": make_abc,
    "enum": make_enum,
}
_CONTAINERS = (dict, list, set, bytearray)


def _import(name: str) -> Any:
    """``importlib.import_module``, shielded from the attempt's stop: the import machinery
    holds process-wide locks (ADR 0089)."""
    with host_section():
        return importlib.import_module(name)


def _pure_values(name: str) -> dict[str, Any]:
    """The module's pure names, read now: a host that patches a module (freezegun's
    ``time.time``) is seen by the next attempt, as with a real import."""
    module = _import(name)
    values = {}
    for attribute in CATALOG[name].pure:
        value = getattr(module, attribute, _MISSING)
        if value is _MISSING and f"{name}.{attribute}" in CATALOG:
            # A package whose allowed submodule is not imported yet.
            value = _import(f"{name}.{attribute}")
        if value is int:
            value = CheckedInt  # uuid.int_ is the builtin: served checked (ADR 0123)
        if value is not _MISSING:
            values[attribute] = value
    return values


class ModuleFacade:
    """What ``import name`` binds in generated code: the served names of one module.

    Served values other than containers live in the instance ``__dict__`` (native attribute
    reads find them directly); containers are kept aside and copied on every read, because the
    module shares them with the whole process. The facade holds no module, importer or other
    runtime object, so nothing reachable from it leads back into the runtime (ADR 0021).
    ``__setattr__`` refuses every write, and generated code cannot reach ``__dict__``.
    """

    __slots__ = ("__dict__", "_facade_containers", "_facade_name")

    def __init__(self, name: str, served: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_facade_name", name)
        containers = {key: value for key, value in served.items() if isinstance(value, _CONTAINERS)}
        object.__setattr__(self, "_facade_containers", containers)
        self.__dict__.update((key, value) for key, value in served.items() if key not in containers)

    def _facade_lookup(self, name: str) -> Any:
        """``module.name`` under the catalog (the attribute policy calls this directly)."""
        value = self.__dict__.get(name, _MISSING)
        if value is not _MISSING:
            return value
        container = self._facade_containers.get(name, _MISSING)
        if container is not _MISSING:
            return copy.deepcopy(container)
        label = f"{self._facade_name}.{name}"
        if name.startswith("_"):
            raise AttributeError(f"{label} is private")
        if classify(self._facade_name, name) == "unclassified" and not _defines(
            self._facade_name, name
        ):
            # A fresh error: the one getattr raises would carry the real module as its .obj.
            raise AttributeError(f"module {self._facade_name!r} has no attribute {name!r}")
        raise AttributeError(f"{label} is not available in the sandbox")

    def __getattr__(self, name: str) -> Any:
        return self._facade_lookup(name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{self._facade_name} is read-only in the sandbox")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{self._facade_name} is read-only in the sandbox")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError(f"module {self._facade_name!r} cannot be copied or pickled")

    def __repr__(self) -> str:
        return f"<module {self._facade_name!r} (sandbox)>"


def _defines(module_name: str, name: str) -> bool:
    """Whether the real module has ``name``, as an attribute or as a submodule."""
    module = _import(module_name)
    if hasattr(module, name):
        return True
    if not hasattr(module, "__path__") or not name.isidentifier():
        # A dotted name would make find_spec import the packages on the way.
        return False
    with host_section():
        return importlib.util.find_spec(f"{module_name}.{name}") is not None


def _ticking_call(
    function: Callable[..., Any], tick: Callable[[], bool], /, *args: Any, **kwargs: Any
) -> TickingIterator:
    return TickingIterator(iter(function(*args, **kwargs)), tick)


def _attempt_builders(
    *, tick: Callable[[], bool], extra_modules: Mapping[str, Any]
) -> dict[str, Callable[[], dict[str, Any]]]:
    """How to build the ``attempt`` rows of each module, for one attempt.

    Each module's rows are built the first time the attempt imports it: most programs import
    one or two modules, and building every row up front cost a third of a sandbox's set-up.
    """

    def random_rows() -> dict[str, Any]:
        rng = SandboxRandom()
        rows = {name: getattr(rng, name) for name in CATALOG["random"].attempt}
        # Random's shuffle, sample and choices never tick: the checked ones do (ADRs 0069,
        # 0075), with the tick closed over so no argument replaces it.
        for name, checked in ticking_draws(rng, tick).items():
            if name in rows:
                rows[name] = checked
        return rows

    def itertools_rows() -> dict[str, Any]:
        rows: dict[str, Any] = {
            name: functools.partial(_ticking_call, getattr(itertools, name), tick)
            for name in CATALOG["itertools"].attempt
        }
        # Functions whose tuple width or pool size is caller-chosen are checked first (ADR 0022).
        rows.update(
            (name, function)
            for name, function in itertools_overrides(tick).items()
            if name in CATALOG["itertools"].attempt
        )
        from_iterable = SealedCallable(
            functools.partial(_ticking_call, itertools.chain.from_iterable, tick),
            "from_iterable",
        )
        rows["chain"] = SealedWithHelpers(rows["chain"], "chain", {"from_iterable": from_iterable})
        return rows

    builders: dict[str, Callable[[], dict[str, Any]]] = {
        "random": random_rows,
        "time": lambda: dict(extra_modules.get("time_overrides", {})),
        "itertools": itertools_rows,
    }
    read = extra_modules.get("getattr")
    if read is not None:
        # Without the attempt's attribute policy there is no safe attrgetter: not served.
        builders["operator"] = lambda: {
            "attrgetter": make_attrgetter(read),
            "methodcaller": make_methodcaller(read),
        }
        builders["contextlib"] = lambda: {"closing": make_closing(read)}
    for name, (module, spec) in extra_modules.get("modules", {}).items():
        builders[name] = functools.partial(_module_rows, name, module, spec)
    return builders


def _module_rows(name: str, module: Any, spec: Any) -> dict[str, Any]:
    supplied = dict(getattr(spec, "overrides", {}))
    for attribute in CATALOG[name].attempt:
        if attribute not in supplied and hasattr(module, attribute):
            supplied[attribute] = getattr(module, attribute)
    return supplied


def make_importer(
    *,
    tick: Callable[[], bool],
    extra_modules: Mapping[str, Any],
) -> Callable[..., Any]:
    """Build the ``__import__`` of one attempt.

    Args:
        tick: The attempt's cheap tick, used by ticking iterators.
        extra_modules: ``"getattr"``: the attempt's attribute policy read, used by
            ``operator.attrgetter``/``methodcaller``; ``"modules"``: modules built per attempt (``urllib.request``,
            ``urllib.error``) as ``name -> (module-like object, _Spec)`` pairs whose attributes
            fill the catalog's ``attempt`` rows; ``"time_overrides"``: the attempt's
            ``time.sleep``.

    Returns:
        The ``__import__`` generated code's import statements call, sealed.
    """
    builders = _attempt_builders(tick=tick, extra_modules=extra_modules)
    facades: dict[str, ModuleFacade] = {}

    def resolve(name: str) -> ModuleFacade:
        facade = facades.get(name)
        if facade is not None:
            return facade
        if name not in CATALOG:
            raise ImportError(_refusal(name))
        rows = CATALOG[name]
        served: dict[str, Any] = {}
        gated = name not in UNGATED_MODULES
        for attribute, value in _pure_values(name).items():
            if isinstance(value, types.ModuleType):
                submodule = f"{name}.{attribute}"
                if submodule in CATALOG:
                    served[attribute] = resolve(submodule)
            elif gated and is_library_callable(value):
                served[attribute] = gate(value, attribute)  # exact arguments in (ADR 0091)
            else:
                served[attribute] = as_form(value)  # typing's forms: exact parameters in
        served.update(rows.replaced)
        build = builders.get(name)
        supplied = build() if build is not None else {}
        if name in _BUILT_ON_IMPORT:
            # Built only when imported: a class per attempt costs more than the import check.
            supplied = _BUILT_ON_IMPORT[name]()
        for attribute in rows.attempt:
            if attribute in supplied:
                served[attribute] = seal(supplied[attribute], attribute)
        facade = ModuleFacade(name, served)
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
            _import(name)
            return None
        facade = resolve(name)
        if fromlist:
            if type(fromlist) is tuple:
                _check_fromlist(facade, name, fromlist)
            return facade
        # `import a.b.c` binds `a`; every parent on the way must be allowed too.
        return resolve(name.split(".")[0])

    return SealedCallable(importer, "__import__")


def _check_fromlist(facade: ModuleFacade, module: str, names: tuple[Any, ...]) -> None:
    """Refuse ``from module import name`` with the facade's reason.

    ``from m import n`` reads ``n`` natively and replaces a failed read's message with
    "cannot import name ... from '<unknown module name>'"; checking here keeps the reason.
    """
    for name in names:
        if name == "*" or not isinstance(name, str) or name in facade.__dict__:
            continue
        try:
            facade._facade_lookup(name)
        except AttributeError as refused:
            raise ImportError(f"cannot import name {name!r} from {module!r}: {refused}") from None


def _refusal(name: str) -> str:
    return (
        f"import of {name!r} is not allowed in the sandbox; allowed modules: "
        f"{', '.join(ALLOWED_MODULES)}"
    )
