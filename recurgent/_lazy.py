"""Lazy exports (PEP 562): a package's public names imported from their modules on first use.

``import recurgent`` should cost a user's program almost nothing (ADR 0114): the runtime behind
``Agent`` pulls in pydantic, structlog, jsonschema, regex and RestrictedPython, which a script
that only catches ``recurgent.UsageError`` or a CLI printing ``--help`` never needs. A package
lists where each public name lives; :func:`lazy_exports` returns the module-level
``__getattr__`` and ``__dir__`` that import the home module when the name is first read and
then keep the value in the package's namespace, so later reads are plain global lookups.
Type checkers never run this: the package imports the same names under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str,
    namespace: MutableMapping[str, Any],
    exports: Mapping[str, str],
    *,
    submodules: Iterable[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose names load on first use.

    Args:
        package: The package's ``__name__``.
        namespace: The package's ``globals()``; a loaded name is stored there.
        exports: Public name -> the module that defines it under the same name.
        submodules: Submodules readable as attributes (``recurgent.outcome``) without an
            explicit ``import recurgent.outcome``, as they were when the package imported them.

    Returns:
        ``(__getattr__, __dir__)``; ``__getattr__`` raises ``AttributeError`` for other names,
        ``__dir__`` lists the namespace and every export, loaded or not.
    """
    table = dict(exports)
    modules = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        home = table.get(name)
        if home is not None:
            value = getattr(importlib.import_module(home), name)
        elif name in modules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
