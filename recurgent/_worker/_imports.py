"""Imports of installed dependencies in the worker's sandbox, and attribute access on their objects.

The in-process sandbox serves only vetted standard-library modules and denies attributes of
every type it does not know. A dependency-backed program must use the packages it declared, so
the worker widens both, and only for modules installed in the environment's own site-packages
(ADR 0042): those modules import as facades, public attributes of their objects are readable,
and a facade refuses callables a package merely re-exports from elsewhere (``from os import
system`` in a package does not hand ``system`` to generated code). Private names stay refused.
The package code itself runs with the worker's privileges: the process is the boundary.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["DependencyAccess", "DependencyFacade", "installed_top_level_names"]

_SKIPPED_SUFFIXES = (".dist-info", ".egg-info", ".data", ".pth", ".txt")


# A package may ship a top-level module named like a standard-library or runtime module; it
# never widens access to those names (the sandbox's own rules for them stay in force).
_RESERVED = frozenset(sys.stdlib_module_names) | {"recurgent", "RestrictedPython", "pydantic"}


def installed_top_level_names(site_packages: Path) -> frozenset[str]:
    """Top-level importable names installed directly in ``site_packages``, minus reserved ones."""
    names: set[str] = set()
    try:
        entries = list(site_packages.iterdir())
    except OSError:
        return frozenset()
    for entry in entries:
        if entry.name.startswith(("_", ".")) or entry.name.endswith(_SKIPPED_SUFFIXES):
            continue
        name = entry.name.split(".")[0] if entry.is_file() else entry.name
        if entry.is_file() and not entry.name.endswith((".py", ".so", ".pyd")):
            continue
        if name.isidentifier() and name not in _RESERVED:
            names.add(name)
    return frozenset(names)


def _top(name: object) -> str:
    return name.split(".")[0] if isinstance(name, str) else ""


class DependencyFacade:
    """What ``import pkg`` binds for an installed dependency: its public, own names."""

    __slots__ = ("_dep_access", "_dep_module", "_dep_name")
    _dep_access: DependencyAccess
    _dep_module: types.ModuleType
    _dep_name: str

    def __init__(self, name: str, module: types.ModuleType, access: DependencyAccess) -> None:
        object.__setattr__(self, "_dep_name", name)
        object.__setattr__(self, "_dep_module", module)
        object.__setattr__(self, "_dep_access", access)

    def __getattr__(self, name: str) -> Any:
        # ``from pkg import name`` reads the attribute natively (IMPORT_FROM), not via _getattr_.
        return self.lookup(name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("modules are read-only in the sandbox")

    def __repr__(self) -> str:
        return f"<module {self._dep_name!r}>"

    def lookup(self, name: str) -> Any:
        """``module.name`` for generated code."""
        label = f"{self._dep_name}.{name}"
        if name.startswith("_"):
            raise AttributeError(f"{label} is private")
        value = getattr(self._dep_module, name, _MISSING)
        if value is _MISSING:
            try:
                return self._dep_access.facade(label)
            except ImportError:
                raise AttributeError(
                    f"module {self._dep_name!r} has no attribute {name!r}"
                ) from None
        if isinstance(value, types.ModuleType):
            return self._dep_access.facade(value.__name__)
        if callable(value) and not self._dep_access.owns(getattr(value, "__module__", None)):
            raise AttributeError(
                f"{label} is re-exported from {getattr(value, '__module__', '?')!r}, which is "
                "not an installed dependency; it is not available in the sandbox"
            )
        return value


_MISSING = object()


class DependencyAccess:
    """The widened import and attribute rules for one worker's installed packages.

    Args:
        top_level: Importable top-level names of the environment.
    """

    def __init__(self, top_level: frozenset[str]) -> None:
        self._top = top_level
        self._facades: dict[str, DependencyFacade] = {}

    def owns(self, module_name: object) -> bool:
        """True when ``module_name`` belongs to an installed dependency."""
        return _top(module_name) in self._top

    def facade(self, name: str) -> DependencyFacade:
        """The facade of an installed module (imported on first use)."""
        found = self._facades.get(name)
        if found is None:
            if not self.owns(name):
                raise ImportError(f"{name!r} is not an installed dependency")
            found = DependencyFacade(name, importlib.import_module(name), self)
            self._facades[name] = found
        return found

    def wrap_importer(self, importer: Callable[..., Any]) -> Callable[..., Any]:
        """An ``__import__`` serving installed dependencies first, the sandbox's otherwise."""

        def dependency_import(
            name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
        ) -> Any:
            if level == 0 and self.owns(name) and type(fromlist) is not list:
                facade = self.facade(name)
                return facade if fromlist else self.facade(_top(name))
            return importer(name, globals, locals, fromlist, level)

        return dependency_import

    def wrap_getattr(self, getattr_guard: Callable[[Any, str], Any]) -> Callable[[Any, str], Any]:
        """A ``_getattr_`` that reads public attributes of dependency objects natively."""
        owns = self.owns

        def dependency_getattr(obj: Any, name: str) -> Any:
            if type(obj) is DependencyFacade:
                if not isinstance(name, str):
                    raise TypeError("attribute name must be a str")
                return obj.lookup(name)
            if isinstance(name, str) and not name.startswith("_"):
                kind = obj if isinstance(obj, type) else type(obj)
                module = sys.modules.get(_top(getattr(kind, "__module__", None)))
                if module is not None and owns(module.__name__):
                    return getattr(obj, name)
            return getattr_guard(obj, name)

        return dependency_getattr
