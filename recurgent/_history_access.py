"""What a program read from the conversation history, found on its syntax tree (ADR 0103).

The original ran regular expressions over the code: any mention of ``conversation_history``
(a comment too) counted as access, and Ruby method names (``select``, ``map``, ``take``,
``size``, ``group_by``) anywhere in the code counted as patterns applied to it. Here the
program's tree is read: access is an expression that reads the history (``context[...]``,
``context.get(...)``, a handle's ``.conversation_history``, a name bound to one of those), and
a pattern counts only when applied to such an expression. Bounded: long programs and big trees
are read only in part, and a program that does not mention the name is not parsed at all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from recurgent._history import HISTORY_KEY
from recurgent._parsing import parse_python

__all__ = ["PATTERNS", "HistoryAccess", "detect_history_access"]

#: Every pattern name, in the order a log line lists them: the original's five, then the
#: Python-specific ones (an element read by index, a reversed walk, a plain ``for`` loop).
PATTERNS = ("filter", "map", "slice", "count", "group", "index", "reverse", "iterate")
_MAX_SOURCE_CHARS = 200_000
_MAX_NODES = 50_000
_TAINT_PASSES = 4
_DERIVING_CALLS = frozenset({"list", "tuple", "reversed", "sorted"})

HistoryAccess = tuple[bool, list[str]]


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    for seen, node in enumerate(ast.walk(tree)):
        if seen >= _MAX_NODES:
            return
        yield node


def _called_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


class _Reader:
    def __init__(self, tree: ast.AST) -> None:
        self.tree = tree
        self.names: set[str] = set()

    def is_history(self, node: ast.AST | None) -> bool:
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and key.value == HISTORY_KEY:
                return isinstance(node.ctx, ast.Load)
            return isinstance(key, ast.Slice) and self.is_history(node.value)
        if isinstance(node, ast.Attribute):
            return node.attr == HISTORY_KEY and isinstance(node.ctx, ast.Load)
        if isinstance(node, ast.Name):
            return node.id in self.names and isinstance(node.ctx, ast.Load)
        if isinstance(node, ast.Call):
            return self._reads_history(node)
        if isinstance(node, ast.BoolOp):
            return any(self.is_history(value) for value in node.values)
        if isinstance(node, ast.IfExp):
            return self.is_history(node.body) or self.is_history(node.orelse)
        return False

    def _reads_history(self, node: ast.Call) -> bool:
        name = _called_name(node)
        first = node.args[0] if node.args else None
        if name == "get" and isinstance(node.func, ast.Attribute):
            return isinstance(first, ast.Constant) and first.value == HISTORY_KEY
        return name in _DERIVING_CALLS and self.is_history(first)

    def bind_names(self) -> None:
        for _ in range(_TAINT_PASSES):
            before = len(self.names)
            for node in _nodes(self.tree):
                targets: list[ast.AST] = []
                if isinstance(node, ast.Assign) and self.is_history(node.value):
                    targets = list(node.targets)
                elif isinstance(node, ast.AnnAssign | ast.NamedExpr) and self.is_history(
                    node.value
                ):
                    targets = [node.target]
                self.names.update(t.id for t in targets if isinstance(t, ast.Name))
            if len(self.names) == before:
                return

    def patterns(self) -> tuple[bool, set[str]]:
        accessed = False
        found: set[str] = set()
        for node in _nodes(self.tree):
            if self.is_history(node):
                accessed = True
            if isinstance(node, ast.Subscript) and self.is_history(node.value):
                if isinstance(node.slice, ast.Slice):
                    found.add("slice")
                    step = node.slice.step
                    if isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub):
                        found.add("reverse")
                else:
                    found.add("index")
            elif isinstance(node, ast.Call):
                found.update(self._call_patterns(node))
            elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
                found.update(self._comprehension_patterns(node))
            elif isinstance(node, ast.For | ast.AsyncFor) and self.is_history(node.iter):
                found.add("iterate")
        return accessed, found

    def _call_patterns(self, node: ast.Call) -> set[str]:
        name = _called_name(node)
        args = node.args
        found: set[str] = set()
        on_history = any(self.is_history(arg) for arg in args)
        method_of_history = isinstance(node.func, ast.Attribute) and self.is_history(
            node.func.value
        )
        if name == "len" and on_history:
            found.add("count")
        elif name in ("filter", "map") and len(args) > 1 and self.is_history(args[1]):
            found.add(name)
        elif name == "reversed" and on_history:
            found.add("reverse")
        elif name == "islice" and on_history:
            found.add("slice")
        elif name == "groupby" and on_history:
            found.add("group")
        elif method_of_history and name in ("count", "index"):
            found.add("count" if name == "count" else "index")
        elif method_of_history and name == "reverse":
            found.add("reverse")
        return found

    def _comprehension_patterns(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> set[str]:
        found: set[str] = set()
        for generator in node.generators:
            if not self.is_history(generator.iter):
                continue
            if generator.ifs:
                found.add("filter")
            target = generator.target
            element = node.key if isinstance(node, ast.DictComp) else node.elt
            if not (
                isinstance(target, ast.Name)
                and isinstance(element, ast.Name)
                and element.id == target.id
            ):
                found.add("map")
        return found


def detect_history_access(code: str | None) -> HistoryAccess:
    """``(accessed, patterns)``: whether ``code`` reads ``conversation_history``, and how.

    ``patterns`` is a sub-list of :data:`PATTERNS`, in its order. A program that cannot be
    parsed but names the history counts as access with no patterns.
    """
    if not code or HISTORY_KEY not in code:
        return False, []
    if len(code) > _MAX_SOURCE_CHARS:
        return True, []
    try:
        tree = parse_python(code, "<history-access>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True, []
    reader = _Reader(tree)
    reader.bind_names()
    accessed, found = reader.patterns()
    return accessed, [name for name in PATTERNS if name in found]
