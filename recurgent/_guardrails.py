"""Guardrails: static checks on a program's AST and the external-data provenance check (ADR 0014).

Checks return :class:`~recurgent.errors.GuardrailViolationError` objects carrying a subtype and
the correction the next attempt must make; they never raise. The lifecycle decides what happens
(rollback and regeneration through the guardrail lane).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from typing import Any

from recurgent.errors import GuardrailViolationError

__all__ = [
    "RETRIEVAL_MODES",
    "is_external_fetch",
    "is_terminal",
    "provenance_violation",
    "static_violations",
]

RETRIEVAL_MODES = frozenset({"live", "cached", "fixture"})
_TERMINAL = re.compile(
    r"missing credential|api key|unsupported runtime capability|external service unavailable",
    re.IGNORECASE,
)
_HTTP_MODULES = ("urllib", "http.client", "requests", "httpx", "aiohttp")
_HOST_INTERNALS = frozenset(
    {
        "__class__",
        "__dict__",
        "__setattr__",
        "__getattribute__",
        "__bases__",
        "__mro__",
        "__subclasses__",
        "__globals__",
        "__code__",
    }
)
_FALLBACK_NAME = re.compile(
    r"^(fallback|mock|fake|dummy|placeholder|sample|hardcoded|static|canned|default)",
    re.IGNORECASE,
)
_TOOLS_RECORD_KEYS = frozenset({"name", "role", "tool_name", "purpose"})

MUTATION_CORRECTION = (
    "do not attach functions or attributes to agents, handles, modules or classes; keep helper "
    "functions local to the program and get capabilities with tool('name') or "
    "delegate('name', ...), then call their methods"
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


def is_external_fetch(tree: ast.AST) -> bool:
    """Whether a program fetches external data: HTTP imports, ``urlopen``, or a ``*fetch*`` tool."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(
            alias.name == module or alias.name.startswith(module + ".")
            for alias in node.names
            for module in _HTTP_MODULES
        ):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and any(
                node.module == module or node.module.startswith(module + ".")
                for module in _HTTP_MODULES
            )
        ):
            return True
        if isinstance(node, ast.Call):
            name = _called_name(node)
            if name == "urlopen":
                return True
            if name in ("tool", "delegate"):
                target = _first_string(node)
                if target and "fetch" in target.lower():
                    return True
    return False


def _local_functions(tree: ast.AST) -> set[str]:
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}


def _is_function_value(node: ast.AST, functions: set[str]) -> bool:
    return isinstance(node, ast.Lambda) or (isinstance(node, ast.Name) and node.id in functions)


def _mutations(tree: ast.AST) -> Iterator[GuardrailViolationError]:
    functions = _local_functions(tree)
    for node in ast.walk(tree):
        message = None
        if isinstance(node, ast.Attribute) and node.attr in _HOST_INTERNALS:
            message = f"Generated code reaches host internals through {node.attr!r}"
        elif isinstance(node, ast.Call) and _called_name(node) == "MethodType":
            message = "Generated code binds functions onto objects with types.MethodType"
        elif (
            isinstance(node, ast.Call)
            and _called_name(node) in ("setattr", "delattr")
            and (len(node.args) >= 3 and _is_function_value(node.args[2], functions))
        ):
            message = "Generated code attaches a function to an object with setattr()"
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                attaches_function = (
                    isinstance(target, ast.Attribute)
                    and _is_function_value(node.value, functions)
                    and not (isinstance(target.value, ast.Name) and target.value.id == "self")
                )
                on_class = (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Call)
                    and _called_name(target.value) == "type"
                )
                if attaches_function or on_class:
                    message = "Generated code defines methods on an existing object or class"
        if message:
            yield GuardrailViolationError(
                f"{message}; defining singleton methods on agents or mutating host classes is "
                "not supported; use tool/delegate invocation paths",
                subtype="singleton_method_mutation",
                correction=MUTATION_CORRECTION,
                line=_line(node),
            )


def _is_tools_registry(node: ast.AST) -> bool:
    """``context["tools"]``, ``memory["tools"]`` or ``context.get("tools", ...)``."""
    if (
        isinstance(node, ast.Call)
        and _called_name(node) in ("list", "enumerate", "sorted")
        and node.args
    ):
        return _is_tools_registry(node.args[0])
    if isinstance(node, ast.Subscript):
        key = node.slice
        return (
            isinstance(node.value, ast.Name)
            and node.value.id in ("context", "memory")
            and isinstance(key, ast.Constant)
            and key.value == "tools"
        )
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
    ):
        owner = node.func.value
        return (
            isinstance(owner, ast.Name)
            and owner.id in ("context", "memory")
            and _first_string(node) == "tools"
        )
    return False


def _reads_record_key(scope: list[ast.AST], variable: str) -> ast.AST | None:
    for root in scope:
        for node in ast.walk(root):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id == variable
                and isinstance(node.slice, ast.Constant)
                and node.slice.value in _TOOLS_RECORD_KEYS
            ):
                return node
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == variable
                and node.func.attr == "get"
                and _first_string(node) in _TOOLS_RECORD_KEYS
            ):
                return node
    return None


def _tools_shape_misuse(tree: ast.AST) -> Iterator[GuardrailViolationError]:
    message = (
        "context['tools'] is a dict keyed by tool name; iterate `for name, metadata in "
        "context['tools'].items()` or test `'name' in context['tools']`, not records with a "
        "'name' field"
    )
    for node in ast.walk(tree):
        offending: ast.AST | None = None
        if (
            isinstance(node, ast.For)
            and _is_tools_registry(node.iter)
            and isinstance(node.target, ast.Name)
        ):
            offending = _reads_record_key(list(node.body), node.target.id)
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            for generator in node.generators:
                if _is_tools_registry(generator.iter) and isinstance(generator.target, ast.Name):
                    parts: list[ast.AST] = [*generator.ifs]
                    parts += (
                        [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
                    )
                    offending = _reads_record_key(parts, generator.target.id)
        elif (
            isinstance(node, ast.Subscript)
            and _is_tools_registry(node.value)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, int)
        ):
            offending = node
        if offending is not None:
            yield GuardrailViolationError(
                message,
                subtype="context_tools_shape_misuse",
                correction="use key-existence checks or iterate (tool_name, metadata) pairs of "
                "context['tools']",
                line=_line(offending),
            )


def _literal_payload(node: ast.AST) -> bool:
    if isinstance(node, ast.List | ast.Tuple):
        return bool(node.elts) and all(
            _literal_payload(e) or isinstance(e, ast.Constant) for e in node.elts
        )
    if isinstance(node, ast.Dict):
        return all(
            isinstance(v, ast.Constant | ast.List | ast.Dict | ast.Tuple) for v in node.values
        )
    return False


def _hardcoded_fallback(tree: ast.AST) -> Iterator[GuardrailViolationError]:
    if not is_external_fetch(tree):
        return
    fallbacks = {
        target.id: node
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _literal_payload(node.value)
        for target in node.targets
        if isinstance(target, ast.Name) and _FALLBACK_NAME.match(target.id)
    }
    if not fallbacks:
        return
    for node in ast.walk(tree):
        carried: list[ast.AST] = []
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "ok"
        ):
            carried = [*node.args, *(k.value for k in node.keywords)]
        elif (isinstance(node, ast.Return) and node.value is not None) or (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "result" for t in node.targets)
        ):
            carried = [node.value] if node.value is not None else []
        for expression in carried:
            names = {n.id for n in ast.walk(expression) if isinstance(n, ast.Name)}
            used = names & set(fallbacks)
            if used:
                yield GuardrailViolationError(
                    "Hardcoded fallback payloads for external-fetch flows must not be returned as "
                    f"success (variable {sorted(used)[0]!r}); return "
                    "Outcome.error(error_type='low_utility' or 'unsupported_capability') instead",
                    subtype="hardcoded_external_fallback_success",
                    correction="do not return hard-coded fallback lists as ok; return a typed "
                    "low_utility or unsupported_capability error unless the data was really fetched",
                    line=_line(node),
                )
                return


def static_violations(tree: ast.AST) -> list[GuardrailViolationError]:
    """Every policy violation visible in the program's source, in source order."""
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
    """An ok value of an external-fetch program must carry ``provenance.sources[]``."""
    if not is_external_fetch(tree):
        return None
    provenance = value.get("provenance") if isinstance(value, Mapping) else None
    sources = provenance.get("sources") if isinstance(provenance, Mapping) else None
    if isinstance(sources, list) and sources and all(_valid_source(s) for s in sources):
        return None
    return GuardrailViolationError(
        "External-data success must include `provenance.sources[]` with `uri`, `fetched_at`, "
        "`retrieval_tool`, and `retrieval_mode` (`live|cached|fixture`)",
        subtype="missing_external_provenance",
        correction="return a dict whose 'provenance' is {'sources': [{'uri': ..., 'fetched_at': "
        "<ISO-8601 time>, 'retrieval_tool': ..., 'retrieval_mode': 'live'|'cached'|'fixture'}]}",
    )
