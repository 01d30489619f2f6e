"""What the input-flow walk reads off a program's syntax tree (ADR 0078): name tables, the
objects an expression may be part of, refusals, function signatures, and alias groups.

Pure functions of the tree; the walk itself is :mod:`._dataflow`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from recurgent._scopes import bound_names, scope_nodes

__all__ = [
    "FORWARDERS",
    "FUNCTIONS",
    "INPUTS",
    "INPUT_WORDS",
    "MEMORY",
    "NETWORK_CALLS",
    "PURE_BUILTINS",
    "READERS",
    "STATEFUL_MODULES",
    "Aliases",
    "Function",
    "Signature",
    "is_error",
    "is_outcome",
    "refuses",
    "signature_of",
    "target_names",
    "value_roots",
]

INPUT_WORDS = re.compile(r"\b(?:args|kwargs)\b")
INPUTS = frozenset({"args", "kwargs"})
MEMORY = frozenset({"context", "memory"})
FORWARDERS = frozenset({"tool", "delegate", "remember"})
NETWORK_CALLS = frozenset({"urlopen", "urlretrieve", "open"})
#: Builtins that read their arguments and change none of them.
PURE_BUILTINS = frozenset(
    {
        "abs", "all", "any", "ascii", "bin", "bool", "bytes", "callable", "chr", "complex",
        "dict", "divmod", "enumerate", "filter", "float", "format", "frozenset", "getattr",
        "hasattr", "hash", "hex", "id", "int", "isinstance", "issubclass", "iter", "len",
        "list", "map", "max", "min", "oct", "ord", "pow", "print", "range", "repr",
        "reversed", "round", "set", "slice", "sorted", "str", "sum", "tuple", "type", "zip",
    }
)  # fmt: skip
#: Standard modules whose functions change their arguments or the module's own state.
STATEFUL_MODULES = frozenset({"heapq", "bisect", "random"})
#: Method names that never change their receiver (str, bytes, numbers, dict/list/set reads,
#: regex matches, dates). Any other method called with a tainted value may store it.
READERS = frozenset(
    {
        "as_integer_ratio", "bit_count", "bit_length", "capitalize", "casefold", "center",
        "conjugate", "copy", "count", "date", "decode", "difference", "elements", "encode",
        "end", "endswith", "expandtabs", "find", "findall", "finditer", "format", "format_map",
        "fromkeys", "fullmatch", "get", "group", "groupdict", "groups", "hex", "index",
        "intersection", "is_integer", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
        "isdisjoint", "isidentifier", "islower", "isnumeric", "isoformat", "isoweekday",
        "isprintable", "isspace", "issubset", "issuperset", "istitle", "isupper", "items",
        "join", "keys", "ljust", "lower", "lstrip", "match", "most_common", "partition",
        "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition",
        "rsplit", "rstrip", "search", "span", "split", "splitlines", "start", "startswith",
        "strftime", "strip", "sub", "subn", "swapcase", "symmetric_difference", "time",
        "timestamp", "title", "to_bytes", "total", "translate", "union", "upper", "values",
        "weekday", "zfill",
    }
)  # fmt: skip
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


class Aliases:
    """Names that may hold the same object, by assignment (flow-insensitive union-find)."""

    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        parent = self._parent.setdefault(name, name)
        while parent != name:
            grand = self._parent[parent]
            self._parent[name] = grand
            name, parent = parent, grand
        return name

    def link(self, first: str, second: str) -> None:
        self._parent[self.find(first)] = self.find(second)

    def groups(self) -> dict[str, frozenset[str]]:
        """Every linked name's group (the links are final once the survey is done)."""
        members: dict[str, set[str]] = {}
        for name in list(self._parent):
            members.setdefault(self.find(name), set()).add(name)
        return {name: frozenset(members[self.find(name)]) for name in self._parent}


def value_roots(node: ast.AST) -> set[str]:
    """The names an expression's value may be (part of) an object of."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
        return value_roots(node.value)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            # tool("x") and delegate("x") hand out handles; other calls make new values.
            return {func.id} if func.id in FORWARDERS else set()
        return value_roots(func)
    if isinstance(node, ast.BoolOp):
        return set().union(*(value_roots(value) for value in node.values))
    if isinstance(node, ast.IfExp):
        return value_roots(node.body) | value_roots(node.orelse)
    if isinstance(node, ast.NamedExpr):
        return value_roots(node.value) | {node.target.id}
    if isinstance(node, ast.Tuple | ast.List):
        return set().union(set(), *(value_roots(element) for element in node.elts))
    return set()


def target_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from target_names(element)
    elif isinstance(target, ast.Starred):
        yield from target_names(target.value)


def is_outcome(node: ast.AST, names: frozenset[str]) -> bool:
    """``Outcome.<one of names>(...)``."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "Outcome"
        and node.func.attr in names
    )


def is_error(node: ast.AST | None) -> bool:
    """An error Outcome the program builds: ``Outcome.error(...)`` or ``Outcome(status="error")``."""
    if node is None:
        return False
    if is_outcome(node, frozenset({"error"})):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Outcome"
        and any(
            k.arg == "status" and isinstance(k.value, ast.Constant) and k.value.value == "error"
            for k in node.keywords
        )
    )


def refuses(body: list[ast.stmt]) -> bool:
    """A branch that only refuses: it ends by raising or by answering with an error."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Raise):
        return True
    if isinstance(last, ast.Return):
        return is_error(last.value)
    if isinstance(last, ast.Assign):
        return is_error(last.value) and any(
            isinstance(t, ast.Name) and t.id == "result" for t in last.targets
        )
    return False


@dataclass(frozen=True, slots=True)
class Signature:
    params: tuple[str, ...]
    vararg: str | None
    kwarg: str | None
    local: frozenset[str]
    free: frozenset[str]


def signature_of(function: Function) -> Signature:
    spec = function.args
    params = tuple(a.arg for a in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs))
    extra = tuple(a.arg for a in (spec.vararg, spec.kwarg) if a is not None)
    body: list[ast.AST] = (
        [function.body] if isinstance(function, ast.Lambda) else list(function.body)
    )
    nodes = list(scope_nodes(body))
    declared = {
        name for node in nodes if isinstance(node, ast.Global | ast.Nonlocal) for name in node.names
    }
    loaded = {
        node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    bound = set(params) | set(extra) | bound_names(nodes)
    local = frozenset(bound - declared)
    return Signature(
        params,
        spec.vararg.arg if spec.vararg else None,
        spec.kwarg.arg if spec.kwarg else None,
        local,
        frozenset(loaded - local),
    )
