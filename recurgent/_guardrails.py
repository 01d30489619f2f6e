"""Guardrails: static checks on a program's AST and the external-data provenance check (ADR 0014).

Checks return :class:`~recurgent.errors.GuardrailViolationError` objects carrying a subtype and
the correction the next attempt must make; they never raise. The lifecycle decides what happens
(rollback and regeneration through the guardrail lane, or the end of the call for a terminal
violation).

Static rules, each with its subtype:

* ``singleton_method_mutation``: attaching functions to objects the program did not create
  (``handle.f = lambda: 1``, ``setattr(handle, "f", fn)``), assigning through ``type(x)``,
  reaching ``__class__``/``__dict__``/``__setattr__`` and similar, or any ``MethodType``.
* ``context_tools_shape_misuse``: treating ``context["tools"]`` (a dict of name -> metadata) as a
  list of records (``for t in context["tools"]: t["name"]``, ``context["tools"][0]``).
* ``hardcoded_external_fallback_success``: a fetch-style program returning a hard-coded list as
  success (a ``fallback_*``-named list, or a list literal returned from an ``except`` block).

Runtime rule: ``missing_external_provenance`` (:func:`provenance_violation`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from typing import Any

from recurgent.errors import GuardrailViolationError
from recurgent.program import check_syntax_bounds

__all__ = [
    "RETRIEVAL_MODES",
    "is_external_fetch",
    "is_terminal",
    "provenance_violation",
    "static_violations",
]

RETRIEVAL_MODES = frozenset({"live", "cached", "fixture"})
_TERMINAL = re.compile(
    r"missing credential|api[ _-]?key|unsupported runtime capability|"
    r"external service unavailable",
    re.IGNORECASE,
)
# Modules that fetch over the network. ``urllib.parse`` only builds URLs, so ``urllib`` counts
# through ``urllib.request`` or a call to ``urlopen``.
_HTTP_MODULES = ("urllib.request", "http.client", "requests", "httpx", "aiohttp", "urllib3")
_HOST_INTERNALS = frozenset(
    {
        "__class__",
        "__dict__",
        "__setattr__",
        "__delattr__",
        "__getattribute__",
        "__bases__",
        "__mro__",
        "__subclasses__",
        "__globals__",
        "__code__",
        "__func__",
        "__self__",
    }
)
# Read-only views the sandbox serves (ADR 0044): reading them is allowed; writing through them
# (`x.__dict__[k] = v`, `x.__class__.m = f`, `x.__dict__.update(...)`) is still a violation.
_READABLE_INTERNALS = frozenset({"__class__", "__dict__"})
_FALLBACK_NAME = re.compile(
    r"(^|_)(fallback|mock|mocked|fake|dummy|placeholder|hardcoded|canned|stub|backup)(_|s?$)",
    re.IGNORECASE,
)
_SELF_NAMES = frozenset({"self", "cls"})

MUTATION_CORRECTION = (
    "do not attach functions or attributes to agents, handles, modules or classes; keep helper "
    "functions local to the program and get capabilities with tool('name') or "
    "delegate('name', ...), then call their methods"
)
_MUTATION_SUFFIX = (
    "; defining singleton methods on Agent instances or mutating host classes is not "
    "supported; use tool/delegate invocation paths"
)


def is_terminal(message: str) -> bool:
    """Violations about missing credentials or capabilities are not worth a retry."""
    return bool(_TERMINAL.search(message))


def _line(node: ast.AST) -> int | None:
    return getattr(node, "lineno", None)


def _called_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _first_string(node: ast.Call) -> str | None:
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def _is_http_module(name: str) -> bool:
    return any(name == module or name.startswith(module + ".") for module in _HTTP_MODULES)


def _fetches(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(_is_http_module(alias.name) for alias in node.names)
    if isinstance(node, ast.ImportFrom) and node.module:
        return _is_http_module(node.module) or (
            node.module == "urllib" and any(alias.name == "request" for alias in node.names)
        )
    if isinstance(node, ast.Name):
        return node.id == "fetch_result"
    if isinstance(node, ast.Call):
        name = _called_name(node)
        if name == "urlopen":
            return True
        if name in ("tool", "delegate"):
            target = _first_string(node)
            return bool(target and "fetch" in target.lower())
    return False


# A program's tree is parsed once and only read afterwards, and a stored program's tree is the
# same object for every persisted call: its walk (most of a trivial call's guardrail cost) is
# done once per tree (ADR 0054) and kept on the tree itself, so it lives and dies with it (an
# attribute read costs a fraction of a weak-keyed table's lookup; ADR 0072).
_FETCHES_ATTRIBUTE = "_recurgent_external_fetch"


def is_external_fetch(tree: ast.AST) -> bool:
    """Whether a program fetches external data: HTTP modules, ``urlopen``, or a ``*fetch*`` tool."""
    known: bool | None = getattr(tree, _FETCHES_ATTRIBUTE, None)
    if known is None:
        known = any(_fetches(node) for node in ast.walk(tree))
        setattr(tree, _FETCHES_ATTRIBUTE, known)
    return known


def _own_names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """Local function names, and names of objects the program created (its classes, instances)."""
    functions = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    classes = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    owned = set(classes) | _SELF_NAMES
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in classes
        ):
            owned |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return functions, owned


def _is_function_value(node: ast.AST, functions: set[str]) -> bool:
    return isinstance(node, ast.Lambda) or (isinstance(node, ast.Name) and node.id in functions)


def _is_owned(node: ast.AST, owned: set[str]) -> bool:
    return isinstance(node, ast.Name) and node.id in owned


def _written_through(tree: ast.AST) -> set[int]:
    """Ids of expressions that a store, a delete or a method call acts on."""
    written: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript | ast.Attribute) and not isinstance(node.ctx, ast.Load):
            written.add(id(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            written.add(id(node.func.value))
    return written


def _mutation_message(
    node: ast.AST, functions: set[str], owned: set[str], written: set[int]
) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr in _HOST_INTERNALS:
        read_only = (
            node.attr in _READABLE_INTERNALS
            and isinstance(node.ctx, ast.Load)
            and id(node) not in written
        )
        if not read_only:
            return f"Generated code reaches host internals through {node.attr!r}"
    if (isinstance(node, ast.Attribute) and node.attr == "MethodType") or (
        isinstance(node, ast.Name) and node.id == "MethodType"
    ):
        return "Generated code binds functions onto objects with types.MethodType"
    if isinstance(node, ast.ImportFrom) and any(a.name == "MethodType" for a in node.names):
        return "Generated code binds functions onto objects with types.MethodType"
    if (
        isinstance(node, ast.Call)
        and _called_name(node) == "setattr"
        and len(node.args) >= 3
        and _is_function_value(node.args[2], functions)
        and not _is_owned(node.args[0], owned)
    ):
        return "Generated code attaches a function to an object with setattr()"
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if not isinstance(target, ast.Attribute):
                continue
            through_type = isinstance(target.value, ast.Call) and (
                _called_name(target.value) == "type"
            )
            if through_type or (
                node.value is not None
                and _is_function_value(node.value, functions)
                and not _is_owned(target.value, owned)
            ):
                return "Generated code defines methods on an existing object or class"
    return None


def _mutations(tree: ast.AST) -> Iterator[GuardrailViolationError]:
    functions, owned = _own_names(tree)
    written = _written_through(tree)
    for node in ast.walk(tree):
        message = _mutation_message(node, functions, owned, written)
        if message:
            yield GuardrailViolationError(
                message + _MUTATION_SUFFIX,
                subtype="singleton_method_mutation",
                correction=MUTATION_CORRECTION,
                line=_line(node),
            )


def _registry_aliases(tree: ast.AST) -> set[str]:
    """Names bound to the registry itself, e.g. ``tools = context["tools"]``."""
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_tools_registry(node.value, set()):
            aliases |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return aliases


def _is_tools_registry(node: ast.AST, aliases: set[str]) -> bool:
    """``context["tools"]``, ``memory["tools"]``, ``context.get("tools", ...)`` or an alias."""
    if isinstance(node, ast.Name):
        return node.id in aliases
    if isinstance(node, ast.Call) and _called_name(node) in ("list", "sorted") and node.args:
        return _is_tools_registry(node.args[0], aliases)
    if isinstance(node, ast.Subscript):
        key = node.slice
        return (
            isinstance(node.value, ast.Name)
            and node.value.id in ("context", "memory")
            and isinstance(key, ast.Constant)
            and key.value == "tools"
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        return (
            node.func.attr == "get"
            and isinstance(owner, ast.Name)
            and owner.id in ("context", "memory")
            and _first_string(node) == "tools"
        )
    return False


def _loop_variable(iterable: ast.AST, target: ast.AST, aliases: set[str]) -> str | None:
    """The variable that receives registry entries when iterating the registry like a list."""
    if _is_tools_registry(iterable, aliases) and isinstance(target, ast.Name):
        return target.id
    if (
        isinstance(iterable, ast.Call)
        and _called_name(iterable) == "enumerate"
        and iterable.args
        and _is_tools_registry(iterable.args[0], aliases)
        and isinstance(target, ast.Tuple)
        and len(target.elts) == 2
        and isinstance(target.elts[1], ast.Name)
    ):
        return target.elts[1].id
    return None


def _reads_record_key(scope: list[ast.AST], variable: str) -> ast.AST | None:
    """Where a loop variable over the registry (a tool *name*) is used as a record."""
    for root in scope:
        for node in ast.walk(root):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == variable
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)
            ):
                return node
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == variable
                and node.func.attr in ("get", "items", "keys", "values")
            ):
                return node
    return None


def _tools_shape_misuse(tree: ast.AST) -> Iterator[GuardrailViolationError]:
    message = (
        "context['tools'] is a dict keyed by tool name; iterate `for name, metadata in "
        "context['tools'].items()` or test `'name' in context['tools']`, not records with a "
        "'name' field"
    )
    aliases = _registry_aliases(tree)
    for node in ast.walk(tree):
        offending: ast.AST | None = None
        if isinstance(node, ast.For):
            variable = _loop_variable(node.iter, node.target, aliases)
            if variable is not None:
                offending = _reads_record_key(list(node.body), variable)
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            for generator in node.generators:
                variable = _loop_variable(generator.iter, generator.target, aliases)
                if variable is not None:
                    parts: list[ast.AST] = [*generator.ifs]
                    parts += (
                        [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
                    )
                    offending = offending or _reads_record_key(parts, variable)
        elif (
            isinstance(node, ast.Subscript)
            and _is_tools_registry(node.value, aliases)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
        ):
            offending = node
        if offending is not None:
            yield GuardrailViolationError(
                message,
                subtype="context_tools_shape_misuse",
                correction="use key-existence checks ('name' in context['tools']) or iterate "
                "(tool_name, metadata) pairs of context['tools'].items()",
                line=_line(offending),
            )


def _literal_list(node: ast.AST) -> bool:
    """A non-empty list or tuple literal made only of literals (the shape of canned data)."""
    if not isinstance(node, ast.List | ast.Tuple) or not node.elts:
        return False
    return all(
        isinstance(element, ast.Constant)
        or _literal_list(element)
        or (
            isinstance(element, ast.Dict)
            and all(
                isinstance(v, ast.Constant | ast.List | ast.Tuple | ast.Dict)
                for v in element.values
            )
        )
        for element in node.elts
    )


def _returned_expressions(node: ast.AST) -> list[ast.AST]:
    """Expressions a statement hands back as success: ``return``, ``result =``, ``Outcome.ok``."""
    if isinstance(node, ast.Return) and node.value is not None:
        return [node.value]
    if isinstance(node, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "result" for t in node.targets
    ):
        return [node.value]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and (node.func.attr in ("ok", "call"))
    ):
        return [*node.args, *(keyword.value for keyword in node.keywords)]
    return []


def _success_names(expression: ast.AST) -> set[str]:
    """Names an expression hands back as data, skipping those inside ``Outcome.error(...)``."""
    if (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Attribute)
        and (expression.func.attr == "error")
    ):
        return set()
    if isinstance(expression, ast.Name):
        return {expression.id}
    names: set[str] = set()
    for child in ast.iter_child_nodes(expression):
        names |= _success_names(child)
    return names


def _fallback_violation(name: str, node: ast.AST) -> GuardrailViolationError:
    return GuardrailViolationError(
        "Hardcoded fallback payloads for external-fetch flows must not be returned as success "
        f"({name}); return Outcome.error(error_type='low_utility' or 'unsupported_capability') "
        "instead",
        subtype="hardcoded_external_fallback_success",
        correction="do not return hard-coded fallback lists as ok; return a typed low_utility "
        "or unsupported_capability error unless the data was really fetched",
        line=_line(node),
    )


def _hardcoded_fallback(tree: ast.AST) -> Iterator[GuardrailViolationError]:
    if not is_external_fetch(tree):
        return
    fallbacks = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _literal_list(node.value)
        for target in node.targets
        if isinstance(target, ast.Name) and _FALLBACK_NAME.search(target.id)
    }
    for node in ast.walk(tree):
        for expression in _returned_expressions(node):
            used = sorted(_success_names(expression) & fallbacks)
            if used:
                yield _fallback_violation(f"variable {used[0]!r}", node)
                return
    for handler in ast.walk(tree):
        if not isinstance(handler, ast.ExceptHandler):
            continue
        for node in (n for statement in handler.body for n in ast.walk(statement)):
            if any(_literal_list(e) for e in _returned_expressions(node)):
                yield _fallback_violation("a list literal returned from an except block", node)
                return


def static_violations(tree: ast.AST) -> list[GuardrailViolationError]:
    """Every policy violation visible in the program's source, in source order.

    Raises:
        InvalidCodeError: the tree is over the size or nesting caps (ADR 0025). Checked first, so
            the walks below cost at most what the caps allow.
    """
    check_syntax_bounds(tree)
    found = [*_mutations(tree), *_tools_shape_misuse(tree), *_hardcoded_fallback(tree)]
    return sorted(found, key=lambda violation: violation.line or 0)


def _valid_source(source: Any) -> bool:
    if not isinstance(source, Mapping):
        return False
    for key in ("uri", "fetched_at", "retrieval_tool", "retrieval_mode"):
        value = source.get(key)
        if not isinstance(value, str) or not value.strip():
            return False
    return str(source["retrieval_mode"]).strip().lower() in RETRIEVAL_MODES


def provenance_violation(tree: ast.AST, value: Any) -> GuardrailViolationError | None:
    """An ok value of an external-fetch program must carry ``provenance.sources[]``.

    Every source needs non-blank ``uri``, ``fetched_at``, ``retrieval_tool`` and a
    ``retrieval_mode`` of ``live``, ``cached`` or ``fixture``.
    """
    if not is_external_fetch(tree):
        return None
    provenance = value.get("provenance") if isinstance(value, Mapping) else None
    sources = provenance.get("sources") if isinstance(provenance, Mapping) else None
    if isinstance(sources, list | tuple) and sources and all(_valid_source(s) for s in sources):
        return None
    if not isinstance(sources, list | tuple) or not sources:
        problem = "no provenance.sources"
    else:
        problem = "a source lacks a non-blank uri, fetched_at or retrieval_tool, or has a "
        problem += "retrieval_mode other than live, cached or fixture"
    return GuardrailViolationError(
        "External-data success must include `provenance.sources[]` with `uri`, `fetched_at`, "
        f"`retrieval_tool`, and `retrieval_mode` (`live|cached|fixture`); found {problem}",
        subtype="missing_external_provenance",
        correction="return a dict whose 'provenance' is {'sources': [{'uri': ..., 'fetched_at': "
        "<ISO-8601 time>, 'retrieval_tool': ..., 'retrieval_mode': 'live'|'cached'|'fixture'}]}",
    )
