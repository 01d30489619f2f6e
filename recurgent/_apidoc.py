"""The API reference, ``docs/api.md``, generated from the public surface's docstrings (ADR 0116).

``python -m recurgent._apidoc`` (or ``make docs``) writes it; ``--check`` exits 1 when the file
is stale. ``specs/test_apidoc.py`` regenerates it and compares, so a docstring or signature
change that is not regenerated fails the suite. Covered: ``recurgent.__all__``,
``recurgent.testing.__all__`` and ``recurgent.errors.__all__``; for each class, its public
methods and properties defined in recurgent (not those pydantic or ``Exception`` provide).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from recurgent._display import ShownAs

__all__ = ["DEFAULT_OUTPUT", "main", "render"]

DEFAULT_OUTPUT = Path("docs") / "api.md"
_SECTIONS = ("recurgent", "recurgent.testing", "recurgent.errors")
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_HEADER = """# API reference

Generated from the docstrings of the public surface by `python -m recurgent._apidoc`
(`make docs`); do not edit by hand. `specs/test_apidoc.py` fails when this file is stale.
Start with the README's five-minute tour; `docs/outcomes.md` explains the error taxonomy.
"""


def _unquoted(annotation: Any) -> Any:
    # An annotation kept as the source text it was written as (shown without quotes).
    return ShownAs(annotation) if isinstance(annotation, str) else annotation


def _signature(target: Any, *, bound: bool = False) -> str:
    """The signature as written; ``bound`` drops the first parameter (``self``/``cls``)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return "(...)"
    parameters = list(signature.parameters.values())[1 if bound else 0 :]
    signature = signature.replace(
        parameters=[
            parameter.replace(annotation=_unquoted(parameter.annotation))
            for parameter in parameters
        ],
        return_annotation=_unquoted(signature.return_annotation),
    )
    return _ADDRESS.sub("", str(signature))


def _doc(target: Any) -> str:
    return (inspect.getdoc(target) or "(no docstring)").strip()


def _is_ours(owner: Any) -> bool:
    return str(getattr(owner, "__module__", "")).split(".")[0] == "recurgent"


def _members(cls: type) -> Iterator[tuple[str, str, str]]:
    """(name, header, docstring) of each public method and property recurgent defines."""
    seen: set[str] = set()
    for owner in cls.__mro__:
        if not _is_ours(owner):
            continue
        for name, raw in sorted(vars(owner).items()):
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            label = f"{cls.__name__}.{name}"
            if isinstance(raw, property):
                yield name, f"{label}  (property)", _doc(raw)
            elif isinstance(raw, classmethod):
                yield name, f"{label}{_signature(raw.__func__, bound=True)}", _doc(raw.__func__)
            elif isinstance(raw, staticmethod):
                yield name, f"{label}{_signature(raw.__func__)}", _doc(raw.__func__)
            elif inspect.isfunction(raw):
                yield name, f"{label}{_signature(raw, bound=True)}", _doc(raw)
            elif hasattr(type(raw), "__get__") and _is_ours(type(raw)):
                # A descriptor of our own (Outcome.ok): what the class attribute is, and the
                # descriptor's own summary of what an instance sees.
                on_class = getattr(cls, name)
                note = _doc(type(raw)).splitlines()[0]
                yield name, f"{label}{_signature(on_class)}", f"{note}\n\n{_doc(on_class)}"


def _is_private(owner: type) -> bool:
    return any(part.startswith("_") for part in owner.__module__.split("."))


def _class_header(cls: type) -> str:
    """``class Name(PublicBase)`` and, for a constructor recurgent wrote, ``Name(...)``."""
    bases = ", ".join(
        base.__name__ for base in cls.__bases__ if base is not object and not _is_private(base)
    )
    header = f"class {cls.__name__}({bases})" if bases else f"class {cls.__name__}"
    init = next(vars(owner)["__init__"] for owner in cls.__mro__ if "__init__" in vars(owner))
    if inspect.isfunction(init) and _is_ours(init):
        header += f"\n{cls.__name__}{_signature(init, bound=True).removesuffix(' -> None')}"
    return header


def _entry(name: str, value: Any) -> list[str]:
    lines = [f"### `{name}`", ""]
    if isinstance(value, type):
        lines += ["```python", _class_header(value), "```", "", _doc(value), ""]
        for _member, header, doc in _members(value):
            lines += [f"#### `{header}`", "", doc, ""]
    elif callable(value):
        lines += ["```python", f"def {name}{_signature(value)}", "```", "", _doc(value), ""]
    else:
        lines += [f"`{name}`: `{type(value).__name__}`, the installed package's version.", ""]
    return lines


def _section(module: ModuleType, *, skip: frozenset[str]) -> list[str]:
    lines = [f"## `{module.__name__}`", "", _doc(module), ""]
    names = [name for name in module.__all__ if name not in skip]
    lines += [f"Names: {', '.join(f'`{name}`' for name in names)}.", ""]
    if skip:
        listed = ", ".join(f"`{name}`" for name in sorted(skip & set(module.__all__)))
        lines += [f"Also exported here, documented under `recurgent.errors`: {listed}.", ""]
    for name in names:
        lines += _entry(name, getattr(module, name))
    return lines


def render() -> str:
    """The whole of ``docs/api.md``."""
    errors = importlib.import_module("recurgent.errors")
    lines = [_HEADER]
    for module_name in _SECTIONS:
        module = importlib.import_module(module_name)
        skip = frozenset(errors.__all__) if module_name == "recurgent" else frozenset()
        lines += _section(module, skip=skip)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the reference, or with ``--check`` say whether the file is current.

    Returns:
        0 when written or current, 1 when ``--check`` finds it stale.
    """
    parser = argparse.ArgumentParser(prog="python -m recurgent._apidoc", description=__doc__)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, metavar="PATH")
    parser.add_argument("--check", action="store_true", help="exit 1 if PATH is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text("utf-8") if args.output.exists() else ""
        if current != text:
            sys.stderr.write(
                f"{args.output} is stale: run `make docs` (python -m recurgent._apidoc)\n"
            )
            return 1
        return 0
    args.output.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
